"""A test HTTPS webhook server: aiohttp on a private loop in a thread, self-signed certificate.

Each path is served by a function of the decoded review returning the response review (or raising
``Slow`` to answer after a delay); every review received is kept in ``received[path]``.
"""

from __future__ import annotations

import asyncio
import base64
import ssl
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aiohttp import web

from kplane.runtime.webhook import certs

Review = dict[str, Any]
Handler = Callable[[Review], Review]


class Slow(Exception):
    """Raise from a handler to answer ``review`` only after ``seconds``."""

    def __init__(self, seconds: float, review: Review) -> None:
        self.seconds = seconds
        self.review = review


def allow(review: Review, **extra: Any) -> Review:
    """An AdmissionReview answer allowing the request, with ``extra`` response fields."""
    req = review["request"]
    return {
        "apiVersion": review["apiVersion"],
        "kind": "AdmissionReview",
        "response": {"uid": req["uid"], "allowed": True, **extra},
    }


def deny(review: Review, message: str, code: int = 403) -> Review:
    out = allow(review)
    out["response"]["allowed"] = False
    out["response"]["status"] = {"message": message, "code": code}
    return out


def patch(review: Review, operations: list[dict[str, Any]]) -> Review:
    import json

    raw = base64.b64encode(json.dumps(operations).encode()).decode()
    return allow(review, patchType="JSONPatch", patch=raw)


class WebhookServer:
    """Serve ``handlers`` (path → function) over HTTPS on 127.0.0.1 with a certificate for
    ``hosts`` (127.0.0.1 and any service DNS names)."""

    def __init__(self, tmp: Path, hosts: tuple[str, ...] = ("127.0.0.1",)) -> None:
        cert, key = certs.self_signed(list(hosts))
        (tmp / "tls.crt").write_bytes(cert)
        (tmp / "tls.key").write_bytes(key)
        self.ca_bundle = base64.b64encode(cert).decode()
        self._ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self._ctx.load_cert_chain(tmp / "tls.crt", tmp / "tls.key")
        self.handlers: dict[str, Handler] = {}
        self.received: dict[str, list[Review]] = {}
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._runner: web.AppRunner | None = None

    def url(self, path: str) -> str:
        return f"https://127.0.0.1:{self.port}{path}"

    async def _handle(self, request: web.Request) -> web.Response:
        review = await request.json()
        self.received.setdefault(request.path, []).append(review)
        handler = self.handlers.get(request.path)
        if handler is None:
            return web.Response(status=404, text="no such webhook")
        try:
            answer = handler(review)
        except Slow as slow:
            await asyncio.sleep(slow.seconds)
            answer = slow.review
        return web.json_response(answer)

    async def _start(self) -> None:
        app = web.Application()
        app.router.add_post("/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=self._ctx)
        await site.start()
        server = site._server
        assert server is not None and server.sockets
        self.port = server.sockets[0].getsockname()[1]

    def start(self) -> WebhookServer:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        return self

    def stop(self) -> None:
        if self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
