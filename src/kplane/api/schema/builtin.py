"""The Kubernetes 1.32 definitions shipped by the ``kubernetes-validate`` package.

The file is one JSON Schema document whose ``$defs`` are keyed by Go type name
(``io.k8s.api.apps.v1.Deployment``); top-level kinds carry ``x-kubernetes-group-version-kind``.
It is parsed once, on first use (about 10 ms with ``orjson`` for 1.3 MB), and cached for the life
of the process; callers must treat every returned dict as read-only.
"""

from __future__ import annotations

import functools
import importlib.util
import pathlib
from collections.abc import Mapping
from typing import Any

import orjson

from kplane.api.schema import node

KUBERNETES_VERSION = "1.32.0"
_RESOURCE = ("kubernetes-json-schema", f"v{KUBERNETES_VERSION}-local", "_definitions.json")


@functools.cache
def definitions() -> Mapping[str, Mapping[str, Any]]:
    """Every definition by name. Loaded lazily once; read-only (shared by all callers)."""
    document = orjson.loads(_package_dir().joinpath(*_RESOURCE).read_bytes())
    defs: dict[str, Mapping[str, Any]] = document["$defs"]
    return defs


def _package_dir() -> pathlib.Path:
    # find_spec locates the package without importing it: importing kubernetes_validate pulls in
    # jsonschema and costs ~100 ms, ten times the parse itself.
    spec = importlib.util.find_spec("kubernetes_validate")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the kubernetes-validate package is not installed")
    return pathlib.Path(next(iter(spec.submodule_search_locations)))


@functools.cache
def _gvk_index() -> Mapping[tuple[str, str, str], str]:
    index: dict[tuple[str, str, str], str] = {}
    for name, schema in definitions().items():
        for gvk in schema.get("x-kubernetes-group-version-kind") or ():
            key = (gvk.get("group", ""), gvk.get("version", ""), gvk.get("kind", ""))
            # Shared meta types (DeleteOptions, WatchEvent, Status) list every group; a kind's own
            # definition lists exactly one GVK, so it wins over a shared one for the same key.
            if key not in index or len(schema["x-kubernetes-group-version-kind"]) == 1:
                index[key] = name
    return index


def definition_name_for_gvk(group: str, version: str, kind: str) -> str | None:
    """The definition name of a built-in kind, e.g. ``("apps", "v1", "Deployment")`` →
    ``io.k8s.api.apps.v1.Deployment``; None when the kind is not built in."""
    return _gvk_index().get((group, version, kind))


@functools.cache
def node_for_definition(name: str) -> node.SchemaNode | None:
    """A cached root ``SchemaNode`` for one definition, or None if there is no such definition."""
    defs = definitions()
    schema = defs.get(name)
    return node.SchemaNode(schema, defs) if schema is not None else None


def node_for_gvk(group: str, version: str, kind: str) -> node.SchemaNode | None:
    """A cached root ``SchemaNode`` for a built-in kind, or None when the kind is not built in."""
    name = definition_name_for_gvk(group, version, kind)
    return node_for_definition(name) if name is not None else None


def enums(name: str) -> Mapping[str, tuple[str, tuple[str, ...]]]:
    """Upstream's OpenAPI enums of one definition's properties: property -> (where the enum applies:
    ``"scalar"``, ``"items"`` or ``"additionalProperties"``; the values, sorted). Empty when none.

    The ``kubernetes-validate`` definitions lack them; they come from the ``+enum`` Go types of
    k8s.io/api (``_go_types``, generated). They are documentation: upstream's schema validation of
    built-in kinds does not enforce them (its hand-written validation does, field by field).
    """
    from kplane.api.schema import _go_types

    return _go_types.ENUMS.get(name, {})


@functools.cache
def zero_object(name: str) -> Mapping[str, Any]:
    """The JSON of the Go zero value of definition ``name``, as far as it has objects: every
    non-pointer struct field present as an (itself zero) object, fields marshalled as null
    (pointers, slices and maps without ``omitempty``) as None, nothing else. Shared and
    read-only. A Deployment's is ``{"spec": {"strategy": {}, "template": {"metadata": {},
    "spec": {...}}}, "status": {}, ...}``."""
    from kplane.api.schema import _go_types

    return {
        prop: None if child is None else zero_object(child)
        for prop, child in _go_types.VALUE_STRUCTS.get(name, {}).items()
    }


def zero_object_for_gvk(group: str, version: str, kind: str) -> Mapping[str, Any]:
    """``zero_object`` of a built-in kind; ``{}`` for a kind that is not built in."""
    name = definition_name_for_gvk(group, version, kind)
    return zero_object(name) if name is not None else {}


# Enums upstream's hand-written validation enforces with field.NotSupported at the field itself,
# listing the values sorted (sets.List of a set): the compiled schemas check these, with the same
# message. Other enums are not enforced by schema (as upstream); some are checked by strategies.
_ENFORCED_ENUMS = (
    # pkg/apis/core/validation: validatePullPolicy (supportedPullPolicies).
    ("io.k8s.api.core.v1.Container", "imagePullPolicy"),
    ("io.k8s.api.core.v1.EphemeralContainer", "imagePullPolicy"),
    # validateContainerPorts / validateServicePort (supportedPortProtocols).
    ("io.k8s.api.core.v1.ContainerPort", "protocol"),
    ("io.k8s.api.core.v1.ServicePort", "protocol"),
    # ValidateService (supportedSessionAffinityType).
    ("io.k8s.api.core.v1.ServiceSpec", "sessionAffinity"),
    # pkg/apis/storage/validation validateVolumeBindingMode (supportedVolumeBindingModes).
    ("io.k8s.api.storage.v1.StorageClass", "volumeBindingMode"),
)


@functools.cache
def validation_definitions() -> Mapping[str, Mapping[str, Any]]:
    """``definitions`` with the enums upstream enforces (``_ENFORCED_ENUMS``) added, for the
    schema compiler. Read-only, shared."""
    defs = dict(definitions())
    for name, prop in _ENFORCED_ENUMS:
        where, values = enums(name)[prop]
        assert where == "scalar"
        definition = defs[name]
        props = dict(definition["properties"])
        props[prop] = {**props[prop], "enum": list(values)}
        defs[name] = {**definition, "properties": props}
    return defs
