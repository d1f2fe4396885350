"""``CachedStorage``: every current object and a window of recent events, in memory.

Design note. The apiserver's "cacher" serves reads and watches without touching etcd; so does this
decorator, over any ``Storage``. At ``start`` it lists the whole backend and watches it from that
snapshot's revision; each backend event is applied to an in-memory index and appended to a bounded
window, then fanned out to the cache's own watchers (the same ``Event`` object, so an encoding
memoised on it is shared). Objects are grouped per resource with their keys kept sorted (``index``),
so listing one resource or namespace is a bisection plus a slice.

Consistency: writes go to the backend and return as soon as it acknowledges them; ``get`` and
``list`` first wait until the cache has applied every write acknowledged through it so far (at once
for a backend that delivers its events synchronously, within a watch round-trip for etcd), so a read
after a write sees it (read-your-writes) without each write waiting for its own event. ``peek``
never waits: it may miss a write acknowledged a moment ago. ``current_revision`` is the newest
revision applied or acknowledged. ``list`` at the current revision is served from memory; an exact
list at an older revision (a continue token's snapshot) is delegated to the backend. A revision the
cache has not reached yet, but the backend has, is waited for; one the backend has not reached
raises ``TooLargeRevision``. ``watch`` is served from the window only: older than the window is
``Expired``.

A backend shared with other servers (etcd) has ``fresh_revision()`` (the cluster's revision, read
linearizably): ``sync()`` notes that revision and the next ``get`` or ``list`` waits until the cache
has applied it, as upstream's consistent list from the watch cache does, so a write made through
another server is visible to the next read here. The registry calls it before the reads a client
asks to be consistent (GET, and LIST or WATCH without a resourceVersion); the server's own lookups
(admission) do not ask, as upstream's informers do not. When the writes up to that revision were
outside the cache's key space, the backend watch's progress notifications (``request_progress`` /
``on_progress``) tell the cache it is up to date. A backend watch with ``deliver_to(fn)`` (etcd's)
hands its events to the cache as it reads them, rather than through its queue. Both waits (for this
server's writes and for ``sync``'s revision) are bounded (``waiting``): after 3 s the read goes to the backend
itself, as upstream's consistent reads fall back to etcd. An explicit "not older than N" revision
the cache does not reach in 3 s is ``TooLargeRevision`` (a 504), as upstream.

If the cache loses its backend stream (its own watcher overflowed), it terminates its watchers with
an error (their clients relist), and lists and watches the backend again.
"""

from __future__ import annotations

import asyncio
import bisect
import builtins
import collections
import itertools
import logging
from collections.abc import Awaitable, Callable
from typing import Protocol

from kplane._util import clock as clock_
from kplane.server.storage import interface
from kplane.server.storage.cacher import fanout, index, waiting

_log = logging.getLogger(__name__)
_ALL = "/"


class KeyedStorage(interface.Storage, Protocol):
    """A ``Storage`` that can also list ``(key, object)`` pairs: what the cache needs to index a
    snapshot (``ListResult`` items carry no keys). A backend that also has
    ``listen(fn) -> unlisten`` (synchronous, in-order event delivery) gets the cache's fast path."""

    async def list_keyed(self, prefix: str) -> tuple[builtins.list[tuple[str, interface.Object]], int]:
        """Every live ``(key, object)`` under ``prefix`` in key order at the current revision, and
        that revision."""
        ...


class CachedStorage:
    """A ``Storage`` that serves ``get``, ``list`` and ``watch`` from memory (see the module docstring).

    Call ``await start()`` before use and ``await close()`` at the end; ``close`` also closes the
    backend, which this object owns.
    """

    def __init__(
        self,
        backend: KeyedStorage,
        *,
        window: int = 10_000,
        watcher_capacity: int = 10_000,
        clock: clock_.Clock | None = None,
    ) -> None:
        self._backend = backend
        self._window = window
        self._watcher_capacity = watcher_capacity
        self._clock: clock_.Clock = clock or clock_.RealClock()
        self._buckets: index.Buckets = {}
        self._events: collections.deque[interface.Event] = collections.deque()
        self._rev = 0
        self._acked = 0  # the newest revision a write through this cache returned
        # what the next get/list must see: ``_acked`` or the revision ``sync`` read, the newer
        self._needed = 0
        self._oldest = 0  # watches may start at this revision or later
        self._waiters: waiting.Waiters = []
        self._broadcaster = fanout.Broadcaster()
        self._source: interface.Watch | None = None
        self._task: asyncio.Task[None] | None = None
        self._started = False
        self._following = False  # iterating the backend stream (not relisting)
        self._closed = False
        self._unlisten: Callable[[], None] | None = None
        self._pending: builtins.list[interface.Event] | None = None
        self._fresh: Callable[[], Awaitable[int]] | None = getattr(backend, "fresh_revision", None)

    # -- lifecycle -----------------------------------------------------------------------------

    async def start(self) -> None:
        """Load every object from the backend and follow its changes. Idempotent."""
        if self._started:
            return
        listen = getattr(self._backend, "listen", None)
        if listen is not None:
            await self._load_listening(listen)
            self._started = True
            return
        await self._load()
        self._started = True
        self._task = asyncio.get_running_loop().create_task(self._follow(), name="kplane-cacher")

    async def _load_listening(self, listen: Callable[[fanout.Listener], Callable[[], None]]) -> None:
        """Fast path for backends that can call us synchronously with each event: the cache is
        updated inside the backend's delivery, before the write returns, so a write needs no second
        wait and no queue hop. Events that arrive while the snapshot loads are held and applied
        after it (those the snapshot already contains are skipped)."""
        self._pending = []
        self._unlisten = listen(self._on_event)
        await self._load(watch=False)
        pending, self._pending = self._pending, None
        for event in pending:
            if event.revision > self._rev:
                self._apply(event)

    def _on_event(self, event: interface.Event) -> None:
        if self._pending is not None:
            self._pending.append(event)
        else:
            self._apply(event)

    async def close(self) -> None:
        """Close the backend (its pending writes complete and their events are applied here),
        then end every watch of this cache."""
        if self._closed:
            return
        self._closed = True
        try:
            await self._backend.close()
            if self._unlisten is not None:
                self._unlisten()
            if self._task is not None and self._following:
                # The backend ended its stream after its last event: let the follower apply it all.
                await self._task
        finally:
            if self._source is not None:
                self._source.close()
            if self._task is not None and not self._task.done():
                self._task.cancel()
            self._broadcaster.end_all()
            waiting.fail(self._waiters, interface.StorageError("storage is closed"))

    # -- reads ---------------------------------------------------------------------------------

    def listen(self, listener: fanout.Listener, prefix: str = "") -> Callable[[], None]:
        """Call ``listener(event)`` for every event under ``prefix`` this cache applies,
        synchronously, after the cache holds it and before the write that caused it returns (see
        ``Broadcaster.listen``). Returns the function that removes the listener."""
        return self._broadcaster.listen(listener, prefix)

    def object_counts(self) -> dict[str, int]:
        """How many live objects each resource prefix (``/registry/<group>/<plural>/``) holds."""
        return {prefix: len(bucket.objects) for prefix, bucket in self._buckets.items() if bucket.objects}

    def current_revision(self) -> int:
        """The newest revision applied here, or acknowledged to a write through this cache if that
        is newer (a watch from it starts after that write)."""
        return max(self._rev, self._acked)

    def peek(self, key: str) -> interface.Object | None:
        """The cached object at ``key`` or None, synchronously (shared: treat as read-only). For
        per-request checks that must not wait, such as a token's ServiceAccount still existing."""
        bucket = self._buckets.get(index.resource_prefix(key))
        return bucket.objects.get(key) if bucket is not None else None

    def current_peek(self, key: str) -> interface.Object | None:
        """The cached object at ``key`` if the cache already holds every write a ``get`` would wait
        for (so this is what ``get`` would answer, without a task switch), else None: then call
        ``get``. Shared: treat as read-only."""
        if self._rev < self._needed:
            return None
        bucket = self._buckets.get(index.resource_prefix(key))
        return bucket.objects.get(key) if bucket is not None else None

    def surely_empty(self, prefix: str) -> bool:
        """True when no object is under ``prefix`` and the cache holds every write a ``list`` would
        wait for (so a ``list`` would answer nothing); False when unsure or not empty."""
        if self._rev < self._needed:
            return False
        bucket = self._buckets.get(index.resource_prefix(prefix))
        if bucket is None:
            return True
        keys = bucket.keys
        i = bisect.bisect_left(keys, prefix)
        return i == len(keys) or not keys[i].startswith(prefix)

    async def get(self, key: str) -> interface.Object:
        self._check_ready()
        if self._rev < self._needed and not await self._catch_up():
            return await self._backend.get(key)
        bucket = self._buckets.get(index.resource_prefix(key))
        obj = bucket.objects.get(key) if bucket is not None else None
        if obj is None:
            raise interface.KeyNotFound(key)
        return obj

    async def list(
        self, prefix: str, *, revision: int = 0, start_after: str = "", limit: int = 0
    ) -> interface.ListResult:
        self._check_ready()
        if self._rev < self._needed and not await self._catch_up():
            return await self._backend.list(prefix, revision=revision, start_after=start_after, limit=limit)
        if revision > self._rev:
            backend_rev = await self._fresh() if self._fresh is not None else self._backend.current_revision()
            if revision > backend_rev:
                raise interface.TooLargeRevision(revision, backend_rev)
            await self.wait_for_revision(revision)
        if revision and revision < self._rev:
            return await self._backend.list(prefix, revision=revision, start_after=start_after, limit=limit)
        return index.page(self._buckets, prefix, start_after, limit, self._rev)

    async def list_keyed(self, prefix: str) -> tuple[builtins.list[tuple[str, interface.Object]], int]:
        self._check_ready()
        if self._rev < self._needed and not await self._catch_up():
            return await self._backend.list_keyed(prefix)
        keys, objects = index.keys_objects(self._buckets, prefix)
        lo, hi = index.key_range(keys, prefix, "")
        return [(k, objects[k]) for k in keys[lo:hi]], self._rev

    # ``timeout`` is measured on the injected Clock, which ``asyncio.timeout`` cannot use.
    async def revisions(
        self, where: str, *, deletions_only: bool = False, limit: int = 1000
    ) -> builtins.list[interface.Revision]:
        """The backend's ``History.revisions`` (the cache keeps no past states); raises
        ``HistoryNotKept`` when the backend keeps none."""
        history = interface.history_of(self._backend)
        return await history.revisions(where, deletions_only=deletions_only, limit=limit)

    async def get_at(self, key: str, revision: int) -> interface.Object:
        """The backend's ``History.get_at``, once the cache has seen ``revision``."""
        history = interface.history_of(self._backend)
        if revision > self._rev:
            await self.wait_for_revision(revision)
        return await history.get_at(key, revision)

    async def wait_for_revision(self, revision: int, timeout: float = 3.0) -> None:  # noqa: ASYNC109
        """Return once the cache has applied ``revision``; raise ``TooLargeRevision`` after
        ``timeout`` seconds if it has not (for "not older than N" reads)."""
        self._check_ready()
        if self._rev >= revision:
            return
        await waiting.wait(self._waiters, revision, self._clock, timeout)
        if self._rev < revision:
            raise interface.TooLargeRevision(revision, self._rev)

    async def sync(self) -> None:
        """Make the next reads consistent with the shared backend: note its current revision (read
        linearizably), which ``get`` and ``list`` then wait for (see ``_catch_up``). Nothing to do
        for a backend of this process only."""
        self._check_ready()
        if self._fresh is None:
            return
        target = await self._fresh()
        if target > self._needed:
            self._needed = target

    async def _catch_up(self) -> bool:
        """Wait until the cache has applied every write acknowledged through it and the revision
        the last ``sync`` asked for; False if it has not after 3 s, and the caller then reads the
        backend itself, as upstream's consistent reads fall back to etcd when the watch cache is
        late (so a busy event loop or a watch being re-established costs latency, not a 504).
        Asks the backend watch for progress notifications while it waits: the writes up to that
        revision may have been outside the cache's key space."""
        target = self._needed
        ask: Callable[[], None] | None = getattr(self._source, "request_progress", None)
        await waiting.wait_asking(self._waiters, target, self._clock, ask)
        if self._rev >= target:
            return True
        _log.warning("cache is behind (at %d, wanted %d after 3 s): reading the backend", self._rev, target)
        return False

    def _progressed(self, revision: int) -> None:
        """The backend watch says every event up to ``revision`` has been applied here."""
        if revision > self._rev:
            self._rev = revision
            if self._waiters:
                waiting.wake(self._waiters, revision)

    # -- writes --------------------------------------------------------------------------------

    async def create(self, key: str, obj: interface.Object) -> interface.Object:
        self._check_ready()
        return self._applied(await self._backend.create(key, obj))

    async def guaranteed_update(
        self,
        key: str,
        fn: interface.UpdateFunc,
        *,
        preconditions: interface.Preconditions | None = None,
        cached: interface.Object | None = None,
    ) -> interface.Object:
        """The backend's update, starting from the object held here (its ``cached``): it is
        current unless a write is still on its way to the cache, and the backend re-reads then."""
        self._check_ready()
        hint = self.peek(key) if cached is None else cached
        return self._applied(
            await self._backend.guaranteed_update(key, fn, preconditions=preconditions, cached=hint)
        )

    async def delete(
        self, key: str, *, preconditions: interface.Preconditions | None = None
    ) -> interface.Object:
        self._check_ready()
        return self._applied(await self._backend.delete(key, preconditions=preconditions))

    async def compact(self, revision: int) -> None:
        self._check_ready()
        if self._rev < self._acked:  # the window is trimmed below: hold this server's writes first
            await self.wait_for_revision(self._acked)
        await self._backend.compact(revision)
        revision = min(revision, self._rev)
        events = self._events
        while events and events[0].revision <= revision:
            events.popleft()
        self._oldest = max(self._oldest, revision)

    # -- watch ---------------------------------------------------------------------------------

    def watch(self, prefix: str, from_revision: int) -> interface.Watch:
        self._check_ready()
        if from_revision > self._rev:
            backend_rev = self._backend.current_revision()
            if from_revision > backend_rev:
                raise interface.TooLargeRevision(from_revision, backend_rev)
            # The backend has it and the cache will soon: start live, skipping what is not newer.
            return self._broadcaster.watch(prefix, capacity=self._watcher_capacity, after=from_revision)
        if from_revision < self._oldest:
            raise interface.Expired(from_revision, self._oldest)
        events = self._events
        start = bisect.bisect_right(events, from_revision, key=_revision)
        initial = [e for e in itertools.islice(events, start, None) if e.key.startswith(prefix)]
        return self._broadcaster.watch(prefix, capacity=self._watcher_capacity, initial=initial)

    # -- internals -----------------------------------------------------------------------------

    def _check_ready(self) -> None:
        if self._closed:
            raise interface.StorageError("storage is closed")
        if not self._started:
            raise interface.StorageError("cache is not started: await start() first")

    def _applied(self, obj: interface.Object) -> interface.Object:
        """Note the revision of the write that produced ``obj`` (reads wait for it), return ``obj``.

        The write does not wait for its own event: with etcd that wait took a watch round-trip per
        write (a gRPC completion handed over from gRPC's poller thread), about a quarter of the
        server's CPU per create under load."""
        revision = int((obj.get("metadata") or {}).get("resourceVersion") or 0)
        if revision > self._acked:
            self._acked = revision
            if revision > self._needed:
                self._needed = revision
        return obj

    async def _load(self, *, watch: bool = True) -> None:
        """List the backend into fresh buckets and (unless ``watch`` is False) start watching it
        from the snapshot."""
        pairs, revision = await self._backend.list_keyed(_ALL)
        self._buckets = index.build(pairs)
        self._rev = revision
        self._oldest = revision
        self._events.clear()
        if watch:
            self._source = self._backend.watch(_ALL, revision)
            hook = getattr(self._source, "on_progress", None)
            if hook is not None:
                hook(self._progressed)
            deliver = getattr(self._source, "deliver_to", None)
            if deliver is not None:
                deliver(self._apply)  # events skip the stream's queue; ``_follow`` sees its end

    def _apply(self, event: interface.Event) -> None:
        name = index.resource_prefix(event.key)
        bucket = self._buckets.get(name)
        if event.type == interface.DELETED:
            if bucket is not None:
                bucket.remove(event.key)
                if not bucket.objects:
                    del self._buckets[name]
        else:
            if bucket is None:
                bucket = self._buckets[name] = index.Bucket()
            bucket.put(event.key, event.object)
        self._rev = event.revision
        events = self._events
        events.append(event)
        if len(events) > self._window:
            self._oldest = events.popleft().revision
        self._broadcaster.publish(event)
        if self._waiters:
            waiting.wake(self._waiters, self._rev)

    async def _follow(self) -> None:
        while True:
            source = self._source
            assert source is not None
            self._following = True
            try:
                async for event in source:
                    self._apply(event)
                return  # the backend ended the stream: it is closing
            except interface.StorageError as e:
                self._following = False
                if self._closed:
                    return
                _log.warning("cache lost its backend watch (%s); relisting", e)
                self._broadcaster.fail_all(interface.StorageError(f"watch cache restarted: {e}"))
            while not self._closed:
                try:
                    await self._load()
                    waiting.wake(self._waiters, self._rev)
                    break
                except interface.StorageError as e:
                    _log.warning("cache relist failed (%s); retrying", e)
                    await self._clock.sleep(1.0)


def _revision(event: interface.Event) -> int:
    return event.revision
