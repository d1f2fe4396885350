"""A minimal keep-alive HTTP/1.1 client for load generation (benchmarks only).

aiohttp's client costs ~200 us of CPU per request here, as much as the server being measured, and
both share two cores. This client writes pre-built request bytes on one TLS connection and parses
only what framing needs (the status line, Content-Length or chunked Transfer-Encoding, and
Content-Encoding: gzip is undone), so nearly all CPU goes to the server under test, as with
``wrk``. Requests carry ``Accept: application/json`` (unless the caller's headers name another)
and no Accept-Encoding, so any conformant server answers uncompressed JSON.
"""

from __future__ import annotations

import asyncio
import gzip
import ssl
from urllib.parse import urlsplit


class _Protocol(asyncio.Protocol):
    def __init__(self) -> None:
        self.buf = bytearray()
        self.waiter: asyncio.Future[tuple[int, bytes]] | None = None
        self.transport: asyncio.BaseTransport | None = None
        self.lost: BaseException | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buf += data
        self._try_complete()

    def connection_lost(self, exc: BaseException | None) -> None:
        self.lost = exc or ConnectionResetError("connection closed")
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(self.lost)

    def _try_complete(self) -> None:
        waiter = self.waiter
        if waiter is None or waiter.done():
            return
        end = self.buf.find(b"\r\n\r\n")
        if end < 0:
            return
        head = bytes(self.buf[:end])
        fields: dict[bytes, bytes] = {}
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            fields[name.strip().lower()] = value.strip().lower()
        if fields.get(b"transfer-encoding") == b"chunked":
            framed = _dechunk(self.buf, end + 4)
            if framed is None:
                return
            body, total = framed
        else:
            total = end + 4 + int(fields.get(b"content-length", b"0"))
            if len(self.buf) < total:
                return
            body = bytes(self.buf[end + 4 : total])
        del self.buf[:total]
        if fields.get(b"content-encoding") == b"gzip":
            body = gzip.decompress(body)
        waiter.set_result((int(head[9:12]), body))


def _dechunk(buf: bytearray, pos: int) -> tuple[bytes, int] | None:
    """The body of a chunked reply starting at ``pos`` and the offset just past it, or None if the
    buffer does not hold all of it yet (trailers are not expected and not read)."""
    parts: list[bytes] = []
    while True:
        eol = buf.find(b"\r\n", pos)
        if eol < 0:
            return None
        size = int(bytes(buf[pos:eol]).split(b";")[0], 16)
        start = eol + 2
        if size == 0:
            if len(buf) < start + 2:
                return None
            return b"".join(parts), start + 2
        if len(buf) < start + size + 2:
            return None
        parts.append(bytes(buf[start : start + size]))
        pos = start + size + 2


class RawConnection:
    """One keep-alive connection; ``request`` sends one request and awaits its reply."""

    def __init__(self, server: str, ssl_context: ssl.SSLContext | None, headers: dict[str, str]) -> None:
        parts = urlsplit(server)
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.ssl = ssl_context if parts.scheme == "https" else None
        # A User-Agent as every real client sends: the server derives the field manager from it,
        # so creates pay for managedFields bookkeeping as they would from kubectl or client-go.
        headers = {"User-Agent": "kplane-bench/1.0", "Accept": "application/json", **headers}
        extra = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        self.head_suffix = f"Host: {self.host}:{self.port}\r\n{extra}".encode()
        self.proto: _Protocol | None = None

    async def connect(self) -> None:
        loop = asyncio.get_running_loop()
        _, proto = await loop.create_connection(_Protocol, self.host, self.port, ssl=self.ssl)
        self.proto = proto

    def build(
        self, method: str, path: str, body: bytes = b"", content_type: str = "application/json"
    ) -> bytes:
        """The bytes of one request (callers may pre-build and reuse them)."""
        head = f"{method} {path} HTTP/1.1\r\n".encode() + self.head_suffix
        if body or method in ("POST", "PUT", "PATCH"):
            head += f"Content-Type: {content_type}\r\nContent-Length: {len(body)}\r\n".encode()
        return head + b"\r\n" + body

    async def request(self, raw: bytes) -> tuple[int, bytes]:
        proto = self.proto
        assert proto is not None and proto.transport is not None
        if proto.lost is not None:
            raise proto.lost
        fut: asyncio.Future[tuple[int, bytes]] = asyncio.get_running_loop().create_future()
        proto.waiter = fut
        proto.transport.write(raw)  # type: ignore[attr-defined]
        return await fut

    def close(self) -> None:
        if self.proto is not None and self.proto.transport is not None:
            self.proto.transport.close()
