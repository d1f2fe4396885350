"""POST a JSON review to a webhook and return the decoded answer (upstream's webhook REST client).

One ``aiohttp`` session (connection pool) per ``Target`` (clientConfig), created on first use and
closed by ``retain`` when no configuration names that target any more. TLS trusts the target's
``caBundle`` (the system roots when empty); a Service target is dialled at the address the resolver
gives, with TLS server name ``<service>.<namespace>.svc`` as upstream. The request URL carries
``?timeout=<n>s`` as client-go's does. The answer is read up to ``max_response_bytes``.

Failures raise ``CallError`` whose ``str()`` is what Go's client would say (``Post "<url>": dial tcp
...: connect: connection refused``, ``... context deadline exceeded``), and ``StatusError`` when the
webhook answered a non-2xx ``Status``; callers prefix them with upstream's wording.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import ssl
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import orjson

from kplane.server.webhooks.resolving import ResolveError

Resolver = Callable[[str, str, int], tuple[str, int]]
"""``(namespace, service, port) -> (host, port)``; raises ``ResolveError``."""

MAX_RESPONSE_BYTES = 3 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Target:
    """A webhook ``clientConfig``: a URL or a Service reference, and the CA bundle (PEM bytes)."""

    url: str = ""
    namespace: str = ""
    service: str = ""
    path: str = ""
    port: int = 443
    ca_bundle: bytes = field(default=b"", repr=False)

    @classmethod
    def parse(cls, cc: Mapping[str, Any]) -> Target:
        raw = cc.get("caBundle")
        try:
            bundle = base64.b64decode(raw) if isinstance(raw, str) and raw else b""
        except ValueError:
            bundle = b""
        svc = cc.get("service")
        if isinstance(svc, dict):
            port = svc.get("port")
            return cls(
                namespace=str(svc.get("namespace") or ""),
                service=str(svc.get("name") or ""),
                path=str(svc.get("path") or ""),
                port=port if isinstance(port, int) else 443,
                ca_bundle=bundle,
            )
        return cls(url=str(cc.get("url") or ""), ca_bundle=bundle)

    @property
    def server_name(self) -> str:
        return f"{self.service}.{self.namespace}.svc"

    def shown_url(self, timeout: int | None) -> str:
        """The URL as Go's client reports it, with client-go's ``timeout`` parameter if any."""
        base = f"https://{self.server_name}:{self.port}{self.path or '/'}" if self.service else self.url
        return f"{base}?timeout={timeout}s" if timeout is not None else base


class CallError(Exception):
    """The webhook could not be called or did not answer a usable body."""


class StatusError(CallError):
    """The webhook answered a non-2xx HTTP status; ``status`` is the Status upstream would build."""

    def __init__(self, message: str, status: dict[str, Any]) -> None:
        super().__init__(message)
        self.status = status


_GENERIC = {
    400: "the server rejected our request for an unknown reason",
    401: "the server has asked for the client to provide credentials",
    403: "the server does not allow access to the requested resource",
    404: "the server could not find the requested resource",
    405: "the server does not allow this method on the requested resource",
    409: "the server reported a conflict",
    429: "the server has received too many requests and has asked us to try again later",
    500: "an error on the server ({body}) has prevented the request from succeeding",
    503: "the server is currently unable to handle the request",
    504: (
        "the server was unable to return a response in the time allotted, but may still be processing "
        "the request"
    ),
}


def _status_error(code: int, body: bytes, method: str) -> StatusError:
    """client-go's ``newUnstructuredResponseError``: a Status body as is, else a generic error."""
    with contextlib.suppress(orjson.JSONDecodeError):
        decoded = orjson.loads(body)
        if isinstance(decoded, dict) and decoded.get("kind") == "Status":
            return StatusError(str(decoded.get("message") or ""), decoded)
    text = body.decode("utf-8", "replace").strip()
    shown = '"' + text.replace('"', '\\"') + '"' if text else "unknown"
    template = _GENERIC.get(
        code, f"an error on the server ({{body}}) has prevented the request from succeeding ({method})"
    )
    message = template.format(body=shown)
    return StatusError(message, {"kind": "Status", "status": "Failure", "message": message, "code": code})


class Client:
    """Calls webhooks; safe to share between requests. ``close`` (or ``retain``) releases pools."""

    def __init__(self, resolve: Resolver, *, max_response_bytes: int = MAX_RESPONSE_BYTES) -> None:
        self._resolve = resolve
        self._limit = max_response_bytes
        self._sessions: dict[Target, aiohttp.ClientSession] = {}
        self._contexts: dict[bytes, ssl.SSLContext] = {}

    def _ssl(self, bundle: bytes) -> ssl.SSLContext:
        ctx = self._contexts.get(bundle)
        if ctx is None:
            if bundle:
                ctx = ssl.create_default_context(cadata=bundle.decode("ascii", "replace"))
            else:
                ctx = ssl.create_default_context()
            self._contexts[bundle] = ctx
        return ctx

    def _session(self, target: Target) -> aiohttp.ClientSession:
        session = self._sessions.get(target)
        if session is None or session.closed:
            try:
                ctx = self._ssl(target.ca_bundle)
            except (ssl.SSLError, ValueError) as exc:
                raise CallError(f"unable to load root certificates: {exc}") from None
            connector = aiohttp.TCPConnector(ssl=ctx, limit=64, force_close=False)
            session = aiohttp.ClientSession(connector=connector, auto_decompress=True)
            self._sessions[target] = session
        return session

    async def post(
        self,
        target: Target,
        body: bytes,
        timeout: int,  # noqa: ASYNC109 - the webhook's timeoutSeconds, sent to it too
        *,
        timeout_in_url: bool = True,
    ) -> Any:
        """POST ``body`` (JSON) to ``target`` within ``timeout`` seconds; the decoded JSON answer.
        ``timeout_in_url``: send client-go's ``?timeout=`` (admission webhooks; conversion
        webhooks are called without it)."""
        shown = target.shown_url(timeout if timeout_in_url else None)
        query = f"?timeout={timeout}s" if timeout_in_url else ""
        headers = {"Content-Type": "application/json", "Accept": "application/json, */*"}
        kwargs: dict[str, Any] = {}
        if target.service:
            try:
                host, port = self._resolve(target.namespace, target.service, target.port)
            except ResolveError as exc:
                raise CallError(f'Post "{shown}": {exc}') from None
            url = f"https://{_join(host, port)}{target.path or '/'}{query}"
            headers["Host"] = f"{target.server_name}:{target.port}"
            kwargs["server_hostname"] = target.server_name
        else:
            url = shown
        session = self._session(target)
        try:
            # The HTTP client's own deadline (as Go's request context): network time, not the
            # injected clock.
            async with session.post(
                url,
                data=body,
                headers=headers,
                allow_redirects=False,
                timeout=aiohttp.ClientTimeout(total=timeout),
                **kwargs,
            ) as resp:
                raw = await resp.content.read(self._limit + 1)
                status = resp.status
        except TimeoutError:
            raise CallError(f'Post "{shown}": context deadline exceeded') from None
        except aiohttp.ClientConnectorCertificateError as exc:
            raise CallError(
                f'Post "{shown}": tls: failed to verify certificate: x509: {_cert_reason(exc)}'
            ) from None
        except aiohttp.ClientConnectorError as exc:
            reason = (
                "connection refused" if isinstance(exc.os_error, ConnectionRefusedError) else exc.strerror
            )
            raise CallError(
                f'Post "{shown}": dial tcp {_join(exc.host, exc.port or 0)}: connect: {reason}'
            ) from None
        except (aiohttp.ClientError, OSError) as exc:
            raise CallError(f'Post "{shown}": {exc or type(exc).__name__}') from None
        if len(raw) > self._limit:
            raise CallError(f'Post "{shown}": response body larger than {self._limit} bytes')
        if not 200 <= status < 300:
            raise _status_error(status, raw, "post")
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise CallError(f"couldn't get version/kind; json parse error: {exc}") from None

    def retain(self, targets: Iterable[Target]) -> None:
        """Close the pools of targets not in ``targets`` (configurations changed)."""
        keep = set(targets)
        for target in [t for t in self._sessions if t not in keep]:
            _close_later(self._sessions.pop(target))

    async def close(self) -> None:
        sessions, self._sessions = list(self._sessions.values()), {}
        for session in sessions:
            await session.close()


def _join(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _cert_reason(exc: aiohttp.ClientConnectorCertificateError) -> str:
    cert_error = exc.certificate_error
    text = getattr(cert_error, "verify_message", "") or str(cert_error)
    if "unable to get local issuer" in text or "self-signed" in text or "self signed" in text:
        return "certificate signed by unknown authority"
    return text


_closing: set[asyncio.Task[None]] = set()


def _close_later(session: aiohttp.ClientSession) -> None:
    try:
        task = asyncio.get_running_loop().create_task(session.close())
    except RuntimeError:
        return
    _closing.add(task)
    task.add_done_callback(_closing.discard)
