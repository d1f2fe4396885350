"""The etcd client's own gRPC-over-HTTP/2 transport (``http2`` and ``grpc_stream``): calls
against a real etcd (large messages under flow control, many concurrent calls, a watch stream)
and against servers that misbehave (silent, closing, not HTTP/2): a call always ends within its
deadline with a storage error, never hangs."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from kplane.server.storage import interface
from kplane.server.storage.etcd import EtcdClient, grpc_status, http2, wire


async def test_large_values_cross_flow_control_windows(etcd_endpoints: list[str]) -> None:
    """A 1 MiB value (16 times etcd's initial stream window, 64 frames) goes out and comes back
    whole, and calls keep working after it."""
    client = EtcdClient(etcd_endpoints)
    try:
        value = bytes(range(256)) * 4096
        for i in range(3):
            await client.call("KV/Put", wire.put_request(b"/http2-unit/big%d" % i, value), write=True)
        raw = await client.call("KV/Range", wire.range_request(b"/http2-unit/big", b"/http2-unit/bih"))
        got = wire.range_response(raw)
        assert [kv.value for kv in got.kvs] == [value] * 3
    finally:
        await client.call("KV/DeleteRange", wire.delete_request(b"/http2-unit/", b"/http2-unit0"), write=True)
        await client.close()


async def test_many_concurrent_calls_share_one_connection(etcd_endpoints: list[str]) -> None:
    """500 puts at once all succeed, each with its own revision, over one connection."""
    client = EtcdClient(etcd_endpoints)
    try:
        raws = await asyncio.gather(
            *(
                client.call("KV/Put", wire.put_request(b"/http2-many/%d" % i, b"v"), write=True)
                for i in range(500)
            )
        )
        revisions = {wire.header_of(r).revision for r in raws}
        assert len(revisions) == 500
        assert len(client._conns) == 1
    finally:
        await client.call("KV/DeleteRange", wire.delete_request(b"/http2-many/", b"/http2-many0"), write=True)
        await client.close()


async def test_a_stream_carries_many_messages_both_ways(etcd_endpoints: list[str]) -> None:
    """A watch stream: the create request out, then one event per put back, in order."""
    client = EtcdClient(etcd_endpoints)
    stream = await client.stream("Watch/Watch")
    try:
        await stream.write(wire.watch_create_request(b"/http2-watch/", b"/http2-watch0", 0))
        first = await stream.read()
        assert first is not None and wire.watch_response(first).created
        for i in range(50):
            await client.call("KV/Put", wire.put_request(b"/http2-watch/%d" % i, b"x" * 3000), write=True)
        keys: list[bytes] = []
        while len(keys) < 50:
            raw = await asyncio.wait_for(stream.read(), 5)
            assert raw is not None
            keys.extend(e.kv.key for e in wire.watch_response(raw).events)
        assert keys == [b"/http2-watch/%d" % i for i in range(50)]
    finally:
        stream.cancel()
        await client.call(
            "KV/DeleteRange", wire.delete_request(b"/http2-watch/", b"/http2-watch0"), write=True
        )
        await client.close()


async def test_a_stream_returns_window_credit_as_it_is_read(etcd_endpoints: list[str]) -> None:
    """20 MiB of watch events (more than the 16 MiB stream window) arrive whole: the window is
    reopened as messages are read."""
    client = EtcdClient(etcd_endpoints, timeout=30)
    stream = await client.stream("Watch/Watch")
    value = b"w" * (1 << 20)
    try:
        await stream.write(wire.watch_create_request(b"/http2-credit/", b"/http2-credit0", 0))
        assert (first := await stream.read()) is not None and wire.watch_response(first).created
        for i in range(20):
            await client.call("KV/Put", wire.put_request(b"/http2-credit/%d" % i, value), write=True)
        got = 0
        while got < 20:
            raw = await asyncio.wait_for(stream.read(), 10)
            assert raw is not None
            events = wire.watch_response(raw).events
            assert all(e.kv.value == value for e in events)
            got += len(events)
    finally:
        stream.cancel()
        await client.call(
            "KV/DeleteRange", wire.delete_request(b"/http2-credit/", b"/http2-credit0"), write=True
        )
        await client.close()


async def test_an_unknown_method_is_the_servers_error(etcd_endpoints: list[str]) -> None:
    """A gRPC error status from the server (here UNIMPLEMENTED) becomes Unavailable with its
    message, at once: the trailers are read, not the deadline waited for."""
    client = EtcdClient(etcd_endpoints, timeout=5)
    try:
        start = time.monotonic()
        with pytest.raises(interface.Unavailable, match="unknown method"):
            await client.call("KV/NoSuchMethod", b"")
        assert time.monotonic() - start < 2
    finally:
        await client.close()


Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


@contextlib.asynccontextmanager
async def _server(handle: Handler) -> AsyncIterator[str]:
    """A TCP server on loopback running ``handle`` per connection; yields its ``host:port``."""

    async def run(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await handle(reader, writer)
        finally:
            writer.close()

    server = await asyncio.start_server(run, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"127.0.0.1:{port}"
    finally:
        server.close()


async def _silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await reader.read(1 << 16)
    await asyncio.sleep(10)


async def _hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await reader.read(1 << 16)


async def _garbage(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    writer.write(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n" * 4)
    await writer.drain()
    await asyncio.sleep(10)


@pytest.mark.parametrize(
    ("handle", "error"),
    [
        pytest.param(_silent, interface.Timeout, id="silent"),
        pytest.param(_hang_up, interface.Timeout, id="hangs-up"),
        pytest.param(_garbage, interface.Timeout, id="not-http2"),
    ],
)
async def test_a_misbehaving_server_ends_the_call_within_its_deadline(
    handle: Handler, error: type[Exception]
) -> None:
    """No answer, a closed connection or bytes that are not HTTP/2: the call fails (retrying the
    endpoint until then) when its deadline passes, never later."""
    async with _server(handle) as endpoint:
        client = EtcdClient([endpoint], timeout=0.5)
        try:
            start = time.monotonic()
            with pytest.raises(error):
                await client.call("KV/Range", wire.range_request(b"k"))
            assert time.monotonic() - start < 1.5
        finally:
            await client.close()


async def test_a_lost_connection_fails_open_streams_as_unavailable() -> None:
    """Streams open on a connection that drops end with UNAVAILABLE (what makes the client fail
    over), not with a hang."""

    async def accept_then_drop(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(1 << 16)
        await asyncio.sleep(0.1)

    async with _server(accept_then_drop) as endpoint:
        conn = await http2.connect(endpoint, ssl_context=None, timeout=1, max_message=1 << 20)
        stream = await conn.open("/etcdserverpb.Watch/Watch", timeout=None)
        await stream.write(b"")
        with pytest.raises(grpc_status.RpcError) as info:
            await asyncio.wait_for(stream.read(), 5)
        assert info.value.code == grpc_status.UNAVAILABLE
        assert not conn.usable
