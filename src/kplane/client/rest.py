"""The REST client: one pooled HTTP session to one API server, speaking JSON and Kubernetes errors.

Every request gets the current credentials (``Config.auth_headers()``), waits for the client-side
rate limit, and is retried when the server asks for it (a 429 or 5xx reply with ``Retry-After``,
up to ``transport.MAX_RETRIES`` times, as client-go's ``checkWait``), once after a 401 when the
credentials can rotate (token file or exec plugin), and after a dropped connection for GETs (as
client-go does on connection reset or EOF). A reply outside 2xx raises the typed error of
``kplane.api.errors`` built from the server's ``Status`` (or, when the body is not a Status, from
the HTTP code with upstream's generic messages). ``Warning`` headers go to the warning handler.

The client owns its connections: create it inside an event loop, use ``async with``, or call
``close()``. It is safe to share between tasks of one loop. Request/reply exchanges go through
``kplane.client.http1`` (a lean keep-alive pool); streams, clients with a ``proxy_url`` and
clients given a ``session_factory`` use an aiohttp session.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeAlias
from urllib.parse import quote, urlencode, urlsplit

import orjson

from kplane._util import aiohttpimport
from kplane._util import clock as clock_mod
from kplane.api import errors
from kplane.client import config as config_mod
from kplane.client import http1, transport

if TYPE_CHECKING:
    import aiohttp
else:  # without parsing the system CA bundle when that changes nothing (see aiohttpimport)
    aiohttp = aiohttpimport.import_aiohttp()

Query = Mapping[str, str | int | bool | Sequence[str]] | Sequence[tuple[str, str]]
"""Query parameters: a mapping (sequence values repeat the key; bools are ``true``/``false``) or pairs."""

Body = bytes | str | Mapping[str, Any] | Sequence[Any] | None
"""A request body: raw bytes/text as given, anything else is encoded as JSON."""

Reply: TypeAlias = "aiohttp.ClientResponse | http1.Response"
"""A reply: aiohttp's for streams and custom sessions, the lean pool's otherwise."""

_GENERIC_MESSAGES = {
    400: "the server rejected our request for an unknown reason",
    401: "the server has asked for the client to provide credentials",
    403: "the server does not allow access to the requested resource",
    404: "the server could not find the requested resource",
    405: "the server does not allow this method on the requested resource",
    406: "the server was unable to respond with a content type that the client supports",
    409: "the server reported a conflict",
    410: "the server has responded with a status of 410 (Gone)",
    413: "the server has rejected the request because the request entity is too large",
    415: "the server was unable to respond with a content type that the client supports",
    422: "the server rejected our request due to an error in our request",
    429: "the server has received too many requests and has asked us to try again later",
    500: "an error on the server has prevented the request from succeeding",
    503: "the server is currently unable to handle the request",
    504: "the server was unable to return a response in the time allotted, but may still be processing"
    " the request",
}

RequestObserver = Callable[[str, str, str, float], None]
"""Told of each round trip: ``(method, host, code, seconds)``."""
WriteObserver = Callable[[str, str, str, str, str, Any, BaseException | None], None]
"""Told of each write the dynamic (and typed) clients make, once answered: ``(verb, resource
(<plural>[.<group>]), subresource, namespace, name, decoded reply or None, error or None)``."""

_RECONNECT_DELAY = 1.0
"""Seconds before re-sending a GET whose connection dropped (client-go waits 1 s too)."""


class RESTClient:
    """Async HTTP access to one API server described by ``config``.

    ``request`` returns the decoded JSON body (text for non-JSON replies such as logs);
    ``request_raw`` returns the body bytes; ``stream`` yields a reply's lines as they arrive.
    ``warning_handler`` receives each ``Warning`` header entry (default: log each text once).
    ``observer``, when set, is told of every HTTP round trip: method, host, status code (``"<error>"``
    when no reply came) and seconds (client-go's ``rest_client_requests_total`` hook).
    ``write_observer``, when set, is told of each write by the clients built on this one.
    """

    observer: RequestObserver | None = None
    write_observer: WriteObserver | None = None

    def __init__(
        self,
        config: config_mod.Config,
        *,
        session_factory: transport.SessionFactory | None = None,
        warning_handler: transport.WarningHandler | None = None,
        _clock: clock_mod.Clock | None = None,
    ) -> None:
        self.config = config
        self._session_factory = session_factory
        self._session: aiohttp.ClientSession | None = None
        self._session_lock = asyncio.Lock()
        self._warning_handler: transport.WarningHandler = warning_handler or transport.WarningDeduplicator()
        self._clock: clock_mod.Clock = _clock or config._clock
        self._limiter = transport.TokenBucket(config.qps, config.burst, clock=self._clock)
        self._base = config.host.rstrip("/")
        self._host = self._base.split("://", 1)[-1]
        self._server_hostname = config.tls_server_name or None
        self._pool: http1.Pool | None = None
        self._lean = session_factory is None and not config.proxy_url
        self._timeout = aiohttp.ClientTimeout(total=config.timeout)
        self._can_refresh = bool(
            config.token_file or config.exec_provider is not None or config.token_source is not None
        )

    async def __aenter__(self) -> RESTClient:
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the session and its pooled connections; the client may not be used afterwards."""
        if self._session is not None:
            await self._session.close()
            self._session = None
        if self._pool is not None:
            await self._pool.close()
            self._pool = None

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: Query | None = None,
        body: Body = None,
        content_type: str = "application/json",
        headers: Mapping[str, str] | None = None,
    ) -> Any:
        """Send one request and return its decoded body (JSON → Python; other media types → text)."""
        data, ctype = await self._send(method, path, query, body, content_type, headers)
        if not data:
            return None
        if "json" in ctype:
            return orjson.loads(data)
        return data.decode("utf-8", "replace")

    async def request_raw(
        self,
        method: str,
        path: str,
        *,
        query: Query | None = None,
        body: Body = None,
        content_type: str = "application/json",
        headers: Mapping[str, str] | None = None,
    ) -> bytes:
        """Like ``request`` but return the body bytes undecoded (for typed decoders)."""
        data, _ = await self._send(method, path, query, body, content_type, headers)
        return data

    async def stream(
        self,
        method: str,
        path: str,
        *,
        query: Query | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> AsyncIterator[bytes]:
        """Yield the reply's newline-delimited lines (without the newline; empty lines skipped).

        Errors (non-2xx) are raised before the first line. The iteration ends when the server ends
        the reply; a connection lost mid-stream raises ``aiohttp.ClientError``. Closing the
        iterator (or cancelling its consumer) closes the connection. No request timeout applies:
        bound a watch with its ``timeoutSeconds`` parameter.
        """
        resp = await self._open(method, path, query, None, "", headers, stream=True)
        assert isinstance(resp, aiohttp.ClientResponse)  # streams always go through aiohttp
        try:
            buffer = b""
            async for chunk in resp.content.iter_any():
                buffer += chunk
                if chunk.find(b"\n") < 0:  # not ``in``: it raises and drops a TypeError first
                    continue
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    if line.strip():
                        yield line
            if buffer.strip():
                yield buffer
        finally:
            resp.release()
            resp.close()

    # Internals.

    async def _session_get(self) -> aiohttp.ClientSession:
        if self._session is None:
            async with self._session_lock:
                if self._session is None:
                    factory = self._session_factory
                    self._session = await (factory() if factory else transport.new_session(self.config))
        return self._session

    async def _pool_get(self) -> http1.Pool:
        if self._pool is None:
            async with self._session_lock:
                if self._pool is None:
                    self._pool = await _new_pool(self.config, self._server_hostname)
        return self._pool

    async def _send(
        self,
        method: str,
        path: str,
        query: Query | None,
        body: Body,
        content_type: str,
        headers: Mapping[str, str] | None,
    ) -> tuple[bytes, str]:
        resp = await self._open(method, path, query, body, content_type, headers, stream=False)
        try:
            data = await resp.read()
        finally:
            resp.release()
        return data, resp.headers.get("Content-Type") or ""

    async def _open(
        self,
        method: str,
        path: str,
        query: Query | None,
        body: Body,
        content_type: str,
        headers: Mapping[str, str] | None,
        *,
        stream: bool,
    ) -> Reply:
        """Send until a final reply arrives; return it if 2xx, else raise the typed error."""
        lean = self._lean and not stream
        pool = await self._pool_get() if lean else None
        session = None if lean else await self._session_get()
        url = self._base + path
        params = _encode_query(query) if query else None
        target = _target(self._prefix(), path, params) if lean else ""
        data = _encode_body(body)
        retries = 0
        refreshed = False
        while True:
            await self._limiter.acquire()
            started = self._clock.monotonic()
            hdrs = {"Accept": "application/json", **(await self.config.auth_headers())}
            if data is not None:
                hdrs["Content-Type"] = content_type
            if headers:
                hdrs.update(headers)
            try:
                resp: Reply
                if pool is not None and self.config.timeout is None:
                    resp = await pool.request(method, target, hdrs, data)
                elif pool is not None:
                    async with asyncio.timeout(self.config.timeout):
                        resp = await pool.request(method, target, hdrs, data)
                else:
                    assert session is not None
                    resp = await session.request(
                        method,
                        url,
                        params=params,
                        data=data,
                        headers=hdrs,
                        timeout=aiohttp.ClientTimeout(total=None) if stream else self._timeout,
                        server_hostname=self._server_hostname,
                    )
            except (aiohttp.ServerDisconnectedError, aiohttp.ClientConnectionResetError):
                self._observe(method, "<error>", started)
                # client-go re-sends only GETs after a reset or EOF: other verbs may have taken effect.
                if method != "GET" or retries >= transport.MAX_RETRIES:
                    raise
                retries += 1
                await self._clock.sleep(_RECONNECT_DELAY)
                continue
            self._observe(method, str(resp.status), started)
            self._report_warnings(resp)
            if 200 <= resp.status < 300:
                return resp
            wait = transport.retry_after(resp.status, resp.headers.get("Retry-After"))
            if wait is not None and retries < transport.MAX_RETRIES:
                retries += 1
                await _discard(resp)
                await self._clock.sleep(wait)
                continue
            if resp.status == 401 and self._can_refresh and not refreshed:
                refreshed = True
                await _discard(resp)
                self.config.invalidate_credentials()
                continue
            raise await _error_from(resp)

    def _observe(self, method: str, code: str, started: float) -> None:
        if self.observer is not None:
            self.observer(method, self._host, code, self._clock.monotonic() - started)

    def _prefix(self) -> str:
        """The path of the configured host URL (a server behind a path prefix), without the slash."""
        return urlsplit(self._base).path

    def _report_warnings(self, resp: Reply) -> None:
        values = resp.headers.getall("Warning", [])
        if not values:
            return
        for code, agent, text in transport.parse_warnings(values):
            self._warning_handler(code, agent, text)


def _encode_query(query: Query) -> list[tuple[str, str]]:
    if not isinstance(query, Mapping):
        return [(str(k), str(v)) for k, v in query]
    out: list[tuple[str, str]] = []
    for key, value in query.items():
        if isinstance(value, bool):
            out.append((key, "true" if value else "false"))
        elif isinstance(value, str | int):
            out.append((key, str(value)))
        else:
            out.extend((key, str(v)) for v in value)
    return out


async def _new_pool(config: config_mod.Config, server_hostname: str | None) -> http1.Pool:
    parts = urlsplit(config.host)
    tls = parts.scheme == "https"
    ctx = config.ssl_context(client_cert=await config.client_cert()) if tls else None
    return http1.Pool(
        parts.hostname or "localhost",
        parts.port or (443 if tls else 80),
        ssl_context=ctx,
        server_hostname=server_hostname or parts.hostname if tls else None,
        default_headers=[("User-Agent", config.user_agent), ("Accept-Encoding", "gzip, deflate")],
        limit=transport.POOL_LIMIT,
    )


_PATH_SAFE = "/%:@!$&'()*+,;=-._~"
_NEEDS_QUOTE = re.compile(r"[^A-Za-z0-9/%:@!$&'()*+,;=._~-]").search
"""A character ``quote(..., safe=_PATH_SAFE)`` would change (one C call; most paths have none)."""
_QUERIES: dict[tuple[tuple[str, str], ...], str] = {}
_QUERIES_BOUND = 256


def _target(prefix: str, path: str, params: list[tuple[str, str]] | None) -> str:
    """The request target: ``path`` percent-encoded where it must be (its own ``?query`` kept as
    given), then ``params`` encoded (an operator sends the same few queries again and again: their
    encodings are kept in a bounded memo)."""
    path, sep, own = path.partition("?")
    out = prefix + path
    if _NEEDS_QUOTE(out):
        out = quote(out, safe=_PATH_SAFE)
    if sep:
        out += "?" + own
    if params:
        key = tuple(params)
        query = _QUERIES.get(key)
        if query is None:
            query = urlencode(params, quote_via=quote)
            if len(_QUERIES) >= _QUERIES_BOUND:
                _QUERIES.clear()
            _QUERIES[key] = query
        out += ("&" if sep else "?") + query
    return out


def _encode_body(body: Body) -> bytes | None:
    if body is None:
        return None
    if isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode()
    return orjson.dumps(body)


async def _discard(resp: Reply) -> None:
    try:
        await resp.read()
    finally:
        resp.release()


async def _error_from(resp: Reply) -> errors.APIError:
    """The typed error for a non-2xx reply: its ``Status`` body if it has one, else a generic one."""
    try:
        data = await resp.read()
    finally:
        resp.release()
    status: dict[str, Any] | None = None
    if data:
        try:
            decoded = orjson.loads(data)
        except orjson.JSONDecodeError:
            decoded = None
        if isinstance(decoded, dict) and decoded.get("kind") == "Status":
            status = decoded
    if status is None:
        # client-go's newUnstructuredResponseError: a generic message, the body as the cause.
        message = _GENERIC_MESSAGES.get(
            resp.status, f"an error on the server ({resp.status}) has prevented the request from succeeding"
        )
        text = data.decode("utf-8", "replace").strip()
        details: dict[str, Any] = {}
        if text:
            details["causes"] = [{"reason": "UnexpectedServerResponse", "message": text}]
        status = {"kind": "Status", "code": resp.status, "message": message, "details": details}
    err = errors.from_status(status, http_code=resp.status)
    if err.retry_after is None:
        header = resp.headers.get("Retry-After")
        if header and header.strip().isdigit():
            err.retry_after = int(header.strip())
    return err
