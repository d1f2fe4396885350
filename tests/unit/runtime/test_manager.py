"""The manager's endpoints and start/stop on the in-process control plane: metrics, probes, errors."""

from __future__ import annotations

import asyncio
import stat
from pathlib import Path

import aiohttp
import pytest

from kplane import runtime, testing
from kplane.client import config as config_mod
from kplane.client import typed
from kplane.runtime import serving
from tests.e2e import runtime_support as rs


async def _get(url: str) -> tuple[int, str]:
    async with aiohttp.ClientSession() as session, session.get(url) as resp:
        return resp.status, await resp.text()


async def test_metrics_and_probes(kplane: testing.ControlPlane) -> None:
    """controller-runtime's metric names and labels on /metrics; /healthz and /readyz answer ok."""
    assert kplane.config is not None
    manager = rs.new_manager(kplane.config, health_probe_bind_address="127.0.0.1:0")
    calls: list[str] = []

    async def fail_once(req: runtime.Request) -> None:
        calls.append(req.name)
        if len(calls) == 1:
            raise RuntimeError("first pass fails")

    await (
        runtime.Builder(manager)
        .for_("configmaps")
        .with_options(runtime.ControllerOptions(max_concurrent_reconciles=3))
        .complete(fail_once)
    )
    async with rs.running(manager):
        await kplane.client.dynamic.resource("configmaps", "default").create({"metadata": {"name": "m"}})
        await testing.eventually(lambda: len(calls) >= 2 and "m" in calls)
        metrics_url = manager.servers["metrics"].url + "/metrics"

        async def scraped() -> str:
            status, text = await _get(metrics_url)
            assert status == 200
            assert 'controller_runtime_reconcile_total{controller="configmap",result="success"}' in text
            return text

        text = await testing.eventually(scraped)
        for line in (
            'controller_runtime_reconcile_total{controller="configmap",result="error"} 1.0',
            'controller_runtime_reconcile_errors_total{controller="configmap"} 1.0',
            'controller_runtime_reconcile_total{controller="configmap",result="requeue_after"} 0.0',
            'controller_runtime_max_concurrent_reconciles{controller="configmap"} 3.0',
            'controller_runtime_active_workers{controller="configmap"} 0.0',
            'controller_runtime_terminal_reconcile_errors_total{controller="configmap"} 0.0',
        ):
            assert line in text, line
        for prefix in (
            'controller_runtime_reconcile_time_seconds_bucket{controller="configmap",le="0.005"}',
            'workqueue_adds_total{controller="configmap",name="configmap"}',
            'workqueue_depth{controller="configmap",name="configmap"}',
            'workqueue_retries_total{controller="configmap",name="configmap"}',
            'workqueue_queue_duration_seconds_bucket{controller="configmap",le="1e-08",name="configmap"}',
            'rest_client_requests_total{code="200",host="127.0.0.1:',
            'rest_client_request_duration_seconds_bucket{host="127.0.0.1:',
            "process_resident_memory_bytes ",  # controller-runtime registers the process collector
            "process_cpu_seconds_total ",
        ):
            assert prefix in text, prefix
        probes = manager.servers["probes"].url
        assert await _get(probes + "/healthz") == (200, "ok")
        assert await _get(probes + "/readyz") == (200, "ok")
        status, body = await _get(probes + "/readyz?verbose")
        assert status == 200 and "[+]cache ok" in body
        assert (await _get(probes + "/readyz/nope"))[0] == 404

        def broken() -> None:
            raise RuntimeError("watch is down")

        manager.readyz["watch"] = broken
        status, body = await _get(probes + "/readyz")
        assert status == 500 and "[-]watch failed: watch is down" in body
        del manager.readyz["watch"]

        # An informer that stopped can no longer watch: not ready.
        await (await manager.cache.informer("configmaps")).stop()
        status, body = await _get(probes + "/readyz")
        assert status == 500 and "[-]cache failed: informers not running: configmaps" in body


async def test_duplicate_controller_name_refused(kplane: testing.ControlPlane) -> None:
    """Two controllers of one name in a manager are refused, as upstream's name validation does."""
    assert kplane.config is not None
    manager = rs.new_manager(kplane.config)

    async def noop(req: runtime.Request) -> None:
        return None

    try:
        await runtime.Builder(manager).for_("configmaps").complete(noop)
        with pytest.raises(ValueError, match="controller with name configmap already exists"):
            await runtime.Builder(manager).for_("configmaps").complete(noop)
        with pytest.raises(ValueError, match="owns\\(\\) requires for_\\(\\)"):
            await runtime.Builder(manager).owns("configmaps").complete(noop)
        with pytest.raises(ValueError, match="must be called"):
            await runtime.Builder(manager).watches("configmaps", lambda o: []).complete(noop)
    finally:
        await manager.api.close()


async def test_failing_runnable_stops_manager(kplane: testing.ControlPlane) -> None:
    """A runnable that fails ends start() with its error after a graceful stop."""
    assert kplane.config is not None
    manager = rs.new_manager(kplane.config)

    class Boom:
        def need_leader_election(self) -> bool:
            return False

        async def start(self) -> None:
            raise RuntimeError("boom")

    manager.add(Boom())
    try:
        with pytest.raises(RuntimeError, match="boom"):
            await manager.start()
    finally:
        await manager.api.close()


async def test_start_order_and_reverse_stop(kplane: testing.ControlPlane) -> None:
    """HTTP, then webhooks (ready), caches synced, others, then leader-only runnables; stop in reverse."""
    assert kplane.config is not None
    manager = rs.new_manager(kplane.config)
    events: list[str] = []

    class Recorder:
        def __init__(self, name: str, *, group: str = "", leader: bool = True) -> None:
            self.name, self.leader = name, leader
            self.serving = asyncio.Event()
            if group:
                self.runnable_group = group

        def need_leader_election(self) -> bool:
            return self.leader

        async def wait_ready(self) -> None:
            await self.serving.wait()
            events.append(f"{self.name} ready")

        async def start(self) -> None:
            assert "metrics" in manager.servers
            events.append(f"{self.name} start (cache synced: {manager.cache.has_synced()})")
            self.serving.set()
            try:
                await asyncio.Event().wait()
            finally:
                events.append(f"{self.name} stop")

    async def noop(req: runtime.Request) -> None:
        return None

    await runtime.Builder(manager).for_("configmaps").complete(noop)
    manager.add(Recorder("leader"))
    manager.add(Recorder("other", leader=False))
    manager.add(Recorder("webhook", group="webhooks"))
    async with rs.running(manager):
        await testing.eventually(lambda: len(events) == 4)
    assert events[:4] == [
        "webhook start (cache synced: False)",
        "webhook ready",
        "other start (cache synced: True)",
        "leader start (cache synced: True)",
    ]
    assert events[4:] == ["leader stop", "other stop", "webhook stop"]


async def test_metrics_on_a_unix_socket_owner_only(tmp_path: Path) -> None:
    """``unix:PATH`` serves on a Unix domain socket of mode 0600, named by ``url``; a stale socket
    file is replaced and the file is removed on close."""
    path = tmp_path / "m.sock"
    path.write_text("stale")
    server = serving.HTTPServer("unix:" + str(path), serving.metrics_app(lambda: b"kplane_up 1\n"))
    await server.listen()
    try:
        assert server.listening and server.url == f"unix:{path}"
        assert stat.S_ISSOCK(path.stat().st_mode) and stat.S_IMODE(path.stat().st_mode) == 0o600
        async with (
            aiohttp.ClientSession(connector=aiohttp.UnixConnector(str(path))) as session,
            session.get("http://localhost/metrics") as resp,
        ):
            assert resp.status == 200 and await resp.text() == "kplane_up 1\n"
    finally:
        await server.close()
    assert not path.exists()


async def test_readyz_fails_while_watches_keep_failing(kplane_clock: testing.AutoAdvancingClock) -> None:
    """An informer whose watches keep failing (every stream cut at its first event, which each
    resumed watch replays) makes /readyz fail once that has lasted longer than
    ``watch_failure_grace``; when a watch works again, the event it delivers makes it ready."""
    plan = testing.FaultPlan(testing.DropWatches(after_lines=(0, 0)), seed=0)
    async with testing.ControlPlane(faults=plan) as cp:
        assert cp.config is not None
        manager = runtime.Manager(
            options=runtime.ManagerOptions(
                metrics_bind_address="0", health_probe_bind_address="127.0.0.1:0", watch_failure_grace=60
            ),
            api=typed.Client(cp.config),
            clock=kplane_clock,
        )
        await manager.cache.informer("configmaps")
        async with rs.running(manager):
            probes = manager.servers["probes"].url
            assert await _get(probes + "/readyz") == (200, "ok")
            await cp.client.dynamic.resource("configmaps", "default").create({"metadata": {"name": "w"}})

            async def unready() -> str:
                status, body = await _get(probes + "/readyz?verbose")
                assert status == 500
                return body

            body = await testing.eventually(unready, timeout=20)
            assert "[-]cache failed: informers failing to list and watch for over 60s: configmaps" in body
            assert kplane_clock.monotonic() > 60  # the fake clock ran through the reflector's backoff
            with plan.paused():

                async def ready() -> bool:
                    return await _get(probes + "/readyz") == (200, "ok")

                await testing.eventually(ready, timeout=20)
    assert plan.count(testing.DropWatches) > 2


async def test_lease_namespace_defaults_to_the_pods(
    kplane: testing.ControlPlane, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without leader_election_namespace the Lease goes to the pod's namespace (the service account's
    ``namespace`` file), as controller-runtime's getInClusterNamespace; outside a pod, start fails
    with upstream's message."""
    assert kplane.config is not None
    monkeypatch.setattr(config_mod, "SERVICE_ACCOUNT_DIR", str(tmp_path))
    options = {"leader_election": True, "leader_election_id": "ns-default-test"}
    manager = rs.new_manager(kplane.config, **options)
    with pytest.raises(
        ValueError,
        match=r"^unable to find leader election namespace: not running in-cluster, please specify "
        r"leader_election_namespace$",
    ):
        await manager.start()
    await manager.api.close()
    (tmp_path / "namespace").write_text("kube-system\n")
    manager = rs.new_manager(kplane.config, **options)
    async with rs.running(manager):
        lease = await kplane.client.dynamic.resource("leases", "kube-system").get("ns-default-test")
        assert lease["spec"]["holderIdentity"]
