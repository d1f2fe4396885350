"""The lean HTTP/1.1 pool: framing (length, chunked, close-delimited, gzip), reuse, bounds and failures."""

from __future__ import annotations

import asyncio
import gzip
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import aiohttp
import pytest

from kplane.client import http1

Replier = Callable[[bytes], list[bytes] | None]
"""Given the request bytes, the reply in segments (None: close the connection without one; a
last segment ``b""``: close it after the reply)."""


class Server:
    """A loopback TCP server answering each request with what ``reply`` returns."""

    def __init__(self, reply: Replier) -> None:
        self.reply = reply
        self.connections = 0
        self.requests: list[bytes] = []

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                request = head + await reader.readexactly(length)
                self.requests.append(request)
                segments = self.reply(request)
                if segments is None:
                    break
                for seg in segments:
                    writer.write(seg)
                    await writer.drain()
                    await asyncio.sleep(0)
                if segments and segments[-1] == b"":
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


@asynccontextmanager
async def serving(reply: Replier) -> AsyncIterator[tuple[Server, http1.Pool]]:
    server = Server(reply)
    srv = await asyncio.start_server(server.handle, "127.0.0.1", 0)
    port = srv.sockets[0].getsockname()[1]
    pool = http1.Pool(
        "127.0.0.1",
        port,
        ssl_context=None,
        server_hostname=None,
        default_headers=[("User-Agent", "t")],
        limit=4,
    )
    try:
        yield server, pool
    finally:
        await pool.close()
        srv.close()
        await srv.wait_closed()


def fixed(body: bytes, *extra: str) -> Replier:
    head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + "".join(e + "\r\n" for e in extra)
    return lambda _: [f"{head}Content-Length: {len(body)}\r\n\r\n".encode() + body]


async def test_content_length_reply_and_request_framing() -> None:
    """A body framed by Content-Length arrives whole; the request carries Host, defaults, length."""
    async with serving(fixed(b'{"a":1}', 'Warning: 299 - "one"', 'Warning: 299 - "two"')) as (srv, pool):
        resp = await pool.request("PATCH", "/x?y=1", {"Content-Type": "application/json"}, b"{}")
        assert resp.status == 200
        assert await resp.read() == b'{"a":1}'
        assert resp.headers.get("content-type") == "application/json"
        assert resp.headers.getall("Warning") == ['299 - "one"', '299 - "two"']
        head = srv.requests[0]
        assert head.startswith(b"PATCH /x?y=1 HTTP/1.1\r\n")
        assert f"Host: 127.0.0.1:{pool._port}\r\n".encode() in head
        assert b"User-Agent: t\r\n" in head and b"Content-Length: 2\r\n" in head


async def test_keep_alive_connection_is_reused() -> None:
    """Sequential requests share one connection; ``Connection: close`` makes the next open another."""
    async with serving(fixed(b"{}")) as (srv, pool):
        for _ in range(5):
            await pool.request("GET", "/", {}, None)
        assert srv.connections == 1
    async with serving(fixed(b"{}", "Connection: close")) as (srv, pool):
        for _ in range(3):
            await pool.request("GET", "/", {}, None)
        assert srv.connections == 3


async def test_chunked_reply_in_fragments_with_trailer() -> None:
    """Chunks split across segments, chunk extensions and a trailer are reassembled."""
    raw = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-T: 1\r\n\r\n"
    )
    segments = [raw[i : i + 7] for i in range(0, len(raw), 7)]
    async with serving(lambda _: segments) as (srv, pool):
        resp = await pool.request("GET", "/", {}, None)
        assert await resp.read() == b"hello world"
        await pool.request("GET", "/", {}, None)  # the trailer was consumed: the connection is reusable
        assert srv.connections == 1


async def test_gzip_reply_is_inflated() -> None:
    """A gzip Content-Encoding is undone, as aiohttp's auto_decompress did."""
    body = gzip.compress(b'{"items": []}' * 100)
    async with serving(fixed(body, "Content-Encoding: gzip")) as (_, pool):
        assert await (await pool.request("GET", "/", {}, None)).read() == b'{"items": []}' * 100


async def test_body_until_close() -> None:
    """A reply with neither length nor chunking ends with the connection, which is not reused."""
    async with serving(lambda _: [b"HTTP/1.1 200 OK\r\n\r\nall ", b"of it", b""]) as (srv, pool):
        assert await (await pool.request("GET", "/", {}, None)).read() == b"all of it"
        assert await (await pool.request("GET", "/", {}, None)).read() == b"all of it"
        assert srv.connections == 2


async def test_server_closing_before_reply_is_a_disconnect() -> None:
    """A connection that ends before the reply is complete raises ServerDisconnectedError."""
    async with serving(lambda _: None) as (_, pool):
        with pytest.raises(aiohttp.ServerDisconnectedError):
            await pool.request("POST", "/", {}, b"{}")
    async with serving(lambda _: [b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", b""]) as (_, pool):
        with pytest.raises(aiohttp.ServerDisconnectedError):
            await pool.request("GET", "/", {}, None)


async def test_refused_connection_is_an_oserror() -> None:
    """Nothing listening: aiohttp's ClientOSError, which is also an OSError (callers catch either)."""
    srv = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = srv.sockets[0].getsockname()[1]
    srv.close()
    await srv.wait_closed()
    pool = http1.Pool("127.0.0.1", port, ssl_context=None, server_hostname=None, default_headers=[], limit=1)
    with pytest.raises(aiohttp.ClientOSError) as info:
        await pool.request("GET", "/", {}, None)
    assert isinstance(info.value, OSError)


@pytest.mark.parametrize(
    "reply",
    [
        pytest.param(b"HTTP/1.1 200 OK\r\n" + b"X: " + b"a" * (http1.MAX_HEAD + 10), id="header-too-long"),
        pytest.param(b"SMTP ready\r\n\r\n", id="not-http"),
        pytest.param(b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", id="malformed-header"),
        pytest.param(b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", id="negative-length"),
        pytest.param(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % (http1.MAX_BODY + 1), id="too-long"),
        pytest.param(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", id="bad-chunk-size"),
        pytest.param(
            b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 3\r\n\r\nabc", id="bad-gzip"
        ),
    ],
)
async def test_hostile_replies_fail_cleanly(reply: bytes) -> None:
    """Malformed or oversized replies raise ClientPayloadError (never hang, never grow unbounded)."""
    async with serving(lambda _: [reply]) as (_, pool):
        with pytest.raises(aiohttp.ClientPayloadError):
            await asyncio.wait_for(pool.request("GET", "/", {}, None), 5)


async def test_limit_bounds_connections() -> None:
    """At most ``limit`` requests are in flight; the others wait for a connection."""
    gate = asyncio.Event()
    in_flight = 0
    peak = 0

    class Slow(Server):
        async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            nonlocal in_flight, peak
            await reader.readuntil(b"\r\n\r\n")
            in_flight += 1
            peak = max(peak, in_flight)
            await gate.wait()
            in_flight -= 1
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            await writer.drain()
            writer.close()

    server = Slow(lambda _: None)
    srv = await asyncio.start_server(server.handle, "127.0.0.1", 0)
    port = srv.sockets[0].getsockname()[1]
    pool = http1.Pool("127.0.0.1", port, ssl_context=None, server_hostname=None, default_headers=[], limit=2)
    tasks = [asyncio.ensure_future(pool.request("GET", "/", {}, None)) for _ in range(5)]
    await asyncio.sleep(0.1)
    assert peak == 2
    gate.set()
    assert [r.status for r in await asyncio.gather(*tasks)] == [200] * 5
    await pool.close()
    srv.close()
    await srv.wait_closed()
