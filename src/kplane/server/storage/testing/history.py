"""Storage contract checks of the optional ``History`` (revisions of a key, the state at a past
revision, and the writer and time of each write).

Run only against backends that keep history; ``check_history_writers`` also needs a backend that
records the writer and commit time.
"""

from __future__ import annotations

from kplane.server.storage import interface
from kplane.server.storage.testing import fixtures


async def _history_writes(s: interface.Storage) -> None:
    """Six writes of key a (one re-creation) and one of key ab, by alice, then bob, then nobody."""
    token = interface.WRITER.set("alice")
    try:
        await s.create(fixtures.key("a"), fixtures.pod("a"))  # 1
        await s.guaranteed_update(fixtures.key("a"), fixtures.set_counter(1))  # 2
    finally:
        interface.WRITER.reset(token)
    await s.create(fixtures.key("ab"), fixtures.pod("ab"))  # 3: another key sharing a's name as a prefix
    token = interface.WRITER.set("bob")
    try:
        await s.guaranteed_update(fixtures.key("a"), fixtures.set_counter(2))  # 4
        await s.delete(fixtures.key("a"))  # 5
    finally:
        interface.WRITER.reset(token)
    await s.create(fixtures.key("a"), fixtures.pod("a", counter=7))  # 6: re-created


async def check_history(factory: fixtures.Factory) -> None:
    """History: every retained write of a key with its type and state; a deletion's last state;
    deletions under a prefix; the state at a past revision; Expired below compaction."""
    s = await factory()
    b = s.current_revision()  # a shared backend (etcd) starts past 0
    history = interface.history_of(s)
    await _history_writes(s)
    revs = await history.revisions(fixtures.key("a"))
    assert [(r.revision, r.type) for r in revs] == [
        (b + 1, interface.ADDED),
        (b + 2, interface.MODIFIED),
        (b + 4, interface.MODIFIED),
        (b + 5, interface.DELETED),
        (b + 6, interface.ADDED),
    ], revs
    assert [r.object["spec"]["counter"] for r in revs] == [0, 1, 2, 2, 7]
    assert [fixtures.rv(r.object) for r in revs] == [b + 1, b + 2, b + 4, b + 5, b + 6]
    assert [r.revision for r in await history.revisions(fixtures.key("a"), limit=2)] == [b + 5, b + 6]
    deleted = await history.revisions(fixtures.PODS, deletions_only=True)
    assert [(r.key, r.revision) for r in deleted] == [(fixtures.key("a"), b + 5)]
    assert len(await history.revisions(fixtures.PODS)) == 6
    assert await history.revisions(fixtures.key("nothing")) == []
    assert (await history.get_at(fixtures.key("a"), b + 3))["spec"]["counter"] == 1
    assert fixtures.rv(await history.get_at(fixtures.key("a"), b + 3)) == b + 2
    try:
        await history.get_at(fixtures.key("a"), b + 5)
        raise AssertionError("get_at a revision where the key was deleted must raise KeyNotFound")
    except interface.KeyNotFound:
        pass
    try:
        await history.get_at(fixtures.key("a"), b + 9)
        raise AssertionError("get_at in the future must raise TooLargeRevision")
    except interface.TooLargeRevision:
        pass
    await s.compact(b + 4)
    try:
        await history.get_at(fixtures.key("a"), b + 3)
        raise AssertionError("get_at a compacted revision must raise Expired")
    except interface.Expired:
        pass
    assert (await history.get_at(fixtures.key("a"), b + 4))["spec"]["counter"] == 2
    assert [r.revision for r in await history.revisions(fixtures.key("a"))][-2:] == [b + 5, b + 6]


async def check_history_writers(factory: fixtures.Factory) -> None:
    """Each retained write carries the ``WRITER`` in effect when it was made and its commit time
    (a backend that cannot record them implements ``History`` without passing this check)."""
    s = await factory()
    await _history_writes(s)
    revs = await interface.history_of(s).revisions(fixtures.key("a"))
    assert [(r.revision, r.writer) for r in revs] == [
        (1, "alice"),
        (2, "alice"),
        (4, "bob"),
        (5, "bob"),
        (6, ""),
    ]
    assert all(r.timestamp > 0 for r in revs)
