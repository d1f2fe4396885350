"""The work queue: deduplicating, fair, and never handing one item to two workers at once.

Semantics are client-go's ``workqueue.Typed`` exactly. Three structures hold the state:

* ``queue``: the items waiting to be handed out, in FIFO order;
* ``dirty``: every item that needs processing (waiting in ``queue``, or re-added while processing);
* ``processing``: the items handed out by ``get`` and not yet ``done``.

``add`` of a dirty item is a no-op. ``add`` of an item being processed only marks it dirty; ``done``
then puts it back in ``queue``. Hence an item is never processed by two workers at once, and any
number of adds during one pass cause exactly one more pass.

Design for asyncio: the queue is used by N worker tasks of one event loop, so it needs no lock.
``add`` and ``done`` are synchronous and O(1); ``get`` returns without suspending when an item is
waiting and otherwise parks on a future that ``add`` resolves (one waiter per new item, FIFO).

``get`` raises ``ShutDown`` once the queue is shut down *and* empty; workers therefore drain what
was queued before shutdown, and a worker loop reads naturally::

    while True:
        try:
            key = await queue.get()
        except workqueue.ShutDown:
            return
        try:
            await reconcile(key)
        finally:
            queue.done(key)
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Hashable
from typing import Generic, TypeVar

from kplane._util import clock as clock_mod
from kplane.workqueue import metrics as metrics_mod

T = TypeVar("T", bound=Hashable)


class ShutDown(Exception):
    """Raised by ``get`` when the queue is shut down and has nothing left to hand out."""


class Queue(Generic[T]):
    """A deduplicating FIFO work queue for the tasks of one event loop.

    ``name`` turns on metrics (through ``metrics_provider``, default: the global provider); unnamed
    queues are unobserved. Items must be hashable and should be small keys (``"ns/name"``), never
    objects: the queue says *what* to look at, the cache says what it currently is.
    """

    def __init__(
        self,
        name: str = "",
        *,
        clock: clock_mod.Clock | None = None,
        metrics_provider: metrics_mod.MetricsProvider | None = None,
    ) -> None:
        self.name = name
        self._clock: clock_mod.Clock = clock or clock_mod.RealClock()
        self._metrics = metrics_mod.recorder_for(name, clock=self._clock, provider=metrics_provider)
        self._queue: collections.deque[T] = collections.deque()
        self._dirty: set[T] = set()
        self._processing: set[T] = set()
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()
        self._shutting_down = False
        self._drain: asyncio.Future[None] | None = None

    def add(self, item: T) -> None:
        """Mark ``item`` as needing processing; a no-op if it already does or after shutdown."""
        if self._shutting_down or item in self._dirty:
            return
        self._dirty.add(item)
        self._metrics.add(item)
        if item in self._processing:
            return  # ``done`` re-queues it: never two workers on one item.
        self._queue.append(item)
        if self._waiters:
            self._wake_one()

    async def get(self) -> T:
        """Hand out the oldest waiting item, waiting for one if needed.

        The caller owns the item until it calls ``done(item)``. Raises ``ShutDown`` when the queue
        is shut down and empty; items queued before shutdown are still handed out. Cancelling a
        waiting ``get`` loses nothing.
        """
        while not self._queue:
            if self._shutting_down:
                raise ShutDown
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            except asyncio.CancelledError:
                if waiter.done() and not waiter.cancelled():
                    self._wake_one()  # Pass on the wake-up this task will not use.
                else:
                    try:
                        self._waiters.remove(waiter)
                    except ValueError:
                        pass
                raise
        item = self._queue.popleft()
        self._processing.add(item)
        self._dirty.discard(item)
        self._metrics.get(item)
        return item

    def done(self, item: T) -> None:
        """Finish processing ``item``; if it was re-added meanwhile, queue it for one more pass."""
        self._metrics.done(item)
        self._processing.discard(item)
        if item in self._dirty:
            self._queue.append(item)
            if self._waiters:
                self._wake_one()
        if not self._processing and self._drain is not None and not self._drain.done():
            self._drain.set_result(None)

    def __len__(self) -> int:
        """Number of items waiting to be handed out (not counting those being processed)."""
        return len(self._queue)

    def shutting_down(self) -> bool:
        """True once ``shutdown`` or ``shutdown_with_drain`` has been called."""
        return self._shutting_down

    def shutdown(self) -> None:
        """Stop accepting adds and wake every waiting ``get``; also ends a ``shutdown_with_drain`` wait.

        Waiting workers drain the items already queued, then ``get`` raises ``ShutDown``.
        """
        self._shutting_down = True
        if self._drain is not None and not self._drain.done():
            self._drain.set_result(None)
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)

    async def shutdown_with_drain(self) -> None:
        """Shut down, then wait until no item handed out by ``get`` is still being processed.

        As in client-go, only items being processed are waited for: items still queued are handed
        out to remaining workers as after ``shutdown``. Every item handed out must be ``done``, or
        the wait never ends; a later ``shutdown()`` call, or cancelling this call, ends it early.
        """
        self.shutdown()
        if not self._processing:
            return
        if self._drain is None:
            self._drain = asyncio.get_running_loop().create_future()
        drain = self._drain
        try:
            await asyncio.shield(drain)  # Several callers may wait on the one future.
        finally:
            if drain.done() and self._drain is drain:
                self._drain = None

    def _wake_one(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
