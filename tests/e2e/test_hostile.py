"""Hostile input end to end: 20,000 generated requests never cost an answer, memory or data.

A private server (plain HTTP on loopback for the load, so the client costs little CPU) receives a
seeded mix of hostile requests (``tests/e2e/hostile.py``) over many keep-alive connections. Every
request must get an answer below 500, except the one 5xx upstream gives too (named below); no
connection may be dropped; the server stays up; objects written before the run are unchanged; and
its RSS returns within 25 % of where it started.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.e2e import hostile
from tests.e2e.conftest import Server, start_server
from tests.e2e.helpers import Kube

WARM_UP = 500
MEASURED = 20_000
CONNECTIONS = 48

# Where upstream answers 5xx too: a list or get at a resourceVersion the store has not reached
# waits, then fails 504 Timeout "Too large resource version" (apiserver storage/cacher
# watch_cache.go waitUntilFreshAndBlock; the reason is Timeout, retriable). And a create whose
# metadata.resourceVersion is a positive integer: 500 "resourceVersion should not be set on objects
# to be created" (storage/etcd3 store.go Create, a plain error answered without a reason).
UPSTREAM_5XX = {
    504: ("Too large resource version",),
    500: ("resourceVersion should not be set on objects to be created",),
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


async def _call(conn: hostile.Connection, req: hostile.Request) -> tuple[int, bytes]:
    status, _, body = await conn.send(req)
    return status, body


async def _setup(port: int) -> tuple[list[str], dict[str, dict[str, object]]]:
    conn = hostile.Connection("127.0.0.1", port)
    await conn.connect()
    for ns in (hostile.NS, "keep"):
        body = json.dumps({"metadata": {"name": ns}}).encode()
        status, _ = await _call(conn, hostile.Request("setup", "POST", "/api/v1/namespaces", body))
        assert status == 201, status
    body = json.dumps(hostile.CRD).encode()
    status, raw = await _call(
        conn,
        hostile.Request("setup", "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", body),
    )
    assert status == 201, raw
    widget = {
        "apiVersion": f"{hostile.CRD_GROUP}/v1",
        "kind": "Widget",
        "metadata": {"name": "w"},
        "spec": {},
    }
    path = f"/apis/{hostile.CRD_GROUP}/v1/namespaces/{hostile.NS}/widgets"
    status, raw = await _call(conn, hostile.Request("setup", "POST", path, json.dumps(widget).encode()))
    assert status == 201, raw
    names = [f"t{i}" for i in range(20)]
    for name in names:
        body = json.dumps({"metadata": {"name": name}, "data": {"k": "v"}}).encode()
        status, _ = await _call(
            conn, hostile.Request("setup", "POST", f"/api/v1/namespaces/{hostile.NS}/configmaps", body)
        )
        assert status == 201, status
    kept: dict[str, dict[str, object]] = {}
    for i in range(20):
        body = json.dumps(
            {"metadata": {"name": f"k{i}", "labels": {"a": "b"}}, "data": {"k": "v" * i}}
        ).encode()
        status, raw = await _call(
            conn, hostile.Request("setup", "POST", "/api/v1/namespaces/keep/configmaps", body)
        )
        assert status == 201, status
        kept[f"k{i}"] = json.loads(raw)
    conn.close()
    return names, kept


async def _run(port: int, requests: list[hostile.Request]) -> tuple[Counter[str], list[str], list[str]]:
    queue: asyncio.Queue[hostile.Request] = asyncio.Queue()
    for r in requests:
        queue.put_nowait(r)
    codes: Counter[str] = Counter()
    bad: list[str] = []
    dropped: list[str] = []

    async def worker() -> None:
        conn = hostile.Connection("127.0.0.1", port)
        await conn.connect()
        previous = "(first request)"
        while True:
            try:
                req = queue.get_nowait()
            except asyncio.QueueEmpty:
                break
            try:
                status, body = await asyncio.wait_for(_call(conn, req), 60)
            except (hostile.Dropped, TimeoutError) as err:
                dropped.append(f"{req.kind} {req.method} {req.path[:80]}: {err!r}, after {previous}")
                conn.close()
                conn = hostile.Connection("127.0.0.1", port)
                await conn.connect()
                continue
            codes[f"{req.kind} {status}"] += 1
            previous = f"{req.method} {req.path[:80]} {req.content_type} -> {status}"
            if status >= 500 and not any(
                m in body.decode("utf-8", "replace") for m in UPSTREAM_5XX.get(status, ())
            ):
                bad.append(
                    f"{status} {req.kind} {req.method} {req.path[:100]} Accept={req.accept!r} "
                    f"{req.body[:200]!r}: {body[:300]!r}"
                )
            elif len(body) > 1_000_000:
                bad.append(f"{req.kind}: a {len(body)}-byte answer to {req.body[:100]!r}")
        conn.close()

    await asyncio.gather(*(worker() for _ in range(CONNECTIONS)))
    return codes, bad, dropped


async def _check_kept(port: int, kept: dict[str, dict[str, object]]) -> None:
    conn = hostile.Connection("127.0.0.1", port)
    await conn.connect()
    for name, before in kept.items():
        status, raw = await _call(
            conn, hostile.Request("check", "GET", f"/api/v1/namespaces/keep/configmaps/{name}")
        )
        assert status == 200, (name, status, raw[:300])
        assert json.loads(raw) == before, name
    status, _ = await _call(conn, hostile.Request("check", "GET", "/readyz"))
    assert status == 200
    conn.close()


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_hostile_requests_never_cost_an_answer_memory_or_data(tmp_path: Path) -> None:
    """20,000 hostile requests: no 5xx but upstream's, no dropped connection, data and RSS intact."""
    port = _free_port()
    srv: Server = start_server(tmp_path / "srv", "--insecure-port", str(port))
    try:
        names, kept = asyncio.run(_setup(port))
        gen = hostile.Generator(seed=int(os.environ.get("KPLANE_HOSTILE_SEED", "7")), names=names)
        requests = list(gen.requests(WARM_UP + MEASURED))
        # warm-up: the first requests of each kind load modules and fill caches; RSS is measured after
        asyncio.run(_run(port, requests[:WARM_UP]))
        rss_start = _rss_kib(srv.proc.pid)
        started = time.monotonic()
        codes, bad, dropped = asyncio.run(_run(port, requests[WARM_UP:]))
        elapsed = time.monotonic() - started
        assert srv.proc.poll() is None, "the server died"
        asyncio.run(_check_kept(port, kept))
        rss_end = _rss_kib(srv.proc.pid)
        summary = ", ".join(f"{k}: {v}" for k, v in sorted(codes.items()))
        print(f"\n{MEASURED} hostile requests in {elapsed:.1f}s; RSS {rss_start} -> {rss_end} KiB")
        print(summary)
        assert not dropped, f"{len(dropped)} dropped connections, e.g. {dropped[:5]}"
        log_tail = srv.log.read_text()[-4000:]
        assert not bad, f"{len(bad)} answers >= 500 (or oversized), e.g.\n" + "\n".join(bad[:10]) + log_tail
        assert sum(codes.values()) == MEASURED
        assert rss_end <= rss_start * 1.25, f"RSS grew from {rss_start} to {rss_end} KiB"
    finally:
        srv.stop()


def _half_open(host: str, port: int, count: int, partial: bytes) -> list[socket.socket]:
    socks = []
    for i in range(count):
        s = socket.create_connection((host, port))
        if i % 2:
            s.sendall(partial)
        socks.append(s)
    return socks


def _closed_within(socks: list[socket.socket], deadline: float) -> int:
    closed = 0
    for s in socks:
        s.settimeout(max(0.05, deadline - time.monotonic()))
        try:
            while s.recv(4096):
                pass
            closed += 1
        except OSError:
            pass
        finally:
            s.close()
    return closed


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_half_open_connections_are_closed_after_the_header_timeout(tmp_path: Path) -> None:
    """~200 connections that send nothing or half a request head are closed after
    --read-header-timeout (Go's ReadHeaderTimeout; kube-apiserver uses 32 s), TLS or not; a
    kept-alive connection is closed after --idle-timeout; a watch that outlives both deadlines keeps
    its stream."""
    port = _free_port()
    srv = start_server(
        tmp_path / "srv", "--insecure-port", str(port), "--read-header-timeout", "1", "--idle-timeout", "2"
    )
    try:
        kube = Kube.from_kubeconfig(srv.kubeconfig, tmp_path / "pki")
        watch = socket.create_connection(("127.0.0.1", port))
        path = b"/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=6"
        watch.sendall(b"GET " + path + b" HTTP/1.1\r\nHost: x\r\n\r\n")
        watch_started = time.monotonic()
        plain = _half_open("127.0.0.1", port, 100, b"GET /api HTTP/1.1\r\nHost: x\r\n")
        tls = _half_open(kube.host, kube.port, 100, b"\x16\x03\x01")  # a TLS record header, then silence
        time.sleep(1.0)
        deadline = time.monotonic() + 4.0
        closed = _closed_within(plain + tls, deadline)
        assert closed == 200, f"only {closed} of 200 half-open connections were closed"
        idle = socket.create_connection(("127.0.0.1", port))
        idle.sendall(b"GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n")
        idle.settimeout(5)
        assert idle.recv(65536).startswith(b"HTTP/1.1 200")
        assert idle.recv(65536) == b"", "an idle kept-alive connection stayed open"
        idle.close()
        # the watch is being served: neither deadline applies, it ends at its own timeoutSeconds
        watch.settimeout(10)
        data = b""
        while chunk := watch.recv(65536):
            data += chunk
            if data.endswith(b"0\r\n\r\n"):
                break
        assert data.startswith(b"HTTP/1.1 200"), data[:200]
        # it outlived both deadlines (1 s, 2 s) and ended at its own timeoutSeconds (6 s)
        assert time.monotonic() - watch_started > 5, "the watch was cut before its timeoutSeconds"
        watch.close()
    finally:
        srv.stop()
