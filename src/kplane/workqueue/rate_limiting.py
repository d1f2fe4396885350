"""The rate-limiting queue: a delaying queue that asks a rate limiter how long each retry waits.

``add_rate_limited(item)`` is ``add_after(item, limiter.when(item))``. ``forget(item)`` only resets
the limiter's memory of ``item`` (call it after a success); it does not remove the item from the
queue. Together with ``done`` this gives controller-runtime's retry loop: failure → rate-limited
retry, success → ``forget``.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Generic, TypeVar

from kplane._util import clock as clock_mod
from kplane.workqueue import delaying as delaying_mod
from kplane.workqueue import metrics as metrics_mod
from kplane.workqueue import rate_limiters as rate_limiters_mod

T = TypeVar("T", bound=Hashable)


class RateLimitingQueue(delaying_mod.DelayingQueue[T], Generic[T]):
    """A ``DelayingQueue`` with per-item retry delays from ``rate_limiter``.

    ``rate_limiter`` defaults to ``default_controller_rate_limiter`` on the queue's clock.
    """

    def __init__(
        self,
        name: str = "",
        *,
        rate_limiter: rate_limiters_mod.RateLimiter[T] | None = None,
        clock: clock_mod.Clock | None = None,
        metrics_provider: metrics_mod.MetricsProvider | None = None,
    ) -> None:
        super().__init__(name, clock=clock, metrics_provider=metrics_provider)
        self.rate_limiter: rate_limiters_mod.RateLimiter[T] = (
            rate_limiter or rate_limiters_mod.default_controller_rate_limiter(clock=self._clock)
        )

    def add_rate_limited(self, item: T) -> None:
        """Add ``item`` after the delay the rate limiter assigns it (counting one more requeue)."""
        self.add_after(item, self.rate_limiter.when(item))

    def forget(self, item: T) -> None:
        """Reset the rate limiter's failure count for ``item``; the queue itself is unchanged."""
        self.rate_limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        """How many rate-limited requeues ``item`` has had since it was last forgotten."""
        return self.rate_limiter.num_requeues(item)
