"""``SQLiteStorage``: the embedded, durable backend.

Writes go to the single writer thread (``writer``), which commits them in groups; a write's future
resolves, and its event is published to this backend's watchers, in one loop callback per
transaction, in revision order. ``current_revision`` is the newest revision whose event has been
published, so a watch registered at it misses nothing and repeats nothing: older events come from
the log (``queries.history``), newer ones from the live stream.

Reads use their own connections (WAL lets them run beside the writer): point reads run inline on
the event loop (an indexed lookup costs a few microseconds, less than a thread hop), snapshots and
history run on one reader thread. Compaction runs in the background every ``compaction_interval``
seconds and keeps at least ``history_window`` revisions and ``history_seconds`` of history. Each
row records its commit time and ``interface.WRITER`` (not with ``record_writes=False``, which only
measures what that costs).

A full disk is etcd's NOSPACE alarm: the first write that fails for lack of space (``NoSpace``)
puts the store in a "full" state (``space.Space``: logged once, its reserve file released), in
which creates and updates are refused at once while reads, deletions and compaction go on; all
history is then compacted, the WAL truncated and free pages returned to the file system
(``reclaim``), again after every deletion. The store leaves the full state, recreating its reserve,
at the first write that finds twice the reserve free on the file system. One process at a time may
open a store (``space.lock``).
"""

from __future__ import annotations

import asyncio
import builtins
import collections
import concurrent.futures
import functools
import inspect
import logging
import sqlite3
from collections.abc import Callable
from typing import TypeVar

import orjson

from kplane._util import clock as clock_
from kplane.server.storage import interface
from kplane.server.storage.cacher import fanout
from kplane.server.storage.sqlite import queries, schema, space, writer

_T = TypeVar("_T")
_COMPACT_CHUNK = 10_000
_WRITER = interface.WRITER
_log = logging.getLogger(__name__)


class SQLiteStorage:
    """``Storage`` in one SQLite file (see the module docstring).

    Opening raises ``StorageError`` if ``path`` is not a kplane store or is damaged. Use it from one
    event loop; ``close`` before the loop ends.
    """

    def __init__(
        self,
        path: str,
        *,
        compaction_interval: float = 60.0,
        history_window: int = 10_000,
        history_seconds: float = 300.0,
        watcher_capacity: int = 10_000,
        reserve_bytes: int = space.RESERVE_BYTES,
        record_writes: bool = True,
        clock: clock_.Clock | None = None,
    ) -> None:
        self._path = path
        self._space = space.Space(path, reserve_bytes)
        self._reclaimer: asyncio.Task[None] | None = None
        self._reclaim_again = False
        self._compaction_interval = compaction_interval
        self._history_window = history_window
        self._history_seconds = history_seconds
        self._watcher_capacity = watcher_capacity
        self._clock: clock_.Clock = clock or clock_.RealClock()
        self._lock = space.lock(path)
        try:
            write_conn = schema.connect(path, create=True)
        except BaseException:
            space.unlock(self._lock)
            raise
        stamp = clock_.epoch_seconds(self._clock) if record_writes else (lambda: 0.0)
        self._writer = writer.Writer(write_conn, self._deliver, stamp, path=path)
        try:
            self._writer.load()
        except sqlite3.DatabaseError as e:
            write_conn.close()
            space.unlock(self._lock)
            if schema.is_full(e):
                raise interface.NoSpace(path, str(e)) from e
            raise interface.StorageError(f"{path}: not a kplane store or corrupted ({e})") from e
        self._rev = self._writer.revision
        self._loop_conn = schema.connect(path, create=False)
        self._pool_conn = schema.connect(path, create=False)
        self._pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="kplane-sqlite-reader")
        self._broadcaster = fanout.Broadcaster()
        self._outbox: builtins.list[writer.WriteOp] = []
        self._compactor: asyncio.Task[None] | None = None
        self._closed = False
        self._writer.start()
        self._space.prepare()

    # -- test hooks ----------------------------------------------------------------------------

    @property
    def _commits(self) -> int:
        """Transactions committed by the writer (test hook: compare with ``_writes``)."""
        return self._writer.commits

    @property
    def _writes(self) -> int:
        """Rows written by the writer (test hook)."""
        return self._writer.writes

    # -- reads ---------------------------------------------------------------------------------

    def current_revision(self) -> int:
        return self._rev

    async def get(self, key: str) -> interface.Object:
        self._check_open()
        found = self._read_inline(queries.latest, self._loop_conn, key)
        if found is None:
            raise interface.KeyNotFound(key)
        return queries.decode(found[1], found[0])

    async def list(
        self, prefix: str, *, revision: int = 0, start_after: str = "", limit: int = 0
    ) -> interface.ListResult:
        self._check_open()
        rev = self._check_revision(revision)
        pairs, remaining = await self._read_in_thread(
            queries.snapshot, self._pool_conn, prefix, rev, start_after, limit
        )
        self._check_not_compacted(rev)
        return interface.ListResult(
            items=[obj for _, obj in pairs],
            revision=rev,
            more=remaining > 0,
            remaining=remaining,
            last_key=pairs[-1][0] if remaining else "",
        )

    async def list_keyed(self, prefix: str) -> tuple[builtins.list[tuple[str, interface.Object]], int]:
        """Every live ``(key, object)`` under ``prefix`` in key order, and the current revision."""
        self._check_open()
        rev = self._rev
        pairs, _ = await self._read_in_thread(queries.snapshot, self._pool_conn, prefix, rev, "", 0)
        return pairs, rev

    # -- history (interface.History) -----------------------------------------------------------

    async def revisions(
        self, where: str, *, deletions_only: bool = False, limit: int = 1000
    ) -> builtins.list[interface.Revision]:
        self._check_open()
        return await self._read_in_thread(
            queries.revisions, self._pool_conn, where, deletions_only, max(1, limit)
        )

    async def get_at(self, key: str, revision: int) -> interface.Object:
        self._check_open()
        rev = self._check_revision(revision)
        found = self._read_inline(queries.at, self._loop_conn, key, rev)
        self._check_not_compacted(rev)
        if found is None:
            raise interface.KeyNotFound(key)
        return found

    # -- writes --------------------------------------------------------------------------------

    async def create(self, key: str, obj: interface.Object) -> interface.Object:
        self._check_open()
        self._check_space()
        await self._write(
            writer.WriteOp(writer.CREATE, key, orjson.dumps(obj), 0, self._future(), obj, None, _WRITER.get())
        )
        return obj

    async def guaranteed_update(
        self,
        key: str,
        fn: interface.UpdateFunc,
        *,
        preconditions: interface.Preconditions | None = None,
        cached: interface.Object | None = None,
    ) -> interface.Object:
        hint = cached if cached is not None and _revision(cached) > 0 else None
        while True:
            self._check_open()
            if hint is not None:
                # The cache's object: no read on the loop thread (a GIL hand-off to the writer
                # thread) and no decode. The writer refuses a write based on a stale one
                # (CONFLICT, then a fresh read), and an error is re-checked against a fresh read.
                current, read_rev, hint = hint, _revision(hint), None
                try:
                    private = orjson.loads(orjson.dumps(current))
                except (TypeError, orjson.JSONDecodeError):
                    continue  # not what this store writes: read it instead
                confirmed = False
            else:
                found = self._read_inline(queries.latest, self._loop_conn, key)
                if found is None:
                    raise interface.KeyNotFound(key)
                read_rev, value = found
                current = queries.decode(value, read_rev)
                private = queries.decode(value, read_rev)
                confirmed = True
            try:
                if preconditions is not None:
                    preconditions.check(key, current)
                result = fn(private)
                new = await result if inspect.isawaitable(result) else result
            except Exception:
                if confirmed or self._latest_revision(key) == read_rev:
                    raise
                continue  # the cached object was stale: again from a fresh read
            if new == current:
                if self._latest_revision(key) == read_rev:
                    return current  # nothing changed: no new revision, as upstream does
                continue
            self._check_open()
            self._check_space()
            op = writer.WriteOp(
                writer.UPDATE, key, orjson.dumps(new), read_rev, self._future(), new, current, _WRITER.get()
            )
            if await self._write(op) != writer.CONFLICT:
                return new

    async def delete(
        self, key: str, *, preconditions: interface.Preconditions | None = None
    ) -> interface.Object:
        while True:
            self._check_open()
            found = self._read_inline(queries.latest, self._loop_conn, key)
            if found is None:
                raise interface.KeyNotFound(key)
            read_rev, value = found
            current = queries.decode(value, read_rev)
            if preconditions is not None:
                preconditions.check(key, current)
            # A deletion's row holds no value (its last state is the previous row's): deleting
            # costs little space, which matters most when the disk is full.
            op = writer.WriteOp(
                writer.DELETE, key, b"", read_rev, self._future(), None, current, _WRITER.get()
            )
            if await self._write(op) != writer.CONFLICT:
                assert op.obj is not None  # set by ``_deliver``: the last state, stamped
                if self._space.full is not None:
                    self._schedule_reclaim()
                return op.obj

    async def compact(self, revision: int) -> None:
        self._check_open()
        target = min(revision, self._rev)
        # Chunks keep each compaction transaction short, so writes queued meanwhile wait little.
        while self._writer.compacted < target:
            step = min(target, self._writer.compacted + _COMPACT_CHUNK)
            fut: asyncio.Future[int] = asyncio.get_running_loop().create_future()
            self._writer.submit(writer.CompactOp(step, fut))
            await fut

    async def reclaim(self, *, convert: bool = False) -> int:
        """Compact all history, truncate the WAL and return the database's free pages to the file
        system; the number of bytes the store's files shrank by. Needs little free space, except
        with ``convert``: a store created without incremental auto-vacuum is then rewritten with it
        (a ``VACUUM``, which needs room for a copy of the live data)."""
        await self.compact(self._rev)
        fut: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._writer.submit(writer.ReclaimOp(fut, convert=convert))
        return await fut

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for task in (self._compactor, self._reclaimer):
            if task is not None:
                task.cancel()
                try:
                    await task
                except asyncio.CancelledError:
                    pass
        self._flush()  # writes queued in this loop pass commit before the writer stops
        await asyncio.to_thread(self._writer.stop)
        self._broadcaster.end_all()
        self._pool.shutdown(wait=True)
        for conn in (self._writer.conn, self._loop_conn, self._pool_conn):
            conn.close()
        space.unlock(self._lock)

    # -- watch ---------------------------------------------------------------------------------

    def listen(self, listener: fanout.Listener, prefix: str = "") -> Callable[[], None]:
        """Call ``listener`` synchronously with every event under ``prefix``, in revision order,
        before the write that produced it returns (the cache's fast path). Returns the function
        that stops it."""
        return self._broadcaster.listen(listener, prefix)

    def watch(self, prefix: str, from_revision: int) -> interface.Watch:
        self._check_open()
        self._ensure_compactor()
        current = self._rev
        if from_revision > current:
            raise interface.TooLargeRevision(from_revision, current)
        self._check_not_compacted(from_revision)
        backlog: fanout.Backlog | None = None
        if from_revision < current:

            async def backlog() -> list[interface.Event]:
                events = await self._read_in_thread(
                    queries.history, self._pool_conn, prefix, from_revision, current
                )
                self._check_not_compacted(from_revision)
                return events

        return self._broadcaster.watch(prefix, capacity=self._watcher_capacity, backlog=backlog)

    # -- internals -----------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise interface.StorageError("storage is closed")

    def _check_revision(self, revision: int) -> int:
        if revision == 0:
            return self._rev
        if revision > self._rev:
            raise interface.TooLargeRevision(revision, self._rev)
        self._check_not_compacted(revision)
        return revision

    def _check_not_compacted(self, revision: int) -> None:
        compacted = self._writer.compacted
        if revision < compacted:
            raise interface.Expired(revision, compacted)

    # -- a full disk ---------------------------------------------------------------------------

    def _check_space(self) -> None:
        """Refuse a create or update at once while the disk is full, unless space came back."""
        if self._space.full is None:  # every write asks: answer without a call when not full
            return
        try:
            self._space.check()
        except interface.NoSpace:
            if self._reclaimer is None:
                self._schedule_reclaim()
            raise

    def _enter_full(self, error: interface.NoSpace) -> None:
        self._space.enter_full(error)
        self._schedule_reclaim()

    def _schedule_reclaim(self) -> None:
        if self._closed:
            return
        if self._reclaimer is not None and not self._reclaimer.done():
            self._reclaim_again = True
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # opened outside a loop (start-up): the first refused write schedules it
        self._reclaimer = loop.create_task(self._reclaim_while_full(), name="kplane-sqlite-reclaim")

    async def _reclaim_while_full(self) -> None:
        while True:
            self._reclaim_again = False
            try:
                freed = await self.reclaim()
                _log.info("storage: returned %d bytes to the disk", freed)
            except interface.StorageError as e:
                _log.info("storage: reclaiming space failed (%s); retried after the next delete", e)
            if not self._reclaim_again or self._closed:
                return

    def _latest_revision(self, key: str) -> int | None:
        """The revision of the live object at ``key`` (None when absent), read now."""
        found = self._read_inline(queries.latest, self._loop_conn, key)
        return found[0] if found is not None else None

    def _read_inline(self, fn: Callable[..., _T], *args: object) -> _T:
        try:
            return fn(*args)
        except sqlite3.Error as e:
            raise interface.StorageError(f"read failed: {e}") from e

    async def _read_in_thread(self, fn: Callable[..., _T], *args: object) -> _T:
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._pool, functools.partial(fn, *args))
        except sqlite3.Error as e:
            raise interface.StorageError(f"read failed: {e}") from e

    def _future(self) -> asyncio.Future[int]:
        return asyncio.get_running_loop().create_future()

    def _write(self, op: writer.WriteOp) -> asyncio.Future[int]:
        """Queue ``op``; await the returned future for its outcome (a plain function, not a
        coroutine: every write passes here). A cancelled caller does not undo the write: it
        still commits and its event is still published.

        Writes made during one pass of the event loop go to the writer thread together (one queue
        put, one wake-up of the thread) instead of one by one."""
        self._ensure_compactor()
        self._outbox.append(op)
        if len(self._outbox) == 1:
            asyncio.get_running_loop().call_soon(self._flush)
        return op.future

    def _flush(self) -> None:
        ops, self._outbox = self._outbox, []
        if ops:
            self._writer.submit(ops)

    def _deliver(self, outcomes: builtins.list[tuple[writer.WriteOp, writer.Outcome]]) -> None:
        """On the loop, after a commit: publish events in revision order, then wake the callers."""
        publish = self._broadcaster.publish
        for op, outcome in outcomes:
            if isinstance(outcome, BaseException):
                if isinstance(outcome, interface.NoSpace):
                    self._enter_full(outcome)
                if not op.future.done():
                    op.future.set_exception(outcome)
                continue
            if outcome != writer.CONFLICT:
                self._rev = outcome
                if op.kind == writer.CREATE:
                    assert op.obj is not None
                    interface.set_resource_version(op.obj, outcome)
                    publish(interface.Event(interface.ADDED, op.key, op.obj, outcome))
                elif op.kind == writer.UPDATE:
                    assert op.obj is not None
                    interface.set_resource_version(op.obj, outcome)
                    publish(interface.Event(interface.MODIFIED, op.key, op.obj, outcome, op.prev))
                else:
                    assert op.prev is not None
                    op.obj = interface.stamped_copy(op.prev, outcome)
                    publish(interface.Event(interface.DELETED, op.key, op.obj, outcome, op.prev))
            if not op.future.done():
                op.future.set_result(outcome)

    def _ensure_compactor(self) -> None:
        if self._compactor is None and self._compaction_interval > 0 and not self._closed:
            self._compactor = asyncio.get_running_loop().create_task(
                self._compact_periodically(), name="kplane-sqlite-compactor"
            )

    async def _compact_periodically(self) -> None:
        samples: collections.deque[tuple[float, int]] = collections.deque()
        while True:
            await self._clock.sleep(self._compaction_interval)
            now = self._clock.monotonic()
            samples.append((now, self._rev))
            cutoff = now - self._history_seconds
            while len(samples) > 1 and samples[1][0] <= cutoff:
                samples.popleft()
            rev_at_cutoff = samples[0][1] if samples[0][0] <= cutoff else 0
            target = min(self._rev - self._history_window, rev_at_cutoff)
            if target > self._writer.compacted:
                try:
                    await self.compact(target)
                except interface.StorageError:
                    pass  # retried at the next tick; the store stays correct with more history


def _revision(obj: interface.Object) -> int:
    """The revision an object is stamped with (0 when it carries none)."""
    meta = obj.get("metadata")
    rv = meta.get("resourceVersion") if isinstance(meta, dict) else None
    return int(rv) if isinstance(rv, str) and rv.isdigit() else 0
