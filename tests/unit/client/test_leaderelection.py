"""Leader election on a real server, on an auto-advancing fake clock (controller-runtime's timings).

One leader at a time; a clean stop releases the Lease so the standby leads within one retry; a
crashed leader (no release) is replaced within the lease duration; a leader whose Lease is taken
stops leading. All times are measured on the fake clock, so the assertions are exact and the tests
take milliseconds.
"""

from __future__ import annotations

import asyncio

import pytest

from kplane.client import dynamic
from kplane.client import leaderelection as le
from kplane.testing import AutoAdvancingClock, ControlPlane, eventually
from tests.unit.informers import _live

CONFIG = le.LeaderElectionConfig()  # 15 s lease, 10 s renew deadline, 2 s retry period
RETRY_WORST = CONFIG.retry_period * (1 + le.JITTER_FACTOR)  # one jittered acquire retry
started: dict[str, float] = {}
"""When each identity started leading, on the fake clock."""


def test_config_validation() -> None:
    """Lease duration > renew deadline > 1.2 x retry period is enforced."""
    with pytest.raises(ValueError):
        le.LeaderElectionConfig(lease_duration=10, renew_deadline=10, retry_period=2)
    with pytest.raises(ValueError):
        le.LeaderElectionConfig(lease_duration=15, renew_deadline=2, retry_period=2)
    assert le.LeaderElectionConfig().lease_duration == 15.0


def _candidate(
    dc: dynamic.DynamicClient,
    clock: AutoAdvancingClock,
    name: str,
    identity: str,
    leading: list[str],
    config: le.LeaderElectionConfig = CONFIG,
) -> le.LeaderElector:
    lock = le.LeaseLock(
        dc.resource(_live.LEASES, "default"), namespace="default", name=name, identity=identity
    )

    async def lead() -> None:
        leading.append(identity)
        started[identity] = clock.monotonic()  # eventually() returns later: time moves on meanwhile
        await asyncio.Event().wait()

    return le.LeaderElector(lock, le.LeaderCallbacks(on_started_leading=lead), config, clock=clock)


async def _stop(task: asyncio.Task[None]) -> None:
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_clean_shutdown_releases_the_lease(
    kplane: ControlPlane, kplane_clock: AutoAdvancingClock
) -> None:
    """Cancelling the leader releases the Lease: the standby leads within one retry, not a lease duration."""
    clock = kplane_clock
    async with _live.clients(kplane) as dc:
        leading: list[str] = []
        a = _candidate(dc, clock, "release", "a", leading)
        b = _candidate(dc, clock, "release", "b", leading)
        ta = asyncio.ensure_future(a.run())
        await eventually(lambda: leading == ["a"])
        tb = asyncio.ensure_future(b.run())
        await clock.sleep(3 * CONFIG.lease_duration)  # many renewals and retries
        assert leading == ["a"] and b.leader == "a"  # one leader at a time
        released_at = clock.monotonic()
        await _stop(ta)
        await eventually(lambda: leading == ["a", "b"])
        assert started["b"] - released_at <= RETRY_WORST
        lease = await dc.resource(_live.LEASES, "default").get("release")
        assert lease["spec"]["holderIdentity"] == "b" and lease["spec"]["leaseTransitions"] == 1
        await _stop(tb)


async def test_crashed_leader_is_replaced_within_the_lease_duration(
    kplane: ControlPlane, kplane_clock: AutoAdvancingClock
) -> None:
    """A leader that stops without releasing (a crash) is replaced once its lease runs out."""
    clock = kplane_clock
    crashing = le.LeaderElectionConfig(release_on_cancel=False)
    async with _live.clients(kplane) as dc:
        leading: list[str] = []
        victim = _candidate(dc, clock, "crash", "victim", leading, crashing)
        standby = _candidate(dc, clock, "crash", "standby", leading)
        tv = asyncio.ensure_future(victim.run())
        await eventually(lambda: leading == ["victim"])
        ts = asyncio.ensure_future(standby.run())
        await clock.sleep(2 * CONFIG.lease_duration)
        assert leading == ["victim"] and standby.leader == "victim"
        await _stop(tv)
        crashed_at = clock.monotonic()
        await eventually(lambda: leading == ["victim", "standby"])
        takeover = started["standby"] - crashed_at
        # The standby counts the lease from when it saw the last renewal (between one retry period
        # before the crash and one jittered retry after it) and notices expiry at a later retry.
        assert (
            CONFIG.lease_duration - CONFIG.retry_period <= takeover <= CONFIG.lease_duration + 2 * RETRY_WORST
        )
        await _stop(ts)


async def test_losing_the_lease_stops_leading(kplane: ControlPlane, kplane_clock: AutoAdvancingClock) -> None:
    """When someone else takes the Lease, the work is cancelled and run() returns."""
    async with _live.clients(kplane) as dc:
        leading: list[str] = []
        stopped: list[bool] = []
        elector = _candidate(dc, kplane_clock, "lose", "x", leading)
        elector.callbacks = le.LeaderCallbacks(
            on_started_leading=elector.callbacks.on_started_leading,
            on_stopped_leading=lambda: stopped.append(True),
        )
        task = asyncio.ensure_future(elector.run())
        await eventually(lambda: leading == ["x"])
        # Someone else takes the Lease over by force (as an admin might): renewals now conflict.
        leases = dc.resource(_live.LEASES, "default")
        lease = await leases.get("lose")
        lease["spec"]["holderIdentity"] = "intruder"
        await leases.update(lease)
        await eventually(task.done)
        assert stopped == [True] and not elector.is_leader()
