"""The delaying queue: add_after driven by a fake clock."""

from __future__ import annotations

import asyncio

from kplane._util import clock
from kplane.workqueue import delaying


async def _settle() -> None:
    for _ in range(10):
        await asyncio.sleep(0)


async def test_item_becomes_ready_only_after_its_delay() -> None:
    """add_after keeps the item out of the queue until the clock passes its ready time."""
    fake = clock.FakeClock()
    q: delaying.DelayingQueue[str] = delaying.DelayingQueue(clock=fake)
    q.add_after("a", 1.0)
    await _settle()
    assert len(q) == 0
    assert q.waiting() == 1
    fake.step(0.5)
    await _settle()
    assert len(q) == 0
    fake.step(0.5)
    await _settle()
    assert len(q) == 1
    assert q.waiting() == 0
    assert await q.get() == "a"
    q.shutdown()


async def test_non_positive_delay_adds_at_once() -> None:
    """A delay <= 0 adds the item immediately, without a waiting task."""
    q: delaying.DelayingQueue[str] = delaying.DelayingQueue(clock=clock.FakeClock())
    q.add_after("a", 0)
    q.add_after("b", -1)
    assert len(q) == 2


async def test_duplicate_add_after_keeps_the_earliest_time() -> None:
    """A second add_after of a waiting item keeps whichever ready time is earlier."""
    fake = clock.FakeClock()
    q: delaying.DelayingQueue[str] = delaying.DelayingQueue(clock=fake)
    q.add_after("a", 5.0)
    await _settle()
    q.add_after("a", 1.0)  # Earlier: wins and interrupts the 5 s sleep.
    q.add_after("a", 3.0)  # Later: ignored.
    await _settle()
    assert q.waiting() == 1
    fake.step(1.0)
    await _settle()
    assert len(q) == 1
    assert await q.get() == "a"
    q.done("a")
    fake.step(10.0)
    await _settle()
    assert len(q) == 0
    q.shutdown()


async def test_items_become_ready_in_ready_time_order() -> None:
    """Items added with different delays reach the queue ordered by ready time."""
    fake = clock.FakeClock()
    q: delaying.DelayingQueue[str] = delaying.DelayingQueue(clock=fake)
    q.add_after("late", 3.0)
    q.add_after("early", 1.0)
    q.add_after("middle", 2.0)
    await _settle()
    fake.step(3.0)
    await _settle()
    assert [await q.get() for _ in range(3)] == ["early", "middle", "late"]
    q.shutdown()


async def test_waiting_get_receives_delayed_item() -> None:
    """A worker blocked in get is woken when a delayed item becomes ready."""
    fake = clock.FakeClock()
    q: delaying.DelayingQueue[str] = delaying.DelayingQueue(clock=fake)
    getter = asyncio.create_task(q.get())
    q.add_after("a", 2.0)
    await _settle()
    assert not getter.done()
    fake.step(2.0)
    assert await asyncio.wait_for(getter, 1) == "a"
    q.shutdown()


async def test_add_after_while_idle_restarts_the_timer() -> None:
    """After the heap empties, a new add_after still fires on time."""
    fake = clock.FakeClock()
    q: delaying.DelayingQueue[str] = delaying.DelayingQueue(clock=fake)
    q.add_after("a", 1.0)
    await _settle()
    fake.step(1.0)
    await _settle()
    assert await q.get() == "a"
    q.add_after("b", 1.0)
    await _settle()
    fake.step(1.0)
    await _settle()
    assert len(q) == 1
    q.shutdown()


async def test_shutdown_drops_waiting_items_and_ignores_add_after() -> None:
    """After shutdown nothing waiting is delivered and add_after is ignored."""
    fake = clock.FakeClock()
    q: delaying.DelayingQueue[str] = delaying.DelayingQueue(clock=fake)
    q.add_after("a", 1.0)
    await _settle()
    q.shutdown()
    q.add_after("b", 0)
    fake.step(2.0)
    await _settle()
    assert len(q) == 0
    assert q.waiting() == 0
