"""Metadata-only replies: ``as=PartialObjectMetadata`` and ``as=PartialObjectMetadataList``.

client-go's metadata client (and so controller-runtime's metadata-only watches) asks for these,
protobuf first. Upstream (apiserver handlers/response.go) turns an object into
``{kind: PartialObjectMetadata, apiVersion: meta.k8s.io/<v>, metadata}`` and a list into a
``PartialObjectMetadataList`` of those; asking the single form of a list, or the list form of a
single object, is 406 with a message naming the Go type of the internal object.
"""

from __future__ import annotations

from typing import Any

from kplane.api import errors
from kplane.api.catalog import ResourceRecord
from kplane.server.endpoints import negotiation

Object = dict[str, Any]


def api_version(version: str) -> str:
    """The apiVersion of the metadata views at meta.k8s.io ``version`` (v1 or v1beta1)."""
    return f"meta.k8s.io/{version}"


def of_object(obj: Object, version: str) -> Object:
    """``obj`` reduced to its metadata, as upstream's ``meta.AsPartialObjectMetadata``."""
    return {
        "kind": negotiation.PARTIAL,
        "apiVersion": api_version(version),
        "metadata": obj.get("metadata") or {},
    }


def of_list(items: list[Object], metadata: Object, version: str) -> Object:
    """A list of ``items`` reduced to their metadata, under the list's ``metadata``."""
    return {
        "kind": negotiation.PARTIAL_LIST,
        "apiVersion": api_version(version),
        "metadata": metadata,
        "items": [of_object(o, version) for o in items],
    }


def _go_type(record: ResourceRecord, listed: bool) -> str:
    """The ``%T`` of the internal object upstream holds (``*core.ConfigMapList``, ``*apps.Deployment``)."""
    if record.custom:
        return "*unstructured.UnstructuredList" if listed else "*unstructured.Unstructured"
    package = "core" if record.group in ("", "events.k8s.io") else record.group.split(".")[0]
    return f"*{package}.{record.list_kind if listed else record.kind}"


def single_expected(record: ResourceRecord) -> errors.NotAcceptable:
    """406 for ``as=PartialObjectMetadata`` on a list."""
    return errors.NotAcceptable(
        f"you requested PartialObjectMetadata, but the requested object is a list ({_go_type(record, True)})"
    )


def list_expected(record: ResourceRecord) -> errors.NotAcceptable:
    """406 for ``as=PartialObjectMetadataList`` on a single object."""
    return errors.NotAcceptable(
        "you requested PartialObjectMetadataList, but the requested object is not a list "
        f"({_go_type(record, False)})"
    )
