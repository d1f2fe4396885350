"""The in-flight limiter: seats, per-user queues served round-robin, bounds and timeouts (fake clock)."""

from __future__ import annotations

import asyncio

from kplane._util.clock import FakeClock
from kplane.server.filters.inflight import FairLimiter


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_round_robin_across_users() -> None:
    """With one seat, a flood from one user is interleaved with another user's requests."""
    limiter = FairLimiter(1, 50, 15.0, FakeClock())
    assert await limiter.acquire("alice") == ""
    order: list[str] = []

    async def ask(user: str, tag: str) -> None:
        assert await limiter.acquire(user) == ""
        order.append(tag)

    tasks = [asyncio.create_task(ask("alice", f"a{i}")) for i in range(3)]
    await _settle()
    tasks.append(asyncio.create_task(ask("bob", "b0")))
    await _settle()
    assert limiter.queued() == 4
    for _ in range(4):
        limiter.release()
        await _settle()
    await asyncio.gather(*tasks)
    assert order == ["a0", "b0", "a1", "a2"]
    assert limiter.in_use == 1


async def test_queue_full_and_no_queue() -> None:
    """A user's queue holds at most ``queue_length``; with 0 the excess is refused at once."""
    limiter = FairLimiter(1, 1, 15.0, FakeClock())
    assert await limiter.acquire("alice") == ""
    waiting = asyncio.create_task(limiter.acquire("alice"))
    await _settle()
    assert await limiter.acquire("alice") == "queue-full"
    bob = asyncio.create_task(limiter.acquire("bob"))
    await _settle()
    assert not bob.done()  # bob has a queue of his own
    limiter.release()
    limiter.release()
    assert await waiting == "" and await bob == ""
    unqueued = FairLimiter(1, 0, 15.0, FakeClock())
    assert await unqueued.acquire("x") == ""
    assert await unqueued.acquire("y") == "queue-full"


async def test_wait_timeout() -> None:
    """A queued request gives up after the wait timeout and leaves no trace in the queue."""
    clock = FakeClock()
    limiter = FairLimiter(1, 5, 15.0, clock)
    assert await limiter.acquire("alice") == ""
    waiting = asyncio.create_task(limiter.acquire("bob"))
    await _settle()
    clock.step(14.9)
    await _settle()
    assert not waiting.done()
    clock.step(0.2)
    assert await waiting == "time-out"
    assert limiter.queued() == 0 and limiter.in_use == 1
    limiter.release()
    assert limiter.in_use == 0


async def test_cancelled_waiter_is_forgotten() -> None:
    """A client that goes away while queued takes no seat and blocks nobody."""
    limiter = FairLimiter(1, 5, 15.0, FakeClock())
    assert await limiter.acquire("alice") == ""
    gone = asyncio.create_task(limiter.acquire("bob"))
    await _settle()
    gone.cancel()
    await _settle()
    assert limiter.queued() == 0
    limiter.release()
    assert limiter.in_use == 0
