"""RESTClient against a real kplane server, and against a tiny local server for rare replies."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path

import orjson
import pytest
from aiohttp import web

from kplane._util import clock as clock_mod
from kplane.api import errors
from kplane.client import Config, ConfigError, rest, transport

Start = Callable[[Callable[[web.Request], Awaitable[web.StreamResponse]]], Awaitable[str]]


class NoWaitClock(clock_mod.RealClock):
    """Real time, but sleeps return at once and are recorded."""

    def __init__(self) -> None:
        self.slept: list[float] = []

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        await asyncio.sleep(0)


def _status(code: int, reason: str, message: str) -> web.Response:
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "code": code,
        "reason": reason,
        "message": message,
    }
    return web.json_response(body, status=code)


async def test_get_decodes_json(config: Config) -> None:
    """A GET returns the decoded JSON body of the real server."""
    async with rest.RESTClient(config) as rc:
        ns = await rc.request("GET", "/api/v1/namespaces/default")
    assert ns["metadata"]["name"] == "default"


async def test_not_found_is_typed_with_upstream_message(config: Config) -> None:
    """A 404 Status from the server raises NotFound carrying the server's message and details."""
    async with rest.RESTClient(config) as rc:
        with pytest.raises(errors.NotFound) as info:
            await rc.request("GET", "/api/v1/namespaces/default/configmaps/absent")
    assert str(info.value) == 'configmaps "absent" not found'
    assert info.value.details["name"] == "absent"


async def test_already_exists_on_second_create(config: Config, name: str) -> None:
    """Creating the same object twice raises AlreadyExists (a Conflict) with upstream's message."""
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}
    async with rest.RESTClient(config) as rc:
        await rc.request("POST", "/api/v1/namespaces/default/configmaps", body=body)
        with pytest.raises(errors.AlreadyExists) as info:
            await rc.request("POST", "/api/v1/namespaces/default/configmaps", body=body)
        await rc.request("DELETE", f"/api/v1/namespaces/default/configmaps/{name}")
    assert str(info.value) == f'configmaps "{name}" already exists'
    assert isinstance(info.value, errors.Conflict)


async def test_stream_yields_watch_lines(config: Config) -> None:
    """``stream`` yields one line per watch event and ends when the server ends the watch."""
    async with rest.RESTClient(config) as rc:
        lines = [
            line
            async for line in rc.stream(
                "GET", "/api/v1/namespaces", query={"watch": True, "timeoutSeconds": 1}
            )
        ]
    events = [orjson.loads(line) for line in lines]
    assert {e["type"] for e in events} == {"ADDED"}
    assert "default" in {e["object"]["metadata"]["name"] for e in events}


async def test_stream_raises_before_first_line(config: Config) -> None:
    """A non-2xx reply to a stream raises its typed error instead of yielding."""
    async with rest.RESTClient(config) as rc:
        with pytest.raises(errors.NotFound):
            async for _ in rc.stream("GET", "/api/v1/nosuchresources", query={"watch": True}):
                pass


async def test_stream_splits_lines_across_chunks(start: Start) -> None:
    """Lines split over several chunks, and a last line without newline, come out whole."""

    async def handler(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse()
        await resp.prepare(request)
        for chunk in (b'{"a":', b'1}\n{"b"', b":2}\n\n", b'{"c":3}'):
            await resp.write(chunk)
        await resp.write_eof()
        return resp

    async with rest.RESTClient(Config(host=await start(handler), qps=0)) as rc:
        lines = [line async for line in rc.stream("GET", "/x")]
    assert lines == [b'{"a":1}', b'{"b":2}', b'{"c":3}']


@pytest.fixture
def start(local_server: Start) -> Start:
    return local_server


async def test_warnings_reach_handler(start: Start) -> None:
    """Every entry of every Warning header reaches the handler, unescaped, in order."""

    async def handler(request: web.Request) -> web.StreamResponse:
        resp = web.json_response({"kind": "ConfigMap"})
        resp.headers.add("Warning", '299 - "first"')
        resp.headers.add("Warning", '299 - "second \\"quoted\\"", 299 kplane "third"')
        return resp

    seen: list[tuple[int, str, str]] = []
    cfg = Config(host=await start(handler), qps=0)
    async with rest.RESTClient(cfg, warning_handler=lambda c, a, t: seen.append((c, a, t))) as rc:
        await rc.request("GET", "/api/v1/x")
    assert seen == [(299, "-", "first"), (299, "-", 'second "quoted"'), (299, "kplane", "third")]


async def test_default_warning_handler_logs_each_text_once(
    start: Start, caplog: pytest.LogCaptureFixture
) -> None:
    """The default handler logs a repeated warning text only once."""

    async def handler(request: web.Request) -> web.StreamResponse:
        return web.json_response({}, headers={"Warning": '299 - "deprecated API"'})

    caplog.set_level(logging.WARNING, logger="kplane.client")
    async with rest.RESTClient(Config(host=await start(handler), qps=0)) as rc:
        for _ in range(3):
            await rc.request("GET", "/x")
    assert [r.getMessage() for r in caplog.records] == ["Warning: deprecated API"]


async def test_429_retry_after_is_honoured(start: Start) -> None:
    """A 429 with Retry-After is retried after that many seconds, then the success is returned."""
    calls = 0

    async def handler(request: web.Request) -> web.StreamResponse:
        nonlocal calls
        calls += 1
        if calls < 3:
            resp = _status(429, "TooManyRequests", "slow down")
            resp.headers["Retry-After"] = "2"
            return resp
        return web.json_response({"ok": True})

    clock = NoWaitClock()
    async with rest.RESTClient(Config(host=await start(handler), qps=0), _clock=clock) as rc:
        assert await rc.request("POST", "/x", body={"a": 1}) == {"ok": True}
    assert calls == 3
    assert clock.slept == [2.0, 2.0]


async def test_retry_after_gives_up_after_ten_retries(start: Start) -> None:
    """A server that always answers 503 + Retry-After gets 11 requests; then ServiceUnavailable is raised."""
    calls = 0

    async def handler(request: web.Request) -> web.StreamResponse:
        nonlocal calls
        calls += 1
        resp = _status(503, "ServiceUnavailable", "busy")
        resp.headers["Retry-After"] = "1"
        return resp

    async with rest.RESTClient(Config(host=await start(handler), qps=0), _clock=NoWaitClock()) as rc:
        with pytest.raises(errors.ServiceUnavailable) as info:
            await rc.request("GET", "/x")
    assert calls == 1 + transport.MAX_RETRIES
    assert info.value.retry_after == 1


async def test_5xx_without_retry_after_is_not_retried(start: Start) -> None:
    """A 500 without Retry-After raises at once; a non-Status body gets upstream's generic message."""
    calls = 0

    async def handler(request: web.Request) -> web.StreamResponse:
        nonlocal calls
        calls += 1
        return web.Response(status=500, text="boom")

    async with rest.RESTClient(Config(host=await start(handler), qps=0)) as rc:
        with pytest.raises(errors.InternalError) as info:
            await rc.request("GET", "/x")
    assert calls == 1
    assert str(info.value) == "an error on the server has prevented the request from succeeding"
    assert info.value.causes[0].message == "boom"


async def test_401_with_token_file_rereads_and_retries_once(start: Start, tmp_path: Path) -> None:
    """After a 401 the token file is re-read and the request sent once more with the new token."""
    token_file = tmp_path / "token"
    token_file.write_text("old")
    seen: list[str] = []

    async def handler(request: web.Request) -> web.StreamResponse:
        auth = request.headers.get("Authorization", "")
        seen.append(auth)
        if auth != "Bearer new":
            token_file.write_text("new")
            return _status(401, "Unauthorized", "Unauthorized")
        return web.json_response({"ok": True})

    async with rest.RESTClient(Config(host=await start(handler), token_file=str(token_file), qps=0)) as rc:
        assert await rc.request("GET", "/x") == {"ok": True}
    assert seen == ["Bearer old", "Bearer new"]


async def test_401_with_static_token_is_not_retried(start: Start) -> None:
    """With a static token a 401 raises Unauthorized after one request."""
    calls = 0

    async def handler(request: web.Request) -> web.StreamResponse:
        nonlocal calls
        calls += 1
        return _status(401, "Unauthorized", "Unauthorized")

    async with rest.RESTClient(Config(host=await start(handler), token="t", qps=0)) as rc:
        with pytest.raises(errors.Unauthorized):
            await rc.request("GET", "/x")
    assert calls == 1


async def test_user_agent_and_query_encoding(start: Start) -> None:
    """Requests carry kplane's User-Agent; bools encode as true/false and sequences repeat the key."""
    got: dict[str, object] = {}

    async def handler(request: web.Request) -> web.StreamResponse:
        got["ua"] = request.headers["User-Agent"]
        got["query"] = list(request.query.items())
        return web.Response(text="plain", content_type="text/plain")

    async with rest.RESTClient(Config(host=await start(handler), qps=0)) as rc:
        text = await rc.request("GET", "/x", query={"watch": True, "dryRun": ["All", "Other"]})
    assert text == "plain"
    assert str(got["ua"]).startswith("kplane/")
    assert got["query"] == [("watch", "true"), ("dryRun", "All"), ("dryRun", "Other")]


async def test_path_prefix_and_selector_characters_survive_encoding(start: Start) -> None:
    """A host URL's path prefix is kept; a selector's spaces, commas, parentheses and ``!`` arrive
    as sent, after a path that carries a query of its own."""
    got: dict[str, object] = {}

    async def handler(request: web.Request) -> web.StreamResponse:
        got["path"] = request.path
        got["query"] = list(request.query.items())
        return web.json_response({"kind": "PodList"})

    host = await start(handler)
    async with rest.RESTClient(Config(host=host + "/prefix/", qps=0)) as rc:
        out = await rc.request(
            "GET", "/api/v1/pods?watch=false", query={"labelSelector": "app in (a,b),tier!=x y", "limit": 5}
        )
    assert out == {"kind": "PodList"}
    assert got["path"] == "/prefix/api/v1/pods"
    assert got["query"] == [("watch", "false"), ("labelSelector", "app in (a,b),tier!=x y"), ("limit", "5")]


def test_parse_warnings_skips_malformed() -> None:
    """Malformed Warning entries are dropped; well-formed ones with a date are kept."""
    values = ['299 - "ok" "Mon, 01 Jan 2026 00:00:00 GMT"', "garbage", '199 agent "x"']
    assert transport.parse_warnings(values) == [(299, "-", "ok"), (199, "agent", "x")]


async def test_token_bucket_waits_after_burst() -> None:
    """After ``burst`` immediate tokens, each further acquire waits 1/qps on the clock."""
    clock = clock_mod.FakeClock()
    bucket = transport.TokenBucket(qps=5, burst=2, clock=clock)
    await bucket.acquire()
    await bucket.acquire()
    third = asyncio.ensure_future(bucket.acquire())
    await asyncio.sleep(0)
    assert not third.done()
    clock.step(0.19)
    await asyncio.sleep(0)
    assert not third.done()
    clock.step(0.02)
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert third.done()


async def test_requests_go_through_the_configured_proxy(start: Start) -> None:
    """``proxy_url`` is honoured: the proxy receives the request in absolute form for the real host."""
    seen: list[str] = []

    async def proxy(request: web.Request) -> web.StreamResponse:
        seen.append(str(request.url))
        return web.json_response({"kind": "Namespace", "metadata": {"name": "default"}})

    proxy_url = await start(proxy)
    # The server's name does not resolve: only a request sent to the proxy can succeed.
    cfg = Config(host="http://kplane.invalid:6443", proxy_url=proxy_url)
    async with rest.RESTClient(cfg) as rc:
        body = await rc.request("GET", "/api/v1/namespaces/default")
    assert body["metadata"]["name"] == "default"
    assert seen == ["http://kplane.invalid:6443/api/v1/namespaces/default"]


@pytest.mark.parametrize("url", ["socks5://127.0.0.1:1080", "127.0.0.1:3128"])
def test_a_proxy_it_cannot_use_is_refused(url: str) -> None:
    """A proxy scheme aiohttp cannot speak is refused at construction, never silently dropped."""
    with pytest.raises(ConfigError, match="only http:// and https:// proxies are supported"):
        Config(host="https://h", proxy_url=url)
