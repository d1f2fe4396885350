"""OpenAPI v3 documents: the ``/openapi/v3`` index and one document per served group-version.

kubectl needs these: ``apply``/``create``/``replace``/``edit`` look for a PATCH operation tagged
with the object's group-version-kind that accepts ``fieldValidation`` (then they let the server
validate), ``explain`` and client-side strategic merge patching read ``components.schemas``.

Design: a group-version document is built from the catalog records of that group-version
(``openapi_paths``) plus the Kubernetes 1.32 definitions shipped by ``kubernetes-validate``,
converted to the OpenAPI 3.0 dialect kube-apiserver publishes (``openapi_schemas``). Only the
schemas reachable from that group-version's kinds (and the meta types its operations use) are
included. Converting a definition is done once per process; a document is built lazily on first
request and cached until the catalog's generation changes. The index stays cheap: its ``hash``
query parameter is a digest of the *inputs* of a document (the records, their schemas and these
modules' output format), so it changes whenever the document would, without building it.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib.metadata
from typing import Any

import orjson

from kplane.api import catalog as catalog_mod
from kplane.api import gvk
from kplane.server.endpoints import discovery, openapi_paths

# Bump when openapi_paths or openapi_schemas change the shape of documents, so hashes change.
_FORMAT_REVISION = "2"

_cache = discovery.GenerationCache()


def gv_path(group: str, version: str) -> str:
    """The index key of a group-version: ``api/v1`` for core, ``apis/<group>/<version>`` otherwise."""
    return f"apis/{group}/{version}" if group else f"api/{version}"


def parse_gv_path(path: str) -> gvk.GroupVersion | None:
    """The group-version named by an index key (slashes around it ignored), or None if malformed."""
    match [p for p in path.split("/") if p]:
        case ["api", version]:
            return gvk.GroupVersion("", version)
        case ["apis", group, version]:
            return gvk.GroupVersion(group, version)
        case _:
            return None


def _records(catalog: catalog_mod.Catalog, group: str, version: str) -> list[catalog_mod.ResourceRecord]:
    return sorted(catalog.resources(gvk.GroupVersion(group, version)), key=lambda r: r.plural)


@functools.cache
def _definitions_version() -> str:
    try:
        return importlib.metadata.version("kubernetes-validate")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def gv_hash(catalog: catalog_mod.Catalog, group: str, version: str) -> str | None:
    """Digest of everything the group-version document is built from (upper-case hex), or None.

    Equal inputs give equal documents, so the hash changes whenever the document would change.
    Inputs are: the records and their schemas, the reported version, the output format
    (``_FORMAT_REVISION``) and the installed definitions package.
    """

    def build() -> str | None:
        records = _records(catalog, group, version)
        if not records:
            return None
        salt = f"{discovery.GIT_VERSION}/{_FORMAT_REVISION}/{_definitions_version()}"
        digest = hashlib.sha512(salt.encode())
        for record in records:
            digest.update(repr(dataclasses.replace(record, schema=None)).encode())
            digest.update(orjson.dumps(record.schema, option=orjson.OPT_SORT_KEYS))
        return digest.hexdigest().upper()

    return _cache.get(catalog, ("hash", group, version), build)


def index(catalog: catalog_mod.Catalog) -> dict[str, Any]:
    """The ``/openapi/v3`` body: one entry per served group-version, URL carrying its hash."""

    def build() -> dict[str, Any]:
        paths: dict[str, Any] = {}
        for gv in catalog.group_versions():
            key = gv_path(gv.group, gv.version)
            url = f"/openapi/v3/{key}?hash={gv_hash(catalog, gv.group, gv.version)}"
            paths[key] = {"serverRelativeURL": url}
        return {"paths": paths}

    return _cache.get(catalog, "index", build)


def index_bytes_and_etag(catalog: catalog_mod.Catalog) -> tuple[bytes, str]:
    """The serialized index and its ETag (SHA-512 hex of the bytes, unquoted)."""

    def build() -> tuple[bytes, str]:
        body = orjson.dumps(index(catalog))
        return body, discovery.etag_of(body)

    return _cache.get(catalog, "index-bytes", build)


def document_bytes_and_etag(
    catalog: catalog_mod.Catalog, group: str, version: str
) -> tuple[bytes, str] | None:
    """The OpenAPI v3 document of one group-version and its ETag, or None if it is not served.

    Built on first request (about 20 ms for ``api/v1`` or ``apps/v1`` including the one-time parse
    of the definitions) and cached until the catalog changes. Keys are sorted, so equal documents
    serialize to equal bytes.
    """

    def build() -> tuple[bytes, str] | None:
        records = _records(catalog, group, version)
        if not records:
            return None
        doc = openapi_paths.GroupVersionDocument(group, version)
        for record in records:
            doc.add_record(record)
        body = orjson.dumps(doc.render(), option=orjson.OPT_SORT_KEYS)
        return body, discovery.etag_of(body)

    return _cache.get(catalog, ("document", group, version), build)


def openapi_document(catalog: catalog_mod.Catalog, group: str, version: str) -> bytes | None:
    """The serialized OpenAPI v3 document of one group-version, or None if it is not served."""
    found = document_bytes_and_etag(catalog, group, version)
    return None if found is None else found[0]
