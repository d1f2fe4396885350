"""SQLite-only properties: durability across reopen, foreign files, group commit, compaction."""

from __future__ import annotations

import asyncio
import pathlib
import sqlite3

import pytest

from kplane._util import clock
from kplane.server.storage import interface
from kplane.server.storage.sqlite import SQLiteStorage
from kplane.server.storage.testing import fixtures


def _open(path: pathlib.Path, **kwargs: object) -> SQLiteStorage:
    kwargs.setdefault("compaction_interval", 0)
    return SQLiteStorage(str(path), **kwargs)  # type: ignore[arg-type]


async def test_reopen_keeps_data_and_revisions(tmp_path: pathlib.Path) -> None:
    """After a restart the objects, their history and the revision counter are all still there."""
    path = tmp_path / "kplane.db"
    s = _open(path)
    await s.create(fixtures.key("a"), fixtures.pod("a"))  # 1
    await s.guaranteed_update(fixtures.key("a"), fixtures.set_counter(5))  # 2
    await s.create(fixtures.key("b"), fixtures.pod("b"))  # 3
    await s.delete(fixtures.key("b"))  # 4
    await s.close()

    s = _open(path)
    try:
        assert s.current_revision() == 4
        got = await s.get(fixtures.key("a"))
        assert got["spec"] == {"counter": 5} and got["metadata"]["resourceVersion"] == "2"
        assert fixtures.names(await s.list(fixtures.PODS, revision=3)) == ["a", "b"]
        created = await s.create(fixtures.key("c"), fixtures.pod("c"))
        assert created["metadata"]["resourceVersion"] == "5"
        events = await fixtures.take(s.watch(fixtures.PODS, 1), 4)
        assert [(e.type, e.revision) for e in events] == [
            (interface.MODIFIED, 2),
            (interface.ADDED, 3),
            (interface.DELETED, 4),
            (interface.ADDED, 5),
        ]
    finally:
        await s.close()


async def test_revision_survives_compaction_of_newest_row(tmp_path: pathlib.Path) -> None:
    """Compacting away a trailing deletion does not make the revision go back after a restart."""
    path = tmp_path / "kplane.db"
    s = _open(path)
    await s.create(fixtures.key("a"), fixtures.pod("a"))
    await s.delete(fixtures.key("a"))
    await s.compact(2)
    await s.close()
    s = _open(path)
    try:
        assert s.current_revision() == 2
        assert (await s.create(fixtures.key("a"), fixtures.pod("a")))["metadata"]["resourceVersion"] == "3"
        with pytest.raises(interface.Expired):
            await s.list(fixtures.PODS, revision=1)
    finally:
        await s.close()


def test_garbage_file_is_rejected(tmp_path: pathlib.Path) -> None:
    """A file that is not a database at all gives a clear StorageError."""
    path = tmp_path / "garbage.db"
    path.write_bytes(b"this is not sqlite" * 500)
    with pytest.raises(interface.StorageError, match="not a kplane store or corrupted"):
        _open(path)


def test_foreign_database_is_rejected(tmp_path: pathlib.Path) -> None:
    """An SQLite database that is not a kplane store gives a clear StorageError, untouched."""
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE people(name TEXT)")
    conn.commit()
    conn.close()
    with pytest.raises(interface.StorageError, match="not a kplane store"):
        _open(path)
    conn = sqlite3.connect(path)
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    conn.close()
    assert tables == ["people"]


def _overwrite_pages(path: pathlib.Path) -> None:
    data = bytearray(path.read_bytes())
    assert len(data) > 4096 * 3
    data[100:] = b"\xff" * (len(data) - 100)
    path.write_bytes(bytes(data))
    for suffix in ("-wal", "-shm"):
        pathlib.Path(str(path) + suffix).unlink(missing_ok=True)


async def test_damaged_store_is_rejected(tmp_path: pathlib.Path) -> None:
    """A kplane store whose pages were overwritten gives a StorageError, not a crash."""
    path = tmp_path / "kplane.db"
    s = _open(path)
    await asyncio.gather(*(s.create(fixtures.key(f"p{i}"), fixtures.pod(f"p{i}")) for i in range(300)))
    await s.close()
    _overwrite_pages(path)
    with pytest.raises(interface.StorageError):
        _open(path)


async def test_group_commit_batches_concurrent_writes(tmp_path: pathlib.Path) -> None:
    """Concurrent writes share transactions: far fewer commits than writes, all acknowledged."""
    s = _open(tmp_path / "kplane.db")
    try:
        commits, writes = s._commits, s._writes
        results = await asyncio.gather(
            *(s.create(fixtures.key(f"p{i:03}"), fixtures.pod(f"p{i:03}")) for i in range(200))
        )
        assert sorted(fixtures.rv(r) for r in results) == list(range(1, 201))
        assert s._writes - writes == 200
        assert s._commits - commits < 50
        assert len((await s.list(fixtures.PODS)).items) == 200
    finally:
        await s.close()


async def test_conflicting_creates_in_one_batch(tmp_path: pathlib.Path) -> None:
    """Of many concurrent creates of one key exactly one wins; the rest get KeyExists."""
    s = _open(tmp_path / "kplane.db")
    try:
        results = await asyncio.gather(
            *(s.create(fixtures.key("same"), fixtures.pod("same", counter=i)) for i in range(10)),
            return_exceptions=True,
        )
        winners = [r for r in results if isinstance(r, dict)]
        assert len(winners) == 1
        assert all(isinstance(r, interface.KeyExists) for r in results if not isinstance(r, dict))
        assert s.current_revision() == 1
    finally:
        await s.close()


async def test_background_compaction_keeps_window(tmp_path: pathlib.Path) -> None:
    """The compactor keeps ``history_window`` revisions and forgets older history."""
    fake = clock.FakeClock()
    s = _open(
        tmp_path / "kplane.db", compaction_interval=10.0, history_window=5, history_seconds=0.0, clock=fake
    )
    try:
        await s.create(fixtures.key("a"), fixtures.pod("a"))
        for i in range(1, 20):
            await s.guaranteed_update(fixtures.key("a"), fixtures.set_counter(i))
        assert s.current_revision() == 20
        await fixtures.eventually(fake.has_waiters)
        fake.step(10.0)
        await fixtures.eventually(lambda: s._writer.compacted == 15)
        with pytest.raises(interface.Expired):
            s.watch(fixtures.PODS, 14)
        w = s.watch(fixtures.PODS, 15)
        events = await fixtures.take(w, 5)
        assert [e.revision for e in events] == [16, 17, 18, 19, 20]
        assert events[0].prev_object is not None and events[0].prev_object["spec"]["counter"] == 14
        w.close()
        assert (await s.get(fixtures.key("a")))["spec"]["counter"] == 19
    finally:
        await s.close()


async def test_background_compaction_keeps_history_younger_than_its_age(tmp_path: pathlib.Path) -> None:
    """With retention by age (``--history-retention=25m,0``), a revision is compacted only once it is
    older than the age, and history reads stay answered until then."""
    fake = clock.FakeClock()
    s = _open(
        tmp_path / "kplane.db",
        compaction_interval=1000.0,
        history_window=0,
        history_seconds=1500.0,
        clock=fake,
    )
    try:
        await s.create(fixtures.key("a"), fixtures.pod("a"))
        for i in range(1, 20):
            await s.guaranteed_update(fixtures.key("a"), fixtures.set_counter(i))
        for _ in range(2):  # t = 1000, 2000: the writes are younger than 1500 s at the first tick
            await fixtures.eventually(fake.has_waiters)
            fake.step(1000.0)
        await fixtures.eventually(fake.has_waiters)
        assert s._writer.compacted == 0
        assert len(await s.revisions(fixtures.key("a"))) == 20
        assert (await s.get_at(fixtures.key("a"), 3))["spec"]["counter"] == 2
        fake.step(1000.0)  # t = 3000: the writes of t = 0 are now past the age
        await fixtures.eventually(lambda: s._writer.compacted == 20)
        with pytest.raises(interface.Expired):
            await s.get_at(fixtures.key("a"), 3)
        await s.create(fixtures.key("b"), fixtures.pod("b"))  # committed after the compaction's rows went
        assert [r.revision for r in await s.revisions(fixtures.key("a"))] == [20]
    finally:
        await s.close()


async def test_compaction_removes_superseded_rows(tmp_path: pathlib.Path) -> None:
    """compact deletes superseded and deleted rows up to the revision, keeping live objects."""
    path = tmp_path / "kplane.db"
    s = _open(path)
    try:
        await s.create(fixtures.key("a"), fixtures.pod("a"))  # 1
        await s.create(fixtures.key("b"), fixtures.pod("b"))  # 2
        for i in range(1, 6):  # 3..7
            await s.guaranteed_update(fixtures.key("a"), fixtures.set_counter(i))
        await s.delete(fixtures.key("b"))  # 8
        await s.compact(8)
        conn = sqlite3.connect(path)
        revs = [r[0] for r in conn.execute("SELECT rev FROM log ORDER BY rev")]
        conn.close()
        assert revs == [7]
        assert fixtures.names(await s.list(fixtures.PODS)) == ["a"]
    finally:
        await s.close()


def _modes(path: pathlib.Path) -> dict[str, int]:
    return {p.name: p.stat().st_mode & 0o777 for p in path.parent.iterdir() if p.name.startswith(path.name)}


async def test_store_files_are_owner_only(tmp_path: pathlib.Path) -> None:
    """The store and its WAL and shared-memory files hold Secrets in clear: they are created 0600."""
    path = tmp_path / "kplane.db"
    s = _open(path)
    try:
        await s.create(fixtures.key("a"), fixtures.pod("a"))
        modes = _modes(path)
        assert {"kplane.db", "kplane.db-wal", "kplane.db-shm"} <= modes.keys()
        assert set(modes.values()) == {0o600}, modes
    finally:
        await s.close()


async def test_existing_world_readable_store_is_narrowed(tmp_path: pathlib.Path) -> None:
    """A store left 0644 by an older kplane is made 0600, companions included, when opened."""
    path = tmp_path / "kplane.db"
    s = _open(path)
    await s.create(fixtures.key("a"), fixtures.pod("a"))
    await s.close()
    for name in (path, pathlib.Path(f"{path}-wal")):
        if name.exists():
            name.chmod(0o644)
    s = _open(path)
    try:
        assert await s.get(fixtures.key("a"))
        assert set(_modes(path).values()) == {0o600}, _modes(path)
    finally:
        await s.close()


async def test_full_database_refuses_writes_but_reads_and_deletes(tmp_path: pathlib.Path) -> None:
    """When SQLite reports the database full, the write fails with NoSpace and changes nothing;
    reads and deletes go on, and every acknowledged write is there after a reopen."""
    path = tmp_path / "kplane.db"
    s = _open(path, reserve_bytes=0)
    acked: list[str] = []
    try:
        s._writer.conn.execute("PRAGMA max_page_count=64")  # a "disk" of 64 pages
        with pytest.raises(interface.NoSpace):
            for i in range(1000):
                await s.create(fixtures.key(f"p{i}"), {**fixtures.pod(f"p{i}"), "blob": "x" * 2000})
                acked.append(f"p{i}")
        assert acked
        revision = s.current_revision()
        with pytest.raises(interface.NoSpace):  # updates too
            await s.guaranteed_update(fixtures.key(acked[0]), fixtures.set_counter(1))
        assert s.current_revision() == revision
        assert (await s.get(fixtures.key(acked[0])))["metadata"]["name"] == acked[0]
        await s.delete(fixtures.key(acked[-1]))
        acked.pop()
    finally:
        await s.close()
    s = _open(path)
    try:
        assert fixtures.names(await s.list(fixtures.PODS)) == sorted(acked)
    finally:
        await s.close()


async def test_store_is_opened_by_one_owner_at_a_time(tmp_path: pathlib.Path) -> None:
    """A second open of a store in use fails clearly (two writers would corrupt each other's state)."""
    path = tmp_path / "kplane.db"
    s = _open(path)
    try:
        with pytest.raises(interface.StorageError, match="in use by another kplane process"):
            _open(path)
    finally:
        await s.close()
    await _open(path).close()  # free again once closed


async def test_reclaim_returns_space_after_deletes(tmp_path: pathlib.Path) -> None:
    """After deletions, reclaim compacts and shrinks the store's files; what is left is intact."""
    path = tmp_path / "kplane.db"
    s = _open(path, reserve_bytes=0)
    try:
        for i in range(200):
            await s.create(fixtures.key(f"p{i:03}"), {**fixtures.pod(f"p{i:03}"), "blob": "x" * 4000})
        await s.reclaim()
        full = path.stat().st_size
        for i in range(150):
            await s.delete(fixtures.key(f"p{i:03}"))
        freed = await s.reclaim()
        assert freed > 0 and path.stat().st_size < full * 0.5, (freed, full, path.stat().st_size)
        assert fixtures.names(await s.list(fixtures.PODS)) == [f"p{i:03}" for i in range(150, 200)]
    finally:
        await s.close()


async def test_store_without_history_columns_is_migrated(tmp_path: pathlib.Path) -> None:
    """A store written before the log kept time and writer gains both columns when opened: its rows
    read as written at 0 by nobody, new rows carry both."""
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    conn.executescript(
        "PRAGMA journal_mode=WAL;"
        "CREATE TABLE meta(name TEXT PRIMARY KEY, value TEXT NOT NULL);"
        "CREATE TABLE log(rev INTEGER PRIMARY KEY, key TEXT NOT NULL, create_rev INTEGER NOT NULL,"
        " prev_rev INTEGER NOT NULL, deleted INTEGER NOT NULL, value BLOB);"
        "CREATE INDEX log_key_rev ON log(key, rev);"
        "INSERT INTO meta VALUES ('format', 'kplane-log/1'), ('compacted', '0');"
    )
    conn.execute(
        "INSERT INTO log VALUES (1, ?, 1, 0, 0, ?)",
        (fixtures.key("a"), b'{"metadata":{"name":"a"},"spec":{"counter":0}}'),
    )
    conn.commit()
    conn.close()
    s = _open(path)
    try:
        token = interface.WRITER.set("carol")
        try:
            await s.guaranteed_update(fixtures.key("a"), fixtures.set_counter(3))
        finally:
            interface.WRITER.reset(token)
        revs = await s.revisions(fixtures.key("a"))
        assert [(r.revision, r.type, r.writer, r.timestamp > 0) for r in revs] == [
            (1, interface.ADDED, "", False),
            (2, interface.MODIFIED, "carol", True),
        ]
    finally:
        await s.close()
