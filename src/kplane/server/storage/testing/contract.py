"""The backend-agnostic ``Storage`` contract, as checks that any implementation must pass.

Each check is an ``async`` function taking a ``Factory`` (which opens a fresh, empty store; the
caller closes what it opened) and raising ``AssertionError`` on a violation. Revisions are counted
from the store's ``current_revision()`` when it is opened: 0 for memory and SQLite, etcd's revision
for a store on a shared etcd (each store then has its own key prefix). A test module runs
every check in ``CHECKS`` against every implementation::

    @pytest.mark.parametrize("check", contract.CHECKS, ids=contract.check_id)
    async def test_contract(check: contract.Check, factory: contract.Factory) -> None:
        await check(factory)
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Protocol

from kplane.server.storage import interface

PODS = "/registry/core/pods/"
_WAIT = 5.0  # seconds: a safety net for reads that should complete at once


class Factory(Protocol):
    """Opens a new, empty store. ``watcher_capacity`` bounds each watcher's queue."""

    async def __call__(self, *, watcher_capacity: int = 10_000) -> interface.Storage: ...


Check = Callable[[Factory], Awaitable[None]]


def check_id(check: Check) -> str:
    """A readable pytest id for a check."""
    return getattr(check, "__name__", "check").removeprefix("check_")


def pod(name: str, *, namespace: str = "a", counter: int = 0) -> interface.Object:
    """A small Pod-shaped object with a uid derived from its name."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{namespace}-{name}"},
        "spec": {"counter": counter},
    }


def key(name: str, *, namespace: str = "a") -> str:
    return f"{PODS}{namespace}/{name}"


def rv(obj: interface.Object) -> int:
    return int(obj["metadata"]["resourceVersion"])


def names(result: interface.ListResult) -> list[str]:
    return [o["metadata"]["name"] for o in result.items]


async def take(watch: interface.Watch, n: int) -> list[interface.Event]:
    """The next ``n`` events of ``watch`` (fails if they do not come promptly)."""
    it = aiter(watch)
    out: list[interface.Event] = []
    async with asyncio.timeout(_WAIT):
        while len(out) < n:
            out.append(await anext(it))
    return out


async def drain(watch: interface.Watch) -> list[interface.Event]:
    """Every event until the watch ends (fails if it does not end promptly)."""
    async with asyncio.timeout(_WAIT):
        return [e async for e in watch]


def set_counter(value: int) -> Callable[[interface.Object], interface.Object]:
    """An update function that sets ``spec.counter`` to ``value``."""

    def fn(obj: interface.Object) -> interface.Object:
        obj["spec"]["counter"] = value
        return obj

    return fn


async def eventually(predicate: Callable[[], bool], *, steps: int = 2_000) -> None:
    """Yield to the loop (and briefly to threads) until ``predicate()`` holds; fail if it never does."""
    for _ in range(steps):
        if predicate():
            return
        await asyncio.sleep(0.001)
    raise AssertionError("condition not reached")


# -- basic reads and writes ------------------------------------------------------------------------


async def check_create_then_get(factory: Factory) -> None:
    """create stores a stamped object that get returns; a second create and a missing get fail."""
    s = await factory()
    b = s.current_revision()  # a shared backend (etcd) starts past 0
    assert s.current_revision() == b
    created = await s.create(key("x"), pod("x", counter=1))
    assert rv(created) == b + 1
    got = await s.get(key("x"))
    assert got["spec"] == {"counter": 1}
    assert rv(got) == b + 1
    try:
        await s.create(key("x"), pod("x", counter=2))
        raise AssertionError("create on an existing key must raise KeyExists")
    except interface.KeyExists as e:
        assert e.key == key("x")
    assert (await s.get(key("x")))["spec"] == {"counter": 1}
    try:
        await s.get(key("missing"))
        raise AssertionError("get of a missing key must raise KeyNotFound")
    except interface.KeyNotFound:
        pass
    assert s.current_revision() == b + 1


async def check_list_in_key_order(factory: Factory) -> None:
    """list returns items in key order whatever the write order, at the current revision."""
    s = await factory()
    b = s.current_revision()  # a shared backend (etcd) starts past 0
    for n in ["m", "b", "z", "a", "k"]:
        await s.create(key(n), pod(n))
    result = await s.list(PODS)
    assert names(result) == ["a", "b", "k", "m", "z"]
    assert result.revision == s.current_revision() == b + 5
    assert not result.more and result.remaining == 0 and result.last_key == ""
    assert (await s.list("/registry/core/nothing/")).items == []


async def check_prefix_isolation(factory: Factory) -> None:
    """A prefix matches whole path segments: namespace ``a`` does not see namespace ``ab``."""
    s = await factory()
    b = s.current_revision()  # a shared backend (etcd) starts past 0
    await s.create(key("x", namespace="a"), pod("x", namespace="a"))
    await s.create(key("y", namespace="ab"), pod("y", namespace="ab"))
    await s.create(key("z", namespace="a"), pod("z", namespace="a"))
    await s.create("/registry/core/podsx/a/w", pod("w"))
    assert names(await s.list(f"{PODS}a/")) == ["x", "z"]
    assert names(await s.list(f"{PODS}ab/")) == ["y"]
    assert names(await s.list(PODS)) == ["x", "z", "y"]
    assert names(await s.list("/registry/core/")) == ["x", "z", "y", "w"]
    w = s.watch(f"{PODS}a/", b)
    events = await take(w, 2)
    assert [e.key for e in events] == [key("x"), key("z", namespace="a")]
    await s.create(key("v", namespace="ab"), pod("v", namespace="ab"))
    await s.create(key("u", namespace="a"), pod("u", namespace="a"))
    (event,) = await take(w, 1)
    assert event.key == key("u")
    w.close()


async def check_revision_is_global(factory: Factory) -> None:
    """Every write, on any key, increments the one global revision by exactly one."""
    s = await factory()
    b = s.current_revision()  # a shared backend (etcd) starts past 0
    a = await s.create(key("a"), pod("a"))
    other = await s.create("/registry/apps/deployments/a/b", pod("b"))
    a2 = await s.guaranteed_update(key("a"), set_counter(7))
    gone = await s.delete("/registry/apps/deployments/a/b")
    assert [rv(a), rv(other), rv(a2), rv(gone)] == [b + 1, b + 2, b + 3, b + 4]
    assert s.current_revision() == b + 4
    assert (await s.list(PODS)).revision == b + 4


async def check_resource_version_stamping(factory: Factory) -> None:
    """Stored objects carry their last write's revision; returned objects are not changed later."""
    s = await factory()
    b = s.current_revision()  # a shared backend (etcd) starts past 0
    obj = pod("x")
    obj["metadata"]["resourceVersion"] = str(b + 999)
    first = await s.create(key("x"), obj)
    assert first["metadata"]["resourceVersion"] == str(b + 1)
    second = await s.guaranteed_update(key("x"), set_counter(1))
    assert second["metadata"]["resourceVersion"] == str(b + 2)
    assert (await s.get(key("x")))["metadata"]["resourceVersion"] == str(b + 2)
    last = await s.delete(key("x"))
    assert last["metadata"]["resourceVersion"] == str(b + 3)
    assert first["metadata"]["resourceVersion"] == str(b + 1), "an earlier result must not be restamped"
    assert second["metadata"]["resourceVersion"] == str(b + 2), "a delete must not restamp the shared state"
    assert second["spec"] == {"counter": 1}


# -- lists -------------------------------------------------------------------------------------------


async def check_list_at_historical_revision(factory: Factory) -> None:
    """list at an older revision returns the exact snapshot of that revision."""
    s = await factory()
    b = s.current_revision()  # a shared backend (etcd) starts past 0
    await s.create(key("a"), pod("a", counter=1))  # 1
    await s.create(key("b"), pod("b", counter=1))  # 2
    await s.guaranteed_update(key("a"), set_counter(2))  # 3
    await s.delete(key("b"))  # 4
    await s.create(key("c"), pod("c"))  # 5
    at2 = await s.list(PODS, revision=b + 2)
    assert at2.revision == b + 2
    assert names(at2) == ["a", "b"]
    assert [o["spec"]["counter"] for o in at2.items] == [1, 1]
    assert [rv(o) for o in at2.items] == [b + 1, b + 2]
    at4 = await s.list(PODS, revision=b + 4)
    assert names(at4) == ["a"] and rv(at4.items[0]) == b + 3 and at4.items[0]["spec"]["counter"] == 2
    now = await s.list(PODS)
    assert names(now) == ["a", "c"] and now.revision == b + 5
    assert names(await s.list(PODS, revision=b + 5)) == ["a", "c"]


async def check_list_paging(factory: Factory) -> None:
    """limit/start_after page through one snapshot: more, remaining and last_key are exact."""
    s = await factory()
    for n in ["p1", "p2", "p3", "p4", "p5"]:
        await s.create(key(n), pod(n))
    page1 = await s.list(PODS, limit=2)
    assert names(page1) == ["p1", "p2"]
    assert page1.more and page1.remaining == 3 and page1.last_key == key("p2")
    # Writes between pages must not show up in later pages of the same snapshot.
    await s.delete(key("p4"))
    await s.create(key("p35"), pod("p35"))
    page2 = await s.list(PODS, revision=page1.revision, start_after=page1.last_key, limit=2)
    assert names(page2) == ["p3", "p4"]
    assert page2.revision == page1.revision
    assert page2.more and page2.remaining == 1 and page2.last_key == key("p4")
    page3 = await s.list(PODS, revision=page1.revision, start_after=page2.last_key, limit=2)
    assert names(page3) == ["p5"]
    assert not page3.more and page3.remaining == 0 and page3.last_key == ""
    whole = await s.list(PODS, limit=10)
    assert names(whole) == ["p1", "p2", "p3", "p35", "p5"] and not whole.more
    exact = await s.list(PODS, limit=5)
    assert not exact.more and exact.remaining == 0
    after = await s.list(PODS, start_after=key("p35"))
    assert names(after) == ["p5"]


# -- updates and deletes -----------------------------------------------------------------------------


async def check_concurrent_guaranteed_updates(factory: Factory) -> None:
    """Concurrent read-modify-writes all land: 20 increments raise the counter by exactly 20."""
    s = await factory()
    await s.create(key("c"), pod("c"))
    start = s.current_revision()

    async def increment(obj: interface.Object) -> interface.Object:
        value = obj["spec"]["counter"]
        await asyncio.sleep(0)  # let the other updaters read the same state: force races
        obj["spec"]["counter"] = value + 1
        return obj

    results = await asyncio.gather(*(s.guaranteed_update(key("c"), increment) for _ in range(20)))
    final = await s.get(key("c"))
    assert final["spec"]["counter"] == 20
    assert s.current_revision() == start + 20
    assert sorted(rv(r) for r in results) == list(range(start + 1, start + 21))


async def check_guaranteed_update_edge_cases(factory: Factory) -> None:
    """update of a missing key fails; an error in fn aborts; a no-op update writes nothing."""
    s = await factory()
    b = s.current_revision()  # a shared backend (etcd) starts past 0
    try:
        await s.guaranteed_update(key("none"), set_counter(1))
        raise AssertionError("update of a missing key must raise KeyNotFound")
    except interface.KeyNotFound:
        pass
    await s.create(key("x"), pod("x"))
    seen: list[interface.Object] = []

    def boom(obj: interface.Object) -> interface.Object:
        seen.append(obj)
        obj["spec"]["counter"] = 99  # mutating the private copy must not leak into the store
        raise ValueError("refused")

    try:
        await s.guaranteed_update(key("x"), boom)
        raise AssertionError("an exception from fn must propagate")
    except ValueError:
        pass
    assert (await s.get(key("x")))["spec"]["counter"] == 0
    assert s.current_revision() == b + 1
    assert rv(seen[0]) == b + 1, "fn receives the current object with its resourceVersion"
    same = await s.guaranteed_update(key("x"), lambda o: o)
    assert rv(same) == b + 1 and s.current_revision() == b + 1


async def check_preconditions(factory: Factory) -> None:
    """uid and resourceVersion preconditions are enforced on update and delete."""
    s = await factory()
    b = s.current_revision()  # a shared backend (etcd) starts past 0
    created = await s.create(key("x"), pod("x"))
    uid = created["metadata"]["uid"]
    for bad in (
        interface.Preconditions(uid="other"),
        interface.Preconditions(resource_version="7"),
    ):
        try:
            await s.guaranteed_update(key("x"), set_counter(1), preconditions=bad)
            raise AssertionError("update with a failing precondition must raise")
        except interface.PreconditionFailed:
            pass
        try:
            await s.delete(key("x"), preconditions=bad)
            raise AssertionError("delete with a failing precondition must raise")
        except interface.PreconditionFailed as e:
            assert e.key == key("x")
    assert s.current_revision() == b + 1
    good = interface.Preconditions(uid=uid, resource_version=str(b + 1))
    updated = await s.guaranteed_update(key("x"), set_counter(1), preconditions=good)
    assert rv(updated) == b + 2
    try:
        await s.delete(key("x"), preconditions=good)
        raise AssertionError("a stale resourceVersion precondition must fail")
    except interface.PreconditionFailed as e:
        assert e.what == "resourceVersion" and e.actual == str(b + 2)
    gone = await s.delete(
        key("x"), preconditions=interface.Preconditions(uid=uid, resource_version=str(b + 2))
    )
    assert rv(gone) == b + 3


async def check_delete(factory: Factory) -> None:
    """delete returns the last state stamped with the deletion's revision; the key is then free."""
    s = await factory()
    b = s.current_revision()  # a shared backend (etcd) starts past 0
    await s.create(key("x"), pod("x", counter=5))
    await s.create(key("y"), pod("y"))
    last = await s.delete(key("x"))
    assert last["spec"] == {"counter": 5}
    assert rv(last) == b + 3 == s.current_revision()
    try:
        await s.get(key("x"))
        raise AssertionError("a deleted key must be gone")
    except interface.KeyNotFound:
        pass
    try:
        await s.delete(key("x"))
        raise AssertionError("deleting a missing key must raise KeyNotFound")
    except interface.KeyNotFound:
        pass
    assert names(await s.list(PODS)) == ["y"]
    again = await s.create(key("x"), pod("x", counter=6))
    assert rv(again) == b + 4 and (await s.get(key("x")))["spec"] == {"counter": 6}


# -- watch -------------------------------------------------------------------------------------------


async def check_watch_events(factory: Factory) -> None:
    """watch yields ADDED/MODIFIED/DELETED with prev_object, in revision order, exactly once."""
    s = await factory()
    b = s.current_revision()  # a shared backend (etcd) starts past 0
    live = s.watch(PODS, b)
    await s.create(key("a"), pod("a", counter=1))  # 1
    await s.guaranteed_update(key("a"), set_counter(2))  # 2
    await s.create("/registry/apps/deployments/a/d", pod("d"))  # 3: other prefix
    await s.delete(key("a"))  # 4
    await s.create(key("b"), pod("b"))  # 5
    events = await take(live, 4)
    assert [(e.type, e.key, e.revision) for e in events] == [
        (interface.ADDED, key("a"), b + 1),
        (interface.MODIFIED, key("a"), b + 2),
        (interface.DELETED, key("a"), b + 4),
        (interface.ADDED, key("b"), b + 5),
    ]
    added, modified, deleted, _ = events
    assert added.prev_object is None and rv(added.object) == b + 1
    assert modified.object["spec"]["counter"] == 2 and rv(modified.object) == b + 2
    assert modified.prev_object is not None
    assert modified.prev_object["spec"]["counter"] == 1 and rv(modified.prev_object) == b + 1
    assert deleted.object["spec"]["counter"] == 2 and rv(deleted.object) == b + 4
    assert deleted.prev_object is not None and rv(deleted.prev_object) == b + 2
    # Resume from a past revision: history first, then live events, no gap and no repeat.
    resumed = s.watch(PODS, b + 1)
    await s.create(key("c"), pod("c"))  # 6
    later = await take(resumed, 4)
    assert [(e.type, e.revision) for e in later] == [
        (interface.MODIFIED, b + 2),
        (interface.DELETED, b + 4),
        (interface.ADDED, b + 5),
        (interface.ADDED, b + 6),
    ]
    assert later[0].prev_object is not None and later[0].prev_object["spec"]["counter"] == 1
    (sixth,) = await take(live, 1)
    assert sixth.revision == b + 6
    everything = s.watch("/", b)
    assert [e.revision for e in await take(everything, 6)] == [b + n for n in range(1, 7)]
    for w in (live, resumed, everything):
        w.close()
        w.close()  # idempotent


async def check_watch_from_current_revision(factory: Factory) -> None:
    """A watch from the current revision starts with the next write and nothing older."""
    s = await factory()
    await s.create(key("old"), pod("old"))
    w = s.watch(PODS, s.current_revision())
    await s.create(key("new"), pod("new"))
    (event,) = await take(w, 1)
    assert event.key == key("new") and event.type == interface.ADDED
    w.close()
    assert await drain(w) == []


async def check_watch_expired_after_compact(factory: Factory) -> None:
    """After compact(N), watch and list from before N raise Expired; from N onwards they work."""
    s = await factory()
    b = s.current_revision()  # a shared backend (etcd) starts past 0
    await s.create(key("a"), pod("a"))  # 1
    await s.guaranteed_update(key("a"), set_counter(1))  # 2
    await s.create(key("b"), pod("b"))  # 3
    await s.guaranteed_update(key("a"), set_counter(2))  # 4
    await s.delete(key("b"))  # 5
    await s.compact(b + 3)
    try:
        s.watch(PODS, b + 1)
        raise AssertionError("watch from a compacted revision must raise Expired")
    except interface.Expired as e:
        assert e.requested == b + 1
    try:
        await s.list(PODS, revision=b + 2)
        raise AssertionError("list at a compacted revision must raise Expired")
    except interface.Expired:
        pass
    at3 = await s.list(PODS, revision=b + 3)
    assert names(at3) == ["a", "b"] and at3.items[0]["spec"]["counter"] == 1
    w = s.watch(PODS, b + 3)
    events = await take(w, 2)
    assert [(e.type, e.revision) for e in events] == [(interface.MODIFIED, b + 4), (interface.DELETED, b + 5)]
    assert events[0].prev_object is not None and rv(events[0].prev_object) == b + 2
    w.close()
    assert names(await s.list(PODS)) == ["a"]
    assert (await s.get(key("a")))["spec"]["counter"] == 2


async def check_too_large_revision(factory: Factory) -> None:
    """list and watch at a revision newer than the store raise TooLargeRevision."""
    s = await factory()
    b = s.current_revision()  # a shared backend (etcd) starts past 0
    await s.create(key("a"), pod("a"))
    try:
        await s.list(PODS, revision=b + 5)
        raise AssertionError("list in the future must raise TooLargeRevision")
    except interface.TooLargeRevision as e:
        assert e.requested == b + 5 and e.current == b + 1
    try:
        s.watch(PODS, b + 2)
        raise AssertionError("watch in the future must raise TooLargeRevision")
    except interface.TooLargeRevision as e:
        assert e.requested == b + 2


async def check_slow_watcher_is_terminated(factory: Factory) -> None:
    """A watcher that falls ``watcher_capacity`` events behind is terminated; a fast one is not."""
    s = await factory(watcher_capacity=4)
    b = s.current_revision()  # a shared backend (etcd) starts past 0
    slow = s.watch(PODS, b)
    fast = s.watch(PODS, b)
    fast_it = aiter(fast)
    got: list[int] = []
    for i in range(12):
        await s.create(key(f"p{i:02}"), pod(f"p{i:02}"))
        async with asyncio.timeout(_WAIT):
            got.append((await anext(fast_it)).revision)
    assert got == list(range(b + 1, b + 13)), "the fast watcher sees every event, writes never blocked"
    try:
        await drain(slow)
        raise AssertionError("an overflowing watcher must be terminated with StorageError")
    except interface.StorageError:
        pass
    await s.create(key("last"), pod("last"))
    async with asyncio.timeout(_WAIT):
        assert (await anext(fast_it)).revision == b + 13
    fast.close()


async def check_close(factory: Factory) -> None:
    """close lets pending writes finish, ends open watches, and later calls raise StorageError."""
    s = await factory()
    b = s.current_revision()  # a shared backend (etcd) starts past 0
    w = s.watch(PODS, b)
    pending = [asyncio.ensure_future(s.create(key(f"c{i}"), pod(f"c{i}"))) for i in range(5)]
    await asyncio.sleep(0)
    await s.close()
    results = await asyncio.gather(*pending)
    assert sorted(rv(r) for r in results) == [b + n for n in range(1, 6)]
    assert s.current_revision() == b + 5
    events = await drain(w)
    assert [e.revision for e in events] == [b + n for n in range(1, 6)]
    try:
        await s.create(key("late"), pod("late"))
        raise AssertionError("writes after close must raise StorageError")
    except interface.StorageError:
        pass
    await s.close()  # idempotent


async def _history_writes(s: interface.Storage) -> None:
    """Six writes of key a (one re-creation) and one of key ab, by alice, then bob, then nobody."""
    token = interface.WRITER.set("alice")
    try:
        await s.create(key("a"), pod("a"))  # 1
        await s.guaranteed_update(key("a"), set_counter(1))  # 2
    finally:
        interface.WRITER.reset(token)
    await s.create(key("ab"), pod("ab"))  # 3: another key sharing a's name as a prefix
    token = interface.WRITER.set("bob")
    try:
        await s.guaranteed_update(key("a"), set_counter(2))  # 4
        await s.delete(key("a"))  # 5
    finally:
        interface.WRITER.reset(token)
    await s.create(key("a"), pod("a", counter=7))  # 6: re-created


async def check_history(factory: Factory) -> None:
    """History: every retained write of a key with its type and state; a deletion's last state;
    deletions under a prefix; the state at a past revision; Expired below compaction."""
    s = await factory()
    b = s.current_revision()  # a shared backend (etcd) starts past 0
    history = interface.history_of(s)
    await _history_writes(s)
    revs = await history.revisions(key("a"))
    assert [(r.revision, r.type) for r in revs] == [
        (b + 1, interface.ADDED),
        (b + 2, interface.MODIFIED),
        (b + 4, interface.MODIFIED),
        (b + 5, interface.DELETED),
        (b + 6, interface.ADDED),
    ], revs
    assert [r.object["spec"]["counter"] for r in revs] == [0, 1, 2, 2, 7]
    assert [rv(r.object) for r in revs] == [b + 1, b + 2, b + 4, b + 5, b + 6]
    assert [r.revision for r in await history.revisions(key("a"), limit=2)] == [b + 5, b + 6]
    deleted = await history.revisions(PODS, deletions_only=True)
    assert [(r.key, r.revision) for r in deleted] == [(key("a"), b + 5)]
    assert len(await history.revisions(PODS)) == 6
    assert await history.revisions(key("nothing")) == []
    assert (await history.get_at(key("a"), b + 3))["spec"]["counter"] == 1
    assert rv(await history.get_at(key("a"), b + 3)) == b + 2
    try:
        await history.get_at(key("a"), b + 5)
        raise AssertionError("get_at a revision where the key was deleted must raise KeyNotFound")
    except interface.KeyNotFound:
        pass
    try:
        await history.get_at(key("a"), b + 9)
        raise AssertionError("get_at in the future must raise TooLargeRevision")
    except interface.TooLargeRevision:
        pass
    await s.compact(b + 4)
    try:
        await history.get_at(key("a"), b + 3)
        raise AssertionError("get_at a compacted revision must raise Expired")
    except interface.Expired:
        pass
    assert (await history.get_at(key("a"), b + 4))["spec"]["counter"] == 2
    assert [r.revision for r in await history.revisions(key("a"))][-2:] == [b + 5, b + 6]


async def check_history_writers(factory: Factory) -> None:
    """Each retained write carries the ``WRITER`` in effect when it was made and its commit time
    (a backend that cannot record them implements ``History`` without passing this check)."""
    s = await factory()
    await _history_writes(s)
    revs = await interface.history_of(s).revisions(key("a"))
    assert [(r.revision, r.writer) for r in revs] == [
        (1, "alice"),
        (2, "alice"),
        (4, "bob"),
        (5, "bob"),
        (6, ""),
    ]
    assert all(r.timestamp > 0 for r in revs)


HISTORY_CHECKS: list[Check] = [check_history, check_history_writers]
"""Checks of the optional ``History`` (run against the backends that keep one): ``check_history``
for reading the past, ``check_history_writers`` for the time and writer of each write."""

CHECKS: list[Check] = [
    check_create_then_get,
    check_list_in_key_order,
    check_prefix_isolation,
    check_revision_is_global,
    check_resource_version_stamping,
    check_list_at_historical_revision,
    check_list_paging,
    check_concurrent_guaranteed_updates,
    check_guaranteed_update_edge_cases,
    check_preconditions,
    check_delete,
    check_watch_events,
    check_watch_from_current_revision,
    check_watch_expired_after_compact,
    check_too_large_revision,
    check_slow_watcher_is_terminated,
    check_close,
]
