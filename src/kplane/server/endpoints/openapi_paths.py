"""Paths and operations of an OpenAPI v3 group-version document.

``GroupVersionDocument`` accumulates, record by record, the collection, item and subresource
paths kube-apiserver publishes (operationIds, tags, ``x-kubernetes-action``,
``x-kubernetes-group-version-kind``, query parameters, request bodies and response schemas, the
patch content types kubectl looks for) and the names of the schemas they reach; ``render`` returns
the document with every schema those names reach (``openapi_schemas``). A document is built once
and not modified after ``render``; records are only read.
"""

from __future__ import annotations

import dataclasses

from kplane.api import catalog as catalog_mod
from kplane.api.schema import builtin
from kplane.server.endpoints import discovery, openapi_schemas

Schema = openapi_schemas.Schema

_META_SCHEMAS = tuple(openapi_schemas.META + n for n in ("DeleteOptions", "Patch", "Status", "WatchEvent"))
_SUBRESOURCE_SCHEMAS = {
    ("autoscaling", "v1", "Scale"): "io.k8s.api.autoscaling.v1.Scale",
    ("policy", "v1", "Eviction"): "io.k8s.api.policy.v1.Eviction",
    ("", "v1", "Binding"): "io.k8s.api.core.v1.Binding",
}


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
    return {"$ref": openapi_schemas.SCHEMAS + name}


def _responses(schema: Schema, codes: tuple[str, ...]) -> dict[str, Schema]:
    content = {"application/json": {"schema": schema}, "application/yaml": {"schema": schema}}
    out: dict[str, Schema] = {code: {"description": "OK", "content": content} for code in codes}
    out["401"] = {"description": "Unauthorized"}
    return out


class GroupVersionDocument:
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
            schemas = openapi_schemas.custom_schemas(record)
            self.custom.update(schemas)
            kind_name, list_name = list(schemas)
        else:
            kind_name = builtin.definition_name_for_gvk(g, v, record.kind) or ""
            list_name = builtin.definition_name_for_gvk(g, v, record.list_kind) or ""
            self.roots.update(n for n in (kind_name, list_name) if n)
        obj = _ref(kind_name) if kind_name else {"type": "object"}
        lst = _ref(list_name) if list_name else {"type": "object"}
        status = _ref(openapi_schemas.META + "Status")
        ext = openapi_schemas.gvk_ext(g, v, record.kind)
        patch_types = _PATCH_TYPES[:3] if record.custom else _PATCH_TYPES
        bodies: dict[str, Schema] = {
            "object": {"content": {"*/*": {"schema": obj}}, "required": True},
            "patch": {
                "content": {t: {"schema": _ref(openapi_schemas.META + "Patch")} for t in patch_types},
                "required": True,
            },
            "delete": {"content": {"*/*": {"schema": _ref(openapi_schemas.META + "DeleteOptions")}}},
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
        ext = openapi_schemas.gvk_ext(sub.group, sub.version, sub.kind)
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
        openapi_schemas.closure(sorted(self.roots), schemas)
        openapi_schemas.closure(
            [openapi_schemas.META + "ObjectMeta", openapi_schemas.META + "ListMeta"] if self.custom else [],
            schemas,
        )
        schemas.update(self.custom)
        return {
            "openapi": "3.0.0",
            "info": {"title": "Kubernetes", "version": discovery.GIT_VERSION},
            "paths": self.paths,
            "components": {"schemas": schemas},
        }
