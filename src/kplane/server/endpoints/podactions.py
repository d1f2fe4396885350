"""``pods/binding`` (what a scheduler posts) and ``pods/eviction`` (what ``kubectl drain`` posts).

Binding sets ``spec.nodeName`` once (409 if the pod is already bound). Eviction deletes the pod with
the eviction's ``deleteOptions``; PodDisruptionBudgets are not consulted yet (no disruption
controller maintains their status), so an eviction is never refused with 429. Both answer 201 with
a ``Status`` of ``Success``, as upstream.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from kplane.api import errors
from kplane.server.endpoints import negotiation
from kplane.server.endpoints.scope import Scope
from kplane.server.registry.store import DeleteOptions

SUCCESS = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}


async def bind(scope: Scope) -> web.StreamResponse:
    body = negotiation.decode_object(await scope.body(), scope.request.headers.get("Content-Type"))
    target = body.get("target")
    node = target.get("name") if isinstance(target, dict) else None
    if not node:
        raise errors.invalid_object("Binding", "", scope.info.name, [errors.required("target.name")])
    name = scope.info.name

    def assign(pod: dict[str, Any]) -> dict[str, Any]:
        spec = pod.get("spec") or {}
        if spec.get("nodeName"):
            raise errors.conflict(
                scope.record.group_resource,
                name,
                f'pod {name} is already assigned to node "{spec["nodeName"]}"',
            )
        return {**pod, "spec": {**spec, "nodeName": node}}

    await scope.registry.update(scope.record, scope.info.namespace, name, assign, opts=scope.write_options())
    return scope.respond_plain(SUCCESS, 201)


async def evict(scope: Scope) -> web.StreamResponse:
    body = negotiation.decode_object(await scope.body(), scope.request.headers.get("Content-Type"))
    raw = body.get("deleteOptions") or {}
    if not isinstance(raw, dict):
        raise errors.BadRequest("deleteOptions must be an object")
    pre = raw.get("preconditions") or {}
    opts = DeleteOptions(
        grace_period_seconds=raw.get("gracePeriodSeconds"),
        propagation_policy=raw.get("propagationPolicy"),
        uid=pre.get("uid") if isinstance(pre, dict) else None,
        resource_version=pre.get("resourceVersion") if isinstance(pre, dict) else None,
        dry_run=bool(raw.get("dryRun")) or scope.dry_run(),
    )
    await scope.registry.delete(scope.record, scope.info.namespace, scope.info.name, opts)
    return scope.respond_plain(SUCCESS, 201)
