"""AutoAdvancingClock: time jumps to the next timer only when the loop has nothing else to do."""

from __future__ import annotations

import asyncio

from kplane.testing import AutoAdvancingClock, ControlPlane


async def test_an_hour_of_timers_passes_instantly_in_order() -> None:
    """Sleepers wake in deadline order, each at exactly its deadline, without real waiting."""
    woke: list[tuple[str, float]] = []
    async with AutoAdvancingClock() as clock:

        async def sleeper(name: str, seconds: float) -> None:
            await clock.sleep(seconds)
            woke.append((name, clock.monotonic()))

        t0 = asyncio.get_running_loop().time()
        await asyncio.gather(sleeper("hour", 3600), sleeper("minute", 60), sleeper("second", 1))
        assert asyncio.get_running_loop().time() - t0 < 1.0
    assert woke == [("second", 1), ("minute", 60), ("hour", 3600)]
    assert clock.jumps == 3


async def test_time_does_not_move_while_a_task_is_busy() -> None:
    """While another task keeps the loop busy, the clock stays put; it jumps once that task waits."""
    async with AutoAdvancingClock() as clock:
        sleeping = asyncio.ensure_future(clock.sleep(10))
        for _ in range(200):
            await asyncio.sleep(0)  # this test is a busy task
            assert clock.monotonic() == 0
        await sleeping
        assert clock.monotonic() == 10


async def test_a_request_to_the_in_loop_server_completes_before_time_moves() -> None:
    """Loopback I/O to an in-loop ControlPlane counts as activity: a reply lands before a 1 s timer."""
    async with ControlPlane() as cp, AutoAdvancingClock() as clock:
        order: list[str] = []

        async def timer() -> None:
            await clock.sleep(1)
            order.append("timer")

        async def request() -> None:
            await cp.client.resource("configmaps", namespace="default").create({"metadata": {"name": "c"}})
            order.append("reply")

        await asyncio.gather(timer(), request())
        assert order == ["reply", "timer"]


async def test_stepping_still_works_and_close_stops_advancing() -> None:
    """After aclose the clock is a plain FakeClock again: only step moves it."""
    clock = AutoAdvancingClock()
    async with clock:
        await clock.sleep(5)
    sleeping = asyncio.ensure_future(clock.sleep(5))
    for _ in range(20):
        await asyncio.sleep(0)
    assert clock.monotonic() == 5 and not sleeping.done()
    clock.step(5)
    await sleeping
    assert clock.monotonic() == 10
