"""``pods/log``: container output as text.

kplane runs no containers yet (simulated nodes come with the built-in controllers), so the answers
are what upstream gives a cluster in that state: the container is validated exactly as upstream
does (a name is required when the pod has several; an unknown name is refused), a pod not bound to
a node has no log to read (400 ``does not have a host assigned``), and a bound pod's containers
have produced no output (200, empty ``text/plain``).
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from kplane.api import errors
from kplane.server.endpoints.scope import Scope


def _container_names(pod: dict[str, Any]) -> list[str]:
    spec = pod.get("spec") or {}
    names = []
    for field in ("initContainers", "containers", "ephemeralContainers"):
        names += [c.get("name", "") for c in spec.get(field) or [] if isinstance(c, dict)]
    return names


async def get(scope: Scope) -> web.StreamResponse:
    pod = await scope.registry.get(scope.record, scope.info.namespace, scope.info.name)
    name = scope.info.name
    wanted = scope.query.get("container", "")
    main = [c.get("name", "") for c in (pod.get("spec") or {}).get("containers") or [] if isinstance(c, dict)]
    if not wanted:
        if len(main) != 1:
            raise errors.BadRequest(
                f"a container name must be specified for pod {name}, choose one of: [{' '.join(main)}]"
            )
        wanted = main[0]
    elif wanted not in _container_names(pod):
        raise errors.BadRequest(f"container {wanted} is not valid for pod {name}")
    if not (pod.get("spec") or {}).get("nodeName"):
        raise errors.BadRequest(f'pod "{name}" does not have a host assigned')
    return web.Response(body=b"", headers={"Content-Type": "text/plain"})
