"""The manager's plain-HTTP endpoints: ``/metrics`` (with ``/debug/kplane/traces``, the reconcile
traces, when tracing), and the ``/healthz`` and ``/readyz`` probes.

Probes answer as controller-runtime's ``healthz`` handler does: 200 ``ok`` when every check passes,
500 with one ``[+]name ok`` / ``[-]name failed: reason`` line per check otherwise; ``?verbose``
lists the checks on success too, and ``/readyz/<name>`` runs one check. A check is a function
returning None (healthy) or raising; it may be a coroutine function.
"""

from __future__ import annotations

import contextlib
import inspect
import os
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

import orjson
import prometheus_client

from kplane._util.lazy import lazy_module

if TYPE_CHECKING:
    from aiohttp import web
else:  # aiohttp's server side (~2 MiB) loads only when a manager serves an endpoint
    web = lazy_module("aiohttp.web")

UNIX_PREFIX = "unix:"
"""An address ``unix:PATH`` names a Unix domain socket rather than ``host:port``."""

Check = Callable[[], Awaitable[None] | None]
"""A health check: returns when healthy, raises (the message is reported) when not."""


async def _run(check: Check) -> str:
    try:
        result = check()
        if inspect.isawaitable(result):
            await result
    except Exception as err:
        return str(err) or type(err).__name__
    return ""


def probe_handler(checks: dict[str, Check]) -> Callable[[web.Request], Awaitable[web.Response]]:
    """The aiohttp handler of one probe endpoint over ``checks`` (read at request time)."""

    async def handle(request: web.Request) -> web.Response:
        only = request.match_info.get("check", "")
        if only and only not in checks:
            return web.Response(status=404, text=f"no such health check: {only}\n")
        lines, failed = [], False
        for name, check in checks.items():
            if only and name != only:
                continue
            reason = await _run(check)
            failed = failed or bool(reason)
            lines.append(f"[-]{name} failed: {reason}" if reason else f"[+]{name} ok")
        if failed:
            return web.Response(status=500, text="\n".join([*lines, "healthz check failed"]) + "\n")
        if "verbose" in request.query:
            return web.Response(text="\n".join([*lines, "healthz check passed"]) + "\n")
        return web.Response(text="ok")

    return handle


class HTTPServer:
    """One aiohttp site on ``host:port`` (port 0 picks a free one; see ``port`` after ``listen``), or
    on a Unix domain socket for an address ``unix:PATH``: the socket file is made mode 0600, so only
    its owner can connect (put it in a directory only the owner can enter, as the bind and the
    chmod are two steps)."""

    runnable_group = "http"

    def __init__(self, address: str, app: web.Application) -> None:
        self.path = address.removeprefix(UNIX_PREFIX) if address.startswith(UNIX_PREFIX) else ""
        host, _, port = ("", "", "0") if self.path else address.rpartition(":")
        self.host = host or "0.0.0.0"
        self.port = int(port)
        self._app = app
        self._runner: web.AppRunner | None = None

    async def listen(self) -> None:
        """Bind and serve in the background; returns once the socket accepts connections."""
        self._runner = web.AppRunner(self._app, access_log=None, handle_signals=False)
        await self._runner.setup()
        if self.path:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)  # a previous process's socket
            unix = web.UnixSite(self._runner, self.path)
            await unix.start()
            os.chmod(self.path, 0o600)
            return
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        if self.port == 0 and self._runner.addresses:
            self.port = int(self._runner.addresses[0][1])

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
            if self.path:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self.path)

    @property
    def listening(self) -> bool:
        """True once ``listen`` bound the socket (a TCP port 0 is known only then)."""
        return self._runner is not None and bool(self.path or self.port)

    @property
    def url(self) -> str:
        """``http://host:port``, or ``unix:PATH`` for a Unix domain socket."""
        return UNIX_PREFIX + self.path if self.path else f"http://{self.host}:{self.port}"


TRACES_PATH = "/debug/kplane/traces"


def metrics_app(
    exposition: Callable[[], bytes], *, traces: Callable[[Mapping[str, str]], Any] | None = None
) -> web.Application:
    """An app serving ``exposition()`` on ``/metrics`` in the Prometheus text format and, with
    ``traces``, the reconcile traces it returns for the query as JSON on ``/debug/kplane/traces``."""

    async def handle(request: web.Request) -> web.Response:
        return web.Response(
            body=exposition(), headers={"Content-Type": prometheus_client.CONTENT_TYPE_LATEST}
        )

    app = web.Application()
    app.router.add_get("/metrics", handle)
    if traces is not None:
        query = traces

        async def handle_traces(request: web.Request) -> web.Response:
            return web.Response(body=orjson.dumps(query(request.query)), content_type="application/json")

        app.router.add_get(TRACES_PATH, handle_traces)
    return app


def probes_app(healthz: dict[str, Check], readyz: dict[str, Check]) -> web.Application:
    """An app serving ``/healthz`` and ``/readyz`` (and ``/<probe>/<check>``)."""
    app = web.Application()
    for path, checks in (("/healthz", healthz), ("/readyz", readyz)):
        handler = probe_handler(checks)
        app.router.add_get(path, handler)
        app.router.add_get(path + "/{check}", handler)
    return app
