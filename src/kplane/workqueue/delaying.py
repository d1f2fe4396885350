"""The delaying queue: a work queue whose items can be added after a delay.

Waiting items live in a min-heap of ready times with one entry per item (a dict holds each item's
current ready time; heap entries that disagree with it are stale and skipped). One task, started on
the first ``add_after`` and driven by the injected clock, sleeps until the earliest ready time and
moves due items into the queue. An ``add_after`` that makes a new earliest entry interrupts that
sleep. A second ``add_after`` of an item already waiting keeps the *earlier* ready time, as
client-go's ``delaying_queue.go`` does. client-go also wakes every 10 s as insurance against a
missed signal; here every reschedule happens on the event loop, so no signal can be missed and the
task sleeps for as long as it is told.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Hashable
from typing import Generic, TypeVar

from kplane._util import clock as clock_mod
from kplane.workqueue import metrics as metrics_mod
from kplane.workqueue import queue as queue_mod

T = TypeVar("T", bound=Hashable)


class DelayingQueue(queue_mod.Queue[T], Generic[T]):
    """A ``Queue`` with ``add_after``. ``len()`` counts only items ready to be handed out."""

    def __init__(
        self,
        name: str = "",
        *,
        clock: clock_mod.Clock | None = None,
        metrics_provider: metrics_mod.MetricsProvider | None = None,
    ) -> None:
        super().__init__(name, clock=clock, metrics_provider=metrics_provider)
        self._ready_at: dict[T, float] = {}
        self._heap: list[tuple[float, int, T]] = []
        self._seq = itertools.count()
        self._waiting_task: asyncio.Task[None] | None = None
        self._wakeup: asyncio.Future[None] | None = None

    def add_after(self, item: T, delay: float) -> None:
        """Add ``item`` once ``delay`` seconds (on the queue's clock) have passed.

        ``delay <= 0`` adds at once. If ``item`` is already waiting, the earlier of the two ready
        times wins. Ignored after shutdown. Counts one retry in the metrics on every call (before
        shutdown). Must be called from the event loop that runs the workers when ``delay > 0``.
        """
        if self._shutting_down:
            return
        self._metrics.retry()
        if delay <= 0:
            self.add(item)
            return
        ready = self._clock.monotonic() + delay
        current = self._ready_at.get(item)
        if current is not None and current <= ready:
            return
        self._ready_at[item] = ready
        earliest = not self._heap or ready < self._heap[0][0]
        heapq.heappush(self._heap, (ready, next(self._seq), item))
        if self._waiting_task is None:
            self._waiting_task = asyncio.get_running_loop().create_task(
                self._wait_loop(), name=f"workqueue-delay:{self.name}"
            )
        elif earliest and self._wakeup is not None and not self._wakeup.done():
            self._wakeup.set_result(None)

    def waiting(self) -> int:
        """Number of items waiting for their delay to pass."""
        return len(self._ready_at)

    def shutdown(self) -> None:
        """Shut down as ``Queue.shutdown`` does and drop every item still waiting for its delay."""
        super().shutdown()
        self._ready_at.clear()
        self._heap.clear()
        if self._waiting_task is not None:
            self._waiting_task.cancel()
            self._waiting_task = None

    async def _wait_loop(self) -> None:
        loop = asyncio.get_running_loop()
        while not self._shutting_down:
            self._move_ready()
            self._wakeup = loop.create_future()
            if not self._heap:
                await self._wakeup
                continue
            delay = self._heap[0][0] - self._clock.monotonic()
            sleeper = loop.create_task(self._clock.sleep(delay))
            try:
                await asyncio.wait((sleeper, self._wakeup), return_when=asyncio.FIRST_COMPLETED)
            finally:
                sleeper.cancel()

    def _move_ready(self) -> None:
        now = self._clock.monotonic()
        heap = self._heap
        while heap and heap[0][0] <= now:
            ready, _, item = heapq.heappop(heap)
            if self._ready_at.get(item) == ready:
                del self._ready_at[item]
                self.add(item)
