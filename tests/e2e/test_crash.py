"""Durability across SIGKILL: every create the server acknowledged is there after a restart.

A 16-task aiohttp load creates ConfigMaps as fast as the server takes them, recording each 201
(name and resourceVersion). The server is SIGKILLed mid-load, at a different moment per case, and
restarted on the same data directory. An acknowledged create that is missing, or present with a
different resourceVersion, means the server answered before its write was durable; a new write at
or below an acknowledged resourceVersion means the revision counter went backwards.
"""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from kplane._util import clock
from tests.e2e import loadgen
from tests.e2e.conftest import Server, start_server

CLIENTS = 16
NAMESPACE = "default"
CLOCK = clock.RealClock()


async def _list_all(
    http: aiohttp.ClientSession, path: str, *, limit: int | None = None
) -> list[dict[str, Any]]:
    """Every item of the list at ``path``, following ``continue`` tokens when ``limit`` is set."""
    items: list[dict[str, Any]] = []
    token = ""
    while True:
        params = {"limit": str(limit), "continue": token} if limit else {}
        async with http.get(path, params=params) as resp:
            body = await resp.json()
            assert resp.status == 200, body
        items.extend(body["items"])
        token = body["metadata"].get("continue", "")
        if not token:
            return items


async def _load_then_kill(srv: Server, *, kill_after: float, tls_dir: Path) -> loadgen.CreateLoad:
    """Run the create load against ``srv`` and SIGKILL it ``kill_after`` seconds in."""
    endpoint = loadgen.endpoint_from_kubeconfig(srv.kubeconfig, tmp_dir=tls_dir)
    load = loadgen.CreateLoad()
    async with loadgen.session(endpoint, connections=CLIENTS) as http:
        running = loadgen.create_until_broken(
            http, namespace=NAMESPACE, clients=CLIENTS, prefix="load", load=load
        )
        await asyncio.wait_for(asyncio.gather(running, _kill_later(srv, kill_after)), timeout=30)
    return load


async def _kill_later(srv: Server, seconds: float) -> None:
    await CLOCK.sleep(seconds)
    srv.proc.send_signal(signal.SIGKILL)


@pytest.mark.slow
@pytest.mark.parametrize("kill_after", [0.3, 1.0, 2.0], ids=["kill-at-0.3s", "kill-at-1.0s", "kill-at-2.0s"])
async def test_acknowledged_creates_survive_sigkill(tmp_path: Path, kill_after: float) -> None:
    """Each create acked with 201 before SIGKILL is present after restart with the same resourceVersion."""
    data_dir = tmp_path / "server"
    first = start_server(data_dir)
    try:
        load = await _load_then_kill(first, kill_after=kill_after, tls_dir=tmp_path / "tls-1")
        assert first.proc.wait(10) == -signal.SIGKILL
    finally:
        first.stop(signal.SIGKILL)
    assert not load.unexpected, f"non-201 answers under load: {load.unexpected[:3]}"
    assert load.acks, "no create was acknowledged before the kill: the test exercised nothing"
    assert load.transport_errors == CLIENTS, "some client stopped for a reason other than the kill"

    restart_started = CLOCK.monotonic()
    second = start_server(data_dir)
    restart = CLOCK.monotonic() - restart_started
    try:
        endpoint = loadgen.endpoint_from_kubeconfig(second.kubeconfig, tmp_dir=tmp_path / "tls-2")
        async with loadgen.session(endpoint, connections=2) as http:
            path = f"/api/v1/namespaces/{NAMESPACE}/configmaps"
            stored = {
                o["metadata"]["name"]: o["metadata"]["resourceVersion"] for o in await _list_all(http, path)
            }
            paged = await _list_all(http, path, limit=500)
            everywhere = await _list_all(http, "/api/v1/configmaps")
            async with http.post(path, json=loadgen.config_map("after-restart")) as resp:
                created = await resp.json()
                assert resp.status == 201, created
    finally:
        second.stop()

    print(
        f"\n{kill_after}s: {len(load.acks)} creates acknowledged, {len(stored)} stored "
        f"({len(stored) - len(load.acks)} unacknowledged in flight), restart {restart:.2f}s"
    )
    missing = [a for a in load.acks if a.name not in stored]
    assert not missing, f"{len(missing)} acknowledged creates lost, e.g. {missing[:3]}"
    moved = [(a, stored[a.name]) for a in load.acks if stored[a.name] != a.resource_version]
    assert not moved, f"{len(moved)} acknowledged creates changed resourceVersion, e.g. {moved[:3]}"
    assert len(set(stored.values())) == len(stored), "two stored objects share a resourceVersion"
    assert sorted(o["metadata"]["name"] for o in paged) == sorted(stored)
    assert {o["metadata"]["name"] for o in everywhere} >= set(stored)
    newest_ack = max(int(a.resource_version) for a in load.acks)
    assert int(created["metadata"]["resourceVersion"]) > newest_ack
