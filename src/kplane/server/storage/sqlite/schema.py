"""Opening a kplane SQLite store: pragmas, schema creation, and recognising foreign files.

The layout is one append-only ``log`` table whose ``rev`` is the revision, plus a ``meta`` table that
marks the file as a kplane store and remembers the compacted revision (so the revision never goes
backwards across restarts, even when compaction removed the newest row, a deletion). Each row also
records its commit time (``ts``, seconds since the epoch) and its writer (the request's user); a
store from before those columns gains them when opened for writing (rows already there read 0 and
"").

The store holds Secrets in clear, so the file and its ``-wal``/``-shm`` companions are owner-only
(0600): the database file is created so before SQLite opens it (SQLite gives its companions the
database file's mode), and a store created by an older kplane is narrowed when opened.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sqlite3

from kplane.server.storage import interface

FORMAT = "kplane-log/1"

_SCHEMA = (
    "CREATE TABLE meta(name TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE log(rev INTEGER PRIMARY KEY, key TEXT NOT NULL, create_rev INTEGER NOT NULL,"
    " prev_rev INTEGER NOT NULL, deleted INTEGER NOT NULL, value BLOB,"
    " ts REAL NOT NULL DEFAULT 0, writer TEXT NOT NULL DEFAULT '')",
    # "latest row per key" and prefix scans: (key, rev) covers both as an index-only scan.
    "CREATE INDEX log_key_rev ON log(key, rev)",
)
_LOG_COLUMNS = ["rev", "key", "create_rev", "prev_rev", "deleted", "value", "ts", "writer"]
_MIGRATIONS = (  # columns added since the first layout; ADD COLUMN rewrites no row
    "ALTER TABLE log ADD COLUMN ts REAL NOT NULL DEFAULT 0",
    "ALTER TABLE log ADD COLUMN writer TEXT NOT NULL DEFAULT ''",
)
FILE_MODE = 0o600
COMPANIONS = ("-wal", "-shm", "-journal")


def _not_a_store(path: str, why: str) -> interface.StorageError:
    return interface.StorageError(f"{path}: not a kplane store or corrupted ({why})")


def connect(path: str, *, create: bool) -> sqlite3.Connection:
    """Open ``path`` in autocommit mode with kplane's pragmas; with ``create``, set the schema up.

    Raises ``StorageError`` when the file is not a kplane store (another SQLite database, or not a
    database at all) or is damaged.
    """
    if path != ":memory:":
        make_private(path, create=create)
    try:
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30.0)
    except sqlite3.Error as e:
        raise interface.StorageError(f"{path}: cannot open store ({e})") from e
    try:
        conn.execute("PRAGMA busy_timeout=30000")
        if create:
            # Lets free pages go back to the file system in small steps (a full VACUUM needs as
            # much free space as the live data, which a full disk does not have). It only takes
            # effect on a new file, and must precede the switch to WAL.
            conn.execute("PRAGMA auto_vacuum=INCREMENTAL")
        mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if str(mode).lower() != "wal" and path != ":memory:":
            raise _not_a_store(path, f"journal mode {mode!r} instead of wal")
        conn.execute("PRAGMA synchronous=FULL")
        if create:
            _ensure_schema(conn, path)
        else:
            _verify(conn, path)
    except sqlite3.DatabaseError as e:
        conn.close()
        if is_full(e):
            raise interface.NoSpace(path, str(e)) from e
        raise _not_a_store(path, str(e)) from e
    except interface.StorageError:
        conn.close()
        raise
    return conn


def rollback(conn: sqlite3.Connection) -> None:
    """Roll back the open transaction, if SQLite has not already (it may after SQLITE_FULL)."""
    if conn.in_transaction:
        conn.execute("ROLLBACK")


def is_full(e: BaseException) -> bool:
    """True when ``e`` (from SQLite or the OS) means the disk is full."""
    if isinstance(e, OSError):
        return e.errno == errno.ENOSPC
    return getattr(e, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL or "disk is full" in str(e)


def make_private(path: str, *, create: bool) -> None:
    """Make ``path`` (created empty when ``create`` and absent) and its existing SQLite companion
    files readable and writable by their owner only."""
    if create:
        try:
            os.close(os.open(path, os.O_RDWR | os.O_CREAT, FILE_MODE))
        except OSError as e:
            if is_full(e):
                raise interface.NoSpace(path, e.strerror or str(e)) from e
            raise interface.StorageError(f"{path}: cannot create store ({e.strerror or e})") from e
    for name in (path, *(path + suffix for suffix in COMPANIONS)):
        with contextlib.suppress(FileNotFoundError):
            os.chmod(name, FILE_MODE)


def _tables(conn: sqlite3.Connection) -> set[str]:
    return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _ensure_schema(conn: sqlite3.Connection, path: str) -> None:
    conn.execute("BEGIN IMMEDIATE")
    try:
        tables = _tables(conn)
        if not tables:
            for statement in _SCHEMA:
                conn.execute(statement)
            conn.execute("INSERT INTO meta(name, value) VALUES ('format', ?)", (FORMAT,))
            conn.execute("INSERT INTO meta(name, value) VALUES ('compacted', '0')")
        elif "log" in tables and _columns(conn) == _LOG_COLUMNS[: -len(_MIGRATIONS)]:
            for statement in _MIGRATIONS:
                conn.execute(statement)
        conn.execute("COMMIT")
    except BaseException:
        rollback(conn)
        raise
    _verify(conn, path)


def _verify(conn: sqlite3.Connection, path: str) -> None:
    tables = _tables(conn)
    if "meta" not in tables or "log" not in tables:
        raise _not_a_store(path, "no kplane tables")
    row = conn.execute("SELECT value FROM meta WHERE name = 'format'").fetchone()
    if row is None or row[0] != FORMAT:
        raise _not_a_store(path, f"format {row[0] if row else None!r}, expected {FORMAT!r}")
    columns = _columns(conn)
    if columns != _LOG_COLUMNS:
        raise _not_a_store(path, f"log columns {columns}")


def _columns(conn: sqlite3.Connection) -> list[str]:
    return [r[1] for r in conn.execute("PRAGMA table_info(log)")]


def compacted_revision(conn: sqlite3.Connection) -> int:
    """The persisted compacted revision (0 when never compacted)."""
    row = conn.execute("SELECT value FROM meta WHERE name = 'compacted'").fetchone()
    return int(row[0]) if row else 0
