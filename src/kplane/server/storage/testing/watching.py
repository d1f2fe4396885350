"""Storage contract checks of watches and of closing a store.

Events in revision order, exactly once, with ``prev_object``; resuming from a past revision with no
gap and no repeat; Expired below compaction and TooLargeRevision above the store; a watcher that
falls ``watcher_capacity`` behind is terminated while writes and other watchers go on; ``close``
lets pending writes finish and ends open watches. Each check opens its own store.
"""

from __future__ import annotations

import asyncio

from kplane.server.storage import interface
from kplane.server.storage.testing import fixtures


async def check_watch_events(factory: fixtures.Factory) -> None:
    """watch yields ADDED/MODIFIED/DELETED with prev_object, in revision order, exactly once."""
    s = await factory()
    b = s.current_revision()  # a shared backend (etcd) starts past 0
    live = s.watch(fixtures.PODS, b)
    await s.create(fixtures.key("a"), fixtures.pod("a", counter=1))  # 1
    await s.guaranteed_update(fixtures.key("a"), fixtures.set_counter(2))  # 2
    await s.create("/registry/apps/deployments/a/d", fixtures.pod("d"))  # 3: other prefix
    await s.delete(fixtures.key("a"))  # 4
    await s.create(fixtures.key("b"), fixtures.pod("b"))  # 5
    events = await fixtures.take(live, 4)
    assert [(e.type, e.key, e.revision) for e in events] == [
        (interface.ADDED, fixtures.key("a"), b + 1),
        (interface.MODIFIED, fixtures.key("a"), b + 2),
        (interface.DELETED, fixtures.key("a"), b + 4),
        (interface.ADDED, fixtures.key("b"), b + 5),
    ]
    added, modified, deleted, _ = events
    assert added.prev_object is None and fixtures.rv(added.object) == b + 1
    assert modified.object["spec"]["counter"] == 2 and fixtures.rv(modified.object) == b + 2
    assert modified.prev_object is not None
    assert modified.prev_object["spec"]["counter"] == 1 and fixtures.rv(modified.prev_object) == b + 1
    assert deleted.object["spec"]["counter"] == 2 and fixtures.rv(deleted.object) == b + 4
    assert deleted.prev_object is not None and fixtures.rv(deleted.prev_object) == b + 2
    # Resume from a past revision: history first, then live events, no gap and no repeat.
    resumed = s.watch(fixtures.PODS, b + 1)
    await s.create(fixtures.key("c"), fixtures.pod("c"))  # 6
    later = await fixtures.take(resumed, 4)
    assert [(e.type, e.revision) for e in later] == [
        (interface.MODIFIED, b + 2),
        (interface.DELETED, b + 4),
        (interface.ADDED, b + 5),
        (interface.ADDED, b + 6),
    ]
    assert later[0].prev_object is not None and later[0].prev_object["spec"]["counter"] == 1
    (sixth,) = await fixtures.take(live, 1)
    assert sixth.revision == b + 6
    everything = s.watch("/", b)
    assert [e.revision for e in await fixtures.take(everything, 6)] == [b + n for n in range(1, 7)]
    for w in (live, resumed, everything):
        w.close()
        w.close()  # idempotent


async def check_watch_from_current_revision(factory: fixtures.Factory) -> None:
    """A watch from the current revision starts with the next write and nothing older."""
    s = await factory()
    await s.create(fixtures.key("old"), fixtures.pod("old"))
    w = s.watch(fixtures.PODS, s.current_revision())
    await s.create(fixtures.key("new"), fixtures.pod("new"))
    (event,) = await fixtures.take(w, 1)
    assert event.key == fixtures.key("new") and event.type == interface.ADDED
    w.close()
    assert await fixtures.drain(w) == []


async def check_watch_expired_after_compact(factory: fixtures.Factory) -> None:
    """After compact(N), watch and list from before N raise Expired; from N onwards they work."""
    s = await factory()
    b = s.current_revision()  # a shared backend (etcd) starts past 0
    await s.create(fixtures.key("a"), fixtures.pod("a"))  # 1
    await s.guaranteed_update(fixtures.key("a"), fixtures.set_counter(1))  # 2
    await s.create(fixtures.key("b"), fixtures.pod("b"))  # 3
    await s.guaranteed_update(fixtures.key("a"), fixtures.set_counter(2))  # 4
    await s.delete(fixtures.key("b"))  # 5
    await s.compact(b + 3)
    try:
        s.watch(fixtures.PODS, b + 1)
        raise AssertionError("watch from a compacted revision must raise Expired")
    except interface.Expired as e:
        assert e.requested == b + 1
    try:
        await s.list(fixtures.PODS, revision=b + 2)
        raise AssertionError("list at a compacted revision must raise Expired")
    except interface.Expired:
        pass
    at3 = await s.list(fixtures.PODS, revision=b + 3)
    assert fixtures.names(at3) == ["a", "b"] and at3.items[0]["spec"]["counter"] == 1
    w = s.watch(fixtures.PODS, b + 3)
    events = await fixtures.take(w, 2)
    assert [(e.type, e.revision) for e in events] == [(interface.MODIFIED, b + 4), (interface.DELETED, b + 5)]
    assert events[0].prev_object is not None and fixtures.rv(events[0].prev_object) == b + 2
    w.close()
    assert fixtures.names(await s.list(fixtures.PODS)) == ["a"]
    assert (await s.get(fixtures.key("a")))["spec"]["counter"] == 2


async def check_too_large_revision(factory: fixtures.Factory) -> None:
    """list and watch at a revision newer than the store raise TooLargeRevision."""
    s = await factory()
    b = s.current_revision()  # a shared backend (etcd) starts past 0
    await s.create(fixtures.key("a"), fixtures.pod("a"))
    try:
        await s.list(fixtures.PODS, revision=b + 5)
        raise AssertionError("list in the future must raise TooLargeRevision")
    except interface.TooLargeRevision as e:
        assert e.requested == b + 5 and e.current == b + 1
    try:
        s.watch(fixtures.PODS, b + 2)
        raise AssertionError("watch in the future must raise TooLargeRevision")
    except interface.TooLargeRevision as e:
        assert e.requested == b + 2


async def check_slow_watcher_is_terminated(factory: fixtures.Factory) -> None:
    """A watcher that falls ``watcher_capacity`` events behind is terminated; a fast one is not."""
    s = await factory(watcher_capacity=4)
    b = s.current_revision()  # a shared backend (etcd) starts past 0
    slow = s.watch(fixtures.PODS, b)
    fast = s.watch(fixtures.PODS, b)
    fast_it = aiter(fast)
    got: list[int] = []
    for i in range(12):
        await s.create(fixtures.key(f"p{i:02}"), fixtures.pod(f"p{i:02}"))
        async with asyncio.timeout(fixtures.WAIT):
            got.append((await anext(fast_it)).revision)
    assert got == list(range(b + 1, b + 13)), "the fast watcher sees every event, writes never blocked"
    try:
        await fixtures.drain(slow)
        raise AssertionError("an overflowing watcher must be terminated with StorageError")
    except interface.StorageError:
        pass
    await s.create(fixtures.key("last"), fixtures.pod("last"))
    async with asyncio.timeout(fixtures.WAIT):
        assert (await anext(fast_it)).revision == b + 13
    fast.close()


async def check_close(factory: fixtures.Factory) -> None:
    """close lets pending writes finish, ends open watches, and later calls raise StorageError."""
    s = await factory()
    b = s.current_revision()  # a shared backend (etcd) starts past 0
    w = s.watch(fixtures.PODS, b)
    pending = [
        asyncio.ensure_future(s.create(fixtures.key(f"c{i}"), fixtures.pod(f"c{i}"))) for i in range(5)
    ]
    await asyncio.sleep(0)
    await s.close()
    results = await asyncio.gather(*pending)
    assert sorted(fixtures.rv(r) for r in results) == [b + n for n in range(1, 6)]
    assert s.current_revision() == b + 5
    events = await fixtures.drain(w)
    assert [e.revision for e in events] == [b + n for n in range(1, 6)]
    try:
        await s.create(fixtures.key("late"), fixtures.pod("late"))
        raise AssertionError("writes after close must raise StorageError")
    except interface.StorageError:
        pass
    await s.close()  # idempotent
