"""Schemas of the OpenAPI v3 documents: built-in definitions in the OpenAPI 3.0 dialect, and the
schemas of custom kinds.

The Kubernetes 1.32 definitions shipped by ``kubernetes-validate`` (JSON Schema 2020-12) are
converted to the dialect kube-apiserver publishes: ``#/$defs/X`` becomes
``#/components/schemas/X``, ``type: [T, "null"]`` becomes ``type: T``, a ``$ref`` with siblings is
wrapped in ``allOf``, IntOrString and Quantity become ``oneOf`` of their two JSON types, and
upstream's ``+enum`` values are added. Each definition is converted once per process (cached; the
cached schemas must not be modified by callers). ``closure`` collects what a document's roots
reach; ``custom_schemas`` wraps a CRD version's schema with ``apiVersion``/``kind``/``metadata``
and builds its list schema, as upstream names them.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any

from kplane.api import catalog as catalog_mod
from kplane.api.schema import builtin

Schema = dict[str, Any]

SCHEMAS = "#/components/schemas/"
META = "io.k8s.apimachinery.pkg.apis.meta.v1."
_INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
_QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"


# --- schema conversion ---------------------------------------------------------------------------


def _ref_target(ref: str) -> str:
    return ref.rpartition("/")[2]


def _convert(node: Any, refs: set[str], *, top: bool = False) -> Any:
    """One JSON Schema node in the OpenAPI 3.0 dialect; names of referenced schemas go to ``refs``."""
    if not isinstance(node, dict):
        return node
    out: Schema = {}
    ref = node.get("$ref")
    if ref is not None:
        target = _ref_target(ref)
        refs.add(target)
        if len(node) == 1:
            return {"$ref": SCHEMAS + target}
        out["allOf"] = [{"$ref": SCHEMAS + target}]
    for key, value in node.items():
        match key:
            case "$ref" | "$schema" | "$id":
                pass
            case "type" if isinstance(value, list):
                types = [t for t in value if t != "null"]
                if len(types) == 1:
                    out["type"] = types[0]
                elif types:
                    out["anyOf"] = [{"type": t} for t in types]
            case "properties":
                props = {p: _convert(s, refs) for p, s in value.items()}
                if top:
                    # kubernetes-validate pins apiVersion/kind with an enum; upstream does not, and the
                    # meta types (Status, DeleteOptions) are shared by every group-version.
                    for p in ("apiVersion", "kind"):
                        if p in props:
                            props[p] = {k: v for k, v in props[p].items() if k != "enum"}
                out[key] = props
            case "items" | "additionalProperties" | "not":
                out[key] = _convert(value, refs)
            case "oneOf" | "anyOf" | "allOf":
                out[key] = [_convert(s, refs) for s in value]
            case _:
                out[key] = value
    return out


@functools.cache
def _converted(name: str) -> tuple[Schema, frozenset[str]]:
    """Definition ``name`` converted to OpenAPI 3.0, with the names it references directly."""
    source = builtin.definitions()[name]
    description = source.get("description")
    refs: set[str] = set()
    if name == _INT_OR_STRING:
        schema: Schema = {
            "description": description or "IntOrString holds either an int32 or a string.",
            "format": "int-or-string",
            "oneOf": [{"type": "integer"}, {"type": "string"}],
            "x-kubernetes-int-or-string": True,
        }
    elif name == _QUANTITY:
        schema = {
            "description": description or "Quantity is a fixed-point number such as 100m or 1Gi.",
            "oneOf": [{"type": "string"}, {"type": "number"}],
        }
    else:
        schema = _convert(source, refs, top=True)
        _add_enums(name, schema)
    return schema, frozenset(refs)


def _add_enums(name: str, schema: Schema) -> None:
    """Upstream's ``enum`` on the +enum-typed properties of ``name`` (in place, on the converted
    copy); a scalar's description lists the values the way upstream's generated ones begin."""
    props = schema.get("properties")
    for prop, (where, values) in builtin.enums(name).items():
        target = props.get(prop) if isinstance(props, dict) else None
        if not isinstance(target, dict):
            continue
        if where == "scalar":
            target["enum"] = list(values)
            listed = "".join(f'\n - `"{v}"`' for v in values)
            target["description"] = (target.get("description") or "") + "\n\nPossible enum values:" + listed
        elif isinstance(target.get(where), dict):
            target[where] = {**target[where], "enum": list(values)}


def closure(roots: Iterable[str], schemas: dict[str, Schema]) -> None:
    """Add to ``schemas`` every built-in definition reachable from ``roots``."""
    pending = [r for r in roots if r not in schemas]
    while pending:
        name = pending.pop()
        if name in schemas or name not in builtin.definitions():
            continue
        schema, refs = _converted(name)
        schemas[name] = schema
        pending.extend(r for r in refs if r not in schemas)


# --- custom resources -----------------------------------------------------------------------------


def _custom_name(group: str, version: str, kind: str) -> str:
    """Upstream's schema name of a custom kind: reversed group domain, version, kind."""
    return ".".join([*reversed(group.split(".")), version, kind])


def custom_schemas(record: catalog_mod.ResourceRecord) -> dict[str, Schema]:
    """The schemas of a custom kind and its list, wrapped with apiVersion/kind/metadata like upstream."""
    base: Schema = dict(record.schema or {"type": "object", "x-kubernetes-preserve-unknown-fields": True})
    properties = dict(base.get("properties") or {})
    api_version = {"type": "string", "description": "APIVersion of this representation of an object."}
    kind = {"type": "string", "description": "Kind is a string value naming the REST resource."}
    properties["apiVersion"] = api_version
    properties["kind"] = kind
    properties["metadata"] = {"allOf": [{"$ref": SCHEMAS + META + "ObjectMeta"}]}
    base["properties"] = properties
    base["type"] = "object"
    base["x-kubernetes-group-version-kind"] = [gvk_ext(record.group, record.version, record.kind)]
    item_name = _custom_name(record.group, record.version, record.kind)
    list_schema: Schema = {
        "description": f"{record.list_kind} is a list of {record.kind}",
        "required": ["items"],
        "type": "object",
        "properties": {
            "apiVersion": api_version,
            "kind": kind,
            "items": {"type": "array", "items": {"$ref": SCHEMAS + item_name}},
            "metadata": {"allOf": [{"$ref": SCHEMAS + META + "ListMeta"}]},
        },
        "x-kubernetes-group-version-kind": [gvk_ext(record.group, record.version, record.list_kind)],
    }
    return {item_name: base, _custom_name(record.group, record.version, record.list_kind): list_schema}


def gvk_ext(group: str, version: str, kind: str) -> dict[str, str]:
    """The ``x-kubernetes-group-version-kind`` entry of a kind."""
    return {"group": group, "kind": kind, "version": version}
