"""The ``scale`` subresource: an ``autoscaling/v1 Scale`` view of a resource's replica count.

Reads build the Scale from the parent object; writes (PUT, or a patch applied to the Scale) change
only the parent's replicas, through the registry's read-modify-write so concurrent writes are safe.
A ``resourceVersion`` in the written Scale is a precondition on the parent, as upstream.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from kplane.api import errors, labels
from kplane.api.catalog import ResourceRecord, ScaleSpec
from kplane.server.endpoints import negotiation, patching
from kplane.server.endpoints.scope import Scope

Object = dict[str, Any]

# What a patch to /scale is applied to: an autoscaling/v1 Scale (strategic merge needs its schema).
_SCALE_RECORD = ResourceRecord(
    group="autoscaling",
    version="v1",
    plural="scales",
    singular="scale",
    kind="Scale",
    list_kind="ScaleList",
    scope="Namespaced",
)


def _get_path(obj: Object, path: str) -> Any:
    cur: Any = obj
    for part in path.strip(".").split("."):
        if not isinstance(cur, dict):
            return None
        cur = cur.get(part)
    return cur


def _set_path(obj: Object, path: str, value: Any) -> None:
    parts = path.strip(".").split(".")
    cur = obj
    for part in parts[:-1]:
        nxt = cur.get(part)
        if not isinstance(nxt, dict):
            nxt = cur[part] = {}
        else:
            nxt = cur[part] = dict(nxt)
        cur = nxt
    cur[parts[-1]] = value


def _replicas(value: Any) -> int:
    """A stored replica count (validated on write; 0 when absent)."""
    return value if type(value) is int else 0


def to_scale(record: ResourceRecord, obj: Object) -> Object:
    spec = record.scale or ScaleSpec()
    meta = obj.get("metadata") or {}
    selector: Any
    if record.custom:
        selector = _get_path(obj, spec.label_selector_path) if spec.label_selector_path else None
    else:
        sel = (obj.get("spec") or {}).get("selector")
        selector = labels.format(sel) if isinstance(sel, dict) else None
    status: Object = {"replicas": _replicas(_get_path(obj, spec.status_replicas_path))}
    if selector:
        status["selector"] = selector
    scale_meta = {
        k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp") if k in meta
    }
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": scale_meta,
        "spec": {"replicas": _replicas(_get_path(obj, spec.spec_replicas_path))},
        "status": status,
    }


async def get(scope: Scope) -> web.StreamResponse:
    obj = await scope.registry.get(scope.record, scope.info.namespace, scope.info.name)
    return scope.respond_plain(to_scale(scope.record, obj))


async def write(scope: Scope) -> web.StreamResponse:
    record = scope.record
    spec = record.scale or ScaleSpec()
    body = await scope.body()
    if scope.request.method == "PUT":
        new_scale = negotiation.decode_object(body, scope.request.headers.get("Content-Type"), kind="Scale")

        def scale_of(current: Object) -> Object:
            return new_scale

    else:
        mt = negotiation.media_type(scope.request.headers.get("Content-Type"))
        if mt not in (negotiation.JSON_PATCH, negotiation.MERGE_PATCH, negotiation.STRATEGIC_PATCH):
            raise patching.unsupported(record)
        value = negotiation.decode_patch(body, mt)
        apply = patching.transform_for(_SCALE_RECORD, mt, value)

        def scale_of(current: Object) -> Object:
            return apply(to_scale(record, current))

    def transform(current: Object) -> Object:
        new_scale = scale_of(current)
        spec_value = new_scale.get("spec")
        replicas = spec_value.get("replicas") if isinstance(spec_value, dict) else None
        if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
            raise errors.invalid_object(
                "Scale",
                "autoscaling",
                scope.info.name,
                [errors.invalid("spec.replicas", replicas, "must be greater than or equal to 0")],
            )
        rv = (new_scale.get("metadata") or {}).get("resourceVersion")
        if rv and rv != current["metadata"].get("resourceVersion"):
            raise errors.modified_conflict(record.group_resource, scope.info.name)
        new = dict(current)
        _set_path(new, spec.spec_replicas_path, replicas)
        return new

    updated = await scope.registry.update(
        record,
        scope.info.namespace,
        scope.info.name,
        transform,
        subresource="scale",
        opts=scope.write_options(),
    )
    return scope.respond_plain(to_scale(record, updated))
