"""The rate-limiting queue: retries delayed by the limiter, forget resets only the limiter."""

from __future__ import annotations

import asyncio

from kplane._util import clock
from kplane.workqueue import rate_limiters, rate_limiting


async def _settle() -> None:
    for _ in range(10):
        await asyncio.sleep(0)


async def test_add_rate_limited_delays_by_the_limiters_answer() -> None:
    """Each rate-limited add waits base * 2**n on the queue's clock."""
    fake = clock.FakeClock()
    q: rate_limiting.RateLimitingQueue[str] = rate_limiting.RateLimitingQueue(
        rate_limiter=rate_limiters.ItemExponentialFailureRateLimiter(1.0, 60.0), clock=fake
    )
    q.add_rate_limited("a")
    await _settle()
    fake.step(0.99)
    await _settle()
    assert len(q) == 0
    fake.step(0.01)
    await _settle()
    assert await q.get() == "a"
    q.done("a")
    q.add_rate_limited("a")
    await _settle()
    fake.step(1.0)
    await _settle()
    assert len(q) == 0
    fake.step(1.0)
    await _settle()
    assert len(q) == 1
    assert q.num_requeues("a") == 2
    q.shutdown()


async def test_forget_resets_requeues_but_keeps_the_item() -> None:
    """forget clears the failure count and does not remove the item from the queue."""
    q: rate_limiting.RateLimitingQueue[str] = rate_limiting.RateLimitingQueue(clock=clock.FakeClock())
    q.add("a")
    q.rate_limiter.when("a")
    assert q.num_requeues("a") == 1
    q.forget("a")
    assert q.num_requeues("a") == 0
    assert len(q) == 1


async def test_default_limiter_is_the_controller_default() -> None:
    """Without a limiter the queue uses exponential 5 ms (first retry after 5 ms)."""
    fake = clock.FakeClock()
    q: rate_limiting.RateLimitingQueue[str] = rate_limiting.RateLimitingQueue(clock=fake)
    assert isinstance(q.rate_limiter, rate_limiters.MaxOfRateLimiter)
    q.add_rate_limited("a")
    await _settle()
    fake.step(0.004)
    await _settle()
    assert len(q) == 0
    fake.step(0.001)
    await _settle()
    assert len(q) == 1
    q.shutdown()
