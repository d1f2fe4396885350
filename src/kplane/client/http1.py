"""A lean HTTP/1.1 keep-alive client for the REST client's request/reply round trips.

Problem: an operator's reconcile is usually one write, and aiohttp's client spent ~170 µs of CPU
on each (URL objects, header multidicts, payload and tracing machinery, stream readers) on this
project's machine, more than half of what a reconcile costs the manager. Approach: the request is
formatted into one bytes object and written at once; the reply is parsed from one buffer with only
what framing needs (status line, header lines, ``Content-Length`` or ``chunked``, ``gzip``): ~70 µs
a round trip. Connections are pooled per client (``limit`` at once, idle ones reused most recently
used first, as Go's transport). Trade-off: only plain request/reply exchanges take this path;
watches (long streams) and clients behind a proxy or with a custom session keep aiohttp
(``kplane.client.rest`` decides).

Bounds: a reply's header block is at most ``MAX_HEAD`` bytes and its body at most ``MAX_BODY``
(decompressed); past them the connection is closed and ``aiohttp.ClientPayloadError`` raised.
Failures keep aiohttp's exception types, so callers catch the same things on both paths: a
connection that cannot be opened is ``aiohttp.ClientOSError`` (also an ``OSError``), one that ends
before its reply is complete is ``aiohttp.ServerDisconnectedError``.
"""

from __future__ import annotations

import asyncio
import ssl
import zlib
from collections.abc import Iterable
from typing import TYPE_CHECKING

from kplane._util import aiohttpimport

if TYPE_CHECKING:
    import aiohttp
else:
    aiohttp = aiohttpimport.import_aiohttp()

MAX_HEAD = 1 << 20
"""Bytes of status line and headers accepted in one reply (Go's default is 1 MiB too)."""
MAX_BODY = 1 << 30
"""Bytes of (decompressed) body accepted in one reply."""


class Headers:
    """A reply's header fields: case-insensitive ``get`` and ``getall`` (the subset aiohttp's
    ``CIMultiDictProxy`` offers that the REST client reads)."""

    __slots__ = ("_fields",)

    def __init__(self, fields: list[tuple[str, str]]) -> None:
        self._fields = fields  # (lower-cased name, value), in order

    def get(self, name: str, default: str | None = None) -> str | None:
        key = name.lower()
        for k, v in self._fields:
            if k == key:
                return v
        return default

    def getall(self, name: str, default: list[str] | None = None) -> list[str]:
        key = name.lower()
        found = [v for k, v in self._fields if k == key]
        return found if found else ([] if default is None else default)


class Response:
    """One complete reply: ``status``, ``headers``, and the body (``await read()``).

    The body is already read when the reply is handed over, so ``release`` and ``close`` only
    exist for the REST client's aiohttp-shaped code paths.
    """

    __slots__ = ("_body", "headers", "status")

    def __init__(self, status: int, headers: Headers, body: bytes) -> None:
        self.status = status
        self.headers = headers
        self._body = body

    async def read(self) -> bytes:
        return self._body

    def release(self) -> None:
        return None

    def close(self) -> None:
        return None


class _Reader:
    """Parses one reply from a growing buffer, keeping its progress between calls (a large
    chunked body arriving in many segments is scanned once, not once per segment)."""

    def __init__(self, method: str) -> None:
        self.method = method
        self.head: tuple[int, Headers, bool] | None = None  # status, headers, keep-alive
        self.start = 0  # offset of the body
        self.length: int | None = None  # Content-Length; None: chunked or until EOF
        self.chunked = False
        self.pos = 0  # chunked: offset of the next chunk-size line
        self.out = bytearray()

    def feed(self, buf: bytearray, *, eof: bool) -> tuple[Response, int, bool] | None:
        """The reply if ``buf`` completes it: (reply, bytes used, connection reusable)."""
        if self.head is None and not self._read_head(buf):
            return None
        assert self.head is not None
        status, headers, keep_alive = self.head
        if self.length is not None:
            used = self.start + self.length
            if len(buf) < used:
                return None
            body = bytes(buf[self.start : used])
        elif self.chunked:
            done = self._dechunk(buf)
            if done is None:
                return None
            body, used = bytes(self.out), done
        else:  # delimited by the end of the connection
            if len(buf) - self.start > MAX_BODY:
                raise aiohttp.ClientPayloadError(f"reply body exceeds {MAX_BODY} bytes")
            if not eof:
                return None
            body, used, keep_alive = bytes(buf[self.start :]), len(buf), False
        encoding = (headers.get("content-encoding") or "").lower()
        if encoding in ("gzip", "deflate"):
            body = _decompress(body, encoding)
        return Response(status, headers, body), used, keep_alive

    def _read_head(self, buf: bytearray) -> bool:
        end = buf.find(b"\r\n\r\n", 0, MAX_HEAD)
        if end < 0:
            if len(buf) >= MAX_HEAD:
                raise aiohttp.ClientPayloadError(f"reply header exceeds {MAX_HEAD} bytes")
            return False
        lines = bytes(buf[:end]).decode("latin-1").split("\r\n")
        version, _, rest = lines[0].partition(" ")
        code = rest[:3]
        if not version.startswith("HTTP/1.") or not code.isdigit():
            raise aiohttp.ClientPayloadError(f"malformed status line {lines[0][:80]!r}")
        status = int(code)
        fields: list[tuple[str, str]] = []
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if not sep:
                raise aiohttp.ClientPayloadError(f"malformed header line {line[:80]!r}")
            fields.append((name.strip().lower(), value.strip()))
        headers = Headers(fields)
        keep_alive = (headers.get("connection") or "").lower() != "close" and version != "HTTP/1.0"
        self.head = (status, headers, keep_alive)
        self.start = self.pos = end + 4
        if status in (204, 304) or 100 <= status < 200 or self.method == "HEAD":
            self.length = 0
        elif (headers.get("transfer-encoding") or "").lower().endswith("chunked"):
            self.chunked = True
        elif (length := headers.get("content-length")) is not None:
            if not length.isdigit() or int(length) > MAX_BODY:
                raise aiohttp.ClientPayloadError(f"bad Content-Length {length[:40]!r}")
            self.length = int(length)
        return True

    def _dechunk(self, buf: bytearray) -> int | None:
        """Appends the complete chunks from ``self.pos`` to ``self.out``; the offset after the
        last chunk (and trailer) once it has arrived, else None."""
        while True:
            pos = self.pos
            eol = buf.find(b"\r\n", pos, pos + 1024)
            if eol < 0:
                if len(buf) - pos >= 1024:
                    raise aiohttp.ClientPayloadError("malformed chunk size line")
                return None
            try:
                size = int(bytes(buf[pos:eol]).split(b";", 1)[0].strip(), 16)
            except ValueError:
                raise aiohttp.ClientPayloadError("malformed chunk size line") from None
            if size < 0 or len(self.out) + size > MAX_BODY:
                raise aiohttp.ClientPayloadError(f"reply body exceeds {MAX_BODY} bytes")
            if size == 0:  # the last chunk, then trailer fields up to an empty line
                if len(buf) < eol + 4:
                    return None
                if buf[eol + 2 : eol + 4] == b"\r\n":
                    return eol + 4
                end = buf.find(b"\r\n\r\n", eol + 2, eol + 2 + MAX_HEAD)
                if end < 0:
                    if len(buf) - eol >= MAX_HEAD:
                        raise aiohttp.ClientPayloadError("reply trailer too long")
                    return None
                return end + 4
            data_end = eol + 2 + size
            if len(buf) < data_end + 2:
                return None
            if buf[data_end : data_end + 2] != b"\r\n":
                raise aiohttp.ClientPayloadError("malformed chunk")
            self.out += buf[eol + 2 : data_end]
            self.pos = data_end + 2


class _Protocol(asyncio.Protocol):
    """One connection: collects bytes until the awaited reply is complete."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buf = bytearray()
        self.waiter: asyncio.Future[Response] | None = None
        self.reader: _Reader | None = None
        self.closed = False
        self.keep_alive = True

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.buf += data
        self._advance(eof=False)

    def eof_received(self) -> bool | None:
        self.closed = True
        self._advance(eof=True)
        return None

    def connection_lost(self, exc: BaseException | None) -> None:
        self.closed = True
        self._fail(aiohttp.ServerDisconnectedError(str(exc) if exc else None))

    def expect(self, method: str) -> asyncio.Future[Response]:
        """The future of the reply to a request of ``method`` about to be written."""
        self.waiter = asyncio.get_running_loop().create_future()
        self.reader = _Reader(method)
        self.keep_alive = False
        return self.waiter

    def _advance(self, *, eof: bool) -> None:
        waiter, reader = self.waiter, self.reader
        if waiter is None or reader is None or waiter.done():
            if self.buf and not eof:  # bytes nobody asked for: nothing legitimate sends them
                self._abort()
            return
        try:
            done = reader.feed(self.buf, eof=eof)
        except aiohttp.ClientPayloadError as err:
            self._abort()
            waiter.set_exception(err)
            return
        if done is None:
            if eof:
                waiter.set_exception(aiohttp.ServerDisconnectedError())
            return
        response, used, keep_alive = done
        del self.buf[:used]
        self.keep_alive = keep_alive and not self.buf
        self.reader = None
        waiter.set_result(response)

    def _fail(self, err: BaseException) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_exception(err)

    def _abort(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.abort()


class Pool:
    """Keep-alive connections to one server (``host``:``port``, TLS when ``ssl_context`` is set)."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        ssl_context: ssl.SSLContext | None,
        server_hostname: str | None,
        default_headers: Iterable[tuple[str, str]],
        limit: int,
    ) -> None:
        self._host, self._port = host, port
        self._ssl = ssl_context
        self._server_hostname = server_hostname if ssl_context is not None else None
        authority = host if port in (80, 443) else f"{host}:{port}"
        if ":" in host and not host.startswith("["):
            authority = f"[{host}]:{port}"
        fixed = [("Host", authority), *default_headers]
        self._fixed = "".join(f"{k}: {v}\r\n" for k, v in fixed)
        self._idle: list[_Protocol] = []
        self._slots = asyncio.Semaphore(limit)
        self._open: set[_Protocol] = set()

    async def request(
        self, method: str, target: str, headers: dict[str, str], body: bytes | None
    ) -> Response:
        """Send one request (``target``: path and encoded query) and return its complete reply."""
        head = f"{method} {target} HTTP/1.1\r\n{self._fixed}"
        for k, v in headers.items():
            head += f"{k}: {v}\r\n"
        if body is not None or method in ("POST", "PUT", "PATCH"):
            head += f"Content-Length: {len(body or b'')}\r\n"
        raw = (head + "\r\n").encode("latin-1") + (body or b"")
        async with self._slots:
            proto = await self._connection()
            fut = proto.expect(method)
            try:
                assert proto.transport is not None
                proto.transport.write(raw)
                resp = await fut
            except BaseException:
                self._discard(proto)
                raise
            finally:
                proto.waiter = None
            if proto.keep_alive and not proto.closed:
                self._idle.append(proto)
            else:
                self._discard(proto)
            return resp

    async def _connection(self) -> _Protocol:
        while self._idle:
            proto = self._idle.pop()
            if not proto.closed and proto.transport is not None and not proto.transport.is_closing():
                return proto
            self._discard(proto)
        loop = asyncio.get_running_loop()
        try:
            _, proto = await loop.create_connection(
                _Protocol, self._host, self._port, ssl=self._ssl, server_hostname=self._server_hostname
            )
        except OSError as err:  # ssl.SSLError is one too
            raise aiohttp.ClientOSError(
                err.errno, f"cannot connect to {self._host}:{self._port}: {err}"
            ) from err
        self._open.add(proto)
        return proto

    def _discard(self, proto: _Protocol) -> None:
        self._open.discard(proto)
        proto.closed = True
        if proto.transport is not None:
            proto.transport.close()

    async def close(self) -> None:
        """Close every connection (idle or not); requests in flight fail."""
        for proto in list(self._open):
            self._discard(proto)
        self._idle.clear()


def _decompress(body: bytes, encoding: str) -> bytes:
    """``body`` inflated (gzip or zlib deflate), at most ``MAX_BODY`` bytes."""
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS if encoding == "gzip" else zlib.MAX_WBITS)
    try:
        out = inflater.decompress(body, MAX_BODY + 1)
    except zlib.error as err:
        raise aiohttp.ClientPayloadError(f"cannot decode {encoding} body: {err}") from None
    if len(out) > MAX_BODY:
        raise aiohttp.ClientPayloadError(f"reply body exceeds {MAX_BODY} bytes")
    return out
