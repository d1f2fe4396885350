"""Leader election on a real server: one leader at a time, takeover after a kill, fast release."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator

import pytest

from kplane.client import leaderelection as le
from tests.e2e import conftest as e2e
from tests.unit.informers import _fake, _live

FAST = le.LeaderElectionConfig(lease_duration=2.0, renew_deadline=1.5, retry_period=0.2)


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[e2e.Server]:
    yield from _live.module_server(tmp_path_factory)


def test_config_validation() -> None:
    """Lease duration > renew deadline > 1.2 x retry period is enforced."""
    with pytest.raises(ValueError):
        le.LeaderElectionConfig(lease_duration=10, renew_deadline=10, retry_period=2)
    with pytest.raises(ValueError):
        le.LeaderElectionConfig(lease_duration=15, renew_deadline=2, retry_period=2)
    assert le.LeaderElectionConfig().lease_duration == 15.0


def _candidate(
    dc: object, name: str, identity: str, leading: list[str], config: le.LeaderElectionConfig = FAST
) -> le.LeaderElector:
    leases = dc.resource(_live.LEASES, "default")  # type: ignore[attr-defined]
    lock = le.LeaseLock(leases, namespace="default", name=name, identity=identity)

    async def lead() -> None:
        leading.append(identity)
        await asyncio.Event().wait()

    return le.LeaderElector(lock, le.LeaderCallbacks(on_started_leading=lead), config)


async def test_clean_shutdown_releases_the_lease(srv: e2e.Server) -> None:
    """Cancelling the leader releases the Lease, so the standby leads within a couple of retries."""
    async with _live.clients(srv) as dc:
        leading: list[str] = []
        a = _candidate(dc, "release", "a", leading)
        b = _candidate(dc, "release", "b", leading)
        ta = asyncio.get_running_loop().create_task(a.run())
        await _fake.until(lambda: leading == ["a"])
        tb = asyncio.get_running_loop().create_task(b.run())
        await asyncio.sleep(0.5)
        assert leading == ["a"] and b.leader == "a"  # one leader at a time
        ta.cancel()
        t0 = time.monotonic()
        await asyncio.gather(ta, return_exceptions=True)
        await _fake.until(lambda: leading == ["a", "b"])
        assert time.monotonic() - t0 < 1.0
        lease = await dc.resource(_live.LEASES, "default").get("release")
        assert lease["spec"]["holderIdentity"] == "b" and lease["spec"]["leaseTransitions"] == 1
        tb.cancel()
        await asyncio.gather(tb, return_exceptions=True)


LEADER_SCRIPT = textwrap.dedent(
    """
    import asyncio, dataclasses, sys
    from kplane.client import config, dynamic, leaderelection as le, rest
    async def main():
        cfg = dataclasses.replace(config.Config.from_kubeconfig(sys.argv[1]), qps=0.0)
        async with rest.RESTClient(cfg) as rc:
            leases = dynamic.DynamicClient(rc).resource(
                dynamic.Resource("coordination.k8s.io", "v1", "leases", "Lease", True), "default")
            lock = le.LeaseLock(leases, namespace="default", name="kill", identity="victim")
            async def lead():
                print("leading", flush=True)
                await asyncio.Event().wait()
            cfg = le.LeaderElectionConfig(lease_duration=2.0, renew_deadline=1.5, retry_period=0.2)
            await le.LeaderElector(lock, le.LeaderCallbacks(on_started_leading=lead), cfg).run()
    asyncio.run(main())
    """
)


async def test_killed_leader_is_replaced_within_the_lease_duration(srv: e2e.Server) -> None:
    """SIGKILL the leader process: the standby leads within the lease duration plus one retry."""
    proc = subprocess.Popen(  # noqa: ASYNC220 - started once, then only read from a thread
        [sys.executable, "-c", LEADER_SCRIPT, str(srv.kubeconfig)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    try:
        assert proc.stdout is not None
        line = await asyncio.to_thread(proc.stdout.readline)
        assert line.strip() == "leading"
        async with _live.clients(srv) as dc:
            leading: list[str] = []
            standby = _candidate(dc, "kill", "standby", leading)
            task = asyncio.get_running_loop().create_task(standby.run())
            await asyncio.sleep(0.6)
            assert leading == [] and standby.leader == "victim"
            proc.send_signal(signal.SIGKILL)
            killed_at = time.monotonic()
            await _fake.until(lambda: leading == ["standby"], limit=10)
            takeover = time.monotonic() - killed_at
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        # Worst case: the lease duration, counted from the standby's last observed renewal, plus
        # one jittered retry (0.2 s x 2.2).
        assert takeover <= FAST.lease_duration + FAST.retry_period * 2.2 + 0.2, takeover
    finally:
        proc.kill()
        proc.wait()


async def test_losing_the_lease_stops_leading(srv: e2e.Server) -> None:
    """When renewals fail past the renew deadline, the work is cancelled and run() returns."""
    async with _live.clients(srv) as dc:
        leading: list[str] = []
        stopped: list[bool] = []
        elector = _candidate(dc, "lose", "x", leading)
        elector.callbacks = le.LeaderCallbacks(
            on_started_leading=elector.callbacks.on_started_leading,
            on_stopped_leading=lambda: stopped.append(True),
        )
        task = asyncio.get_running_loop().create_task(elector.run())
        await _fake.until(lambda: leading == ["x"])
        # Someone else takes the Lease over by force (as an admin might): renewals now conflict.
        leases = dc.resource(_live.LEASES, "default")
        lease = await leases.get("lose")
        lease["spec"]["holderIdentity"] = "intruder"
        await leases.update(lease)
        async with asyncio.timeout(5):
            await task
        assert stopped == [True] and not elector.is_leader()
