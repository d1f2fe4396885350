"""Event fan-out: bounded per-watcher queues behind one broadcaster.

Every storage implementation (memory, SQLite, the cache) notifies its watchers through a
``Broadcaster``. Delivery is a synchronous call on the event loop, so a write never waits for a
watcher: each ``QueueWatch`` buffers at most ``capacity`` live events and, when a consumer falls that
far behind, is terminated (its iterator raises ``StorageError``) instead of slowing anyone down.

Watchers are grouped by prefix, so an event costs one ``startswith`` per distinct watched prefix
rather than one per watcher.
"""

from __future__ import annotations

import asyncio
import collections
import re
from collections.abc import Awaitable, Callable, Iterable

from kplane.server.storage import interface

Backlog = Callable[[], Awaitable[Iterable[interface.Event]]]
"""Loads events that precede the live stream (e.g. history read from disk); called once, lazily."""


class QueueWatch:
    """One watcher: an optional backlog, then live events pushed by a ``Broadcaster``.

    Contract: events come out in the order they were pushed (backlog first), each once. ``close``
    (the consumer's call) is idempotent and ends the iteration at once; ``end`` (the producer's) ends
    it after what is queued; ``fail`` drops what is queued, makes the iterator raise, and calls the
    ``on_terminate`` callbacks. ``__anext__`` may be cancelled while it waits without losing an event.
    """

    __slots__ = (
        "_after",
        "_backlog",
        "_capacity",
        "_closed",
        "_error",
        "_loading",
        "_on_close",
        "_on_terminate",
        "_queue",
        "_waiter",
        "prefix",
    )

    def __init__(
        self,
        prefix: str,
        *,
        capacity: int,
        initial: Iterable[interface.Event] = (),
        backlog: Backlog | None = None,
        on_close: Callable[[QueueWatch], None] | None = None,
        after: int = 0,
    ) -> None:
        self.prefix = prefix
        self._after = after
        self._queue: collections.deque[interface.Event] = collections.deque(initial)
        # Events already in the window when the watch starts do not count against the live budget.
        self._capacity = capacity + len(self._queue)
        self._backlog = backlog
        self._on_close = on_close
        self._on_terminate: list[Callable[[interface.StorageError], None]] = []
        self._waiter: asyncio.Future[None] | None = None
        self._loading: asyncio.Future[None] | None = None  # the backlog's load, once started
        self._closed = False
        self._error: interface.StorageError | None = None

    @property
    def done(self) -> bool:
        """True once closed, ended or failed."""
        return self._closed

    @property
    def ready(self) -> bool:
        """True when the next ``__anext__`` completes without waiting (an event is queued, or the
        stream is over)."""
        return self._backlog is None and (bool(self._queue) or self._closed)

    def on_terminate(self, callback: Callable[[interface.StorageError], None]) -> None:
        """Call ``callback(error)`` once, synchronously, if this watch fails (e.g. falls behind)."""
        if self._error is not None:
            callback(self._error)
        elif not self._closed:
            self._on_terminate.append(callback)

    def wake_when_ready(self, waiter: asyncio.Future[None]) -> None:
        """Resolve ``waiter`` once ``ready`` is true (at once if it is); starts loading the backlog."""
        if self._backlog is not None:
            self._start_loading()
        if self.ready:
            if not waiter.done():
                waiter.set_result(None)
        else:
            self._waiter = waiter

    def push(self, event: interface.Event) -> None:
        """Queue one live event; terminates the watcher if its queue is full. Never blocks."""
        if self._closed or event.revision <= self._after:
            return
        if len(self._queue) >= self._capacity:
            self.fail(interface.StorageError("watcher is too slow: event queue overflowed, watch terminated"))
            return
        self._queue.append(event)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def fail(self, error: interface.StorageError) -> None:
        """Terminate: the iterator raises ``error`` at its next step (queued events are dropped)."""
        if self._closed:
            return
        self._error = error
        self._queue.clear()
        self._backlog = None
        self._finish()
        callbacks, self._on_terminate = self._on_terminate, []
        for callback in callbacks:
            callback(error)

    def close(self) -> None:
        """Stop the watch; the iterator ends after this. Idempotent."""
        if self._closed:
            return
        self._queue.clear()
        self._backlog = None
        self._finish()

    def end(self) -> None:
        """End the stream gracefully: what is queued is still delivered, then iteration stops."""
        if self._closed:
            return
        self._finish()

    def _finish(self) -> None:
        self._closed = True
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)
        if self._on_close is not None:
            on_close, self._on_close = self._on_close, None
            on_close(self)
        if self._error is None:
            self._on_terminate = []

    def __aiter__(self) -> QueueWatch:
        return self

    async def __anext__(self) -> interface.Event:
        if self._backlog is not None:
            # shielded: a step cancelled during the load leaves it running, the next step awaits it
            await asyncio.shield(self._start_loading())
        queue = self._queue
        while True:
            if queue:
                return queue.popleft()
            if self._error is not None:
                raise self._error
            if self._closed:
                raise StopAsyncIteration
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None

    def _start_loading(self) -> asyncio.Future[None]:
        """The backlog's load: one task for the watch's life, started by whoever needs it first."""
        if self._loading is None:
            self._loading = asyncio.ensure_future(self._load_backlog())
            self._loading.add_done_callback(_retrieved)  # a failed load ends the watch (``close``)
        return self._loading

    async def _load_backlog(self) -> None:
        backlog = self._backlog
        assert backlog is not None
        try:
            events = list(await backlog())
        except BaseException:
            self.close()
            raise
        if self._backlog is not backlog:
            return  # closed or failed while loading
        self._backlog = None
        # Live events pushed meanwhile are newer than the backlog; the backlog is not live budget.
        self._queue.extendleft(reversed(events))
        self._capacity += len(events)
        waiter = self._waiter
        if self._queue and waiter is not None and not waiter.done():
            waiter.set_result(None)


def _retrieved(task: asyncio.Future[None]) -> None:
    if not task.cancelled():
        task.exception()


Listener = Callable[[interface.Event], None]


RESOURCE_PREFIX = re.compile(r"/registry/[^/]*/[^/]*/").match
"""Matches the resource prefix ``/registry/<group>/<resource>/`` at the start of a key (one C
call: keys are cut on every write, several times)."""


def bucket_of(key: str) -> str:
    """``/registry/<group>/<resource>/`` of a key below such a prefix, else "" (no routing)."""
    found = RESOURCE_PREFIX(key)
    return found.group() if found is not None else ""


Route = tuple[tuple[tuple[bool, str, Listener], ...], tuple[tuple[bool, str], ...]]
"""Per bucket: the listeners, then the watch prefixes, that may match its keys, each with whether
the key must still be tested against its prefix (a prefix longer than the bucket)."""
_ROUTES_BOUND = 1024  # buckets are resources: bounded, but keep the memo so too


def _may_match(prefix: str, bucket: str) -> bool:
    return not bucket or bucket.startswith(prefix) or prefix.startswith(bucket)


class Broadcaster:
    """Delivers events to every open ``QueueWatch`` whose prefix matches the event's key, and,
    synchronously and first, to every listener (see ``listen``).

    Each event goes only to the listeners and watch prefixes that may match keys of its resource
    (``bucket_of``): a route per resource, memoised until a listener or a watch prefix comes or
    goes, so an event costs a few calls however many resources are watched."""

    __slots__ = ("_by_prefix", "_listeners", "_routes")

    def __init__(self) -> None:
        self._by_prefix: dict[str, set[QueueWatch]] = {}
        self._listeners: list[tuple[str, Listener]] = []
        self._routes: dict[str, Route] = {}

    def listen(self, listener: Listener, prefix: str = "") -> Callable[[], None]:
        """Call ``listener(event)`` for every event whose key starts with ``prefix``, in order,
        inside ``publish`` (so before the write that caused it returns to its caller). Listeners
        must be quick and must not raise. Returns the function that removes the listener."""
        entry = (prefix, listener)
        self._listeners.append(entry)
        self._routes.clear()

        def remove() -> None:
            if entry in self._listeners:
                self._listeners.remove(entry)
                self._routes.clear()

        return remove

    def __len__(self) -> int:
        return sum(len(ws) for ws in self._by_prefix.values())

    def add(self, watch: QueueWatch) -> None:
        """Register ``watch`` for live events (the watch must not be done)."""
        group = self._by_prefix.get(watch.prefix)
        if group is None:
            group = self._by_prefix[watch.prefix] = set()
            self._routes.clear()
        group.add(watch)

    def discard(self, watch: QueueWatch) -> None:
        """Unregister ``watch`` (no-op when absent)."""
        group = self._by_prefix.get(watch.prefix)
        if group is not None:
            group.discard(watch)
            if not group:
                del self._by_prefix[watch.prefix]
                self._routes.clear()

    def _route(self, bucket: str) -> Route:
        """The route of ``bucket``, computed and memoised."""
        size = len(bucket)
        route = (
            tuple((len(p) > size, p, f) for p, f in self._listeners if _may_match(p, bucket)),
            tuple((len(p) > size, p) for p in self._by_prefix if _may_match(p, bucket)),
        )
        if len(self._routes) >= _ROUTES_BOUND:
            self._routes.clear()
        self._routes[bucket] = route
        return route

    def publish(self, event: interface.Event) -> None:
        """Hand ``event`` to every listener, then push it to every matching watcher. Never blocks,
        never raises."""
        key = event.key
        bucket = bucket_of(key)
        route = self._routes.get(bucket)
        listeners, prefixes = route if route is not None else self._route(bucket)
        for test, prefix, listener in listeners:
            if not test or key.startswith(prefix):
                listener(event)
        if prefixes:
            by_prefix = self._by_prefix
            for test, prefix in prefixes:
                if not test or key.startswith(prefix):
                    group = by_prefix.get(prefix)
                    if group:
                        for watch in list(group):
                            watch.push(event)

    def watch(
        self,
        prefix: str,
        *,
        capacity: int,
        initial: Iterable[interface.Event] = (),
        backlog: Backlog | None = None,
        after: int = 0,
    ) -> QueueWatch:
        """A registered watcher that first yields ``backlog``/``initial``, then live events (only
        those with a revision above ``after``)."""
        watch = QueueWatch(
            prefix, capacity=capacity, initial=initial, backlog=backlog, on_close=self.discard, after=after
        )
        self.add(watch)
        return watch

    def fail_all(self, error: interface.StorageError) -> None:
        """Terminate every watcher with ``error``."""
        for group in list(self._by_prefix.values()):
            for watch in list(group):
                watch.fail(error)
        self._by_prefix.clear()

    def end_all(self) -> None:
        """End every watcher gracefully (queued events are still delivered)."""
        for group in list(self._by_prefix.values()):
            for watch in list(group):
                watch.end()
        self._by_prefix.clear()
