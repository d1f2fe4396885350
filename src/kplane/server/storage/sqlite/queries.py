"""Read queries on the log: latest row of a key, a prefix snapshot at a revision, history for watch,
and the retained revisions of a key (object history).

Every function takes a connection and returns decoded objects stamped with the revision of the row
they came from (the ``resourceVersion`` inside a stored value is never trusted). Snapshots filter on
``rev <= revision``, so they are consistent without a read transaction: compaction only removes rows
that no snapshot at or after the compacted revision can see.
"""

from __future__ import annotations

import sqlite3

import orjson

from kplane.server.storage import interface


def prefix_end(prefix: str) -> str:
    """The smallest string greater than every string that starts with ``prefix`` ("" = no bound)."""
    if not prefix:
        return ""
    return prefix[:-1] + chr(ord(prefix[-1]) + 1)


def decode(value: bytes, revision: int) -> interface.Object:
    """A fresh object from stored bytes, stamped with ``revision``."""
    obj: interface.Object = orjson.loads(value)
    return interface.set_resource_version(obj, revision)


def latest(conn: sqlite3.Connection, key: str) -> tuple[int, bytes] | None:
    """``(revision, value)`` of the live object at ``key``, or None when absent or deleted."""
    row = conn.execute(
        "SELECT rev, deleted, value FROM log WHERE key = ? ORDER BY rev DESC LIMIT 1", (key,)
    ).fetchone()
    if row is None or row[1]:
        return None
    return row[0], row[2]


def _range(prefix: str, start_after: str) -> tuple[str, list[object]]:
    clauses = ["key >= ?"]
    params: list[object] = [prefix]
    end = prefix_end(prefix)
    if end:
        clauses.append("key < ?")
        params.append(end)
    if start_after:
        clauses.append("key > ?")
        params.append(start_after)
    return " AND ".join(clauses), params


def snapshot(
    conn: sqlite3.Connection, prefix: str, revision: int, start_after: str, limit: int
) -> tuple[list[tuple[str, interface.Object]], int]:
    """Live ``(key, object)`` pairs under ``prefix`` as of ``revision``, in key order, keys after
    ``start_after``, at most ``limit`` (0 = all). Returns ``(pairs, remaining)``; ``remaining`` counts
    keys past the limit."""
    where, params = _range(prefix, start_after)
    latest_rows = f"SELECT max(rev) AS rev FROM log WHERE {where} AND rev <= ? GROUP BY key"
    sql = (
        f"SELECT l.key, l.rev, l.value FROM log AS l JOIN ({latest_rows}) AS m ON l.rev = m.rev"
        " WHERE l.deleted = 0 ORDER BY l.key"
    )
    args = [*params, revision]
    if limit:
        sql += " LIMIT ?"
        args.append(limit + 1)
    rows = conn.execute(sql, args).fetchall()
    remaining = 0
    if limit and len(rows) > limit:
        rows = rows[:limit]
        where, params = _range(prefix, rows[-1][0])
        latest_rows = f"SELECT max(rev) AS rev FROM log WHERE {where} AND rev <= ? GROUP BY key"
        remaining = conn.execute(
            f"SELECT count(*) FROM log AS l JOIN ({latest_rows}) AS m ON l.rev = m.rev WHERE l.deleted = 0",
            [*params, revision],
        ).fetchone()[0]
    return [(key, decode(value, rev)) for key, rev, value in rows], remaining


def history(
    conn: sqlite3.Connection, prefix: str, after: int, upto: int, *, batch: int = 1_000
) -> list[interface.Event]:
    """Events under ``prefix`` for revisions in ``(after, upto]``, in revision order.

    A row is ADDED when it created its key, DELETED when it is a deletion, MODIFIED otherwise;
    ``prev_object`` comes from the row named by ``prev_rev``. A deletion's row holds no value (stores
    written by older versions hold the last state there): its last state is the previous row's.
    """
    where, params = _range(prefix, "")
    events: list[interface.Event] = []
    cursor_rev = after
    while cursor_rev < upto:
        rows = conn.execute(
            "SELECT rev, key, create_rev, prev_rev, deleted, value FROM log"
            f" WHERE rev > ? AND rev <= ? AND {where} ORDER BY rev LIMIT ?",
            [cursor_rev, upto, *params, batch],
        ).fetchall()
        if not rows:
            break
        # previous states needed: an update's, and a value-less deletion's (its last state)
        wanted = [r[3] for r in rows if r[3] and ((r[4] and not r[5]) or (not r[4] and r[2] != r[0]))]
        prev_values = _values(conn, wanted)
        for rev, key, create_rev, prev_rev, deleted, value in rows:
            if deleted:
                state = value or prev_values[prev_rev]
                last = decode(state, rev)
                events.append(interface.Event(interface.DELETED, key, last, rev, decode(state, prev_rev)))
            elif create_rev == rev:
                events.append(interface.Event(interface.ADDED, key, decode(value, rev), rev))
            else:
                prev_value = prev_values.get(prev_rev)
                prev = decode(prev_value, prev_rev) if prev_value is not None else None
                events.append(interface.Event(interface.MODIFIED, key, decode(value, rev), rev, prev))
        cursor_rev = rows[-1][0]
        if len(rows) < batch:
            break
    return events


def _values(conn: sqlite3.Connection, revs: list[int]) -> dict[int, bytes]:
    """The stored values of the rows ``revs`` that still exist."""
    values: dict[int, bytes] = {}
    for start in range(0, len(revs), 500):
        chunk = revs[start : start + 500]
        marks = ",".join("?" * len(chunk))
        values.update(conn.execute(f"SELECT rev, value FROM log WHERE rev IN ({marks})", chunk))
    return values


def at(conn: sqlite3.Connection, key: str, revision: int) -> interface.Object | None:
    """The object at ``key`` as of ``revision``, or None when it was absent or deleted then."""
    row = conn.execute(
        "SELECT rev, deleted, value FROM log WHERE key = ? AND rev <= ? ORDER BY rev DESC LIMIT 1",
        (key, revision),
    ).fetchone()
    if row is None or row[1]:
        return None
    return decode(row[2], row[0])


def revisions(
    conn: sqlite3.Connection, where: str, deletions_only: bool, limit: int
) -> list[interface.Revision]:
    """The newest ``limit`` rows of the key ``where`` (of the keys under it when it ends with
    ``/``), deletions only with ``deletions_only``, in revision order (``History.revisions``)."""
    if where.endswith("/"):
        cond, params = _range(where, "")
    else:
        cond, params = "key = ?", [where]
    if deletions_only:
        cond += " AND deleted = 1"
    rows = conn.execute(
        "SELECT rev, key, create_rev, prev_rev, deleted, value, ts, writer FROM log"
        f" WHERE {cond} ORDER BY rev DESC LIMIT ?",
        [*params, limit],
    ).fetchall()
    rows.reverse()
    prev_values = _values(conn, [r[3] for r in rows if r[4] and not r[5]])
    out: list[interface.Revision] = []
    for rev, key, create_rev, prev_rev, deleted, value, ts, writer in rows:
        kind: interface.EventType
        if deleted:
            value = value or prev_values.get(prev_rev)
            kind = interface.DELETED
        else:
            kind = interface.ADDED if create_rev == rev else interface.MODIFIED
        if value:  # a deletion whose last state was compacted has nothing to show
            out.append(interface.Revision(rev, key, kind, decode(value, rev), ts, writer))
    return out
