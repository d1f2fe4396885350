"""Injectable time.

Nothing outside this module reads the wall clock or sleeps directly: code takes a ``Clock`` so that
tests can use ``FakeClock`` and run time-based logic instantly and deterministically.
``RealClock`` is the one production implementation.
"""

from __future__ import annotations

import asyncio
import datetime
import heapq
import itertools
import time
from collections.abc import Callable
from typing import Protocol


class Clock(Protocol):
    """Time source. ``now`` is wall time (UTC), ``monotonic`` never goes backwards."""

    def now(self) -> datetime.datetime:
        """The current wall time, timezone-aware UTC."""
        ...

    def monotonic(self) -> float:
        """Seconds on a clock that never goes backwards; only differences are meaningful."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Suspend the caller for ``seconds`` of this clock's time (cancellable)."""
        ...


class RealClock:
    """The system clock."""

    def now(self) -> datetime.datetime:
        return datetime.datetime.now(datetime.UTC)

    monotonic = staticmethod(time.monotonic)  # no Python frame: hot paths time every request

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))


def epoch_seconds(clock: Clock) -> Callable[[], float]:
    """A function reading ``clock``'s wall time as seconds since the epoch: ``time.time`` itself
    for the real clock (no Python frame, no datetime: the store stamps every commit with it)."""
    if isinstance(clock, RealClock):
        return time.time
    now = clock.now
    return lambda: now().timestamp()


class FakeClock:
    """A clock that only moves when told to (``step`` / ``set``).

    Sleepers wake, in deadline order, when the clock passes their deadline. ``now`` starts at a fixed
    instant so tests are reproducible.
    """

    def __init__(self, start: datetime.datetime | None = None) -> None:
        self._wall0 = start or datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
        self._t = 0.0
        self._seq = itertools.count()
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []

    def now(self) -> datetime.datetime:
        return self._wall0 + datetime.timedelta(seconds=self._t)

    def monotonic(self) -> float:
        return self._t

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self._t + seconds, next(self._seq), fut))
        await fut

    def has_waiters(self) -> bool:
        """True when some coroutine is sleeping on this clock."""
        return any(not f.done() for _, _, f in self._sleepers)

    def step(self, seconds: float) -> None:
        """Advance time by ``seconds`` and wake every sleeper whose deadline has passed."""
        self.set(self._t + seconds)

    def set(self, monotonic: float) -> None:
        """Jump to an absolute monotonic time (never backwards) and wake due sleepers."""
        self._t = max(self._t, monotonic)
        while self._sleepers and self._sleepers[0][0] <= self._t:
            _, _, fut = heapq.heappop(self._sleepers)
            if not fut.done():
                fut.set_result(None)
