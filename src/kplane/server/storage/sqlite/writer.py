"""The single writer thread of the SQLite backend: conflict checks and group commit.

Problem: ``synchronous=FULL`` makes every commit an fsync, far too slow to pay per write. Approach:
callers on the event loop put ``WriteOp``s on a queue; one thread takes everything that queued up
while its previous transaction was committing and commits it as one transaction (group commit), so
one fsync acknowledges many writes. Each op's outcome goes back to the event loop in one callback
per transaction, *after* the commit, in revision order.

Conflicts are decided here, against the writer's own map of the latest row of every key, so they
are exact without a read inside the transaction: a create on a live key fails with ``KeyExists``; an
update or delete whose ``expected_rev`` is no longer the key's latest revision comes back as
``CONFLICT`` and the caller re-reads and retries. Trade-off: the map holds one small tuple per key
(deleted keys until compaction removes their tombstone).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import queue
import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from kplane.server.storage import interface
from kplane.server.storage.sqlite import schema

CREATE: Final = 0
UPDATE: Final = 1
DELETE: Final = 2
CONFLICT: Final = -1
"""Outcome of an update/delete whose ``expected_rev`` was overtaken by another write."""

_MAX_BATCH = 2_000
_INCREMENTAL = 2  # PRAGMA auto_vacuum's value for INCREMENTAL


_ROWS_PER_STATEMENT = 128  # 8 parameters a row stays far below SQLite's parameter limit


@functools.lru_cache(maxsize=_ROWS_PER_STATEMENT)
def _insert_sql(n: int) -> str:
    return "INSERT INTO log VALUES " + ",".join(["(?, ?, ?, ?, ?, ?, ?, ?)"] * n)


@dataclass(slots=True, eq=False)
class WriteOp:
    """One write. ``obj``/``prev`` ride along untouched for the event built on the loop;
    ``writer`` is recorded in the row (who made the write)."""

    kind: int
    key: str
    value: bytes
    expected_rev: int
    future: asyncio.Future[int]
    obj: interface.Object | None = None
    prev: interface.Object | None = None
    writer: str = ""


@dataclass(slots=True, eq=False)
class CompactOp:
    """Delete history superseded at ``revision`` (rows newer than the last compaction only)."""

    revision: int
    future: asyncio.Future[int]


@dataclass(slots=True, eq=False)
class ReclaimOp:
    """Give free space back to the file system: checkpoint and truncate the WAL, then move free
    pages out of the database file (stores created with ``auto_vacuum=INCREMENTAL``) in steps of
    ``step_pages``, truncating the WAL after each step so the extra space needed stays small.
    Resolves to the number of bytes the store's files shrank by."""

    future: asyncio.Future[int]
    step_pages: int = 1024
    convert: bool = False  # first rewrite a store without incremental auto-vacuum (VACUUM)


Row = tuple[int, str, int, int, int, bytes, float, str]
"""rev, key, create_rev, prev_rev, deleted, value, ts, writer."""
Outcome = int | BaseException
"""A committed revision, ``CONFLICT``, or the exception to raise in the caller."""
Deliver = Callable[[list[tuple[WriteOp, Outcome]]], None]


@dataclass(slots=True)
class _Latest:
    rev: int
    create_rev: int
    deleted: bool


@dataclass
class Writer:
    """Owns the write connection and the thread. ``deliver`` runs on the ops' event loop."""

    conn: sqlite3.Connection
    deliver: Deliver
    now: Callable[[], float] = lambda: 0.0
    """Wall-clock seconds since the epoch, stamped on each transaction's rows."""
    revision: int = 0
    compacted: int = 0
    commits: int = 0
    writes: int = 0
    path: str = ""
    _queue: queue.SimpleQueue[WriteOp | CompactOp | ReclaimOp | list[WriteOp] | None] = field(
        default_factory=queue.SimpleQueue
    )
    _latest: dict[str, _Latest] = field(default_factory=dict)
    _thread: threading.Thread | None = None

    def load(self) -> None:
        """Read the latest row of every key and the current and compacted revisions."""
        self.compacted = schema.compacted_revision(self.conn)
        row = self.conn.execute("SELECT max(rev) FROM log").fetchone()
        self.revision = max(row[0] or 0, self.compacted)
        cursor = self.conn.execute(
            "SELECT l.key, l.rev, l.create_rev, l.deleted FROM log AS l"
            " JOIN (SELECT max(rev) AS rev FROM log GROUP BY key) AS m ON l.rev = m.rev"
        )
        self._latest = {
            key: _Latest(rev, create_rev, bool(deleted)) for key, rev, create_rev, deleted in cursor
        }

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="kplane-sqlite-writer", daemon=True)
        self._thread.start()

    def submit(self, op: WriteOp | CompactOp | ReclaimOp | list[WriteOp]) -> None:
        """Queue ``op`` (or several writes at once); each future resolves after its transaction
        committed. Thread-safe."""
        self._queue.put(op)

    def stop(self) -> None:
        """Finish every queued op, then stop the thread (blocking; call from a worker thread)."""
        self._queue.put(None)
        if self._thread is not None:
            self._thread.join()
        # Anything submitted after the stop request is refused rather than left hanging.
        refused: list[tuple[WriteOp, Outcome]] = []
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if isinstance(item, WriteOp):
                refused.append((item, interface.StorageError("storage is closed")))
            elif isinstance(item, CompactOp | ReclaimOp):
                self._post_compaction(item, interface.StorageError("storage is closed"))
        self._post(refused)

    # -- the thread ----------------------------------------------------------------------------

    def _run(self) -> None:
        get, get_nowait = self._queue.get, self._queue.get_nowait
        stopping = False
        while not stopping:
            batch: list[WriteOp] = []
            compactions: list[CompactOp | ReclaimOp] = []
            item = get()
            while True:
                if item is None:
                    stopping = True
                elif isinstance(item, CompactOp | ReclaimOp):
                    compactions.append(item)
                elif isinstance(item, list):
                    batch.extend(item)
                else:
                    batch.append(item)
                if len(batch) >= _MAX_BATCH:
                    break
                try:
                    item = get_nowait()
                except queue.Empty:
                    break
            try:
                if batch:
                    self._commit(batch)
                for compaction in compactions:
                    if isinstance(compaction, ReclaimOp):
                        self._reclaim(compaction)
                    else:
                        self._compact(compaction)
            except Exception as e:  # never let the thread die with callers waiting on it
                error = self._failure("storage writer", e)
                self._post([(op, error) for op in batch if not op.future.done()])
                for compaction in compactions:
                    self._post_compaction(compaction, error)

    def _commit(self, batch: list[WriteOp]) -> None:
        latest = self._latest
        overlay: dict[str, _Latest] = {}
        rows: list[Row] = []
        outcomes: list[tuple[WriteOp, Outcome]] = []
        rev = self.revision
        ts = self.now()
        for op in batch:
            key = op.key
            cur = overlay.get(key) or latest.get(key)
            if op.kind == CREATE:
                if cur is not None and not cur.deleted:
                    outcomes.append((op, interface.KeyExists(key)))
                    continue
                rev += 1
                rows.append((rev, key, rev, cur.rev if cur else 0, 0, op.value, ts, op.writer))
                overlay[key] = _Latest(rev, rev, False)
            else:
                if cur is None or cur.deleted or cur.rev != op.expected_rev:
                    outcomes.append((op, CONFLICT))
                    continue
                rev += 1
                deleted = op.kind == DELETE
                rows.append((rev, key, cur.create_rev, cur.rev, int(deleted), op.value, ts, op.writer))
                overlay[key] = _Latest(rev, cur.create_rev, deleted)
            outcomes.append((op, rev))
        if rows:
            try:
                self._insert(rows)
            except sqlite3.Error as e:
                error = self._failure("write", e)
                self._post([(op, error) for op in batch])
                return
            latest.update(overlay)
            self.revision = rev
            self.commits += 1
            self.writes += len(rows)
        self._post(outcomes)

    def _insert(self, rows: list[Row]) -> None:
        """Append ``rows`` in one transaction.

        A batch that fits in one statement is a single multi-row INSERT in autocommit mode: one
        statement is one atomic transaction, and Python's sqlite3 releases and retakes the GIL
        around every statement, so one statement instead of BEGIN + a row each + COMMIT spares the
        event loop a GIL hand-off per row.
        """
        conn = self.conn
        if len(rows) <= _ROWS_PER_STATEMENT:
            conn.execute(_insert_sql(len(rows)), [v for row in rows for v in row])
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            for i in range(0, len(rows), _ROWS_PER_STATEMENT):
                chunk = rows[i : i + _ROWS_PER_STATEMENT]
                conn.execute(_insert_sql(len(chunk)), [v for row in chunk for v in row])
            conn.execute("COMMIT")
        except BaseException:
            schema.rollback(conn)
            raise

    def _compact(self, op: CompactOp) -> None:
        lo, hi = self.compacted, min(op.revision, self.revision)
        if hi <= lo:
            self._post_compaction(op, self.compacted)
            return
        # Readers check ``compacted`` before and after a historical read; raising it before the
        # rows go makes a read that raced with this compaction report Expired instead of a hole.
        self.compacted = hi
        conn = self.conn
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                # A row is superseded at ``hi`` when a later row of its key (which names it as
                # ``prev_rev``) is at or before ``hi``; deletions at or before ``hi`` go as well.
                conn.execute(
                    "DELETE FROM log WHERE rev IN"
                    " (SELECT prev_rev FROM log WHERE rev > ? AND rev <= ? AND prev_rev > 0)",
                    (lo, hi),
                )
                tombstones = conn.execute(
                    "SELECT rev, key FROM log WHERE rev > ? AND rev <= ? AND deleted = 1", (lo, hi)
                ).fetchall()
                conn.execute("DELETE FROM log WHERE rev > ? AND rev <= ? AND deleted = 1", (lo, hi))
                conn.execute("UPDATE meta SET value = ? WHERE name = 'compacted'", (str(hi),))
                conn.execute("COMMIT")
            except BaseException:
                schema.rollback(conn)
                raise
        except sqlite3.Error as e:
            self.compacted = lo
            self._post_compaction(op, self._failure("compaction", e))
            return
        for rev, key in tombstones:
            cur = self._latest.get(key)
            if cur is not None and cur.rev == rev:
                del self._latest[key]
        self.commits += 1
        self._post_compaction(op, hi)

    def _reclaim(self, op: ReclaimOp) -> None:
        conn = self.conn
        before = self._file_bytes()
        try:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            if op.convert and conn.execute("PRAGMA auto_vacuum").fetchone()[0] != _INCREMENTAL:
                conn.execute("PRAGMA auto_vacuum=INCREMENTAL")
                conn.execute("VACUUM")
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            if conn.execute("PRAGMA auto_vacuum").fetchone()[0] == _INCREMENTAL:
                while conn.execute("PRAGMA freelist_count").fetchone()[0] > 0:
                    # Python's execute steps a PRAGMA once, which frees one page; a script runs it
                    # to completion.
                    conn.executescript(f"PRAGMA incremental_vacuum({op.step_pages});")
                    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.Error as e:
            self._post_compaction(op, self._failure("reclaiming space", e))
            return
        self._post_compaction(op, max(0, before - self._file_bytes()))

    def _file_bytes(self) -> int:
        total = 0
        for name in (self.path, self.path + "-wal"):
            with contextlib.suppress(OSError):
                total += os.path.getsize(name)
        return total

    def _failure(self, what: str, e: BaseException) -> interface.StorageError:
        """The storage error for a failed ``what``: ``NoSpace`` when the disk is full."""
        if schema.is_full(e):
            return interface.NoSpace(self.path, str(e))
        return interface.StorageError(f"{what} failed: {e}")

    def _post(self, outcomes: list[tuple[WriteOp, Outcome]]) -> None:
        if not outcomes:
            return
        loop = outcomes[0][0].future.get_loop()
        try:
            loop.call_soon_threadsafe(self.deliver, outcomes)
        except RuntimeError:
            pass  # the loop is closed: nobody is waiting any more

    def _post_compaction(self, op: CompactOp | ReclaimOp, outcome: int | BaseException) -> None:
        def resolve(fut: asyncio.Future[int] = op.future) -> None:
            if fut.done():
                return
            if isinstance(outcome, BaseException):
                fut.set_exception(outcome)
            else:
                fut.set_result(outcome)

        try:
            op.future.get_loop().call_soon_threadsafe(resolve)
        except RuntimeError:
            pass
