"""An in-process ``Storage`` for tests: every key's versions in dicts, a bounded event window.

It implements the whole contract (historical lists, watch resume, compaction) with the same
observable behaviour as the SQLite backend, minus durability. Each key keeps the versions written
since the last compaction; the event window holds the last ``window`` events, and an event falling
out of it compacts history up to its revision, so ``Expired`` behaves as it does on a real backend.
"""

from __future__ import annotations

import bisect
import builtins
import collections
import inspect
import itertools
from collections.abc import Callable

import orjson

from kplane._util import clock as clock_
from kplane.server.storage import interface
from kplane.server.storage.cacher import fanout

_Version = tuple[int, interface.Object | None, float, str, interface.EventType]
"""(revision, object, commit time, writer, event type), the object is None for a deletion."""


def deep_copy(obj: interface.Object) -> interface.Object:
    """A private deep copy of a JSON-shaped object (a JSON round trip is faster than ``copy``)."""
    copied: interface.Object = orjson.loads(orjson.dumps(obj))
    return copied


class MemoryStorage:
    """``Storage`` held in memory. Safe to use from one event loop (no locks; no thread safety)."""

    def __init__(
        self, *, window: int = 10_000, watcher_capacity: int = 10_000, clock: clock_.Clock | None = None
    ) -> None:
        if window < 1:
            raise ValueError("window must be >= 1")
        self._clock: clock_.Clock = clock or clock_.RealClock()
        self._window = window
        self._watcher_capacity = watcher_capacity
        self._rev = 0
        self._compacted = 0
        self._versions: dict[str, list[_Version]] = {}
        self._keys: list[str] = []  # sorted; every key in _versions
        self._events: collections.deque[interface.Event] = collections.deque()
        self._evicted_since_prune = 0
        self._broadcaster = fanout.Broadcaster()
        self._closed = False

    # -- reads ---------------------------------------------------------------------------------

    def current_revision(self) -> int:
        return self._rev

    async def get(self, key: str) -> interface.Object:
        self._check_open()
        obj = self._current(key)
        if obj is None:
            raise interface.KeyNotFound(key)
        return obj

    async def list(
        self, prefix: str, *, revision: int = 0, start_after: str = "", limit: int = 0
    ) -> interface.ListResult:
        self._check_open()
        rev = self._check_revision(revision)
        keys = self._keys
        i = (
            bisect.bisect_right(keys, start_after)
            if start_after >= prefix
            else bisect.bisect_left(keys, prefix)
        )
        items: list[interface.Object] = []
        last_key = ""
        remaining = 0
        n = len(keys)
        while i < n:
            key = keys[i]
            i += 1
            if not key.startswith(prefix):
                break
            obj = self._at(key, rev)
            if obj is None:
                continue
            if limit and len(items) >= limit:
                remaining += 1
                continue
            items.append(obj)
            last_key = key
        more = remaining > 0
        return interface.ListResult(
            items=items,
            revision=rev,
            more=more,
            remaining=remaining,
            last_key=last_key if more else "",
        )

    async def list_keyed(self, prefix: str) -> tuple[builtins.list[tuple[str, interface.Object]], int]:
        """Every live ``(key, object)`` under ``prefix`` in key order, and the current revision."""
        self._check_open()
        keys = self._keys
        out: list[tuple[str, interface.Object]] = []
        for i in range(bisect.bisect_left(keys, prefix), len(keys)):
            key = keys[i]
            if not key.startswith(prefix):
                break
            obj = self._versions[key][-1][1]
            if obj is not None:
                out.append((key, obj))
        return out, self._rev

    # -- history (interface.History) -----------------------------------------------------------

    async def revisions(
        self, where: str, *, deletions_only: bool = False, limit: int = 1000
    ) -> builtins.list[interface.Revision]:
        self._check_open()
        if where.endswith("/"):
            keys = self._keys
            lo = bisect.bisect_left(keys, where)
            chosen = list(itertools.takewhile(lambda k: k.startswith(where), keys[lo:]))
        else:
            chosen = [where] if where in self._versions else []
        out: list[interface.Revision] = []
        for key in chosen:
            previous: interface.Object | None = None
            for rev, obj, ts, writer, kind in self._versions[key]:
                state = obj if obj is not None else previous
                previous = obj
                if state is None or (deletions_only and kind != interface.DELETED):
                    continue
                stamped = interface.stamped_copy(state, rev) if obj is None else state
                out.append(interface.Revision(rev, key, kind, stamped, ts, writer))
        out.sort(key=lambda r: r.revision)
        return out[-max(1, limit) :]

    async def get_at(self, key: str, revision: int) -> interface.Object:
        self._check_open()
        rev = self._check_revision(revision)
        obj = self._at(key, rev) if key in self._versions else None
        if obj is None:
            raise interface.KeyNotFound(key)
        return obj

    # -- writes --------------------------------------------------------------------------------

    async def create(self, key: str, obj: interface.Object) -> interface.Object:
        self._check_open()
        if self._current(key) is not None:
            raise interface.KeyExists(key)
        rev = self._rev + 1
        interface.set_resource_version(obj, rev)
        self._commit(key, rev, obj, interface.Event(interface.ADDED, key, obj, rev))
        return obj

    async def guaranteed_update(
        self,
        key: str,
        fn: interface.UpdateFunc,
        *,
        preconditions: interface.Preconditions | None = None,
        cached: interface.Object | None = None,
    ) -> interface.Object:
        while True:  # ``cached`` is not needed: the current object is at hand
            self._check_open()
            versions = self._versions.get(key)
            current = versions[-1][1] if versions else None
            if versions is None or current is None:
                raise interface.KeyNotFound(key)
            read_rev = versions[-1][0]
            copy = deep_copy(current)
            if preconditions is not None:
                preconditions.check(key, copy)
            result = fn(copy)
            new = await result if inspect.isawaitable(result) else result
            self._check_open()
            versions = self._versions.get(key)
            if not versions or versions[-1][0] != read_rev:
                continue  # another write raced in while ``fn`` ran: start again from a fresh read
            if new == current:
                return current  # nothing changed: no new revision, as upstream does
            rev = self._rev + 1
            interface.set_resource_version(new, rev)
            self._commit(key, rev, new, interface.Event(interface.MODIFIED, key, new, rev, current))
            return new

    async def delete(
        self, key: str, *, preconditions: interface.Preconditions | None = None
    ) -> interface.Object:
        self._check_open()
        current = self._current(key)
        if current is None:
            raise interface.KeyNotFound(key)
        if preconditions is not None:
            preconditions.check(key, current)
        rev = self._rev + 1
        last = interface.stamped_copy(current, rev)
        self._commit(key, rev, None, interface.Event(interface.DELETED, key, last, rev, current))
        return last

    async def compact(self, revision: int) -> None:
        self._check_open()
        self._compact_to(min(revision, self._rev))

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._broadcaster.end_all()

    # -- watch ---------------------------------------------------------------------------------

    def listen(self, listener: fanout.Listener, prefix: str = "") -> Callable[[], None]:
        """Call ``listener`` synchronously with every event under ``prefix``, in revision order,
        before the write that produced it returns (the cache's fast path). Returns the function
        that stops it."""
        return self._broadcaster.listen(listener, prefix)

    def watch(self, prefix: str, from_revision: int) -> interface.Watch:
        self._check_open()
        if from_revision > self._rev:
            raise interface.TooLargeRevision(from_revision, self._rev)
        if from_revision < self._compacted:
            raise interface.Expired(from_revision, self._compacted)
        events = self._events
        # The window holds every event after ``_compacted``, one per revision, oldest first.
        start = len(events) - (self._rev - from_revision)
        initial = [e for e in itertools.islice(events, start, None) if e.key.startswith(prefix)]
        return self._broadcaster.watch(prefix, capacity=self._watcher_capacity, initial=initial)

    # -- internals -----------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise interface.StorageError("storage is closed")

    def _check_revision(self, revision: int) -> int:
        if revision == 0:
            return self._rev
        if revision > self._rev:
            raise interface.TooLargeRevision(revision, self._rev)
        if revision < self._compacted:
            raise interface.Expired(revision, self._compacted)
        return revision

    def _current(self, key: str) -> interface.Object | None:
        versions = self._versions.get(key)
        return versions[-1][1] if versions else None

    def _at(self, key: str, revision: int) -> interface.Object | None:
        versions = self._versions[key]
        if versions[-1][0] <= revision:
            return versions[-1][1]
        i = bisect.bisect_right(versions, revision, key=lambda v: v[0])
        return versions[i - 1][1] if i else None

    def _commit(self, key: str, rev: int, obj: interface.Object | None, event: interface.Event) -> None:
        versions = self._versions.get(key)
        if versions is None:
            versions = self._versions[key] = []
            bisect.insort(self._keys, key)
        versions.append((rev, obj, self._clock.now().timestamp(), interface.WRITER.get(), event.type))
        self._rev = rev
        self._events.append(event)
        if len(self._events) > self._window:
            evicted = self._events.popleft()
            self._compacted = evicted.revision
            self._prune_key(evicted.key)
            self._evicted_since_prune += 1
            if self._evicted_since_prune >= self._window:
                self._compact_to(self._compacted)
        self._broadcaster.publish(event)

    def _compact_to(self, revision: int) -> None:
        self._evicted_since_prune = 0
        if revision > self._compacted:
            self._compacted = revision
            events = self._events
            while events and events[0].revision <= revision:
                events.popleft()
        for key in list(self._versions):
            self._prune_key(key)

    def _prune_key(self, key: str) -> None:
        """Drop versions of ``key`` superseded at the compacted revision (and a compacted deletion)."""
        versions = self._versions.get(key)
        if versions is None:
            return
        i = bisect.bisect_right(versions, self._compacted, key=lambda v: v[0])
        if i == 0:
            return
        # versions[i-1] is the state at the compacted revision: keep it unless it is a deletion.
        keep_from = i - 1 if versions[i - 1][1] is not None else i
        if keep_from:
            del versions[:keep_from]
        if not versions:
            del self._versions[key]
            j = bisect.bisect_left(self._keys, key)
            del self._keys[j]
