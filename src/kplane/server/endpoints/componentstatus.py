"""``componentstatuses`` (core/v1, deprecated upstream since 1.19): the health of the components
behind the API server, computed on each request, never stored.

kube-apiserver probes the scheduler, the controller manager and each etcd server. kplane has no
scheduler or controller manager process; its one component is its storage, reported as
``etcd-0`` (the name clients and dashboards look for) and healthy when a read of it succeeds.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from kplane.api import errors
from kplane.server import storage
from kplane.server.endpoints.scope import Scope

# upstream: pkg/registry/core/componentstatus/rest.go (the warning every response carries)
DEPRECATION = "v1 ComponentStatus is deprecated in v1.19+"


async def _statuses(scope: Scope) -> list[dict[str, Any]]:
    condition: dict[str, str] = {"type": "Healthy", "status": "True", "message": "ok"}
    try:
        await scope.registry.ping()
    except storage.StorageError as err:
        condition = {"type": "Healthy", "status": "False", "error": str(err)}
    return [
        {
            "kind": "ComponentStatus",
            "apiVersion": "v1",
            "metadata": {"name": "etcd-0"},
            "conditions": [condition],
        }
    ]


async def get(scope: Scope) -> web.StreamResponse:
    scope.warnings.append(DEPRECATION)
    for item in await _statuses(scope):
        if item["metadata"]["name"] == scope.info.name:
            return scope.respond(item)
    raise errors.not_found(scope.record.group_resource, scope.info.name)


async def list_(scope: Scope) -> web.StreamResponse:
    scope.warnings.append(DEPRECATION)
    return scope.respond_items(await _statuses(scope))
