"""The benchmarks' HTTP clients read what any conformant server may send: gzip, chunked, protobuf.

kube-apiserver gzips replies over 128 KiB for clients that ask for it and streams some replies
chunked; the benchmarks once fed such bodies to a JSON parser (``str is not valid UTF-8``).
"""

from __future__ import annotations

import gzip
import os
import pathlib
import sys
import threading
from collections.abc import AsyncIterator

import orjson
import pytest
from aiohttp import web

from kplane.api import protobuf

sys.path.insert(0, str(pathlib.Path(__file__).parents[3] / "benchmarks"))
import _client
import _rawhttp
import list_latency

LIST = {"kind": "ConfigMapList", "apiVersion": "v1", "metadata": {"continue": "t"}, "items": [{}] * 3}


async def _handler(request: web.Request) -> web.StreamResponse:
    body = orjson.dumps({**LIST, "accept": request.headers.get("Accept", "")})
    if request.path == "/gzip":
        return web.Response(body=gzip.compress(body), headers={"Content-Encoding": "gzip"})
    resp = web.StreamResponse()
    resp.enable_chunked_encoding()
    await resp.prepare(request)
    for i in range(0, len(body), 7):
        await resp.write(body[i : i + 7])
    await resp.write_eof()
    return resp


@pytest.fixture
async def server() -> AsyncIterator[str]:
    app = web.Application()
    app.router.add_get("/{tail:.*}", _handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    yield f"http://127.0.0.1:{port}"
    await runner.cleanup()


@pytest.mark.parametrize("path", ["/gzip", "/chunked"])
async def test_raw_client_reads_gzip_and_chunked(server: str, path: str) -> None:
    """The raw client undoes chunking and gzip and asks for JSON."""
    conn = _rawhttp.RawConnection(server, None, {})
    await conn.connect()
    try:
        for _ in range(2):  # keep-alive: the second reply parses from the same buffer
            status, body = await conn.request(conn.build("GET", path))
            assert status == 200
            assert orjson.loads(body)["accept"] == "application/json"
    finally:
        conn.close()


@pytest.mark.parametrize("path", ["/gzip", "/chunked"])
async def test_session_reads_gzip_and_chunked(server: str, path: str) -> None:
    """The aiohttp session asks for JSON, no compression, and still reads a gzipped reply."""
    target = _client.Target(server=server, ssl_context=None)
    async with _client.session(target) as http:
        body = await _client.request(http, "GET", server + path)
    assert orjson.loads(body)["accept"] == "application/json"


def test_list_items_and_continue_in_both_encodings() -> None:
    """The list benchmark counts items and reads the continue token in JSON and in protobuf."""
    assert list_latency._items_and_continue(orjson.dumps(LIST)) == (3, "t")
    items = [protobuf.item_field(protobuf.item_message("v1", "ConfigMap", {})) for _ in range(3)]
    body = protobuf.encode_list("v1", "ConfigMapList", {"continue": "t"}, items)
    assert list_latency._items_and_continue(body) == (3, "t")


def test_thread_cpu_ns_counts_this_threads_work() -> None:
    """The per-request server CPU reader: nanoseconds on a CPU, growing with work done."""
    before = _client.thread_cpu_ns(os.getpid(), threading.get_native_id())
    sum(i * i for i in range(200_000))
    assert _client.thread_cpu_ns(os.getpid(), threading.get_native_id()) > before


def test_list_continue_token_read_from_the_head_in_both_encodings() -> None:
    """Paged lists read the continue token without decoding the items, in JSON and in protobuf."""
    page = {
        "kind": "ConfigMapList",
        "apiVersion": "v1",
        "metadata": {"continue": "eyJ2IjoxfQ"},
        "items": [{}],
    }
    assert list_latency._continue_token(orjson.dumps(page)) == "eyJ2IjoxfQ"
    last = {**page, "metadata": {"resourceVersion": "7"}}
    assert list_latency._continue_token(orjson.dumps(last)) == ""
    items = [protobuf.item_field(protobuf.item_message("v1", "ConfigMap", {})) for _ in range(2)]
    body = protobuf.encode_list("v1", "ConfigMapList", {"continue": "eyJ2IjoxfQ"}, items)
    assert list_latency._continue_token(body) == "eyJ2IjoxfQ"
    assert list_latency._continue_token(protobuf.encode_list("v1", "ConfigMapList", {}, items)) == ""
