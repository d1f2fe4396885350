"""OpenAPI v3 documents: the ``/openapi/v3`` index and one document per served group-version.

kubectl needs these: ``apply``/``create``/``replace``/``edit`` look for a PATCH operation tagged
with the object's group-version-kind that accepts ``fieldValidation`` (then they let the server
validate), ``explain`` and client-side strategic merge patching read ``components.schemas``.

Design: a group-version document is built from the catalog records of that group-version plus the
Kubernetes 1.32 definitions shipped by ``kubernetes-validate`` (JSON Schema 2020-12), converted to
the OpenAPI 3.0 dialect kube-apiserver publishes: ``#/$defs/X`` becomes
``#/components/schemas/X``, ``type: [T, "null"]`` becomes ``type: T``, a ``$ref`` with siblings is
wrapped in ``allOf``, IntOrString and Quantity become ``oneOf`` of their two JSON types. Only the
schemas reachable from that group-version's kinds (and the meta types its operations use) are
included. Converting a definition is done once per process; a document is built lazily on first
request and cached until the catalog's generation changes. The index stays cheap: its ``hash``
query parameter is a digest of the *inputs* of a document (the records, their schemas and this
module's output format), so it changes whenever the document would, without building it.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib.metadata
from collections.abc import Iterable
from typing import Any

import orjson

from kplane.api import catalog as catalog_mod
from kplane.api import gvk
from kplane.api.schema import builtin
from kplane.server.endpoints import discovery

Schema = dict[str, Any]

_FORMAT_REVISION = "2"  # bump when the shape of generated documents changes, so hashes change
_SCHEMAS = "#/components/schemas/"
_META = "io.k8s.apimachinery.pkg.apis.meta.v1."
_INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
_QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
_META_SCHEMAS = tuple(_META + n for n in ("DeleteOptions", "Patch", "Status", "WatchEvent"))
_SUBRESOURCE_SCHEMAS = {
    ("autoscaling", "v1", "Scale"): "io.k8s.api.autoscaling.v1.Scale",
    ("policy", "v1", "Eviction"): "io.k8s.api.policy.v1.Eviction",
    ("", "v1", "Binding"): "io.k8s.api.core.v1.Binding",
}

_cache = discovery.GenerationCache()


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
            return {"$ref": _SCHEMAS + target}
        out["allOf"] = [{"$ref": _SCHEMAS + target}]
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


def _closure(roots: Iterable[str], schemas: dict[str, Schema]) -> None:
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


def _custom_schemas(record: catalog_mod.ResourceRecord) -> dict[str, Schema]:
    """The schemas of a custom kind and its list, wrapped with apiVersion/kind/metadata like upstream."""
    base: Schema = dict(record.schema or {"type": "object", "x-kubernetes-preserve-unknown-fields": True})
    properties = dict(base.get("properties") or {})
    api_version = {"type": "string", "description": "APIVersion of this representation of an object."}
    kind = {"type": "string", "description": "Kind is a string value naming the REST resource."}
    properties["apiVersion"] = api_version
    properties["kind"] = kind
    properties["metadata"] = {"allOf": [{"$ref": _SCHEMAS + _META + "ObjectMeta"}]}
    base["properties"] = properties
    base["type"] = "object"
    base["x-kubernetes-group-version-kind"] = [_gvk_ext(record.group, record.version, record.kind)]
    item_name = _custom_name(record.group, record.version, record.kind)
    list_schema: Schema = {
        "description": f"{record.list_kind} is a list of {record.kind}",
        "required": ["items"],
        "type": "object",
        "properties": {
            "apiVersion": api_version,
            "kind": kind,
            "items": {"type": "array", "items": {"$ref": _SCHEMAS + item_name}},
            "metadata": {"allOf": [{"$ref": _SCHEMAS + _META + "ListMeta"}]},
        },
        "x-kubernetes-group-version-kind": [_gvk_ext(record.group, record.version, record.list_kind)],
    }
    return {item_name: base, _custom_name(record.group, record.version, record.list_kind): list_schema}


# --- paths and operations -------------------------------------------------------------------------


def _gvk_ext(group: str, version: str, kind: str) -> dict[str, str]:
    return {"group": group, "kind": kind, "version": version}


def _query(name: str, description: str, type_: str = "string") -> Schema:
    return {"name": name, "in": "query", "description": description, "schema": {"type": type_}}


_Q = {
    "pretty": _query("pretty", "If 'true', the output is pretty printed."),
    "dryRun": _query("dryRun", "When present, modifications are not persisted. Valid value: All."),
    "fieldManager": _query("fieldManager", "Name of the actor making these changes (server-side apply)."),
    "fieldValidation": _query(
        "fieldValidation",
        "How the server treats unknown and duplicate fields in the body: Ignore, Warn or Strict.",
    ),
    "force": _query("force", "Force an apply request, taking ownership of conflicting fields.", "boolean"),
    "gracePeriodSeconds": _query("gracePeriodSeconds", "Seconds before the object is deleted.", "integer"),
    "orphanDependents": _query("orphanDependents", "Deprecated: use propagationPolicy.", "boolean"),
    "propagationPolicy": _query(
        "propagationPolicy", "Garbage collection of dependents: Orphan, Background or Foreground."
    ),
    "allowWatchBookmarks": _query("allowWatchBookmarks", "Request BOOKMARK watch events.", "boolean"),
    "continue": _query("continue", "Token from a previous paginated list, to fetch the next page."),
    "fieldSelector": _query("fieldSelector", "Restrict the returned objects by their fields."),
    "labelSelector": _query("labelSelector", "Restrict the returned objects by their labels."),
    "limit": _query("limit", "Maximum number of objects to return in one page.", "integer"),
    "resourceVersion": _query("resourceVersion", "Which version of the collection or object to serve."),
    "resourceVersionMatch": _query("resourceVersionMatch", "How resourceVersion applies to lists."),
    "sendInitialEvents": _query("sendInitialEvents", "Start a watch with synthetic ADDED events.", "boolean"),
    "timeoutSeconds": _query("timeoutSeconds", "Timeout of a list or watch call.", "integer"),
    "watch": _query("watch", "Watch for changes instead of listing.", "boolean"),
}
_LIST_PARAMS = (
    "allowWatchBookmarks",
    "continue",
    "fieldSelector",
    "labelSelector",
    "limit",
    "resourceVersion",
    "resourceVersionMatch",
    "sendInitialEvents",
    "timeoutSeconds",
)
_WRITE_PARAMS = ("dryRun", "fieldManager", "fieldValidation")
_DELETE_PARAMS = ("dryRun", "gracePeriodSeconds", "orphanDependents", "propagationPolicy")
_PATCH_TYPES = (
    "application/apply-patch+yaml",
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
)


@dataclasses.dataclass(frozen=True, slots=True)
class _Op:
    """One kind of operation: HTTP method, operationId verb, ``x-kubernetes-action``, query
    parameters, success codes, what its request body carries, and an operationId infix."""

    method: str
    verb: str
    action: str
    params: tuple[str, ...]
    codes: tuple[str, ...]
    body: str = ""  # "object", "patch", "delete" or "" (none)
    id_infix: str = ""


_LIST = _Op("get", "list", "list", (*_LIST_PARAMS, "watch"), ("200",))
_CREATE = _Op("post", "create", "post", _WRITE_PARAMS, ("200", "201", "202"), "object")
_DELETE_COLLECTION = _Op(
    "delete", "delete", "deletecollection", (*_DELETE_PARAMS, *_LIST_PARAMS), ("200",), "delete", "Collection"
)
_READ = _Op("get", "read", "get", (), ("200",))
_REPLACE = _Op("put", "replace", "put", _WRITE_PARAMS, ("200", "201"), "object")
_PATCH = _Op("patch", "patch", "patch", (*_WRITE_PARAMS, "force"), ("200", "201"), "patch")
_DELETE = _Op("delete", "delete", "delete", _DELETE_PARAMS, ("200", "202"), "delete")

_COLLECTION_OPS = {"list": _LIST, "create": _CREATE, "deletecollection": _DELETE_COLLECTION}
_ITEM_OPS = {"get": _READ, "update": _REPLACE, "patch": _PATCH, "delete": _DELETE}
_SUBRESOURCE_OPS = {"get": _READ, "update": _REPLACE, "patch": _PATCH, "create": _CREATE}


def _path_param(name: str, what: str) -> Schema:
    return {"name": name, "in": "path", "required": True, "description": what, "schema": {"type": "string"}}


def _ref(name: str) -> Schema:
    return {"$ref": _SCHEMAS + name}


def _responses(schema: Schema, codes: tuple[str, ...]) -> dict[str, Schema]:
    content = {"application/json": {"schema": schema}, "application/yaml": {"schema": schema}}
    out: dict[str, Schema] = {code: {"description": "OK", "content": content} for code in codes}
    out["401"] = {"description": "Unauthorized"}
    return out


class _GroupVersionDocument:
    """Accumulates the paths and schema names of one group-version document."""

    def __init__(self, group: str, version: str) -> None:
        self.paths: dict[str, Schema] = {}
        self.roots: set[str] = set(_META_SCHEMAS)
        self.custom: dict[str, Schema] = {}
        words = [w for w in group.removesuffix(".k8s.io").replace("-", ".").split(".") if w] or ["core"]
        self._id_prefix = "".join(w[:1].upper() + w[1:] for w in words) + version.capitalize()
        self._tag = words[0] + "".join(w[:1].upper() + w[1:] for w in words[1:]) + "_" + version
        self._prefix = f"/apis/{group}/{version}" if group else f"/api/{version}"

    def _path(
        self,
        path: str,
        params: list[Schema],
        id_suffix: str,
        ext: dict[str, str],
        ops: list[tuple[_Op, Schema]],
        bodies: dict[str, Schema],
    ) -> None:
        """Add one path item holding ``ops``, each with the schema its success responses carry."""
        item: Schema = {"parameters": params}
        for op, response in ops:
            operation: Schema = {
                "tags": [self._tag],
                "description": f"{op.verb} {ext['kind']}",
                "operationId": op.verb + self._id_prefix + op.id_infix + id_suffix,
                "parameters": [_Q[p] for p in op.params],
                "responses": _responses(response, op.codes),
                "x-kubernetes-action": op.action,
                "x-kubernetes-group-version-kind": ext,
            }
            if op.body:
                operation["requestBody"] = bodies[op.body]
            item[op.method] = operation
        self.paths[path] = item

    def add_record(self, record: catalog_mod.ResourceRecord) -> None:
        """Add the collection, item and subresource paths of ``record`` and note its schemas."""
        g, v = record.group, record.version
        if record.custom:
            schemas = _custom_schemas(record)
            self.custom.update(schemas)
            kind_name, list_name = list(schemas)
        else:
            kind_name = builtin.definition_name_for_gvk(g, v, record.kind) or ""
            list_name = builtin.definition_name_for_gvk(g, v, record.list_kind) or ""
            self.roots.update(n for n in (kind_name, list_name) if n)
        obj = _ref(kind_name) if kind_name else {"type": "object"}
        lst = _ref(list_name) if list_name else {"type": "object"}
        status = _ref(_META + "Status")
        ext = _gvk_ext(g, v, record.kind)
        patch_types = _PATCH_TYPES[:3] if record.custom else _PATCH_TYPES
        bodies: dict[str, Schema] = {
            "object": {"content": {"*/*": {"schema": obj}}, "required": True},
            "patch": {
                "content": {t: {"schema": _ref(_META + "Patch")} for t in patch_types},
                "required": True,
            },
            "delete": {"content": {"*/*": {"schema": _ref(_META + "DeleteOptions")}}},
        }
        ns = "Namespaced" if record.namespaced else ""
        base = f"{self._prefix}/{record.plural}"
        common = [_Q["pretty"]]
        if ns:
            base = f"{self._prefix}/namespaces/{{namespace}}/{record.plural}"
            common.insert(0, _path_param("namespace", "object name and auth scope, such as for teams"))
        named = [_path_param("name", f"name of the {record.kind}"), *common]
        collection_responses = {_LIST: lst, _CREATE: obj, _DELETE_COLLECTION: status}
        ops = [(op, collection_responses[op]) for verb, op in _COLLECTION_OPS.items() if verb in record.verbs]
        self._path(base, common, ns + record.kind, ext, ops, bodies)
        if ns and "list" in record.verbs:
            every = f"{self._prefix}/{record.plural}"
            self._path(every, [_Q["pretty"]], record.kind + "ForAllNamespaces", ext, [(_LIST, lst)], bodies)
        deleted = obj if record.return_deleted_object else status
        ops = [
            (op, deleted if op is _DELETE else obj) for verb, op in _ITEM_OPS.items() if verb in record.verbs
        ]
        self._path(f"{base}/{{name}}", named, ns + record.kind, ext, ops, bodies)
        for sub in discovery.subresources(record):
            self._add_subresource(record, sub, f"{base}/{{name}}/{sub.name}", named, obj, bodies)

    def _add_subresource(
        self,
        record: catalog_mod.ResourceRecord,
        sub: discovery.Subresource,
        path: str,
        params: list[Schema],
        obj: Schema,
        bodies: dict[str, Schema],
    ) -> None:
        id_suffix = ("Namespaced" if record.namespaced else "") + record.kind + sub.name.capitalize()
        ext = _gvk_ext(sub.group, sub.version, sub.kind)
        target = _SUBRESOURCE_SCHEMAS.get((sub.group, sub.version, sub.kind))
        schema: Schema = {"type": "object"}
        if target is not None:
            self.roots.add(target)
            schema = _ref(target)
        elif sub.kind == record.kind:
            schema = obj
        if sub.name == "log":
            schema = {"type": "string"}
        bodies = {**bodies, "object": {"content": {"*/*": {"schema": schema}}, "required": True}}
        ops = [(op, schema) for verb, op in _SUBRESOURCE_OPS.items() if verb in sub.verbs]
        self._path(path, params, id_suffix, ext, ops, bodies)

    def render(self) -> Schema:
        """The document: its paths and every schema they reach."""
        schemas: dict[str, Schema] = {}
        _closure(sorted(self.roots), schemas)
        _closure([_META + "ObjectMeta", _META + "ListMeta"] if self.custom else [], schemas)
        schemas.update(self.custom)
        return {
            "openapi": "3.0.0",
            "info": {"title": "Kubernetes", "version": discovery.GIT_VERSION},
            "paths": self.paths,
            "components": {"schemas": schemas},
        }


# --- public API -----------------------------------------------------------------------------------


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
    Inputs are: the records and their schemas, the reported version, this module's output format
    and the installed definitions package.
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
        doc = _GroupVersionDocument(group, version)
        for record in records:
            doc.add_record(record)
        body = orjson.dumps(doc.render(), option=orjson.OPT_SORT_KEYS)
        return body, discovery.etag_of(body)

    return _cache.get(catalog, ("document", group, version), build)


def openapi_document(catalog: catalog_mod.Catalog, group: str, version: str) -> bytes | None:
    """The serialized OpenAPI v3 document of one group-version, or None if it is not served."""
    found = document_bytes_and_etag(catalog, group, version)
    return None if found is None else found[0]
