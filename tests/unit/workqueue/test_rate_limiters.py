"""Rate limiters: client-go's default limiters and their combinations."""

from __future__ import annotations

import pytest

from kplane._util import clock
from kplane.workqueue import rate_limiters


def test_exponential_doubles_from_base_and_counts_requeues() -> None:
    """Delays go base, 2*base, 4*base...; num_requeues counts the calls."""
    limiter: rate_limiters.ItemExponentialFailureRateLimiter[str] = (
        rate_limiters.ItemExponentialFailureRateLimiter(0.005, 1000.0)
    )
    assert [limiter.when("a") for _ in range(4)] == pytest.approx([0.005, 0.01, 0.02, 0.04])
    assert limiter.num_requeues("a") == 4
    assert limiter.when("b") == pytest.approx(0.005)


def test_exponential_caps_at_max_after_about_18_failures() -> None:
    """5 ms doubling reaches the 1000 s cap on the 19th failure and stays there."""
    limiter: rate_limiters.ItemExponentialFailureRateLimiter[str] = (
        rate_limiters.ItemExponentialFailureRateLimiter(0.005, 1000.0)
    )
    delays = [limiter.when("a") for _ in range(2000)]
    assert delays[17] == pytest.approx(0.005 * 2**17)
    assert delays[18] == 1000.0
    assert delays[-1] == 1000.0


def test_exponential_forget_resets() -> None:
    """forget clears the failure count, so the next delay is the base again."""
    limiter: rate_limiters.ItemExponentialFailureRateLimiter[str] = (
        rate_limiters.ItemExponentialFailureRateLimiter(0.005, 1000.0)
    )
    limiter.when("a")
    limiter.when("a")
    limiter.forget("a")
    assert limiter.num_requeues("a") == 0
    assert limiter.when("a") == pytest.approx(0.005)


def test_bucket_allows_burst_then_spaces_by_qps() -> None:
    """The first 100 requests are free; later ones wait 0.1 s more each at 10 qps."""
    fake = clock.FakeClock()
    limiter: rate_limiters.BucketRateLimiter[str] = rate_limiters.BucketRateLimiter(10.0, 100, clock=fake)
    assert all(limiter.when(str(i)) == 0.0 for i in range(100))
    assert limiter.when("x") == pytest.approx(0.1)
    assert limiter.when("y") == pytest.approx(0.2)
    assert limiter.num_requeues("x") == 0


def test_bucket_refills_with_time_up_to_burst() -> None:
    """Tokens refill at qps and never exceed the burst."""
    fake = clock.FakeClock()
    limiter: rate_limiters.BucketRateLimiter[str] = rate_limiters.BucketRateLimiter(10.0, 5, clock=fake)
    for _ in range(5):
        limiter.when("a")
    fake.step(0.3)
    assert [limiter.when("a") for _ in range(3)] == [0.0, 0.0, 0.0]
    assert limiter.when("a") == pytest.approx(0.1)
    fake.step(100.0)
    assert sum(1 for _ in range(10) if limiter.when("a") == 0.0) == 5


def test_bucket_rejects_bad_parameters() -> None:
    """A bucket needs positive qps and burst."""
    with pytest.raises(ValueError):
        rate_limiters.BucketRateLimiter(0.0, 10)


def test_fast_slow_switches_after_max_fast_attempts() -> None:
    """The fast delay is used for the first n requeues, then the slow one."""
    limiter: rate_limiters.ItemFastSlowRateLimiter[str] = rate_limiters.ItemFastSlowRateLimiter(0.1, 10.0, 2)
    assert [limiter.when("a") for _ in range(4)] == [0.1, 0.1, 10.0, 10.0]
    assert limiter.num_requeues("a") == 4
    limiter.forget("a")
    assert limiter.when("a") == 0.1


def test_max_of_takes_the_worst_and_forwards_forget() -> None:
    """MaxOf returns the largest delay, counts in every limiter, and forgets in all."""
    fast_slow: rate_limiters.ItemFastSlowRateLimiter[str] = rate_limiters.ItemFastSlowRateLimiter(0.5, 3.0, 1)
    exp: rate_limiters.ItemExponentialFailureRateLimiter[str] = (
        rate_limiters.ItemExponentialFailureRateLimiter(1.0, 100.0)
    )
    limiter = rate_limiters.MaxOfRateLimiter(fast_slow, exp)
    assert limiter.when("a") == 1.0  # max(0.5, 1)
    assert limiter.when("a") == 3.0  # max(3, 2)
    assert limiter.when("a") == 4.0  # max(3, 4)
    assert limiter.num_requeues("a") == 3
    limiter.forget("a")
    assert fast_slow.num_requeues("a") == 0
    assert exp.num_requeues("a") == 0


def test_default_controller_limiter_is_exponential_until_the_bucket_runs_dry() -> None:
    """5 ms exponential per item; after a burst of 100 the 10 qps bucket dominates."""
    fake = clock.FakeClock()
    limiter = rate_limiters.default_controller_rate_limiter(clock=fake)
    assert limiter.when("a") == pytest.approx(0.005)
    assert limiter.when("a") == pytest.approx(0.010)
    for i in range(98):
        limiter.when(f"other-{i}")
    assert limiter.when("b") == pytest.approx(0.1)
    assert limiter.num_requeues("a") == 2


def test_with_max_wait_caps_delays() -> None:
    """WithMaxWait never returns more than its cap."""
    inner: rate_limiters.ItemExponentialFailureRateLimiter[str] = (
        rate_limiters.ItemExponentialFailureRateLimiter(1.0, 1000.0)
    )
    limiter = rate_limiters.WithMaxWaitRateLimiter(inner, 3.0)
    assert [limiter.when("a") for _ in range(4)] == [1.0, 2.0, 3.0, 3.0]
    assert limiter.num_requeues("a") == 4
