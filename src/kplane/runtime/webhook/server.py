"""The webhook server: HTTPS on port 9443, admission and conversion endpoints, a Manager runnable.

Defaults as controller-runtime's webhook server (reference/controllers.md §6.1, §6.6), except
that it listens on loopback unless told otherwise (kplane listens nowhere else by default):
port 9443, certificate ``tls.crt`` and key ``tls.key`` in
``$TMPDIR/k8s-webhook-server/serving-certs``, TLS 1.2 or later. The files are required unless
``self_signed`` asks for a generated pair (``certs``); they are re-read when they change (polled
every 10 s, as upstream's certwatcher), so a rotated certificate serves new connections.

``runnable_group = "webhooks"``: a manager starts it before its caches and waits until it listens
(a conversion webhook must answer the caches' first list). Paths are registered at any time
(``register``); an unknown path answers 404.

The HTTP layer of an admission endpoint is controller-runtime's ``Webhook.ServeHTTP``
(CR pkg/webhook/admission/http.go): always HTTP 200 with an AdmissionReview; a body that is empty,
larger than 7 MiB (413), not ``Content-Type: application/json`` or not an AdmissionReview gets an
errored response (``allowed: false``, ``status.code`` 400/413, no uid, no apiVersion/kind);
otherwise the review comes back in the request's apiVersion (v1 or v1beta1) with the handler's
completed response. A handler that raises answers 500 ``panic: <error> [recovered]``. A conversion
endpoint answers 400 with no body to a body that is not a ConversionReview with a request.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import ssl
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from kplane._util import clock as clock_mod
from kplane._util.lazy import lazy_module
from kplane.runtime.webhook import admission, conversion

if TYPE_CHECKING:
    from aiohttp import web
else:  # loaded when a webhook server listens, not by every manager (see serving.py)
    web = lazy_module("aiohttp.web")

log = logging.getLogger("kplane.runtime.webhook")

MAX_REQUEST_SIZE = 7 * 1024 * 1024
"""controller-runtime's bound on an AdmissionReview body (two 3 MiB objects and the rest)."""

REVIEW_VERSIONS = ("admission.k8s.io/v1", "admission.k8s.io/v1beta1")


def default_cert_dir() -> Path:
    return Path(tempfile.gettempdir()) / "k8s-webhook-server" / "serving-certs"


@dataclasses.dataclass(frozen=True)
class WebhookServerOptions:
    """Where and how the server listens (module docstring).

    ``host`` defaults to loopback, as everything kplane serves does; an operator running in a pod,
    where the API server must reach it, passes ``""`` (every interface) explicitly.
    """

    host: str = "127.0.0.1"
    port: int = 9443
    cert_dir: Path | None = None
    cert_name: str = "tls.crt"
    key_name: str = "tls.key"
    self_signed: bool = False
    self_signed_hosts: tuple[str, ...] = ("localhost", "127.0.0.1")
    cert_poll_interval: float = 10.0

    @property
    def cert_file(self) -> Path:
        return (self.cert_dir or default_cert_dir()) / self.cert_name

    @property
    def key_file(self) -> Path:
        return (self.cert_dir or default_cert_dir()) / self.key_name


Route = admission.Handler | conversion.Converter


class WebhookServer:
    """Serves registered admission handlers and converters over HTTPS (module docstring)."""

    runnable_group = "webhooks"

    def __init__(
        self,
        options: WebhookServerOptions | None = None,
        *,
        metrics: Any = None,
        clock: clock_mod.Clock | None = None,
    ) -> None:
        self.options = options or WebhookServerOptions()
        self.port = self.options.port
        self._routes: dict[str, Route] = {}
        self._metrics = metrics
        self._clock = clock or clock_mod.RealClock()
        self._runner: web.AppRunner | None = None
        self._ssl: ssl.SSLContext | None = None
        self._stamp: tuple[Any, ...] = ()
        self._settled = asyncio.Event()  # set once listening, or once listening failed
        self._failure: BaseException | None = None

    def register(self, path: str, route: Route) -> None:
        """Serve ``route`` on ``path`` (an admission handler or a ``conversion.Converter``)."""
        if not path.startswith("/"):
            raise ValueError(f"webhook path must start with '/': {path!r}")
        if path in self._routes:
            raise ValueError(f"can't register duplicate path: {path}")
        self._routes[path] = route

    def converter(self) -> conversion.Converter:
        """The one converter served on ``/convert`` (created and registered on first use)."""
        route = self._routes.get("/convert")
        if route is None:
            route = conversion.Converter(
                on_panic=self._metrics.conversion_panics.inc if self._metrics else None
            )
            self._routes["/convert"] = route
        if not isinstance(route, conversion.Converter):
            raise ValueError("/convert is registered to an admission handler")
        return route

    @property
    def paths(self) -> list[str]:
        return sorted(self._routes)

    @property
    def url(self) -> str:
        host = self.options.host or "127.0.0.1"
        return f"https://{host}:{self.port}"

    async def wait_ready(self) -> None:
        """Return once the server accepts connections; raise what made ``start`` fail to listen
        (a missing certificate...). The manager waits on this before it starts its caches."""
        await self._settled.wait()
        if self._failure is not None:
            raise self._failure

    async def start(self) -> None:
        """Listen, then watch the certificate files until cancelled; then close."""
        try:
            try:
                await self.listen()
            except Exception as err:
                self._failure = err
                self._settled.set()
                raise
            while True:
                await self._clock.sleep(self.options.cert_poll_interval)
                self._reload_if_changed()
        finally:
            await self.close()

    async def listen(self) -> None:
        opts = self.options
        if opts.self_signed:
            # cryptography (~5 MiB resident) loads only when a pair is generated, not with every manager
            from kplane.runtime.webhook import certs

            certs.ensure_self_signed(opts.cert_file, opts.key_file, opts.self_signed_hosts)
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.load_cert_chain(opts.cert_file, opts.key_file)
        self._ssl, self._stamp = context, self._file_stamp()
        app = web.Application(client_max_size=MAX_REQUEST_SIZE + 1)
        app.router.add_route("*", "/{tail:.*}", self._dispatch)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, opts.host or None, opts.port, ssl_context=context)
        await site.start()
        if opts.port == 0 and self._runner.addresses:
            self.port = int(self._runner.addresses[0][1])
        self._failure = None
        self._settled.set()
        log.info("serving webhooks on %s", self.url)

    async def close(self) -> None:
        if self._failure is None:  # a failure stays reported to wait_ready
            self._settled.clear()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    def _file_stamp(self) -> tuple[Any, ...]:
        out: list[Any] = []
        for path in (self.options.cert_file, self.options.key_file):
            with contextlib.suppress(OSError):
                st = os.stat(path)
                out.append((st.st_mtime_ns, st.st_size, st.st_ino))
        return tuple(out)

    def _reload_if_changed(self) -> None:
        stamp = self._file_stamp()
        if stamp == self._stamp or self._ssl is None:
            return
        try:
            self._ssl.load_cert_chain(self.options.cert_file, self.options.key_file)
        except (OSError, ssl.SSLError) as err:
            log.error("reloading the webhook certificate failed (keeping the previous one): %s", err)
            return
        self._stamp = stamp
        log.info("reloaded the webhook certificate")

    # HTTP.

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        route = self._routes.get(request.path)
        if route is None:
            return web.Response(status=404, text="404 page not found\n")
        started = time.monotonic()
        gauge = self._metrics.webhook_in_flight.labels(request.path) if self._metrics else None
        if gauge is not None:
            gauge.inc()
        try:
            if isinstance(route, conversion.Converter):
                response = await _convert(route, request)
            else:
                response = await _admit(route, request, self._metrics)
        finally:
            if gauge is not None:
                gauge.dec()
        if self._metrics is not None:
            self._metrics.webhook_requests.labels(request.path, str(response.status)).inc()
            self._metrics.webhook_latency.labels(request.path).observe(time.monotonic() - started)
        return response


def _json(doc: Any) -> web.Response:
    return web.Response(body=orjson.dumps(doc) + b"\n", content_type="application/json")


def _errored_review(code: int, message: str) -> web.Response:
    """An errored response in a review without apiVersion/kind (upstream ``writeResponse``)."""
    return _json({"response": admission.errored(code, message).to_dict()})


async def _read_body(request: web.Request) -> bytes | None:
    """The body, or None when it is larger than ``MAX_REQUEST_SIZE``."""
    chunks: list[bytes] = []
    size = 0
    while size <= MAX_REQUEST_SIZE:
        chunk = await request.content.read(MAX_REQUEST_SIZE + 1 - size)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
    return None


async def _admit(handler: admission.Handler, request: web.Request, metrics: Any) -> web.Response:
    body = await _read_body(request)
    if body is None:
        return _errored_review(413, f"request entity is too large; limit is {MAX_REQUEST_SIZE} bytes")
    if not body:
        return _errored_review(400, "request body is empty")
    content_type = request.headers.get("Content-Type", "")
    if content_type != "application/json":
        return _errored_review(400, f"contentType={content_type}, expected application/json")
    try:
        review = orjson.loads(body)
        if not isinstance(review, dict):
            raise ValueError("an AdmissionReview must be a JSON object")
        api_version = review.get("apiVersion") or REVIEW_VERSIONS[0]
        kind = review.get("kind") or "AdmissionReview"
        if api_version not in REVIEW_VERSIONS or kind != "AdmissionReview":
            raise ValueError(f"no kind {kind!r} is registered for version {api_version!r}")
        req = admission.AdmissionRequest.from_dict(review.get("request") or {})
    except (orjson.JSONDecodeError, ValueError) as err:
        return _errored_review(400, str(err))
    try:
        response = await handler(req)
    except Exception as err:
        log.error("webhook handler failed", exc_info=err)
        if metrics is not None:
            metrics.webhook_panics.inc()
        response = admission.errored(500, f"panic: {err} [recovered]")
    response.complete(req.uid)
    return _json({"apiVersion": api_version, "kind": "AdmissionReview", "response": response.to_dict()})


async def _convert(converter: conversion.Converter, request: web.Request) -> web.Response:
    body = await _read_body(request)
    try:
        if body is None:
            raise ValueError("request entity is too large")
        review = orjson.loads(body)
        if not isinstance(review, dict):
            raise ValueError("a ConversionReview must be a JSON object")
        return _json(converter.review(review))
    except (orjson.JSONDecodeError, ValueError) as err:
        log.error("failed to read conversion request: %s", err)
        return web.Response(status=400)
