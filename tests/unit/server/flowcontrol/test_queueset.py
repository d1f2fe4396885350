"""A priority level's queue set: seats, shuffle-sharded queues served round-robin, bounds and
timeouts (fake clock); upstream ``fairqueuing/queueset`` and ``shufflesharding``."""

from __future__ import annotations

import asyncio

from kplane._util.clock import FakeClock
from kplane.server.flowcontrol.queueset import QueueSet, Queuing, deal, flow_hash


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


def _flows_in_distinct_queues(queues: int) -> tuple[int, int]:
    """Two flow hashes whose hands (of one card) differ."""
    a = flow_hash("s", "alice")
    for i in range(100):
        b = flow_hash("s", f"bob{i}")
        if deal(a, queues, 1) != deal(b, queues, 1):
            return a, b
    raise AssertionError("unreachable")


def test_deal_is_a_hand_of_distinct_cards() -> None:
    """Upstream's dealer: hand_size distinct cards below deck_size, a function of the hash."""
    for h in (0, 1, 2**63 + 12345, flow_hash("fs", "user")):
        hand = deal(h, 128, 6)
        assert len(set(hand)) == 6 and all(0 <= c < 128 for c in hand)
        assert deal(h, 128, 6) == hand
    # mixed-radix digits: 7 = 1*4 + 3 -> cards 3, then 1 (below 3, unshifted)
    assert deal(7, 4, 2) == [3, 1]
    assert deal(4, 4, 2) == [0, 2]  # 4 = 1*4 + 0 -> 0, then 1 shifted past 0 -> 2


async def test_round_robin_across_queues() -> None:
    """With one seat, a flood from one flow is interleaved with another flow's requests."""
    alice, bob = _flows_in_distinct_queues(64)
    qs = QueueSet(1, Queuing(64, 1, 50), 15.0, FakeClock())
    assert await qs.acquire(alice) == ""
    order: list[str] = []

    async def ask(flow: int, tag: str) -> None:
        assert await qs.acquire(flow) == ""
        order.append(tag)

    tasks = [asyncio.create_task(ask(alice, f"a{i}")) for i in range(3)]
    await _settle()
    tasks.append(asyncio.create_task(ask(bob, "b0")))
    await _settle()
    assert qs.waiting() == 4
    for _ in range(4):
        qs.release()
        await _settle()
    await asyncio.gather(*tasks)
    assert order == ["a0", "b0", "a1", "a2"]
    assert qs.executing == 1


async def test_queue_full_and_reject() -> None:
    """A queue holds at most queueLengthLimit; a Reject level (no queuing) refuses at once."""
    alice, bob = _flows_in_distinct_queues(8)
    qs = QueueSet(1, Queuing(8, 1, 1), 15.0, FakeClock())
    assert await qs.acquire(alice) == ""
    waiting = asyncio.create_task(qs.acquire(alice))
    await _settle()
    assert await qs.acquire(alice) == "queue-full"
    other = asyncio.create_task(qs.acquire(bob))
    await _settle()
    assert not other.done()  # bob's queue is another
    qs.release()
    qs.release()
    assert await waiting == "" and await other == ""
    rejecting = QueueSet(1, None, 15.0, FakeClock())
    assert await rejecting.acquire(alice) == ""
    assert await rejecting.acquire(bob) == "concurrency-limit"


async def test_a_flow_spreads_over_its_hand() -> None:
    """A flow joins the shortest queue of its hand, so it can fill handSize queues."""
    flow = flow_hash("s", "flood")
    qs = QueueSet(1, Queuing(16, 3, 1), 15.0, FakeClock())
    assert await qs.acquire(flow) == ""
    tasks = [asyncio.create_task(qs.acquire(flow)) for _ in range(3)]
    await _settle()
    assert qs.waiting() == 3
    assert await qs.acquire(flow) == "queue-full"
    for _ in range(4):
        qs.release()
    assert await asyncio.gather(*tasks) == ["", "", ""]


async def test_wait_timeout_and_cancellation() -> None:
    """A queued request gives up after the wait limit; a cancelled one leaves no trace."""
    clock = FakeClock()
    qs = QueueSet(1, Queuing(4, 1, 5), 15.0, clock)
    flow = flow_hash("s", "u")
    assert await qs.acquire(flow) == ""
    waiting = asyncio.create_task(qs.acquire(flow))
    await _settle()
    clock.step(15)
    assert await waiting == "time-out"
    assert qs.waiting() == 0
    cancelled = asyncio.create_task(qs.acquire(flow))
    await _settle()
    cancelled.cancel()
    await asyncio.gather(cancelled, return_exceptions=True)
    assert qs.waiting() == 0
    qs.release()
    assert qs.executing == 0


async def test_reconfigure_hands_out_new_seats() -> None:
    """Raising the limit serves waiting requests at once."""
    qs = QueueSet(1, Queuing(4, 1, 5), 15.0, FakeClock())
    flow = flow_hash("s", "u")
    assert await qs.acquire(flow) == ""
    waiting = asyncio.create_task(qs.acquire(flow))
    await _settle()
    qs.reconfigure(2, Queuing(4, 1, 5))
    assert await waiting == "" and qs.executing == 2
