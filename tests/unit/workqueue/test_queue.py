"""The core work queue: client-go's dirty/processing semantics on asyncio."""

from __future__ import annotations

import asyncio
import collections
import random

import pytest

from kplane.workqueue import queue


async def _settle() -> None:
    for _ in range(10):
        await asyncio.sleep(0)


async def test_get_hands_out_items_in_fifo_order() -> None:
    """Items come out in the order they were first added."""
    q: queue.Queue[str] = queue.Queue()
    for item in ["a", "b", "c"]:
        q.add(item)
    assert [await q.get() for _ in range(3)] == ["a", "b", "c"]


async def test_add_of_a_waiting_item_is_deduplicated() -> None:
    """Adding an item that is already waiting does not queue it twice."""
    q: queue.Queue[str] = queue.Queue()
    q.add("a")
    q.add("b")
    q.add("a")
    assert len(q) == 2
    assert await q.get() == "a"
    assert await q.get() == "b"
    assert len(q) == 0


async def test_readd_during_processing_is_not_handed_to_another_worker() -> None:
    """An item re-added while processing stays out of the queue until done."""
    q: queue.Queue[str] = queue.Queue()
    q.add("a")
    item = await q.get()
    q.add("a")
    assert len(q) == 0
    waiter = asyncio.create_task(q.get())
    await _settle()
    assert not waiter.done()
    q.done(item)
    assert await asyncio.wait_for(waiter, 1) == "a"


async def test_many_readds_during_processing_cause_exactly_one_more_pass() -> None:
    """Five adds while processing lead to one more pass, not five."""
    q: queue.Queue[str] = queue.Queue()
    q.add("a")
    item = await q.get()
    for _ in range(5):
        q.add("a")
    q.done(item)
    assert len(q) == 1
    assert await q.get() == "a"
    q.done("a")
    assert len(q) == 0


async def test_done_without_readd_does_not_requeue() -> None:
    """Finishing an item that was not re-added leaves the queue empty."""
    q: queue.Queue[str] = queue.Queue()
    q.add("a")
    q.done(await q.get())
    assert len(q) == 0


async def test_get_waits_for_an_add() -> None:
    """A get on an empty queue returns the next added item."""
    q: queue.Queue[str] = queue.Queue()
    getter = asyncio.create_task(q.get())
    await _settle()
    assert not getter.done()
    q.add("x")
    assert await asyncio.wait_for(getter, 1) == "x"


async def test_each_add_wakes_one_waiter() -> None:
    """Two waiting workers and two adds: each worker gets a different item."""
    q: queue.Queue[str] = queue.Queue()
    getters = [asyncio.create_task(q.get()) for _ in range(2)]
    await _settle()
    q.add("a")
    q.add("b")
    got = await asyncio.wait_for(asyncio.gather(*getters), 1)
    assert sorted(got) == ["a", "b"]


async def test_cancelled_waiter_passes_its_wakeup_on() -> None:
    """Cancelling a woken get does not strand the item: another waiter receives it."""
    q: queue.Queue[str] = queue.Queue()
    first = asyncio.create_task(q.get())
    await _settle()
    second = asyncio.create_task(q.get())
    await _settle()
    q.add("a")  # Wakes ``first``...
    first.cancel()  # ...which is cancelled before it runs.
    with pytest.raises(asyncio.CancelledError):
        await first
    assert await asyncio.wait_for(second, 1) == "a"


async def test_cancelled_get_loses_nothing() -> None:
    """A get cancelled while waiting leaves later adds for other workers."""
    q: queue.Queue[str] = queue.Queue()
    getter = asyncio.create_task(q.get())
    await _settle()
    getter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await getter
    q.add("a")
    assert await q.get() == "a"


async def test_shutdown_drains_then_raises() -> None:
    """After shutdown, queued items are still handed out, then get raises ShutDown."""
    q: queue.Queue[str] = queue.Queue()
    q.add("a")
    q.shutdown()
    assert q.shutting_down()
    q.add("b")
    assert await q.get() == "a"
    with pytest.raises(queue.ShutDown):
        await q.get()


async def test_shutdown_wakes_waiters() -> None:
    """Workers waiting on an empty queue see ShutDown."""
    q: queue.Queue[str] = queue.Queue()
    getters = [asyncio.create_task(q.get()) for _ in range(3)]
    await _settle()
    q.shutdown()
    results = await asyncio.wait_for(asyncio.gather(*getters, return_exceptions=True), 1)
    assert all(isinstance(r, queue.ShutDown) for r in results)


async def test_shutdown_with_drain_waits_for_processing_items() -> None:
    """shutdown_with_drain returns only once every handed-out item is done."""
    q: queue.Queue[str] = queue.Queue()
    q.add("a")
    item = await q.get()
    drain = asyncio.create_task(q.shutdown_with_drain())
    await _settle()
    assert not drain.done()
    assert q.shutting_down()
    q.done(item)
    await asyncio.wait_for(drain, 1)


async def test_shutdown_with_drain_returns_at_once_when_idle() -> None:
    """With nothing being processed, shutdown_with_drain does not wait."""
    q: queue.Queue[str] = queue.Queue()
    await asyncio.wait_for(q.shutdown_with_drain(), 1)
    assert q.shutting_down()


async def test_shutdown_ends_a_drain_wait() -> None:
    """A later shutdown() ends a pending shutdown_with_drain even with items in flight."""
    q: queue.Queue[str] = queue.Queue()
    q.add("a")
    await q.get()
    drain = asyncio.create_task(q.shutdown_with_drain())
    await _settle()
    assert not drain.done()
    q.shutdown()
    await asyncio.wait_for(drain, 1)


async def test_drain_requeues_dirty_items_for_remaining_workers() -> None:
    """An item re-added before shutdown is processed once more during the drain."""
    q: queue.Queue[str] = queue.Queue()
    q.add("a")
    item = await q.get()
    q.add("a")
    drain = asyncio.create_task(q.shutdown_with_drain())
    await _settle()
    q.done(item)
    assert await q.get() == "a"
    q.done("a")
    await asyncio.wait_for(drain, 1)
    with pytest.raises(queue.ShutDown):
        await q.get()


@pytest.mark.parametrize("seed", range(12), ids=lambda s: f"seed{s}")
async def test_random_workload_never_overlaps_and_counts_passes(seed: int) -> None:
    """Property: no item is processed by two workers at once, and passes equal dirty epochs.

    A model tracks which adds make an item dirty: each such add must produce exactly one pass,
    so any number of adds during one pass produce exactly one more.
    """
    rng = random.Random(seed)
    q: queue.Queue[int] = queue.Queue()
    in_progress: set[int] = set()
    passes: collections.Counter[int] = collections.Counter()
    expected: collections.Counter[int] = collections.Counter()
    model_dirty: set[int] = set()

    def add(item: int) -> None:
        if item not in model_dirty:
            model_dirty.add(item)
            expected[item] += 1
        q.add(item)

    async def worker() -> None:
        while True:
            try:
                item = await q.get()
            except queue.ShutDown:
                return
            assert item not in in_progress, f"item {item} handed to two workers"
            model_dirty.discard(item)
            in_progress.add(item)
            passes[item] += 1
            for _ in range(rng.randrange(4)):
                await asyncio.sleep(0)
            in_progress.discard(item)
            q.done(item)

    workers = [asyncio.create_task(worker()) for _ in range(4)]
    for _ in range(400):
        add(rng.randrange(6))
        if rng.random() < 0.5:
            await asyncio.sleep(0)
    await asyncio.wait_for(q.shutdown_with_drain(), 5)
    await asyncio.wait_for(asyncio.gather(*workers), 5)
    assert passes == expected
    assert sum(passes.values()) > 6


def test_public_surface() -> None:
    """kplane.workqueue exports exactly its curated names, and each resolves."""
    import kplane.workqueue as pkg

    assert sorted(pkg.__all__) == [
        "BucketRateLimiter",
        "DelayingQueue",
        "ItemExponentialFailureRateLimiter",
        "ItemFastSlowRateLimiter",
        "MaxOfRateLimiter",
        "Queue",
        "RateLimiter",
        "RateLimitingQueue",
        "ShutDown",
        "WithMaxWaitRateLimiter",
        "default_controller_rate_limiter",
        "default_item_based_rate_limiter",
        "metrics",
    ]
    assert all(getattr(pkg, name) is not None for name in pkg.__all__)
