"""``/healthz``, ``/livez`` and ``/readyz``, with kube-apiserver's checks and output.

Each endpoint runs its named checks in order (``k8s.io/apiserver/pkg/server/healthz``): all pass
→ 200 ``ok``, or with ``?verbose`` one ``[+]<check> ok`` line per check and ``<endpoint> check
passed``; any fails → 500 with every line (failures as ``[-]<check> failed: reason withheld``) and
``<endpoint> check failed``. ``?exclude=<check>`` (repeatable) skips a check (``[+]<check>
excluded: ok``) and unknown names are reported in a ``warn:`` line. ``/<endpoint>/<check>`` runs
one check: ``ok`` or 500 ``internal server error: <reason>``.

The checks are kplane's own, named as upstream names their counterparts: ``ping``, ``log``,
``etcd`` (the storage answers a read), readyz's ``etcd-readiness``, ``informer-sync`` (the cache
is loaded) and ``shutdown``, and post-start hooks for start-up steps kplane really has.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from aiohttp import web

from kplane.api import errors

Check = Callable[[], Awaitable[None]]
"""Raises (any exception, its text is the reason) when unhealthy."""

ENDPOINTS = ("healthz", "livez", "readyz")
_TEXT = "text/plain"


@dataclass(frozen=True)
class NamedCheck:
    name: str
    check: Check
    endpoints: tuple[str, ...] = ENDPOINTS


class Health:
    """The checks of one server; ``serve`` answers the three endpoints and their per-check paths."""

    def __init__(self, checks: list[NamedCheck]) -> None:
        self.checks = checks

    def _of(self, endpoint: str) -> list[NamedCheck]:
        return [c for c in self.checks if endpoint in c.endpoints]

    async def serve(self, request: web.BaseRequest, parts: tuple[str, ...]) -> web.StreamResponse:
        endpoint = parts[0]
        if len(parts) > 1:
            name = "/".join(parts[1:])
            found = next((c for c in self._of(endpoint) if c.name == name), None)
            if found is None:
                raise errors.resource_not_found()
            try:
                await found.check()
            except Exception as err:  # a check's failure is its answer, whatever it is
                return _plain(500, f"internal server error: {err}\n")
            return _plain(200, "ok")
        excluded = dict.fromkeys(request.query.getall("exclude", ()))
        lines: list[str] = []
        failed = False
        for c in self._of(endpoint):
            if c.name in excluded:
                excluded.pop(c.name)
                lines.append(f"[+]{c.name} excluded: ok\n")
                continue
            try:
                await c.check()
            except Exception:  # reasons are withheld on these public endpoints, as upstream
                failed = True
                lines.append(f"[-]{c.name} failed: reason withheld\n")
            else:
                lines.append(f"[+]{c.name} ok\n")
        if excluded:
            names = ",".join(f'"{n}"' for n in sorted(excluded))
            lines.append(f"warn: some health checks cannot be excluded: no matches for {names}\n")
        if failed:
            return _plain(500, "".join(lines) + f"{endpoint} check failed\n")
        if "verbose" not in request.query:
            return _plain(200, "ok")
        return _plain(200, "".join(lines) + f"{endpoint} check passed\n")


def _plain(status: int, text: str) -> web.Response:
    return web.Response(
        status=status,
        body=text.encode(),
        headers={"Content-Type": "text/plain; charset=utf-8", "X-Content-Type-Options": "nosniff"},
    )
