"""Connection deadlines: a client that does not finish its request headers in time, or leaves a
keep-alive connection idle too long, is disconnected.

aiohttp only offers a keep-alive timeout (checked while the connection waits for a request). Go's
``http.Server``, which kube-apiserver runs with ``ReadHeaderTimeout: 32s`` and ``IdleTimeout:
90s`` (apiserver server/secure_serving.go), also bounds the time to read one request's headers,
so that half-open connections (slowloris) cannot pile up. ``HeaderTimeoutHandler`` adds that: the
deadline starts when a connection opens and whenever an idle connection receives the first bytes
of its next request, and ends once a whole header block is parsed. Requests being served (a watch,
a slow body upload) are never cut by either deadline.
"""

from __future__ import annotations

import asyncio
import socket
from typing import Any

from aiohttp import web
from aiohttp.web_protocol import RequestHandler

READ_HEADER_TIMEOUT = 32.0
IDLE_TIMEOUT = 90.0


class HeaderTimeoutHandler(RequestHandler):
    """aiohttp's connection handler with a deadline on reading request headers."""

    __slots__ = ("_header_deadline", "_header_timeout", "_requests_at_arm")

    def __init__(self, manager: Any, *, read_header_timeout: float, **kwargs: Any) -> None:
        super().__init__(manager, **kwargs)
        self._header_timeout = read_header_timeout
        self._header_deadline: asyncio.TimerHandle | None = None
        self._requests_at_arm = 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        before = self._request_count
        super().data_received(data)
        if self._request_count != before:
            self._disarm()  # a whole header block arrived
        elif data and self._header_deadline is None and self._idle():
            self._arm()  # the first bytes of the next request on a kept-alive connection

    def connection_lost(self, exc: BaseException | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _idle(self) -> bool:
        waiter = self._waiter
        return waiter is not None and not waiter.done()

    def _arm(self) -> None:
        if self._header_timeout <= 0:
            return
        self._requests_at_arm = self._request_count
        self._header_deadline = self._loop.call_later(self._header_timeout, self._expire)

    def _disarm(self) -> None:
        if self._header_deadline is not None:
            self._header_deadline.cancel()
            self._header_deadline = None

    def _expire(self) -> None:
        self._header_deadline = None
        if self._request_count == self._requests_at_arm:
            self.force_close()


class Server(web.Server):
    """``web.Server`` whose connections use ``HeaderTimeoutHandler``; ``idle_timeout`` is aiohttp's
    keep-alive timeout."""

    def __init__(
        self, handler: Any, *, read_header_timeout: float, idle_timeout: float, **kwargs: Any
    ) -> None:
        super().__init__(handler, keepalive_timeout=idle_timeout, **kwargs)
        self._read_header_timeout = read_header_timeout

    def __call__(self) -> RequestHandler:
        return HeaderTimeoutHandler(
            self, loop=self._loop, read_header_timeout=self._read_header_timeout, **self._kwargs
        )


class SockSite(web.SockSite):
    """``web.SockSite`` whose TLS handshakes must finish within ``handshake_timeout`` (Go's server
    applies ReadHeaderTimeout to the handshake too); aiohttp leaves asyncio's 60 s default."""

    def __init__(self, runner: web.BaseRunner, sock: Any, *, handshake_timeout: float, **kwargs: Any) -> None:
        super().__init__(runner, sock, **kwargs)
        self._handshake_timeout = handshake_timeout

    async def start(self) -> None:
        if self._ssl_context is None or self._handshake_timeout <= 0:
            await super().start()
            return
        await web.BaseSite.start(self)
        server = self._runner.server
        assert server is not None
        self._server = await asyncio.get_running_loop().create_server(
            server,
            sock=self._sock,
            ssl=self._ssl_context,
            backlog=self._backlog,
            ssl_handshake_timeout=self._handshake_timeout,
        )


class ListenError(OSError):
    """The server's address could not be bound (``filename`` holds ``host:port``)."""


def bind(host: str, port: int) -> socket.socket:
    """A non-blocking listening socket on ``host:port`` (port 0: any free one); ``ListenError``
    when the address cannot be bound."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(1024)
    except OSError as e:
        sock.close()
        raise ListenError(e.errno, e.strerror, f"{host}:{port}") from e
    sock.setblocking(False)
    return sock
