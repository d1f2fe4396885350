"""Rate limiters: how long to wait before an item's next retry (client-go ``default_rate_limiters.go``).

A limiter answers ``when(item)`` with a delay in seconds and records the request; ``forget(item)``
clears what it knows about the item (after a success); ``num_requeues(item)`` says how many
failures it has counted. The controller default is the worst of a per-item exponential backoff
(5 ms doubling to 1000 s) and a global token bucket (10 per second, burst 100).

Limiters are used by the tasks of one event loop and are not thread-safe.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Generic, Protocol, TypeVar

from kplane._util import clock as clock_mod

T = TypeVar("T", bound=Hashable)
T_contra = TypeVar("T_contra", bound=Hashable, contravariant=True)


class RateLimiter(Protocol[T_contra]):
    """Decides retry delays, per item or globally."""

    def when(self, item: T_contra) -> float:
        """Seconds to wait before ``item`` is processed again; counts one more requeue."""
        ...

    def forget(self, item: T_contra) -> None:
        """Stop tracking ``item`` (it succeeded); its next ``when`` starts from scratch."""
        ...

    def num_requeues(self, item: T_contra) -> int:
        """How many times ``item`` has been requeued since it was last forgotten."""
        ...


class ItemExponentialFailureRateLimiter(Generic[T]):
    """``base * 2**failures`` seconds, capped at ``max_delay``; each ``when`` is one more failure."""

    def __init__(self, base: float, max_delay: float) -> None:
        self.base = base
        self.max_delay = max_delay
        self._failures: dict[T, int] = {}

    def when(self, item: T) -> float:
        exp = self._failures.get(item, 0)
        self._failures[item] = exp + 1
        if exp > 1000:  # 2**exp would overflow a float; the cap applies long before.
            return self.max_delay
        return min(self.base * 2.0**exp, self.max_delay)

    def forget(self, item: T) -> None:
        self._failures.pop(item, None)

    def num_requeues(self, item: T) -> int:
        return self._failures.get(item, 0)


class ItemFastSlowRateLimiter(Generic[T]):
    """``fast_delay`` for the first ``max_fast_attempts`` requeues of an item, then ``slow_delay``."""

    def __init__(self, fast_delay: float, slow_delay: float, max_fast_attempts: int) -> None:
        self.fast_delay = fast_delay
        self.slow_delay = slow_delay
        self.max_fast_attempts = max_fast_attempts
        self._attempts: dict[T, int] = {}

    def when(self, item: T) -> float:
        attempts = self._attempts.get(item, 0) + 1
        self._attempts[item] = attempts
        return self.fast_delay if attempts <= self.max_fast_attempts else self.slow_delay

    def forget(self, item: T) -> None:
        self._attempts.pop(item, None)

    def num_requeues(self, item: T) -> int:
        return self._attempts.get(item, 0)


class BucketRateLimiter(Generic[T]):
    """A global token bucket (Go ``rate.Limiter`` reservations): ``qps`` tokens/s, ``burst`` deep.

    Every ``when`` takes a token, going into debt when the bucket is empty; the delay is how long
    the debt takes to refill. The bucket starts full. It keeps no per-item state, so ``forget``
    does nothing and ``num_requeues`` is always 0.
    """

    def __init__(self, qps: float, burst: int, *, clock: clock_mod.Clock | None = None) -> None:
        if qps <= 0 or burst < 1:
            raise ValueError("qps must be > 0 and burst >= 1")
        self.qps = qps
        self.burst = burst
        self._clock: clock_mod.Clock = clock or clock_mod.RealClock()
        self._tokens = float(burst)
        self._last = self._clock.monotonic()

    def when(self, item: T) -> float:
        now = self._clock.monotonic()
        if now > self._last:
            self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
            self._last = now
        self._tokens -= 1.0
        if self._tokens >= 0:
            return 0.0
        return -self._tokens / self.qps

    def forget(self, item: T) -> None:
        pass

    def num_requeues(self, item: T) -> int:
        return 0


class MaxOfRateLimiter(Generic[T]):
    """The worst case of several limiters: the longest ``when``; ``forget`` goes to all of them."""

    def __init__(self, *limiters: RateLimiter[T]) -> None:
        if not limiters:
            raise ValueError("MaxOfRateLimiter needs at least one limiter")
        self.limiters = limiters

    def when(self, item: T) -> float:
        # Every limiter must see the request (each counts it), so no short-circuit.
        return max([limiter.when(item) for limiter in self.limiters])

    def forget(self, item: T) -> None:
        for limiter in self.limiters:
            limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        return max(limiter.num_requeues(item) for limiter in self.limiters)


class WithMaxWaitRateLimiter(Generic[T]):
    """Another limiter with its delays capped at ``max_delay`` seconds."""

    def __init__(self, limiter: RateLimiter[T], max_delay: float) -> None:
        self.limiter = limiter
        self.max_delay = max_delay

    def when(self, item: T) -> float:
        return min(self.limiter.when(item), self.max_delay)

    def forget(self, item: T) -> None:
        self.limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        return self.limiter.num_requeues(item)


def default_controller_rate_limiter(*, clock: clock_mod.Clock | None = None) -> MaxOfRateLimiter[Hashable]:
    """client-go's ``DefaultControllerRateLimiter``: max of exponential(5 ms, 1000 s) and bucket(10, 100)."""
    return MaxOfRateLimiter(
        ItemExponentialFailureRateLimiter(0.005, 1000.0),
        BucketRateLimiter(10.0, 100, clock=clock),
    )


def default_item_based_rate_limiter() -> ItemExponentialFailureRateLimiter[Hashable]:
    """client-go's ``DefaultItemBasedRateLimiter``: exponential from 1 ms to 1000 s."""
    return ItemExponentialFailureRateLimiter(0.001, 1000.0)
