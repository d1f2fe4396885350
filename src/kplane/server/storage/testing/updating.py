"""Storage contract checks of updates and deletes.

``guaranteed_update`` under concurrency (no lost update), its edge cases (a raising or no-op update
function), preconditions (UID, resourceVersion) on update and delete, and delete's result and
errors. Each check opens its own store through the ``Factory``.
"""

from __future__ import annotations

import asyncio

from kplane.server.storage import interface
from kplane.server.storage.testing import fixtures


async def check_concurrent_guaranteed_updates(factory: fixtures.Factory) -> None:
    """Concurrent read-modify-writes all land: 20 increments raise the counter by exactly 20."""
    s = await factory()
    await s.create(fixtures.key("c"), fixtures.pod("c"))
    start = s.current_revision()

    async def increment(obj: interface.Object) -> interface.Object:
        value = obj["spec"]["counter"]
        await asyncio.sleep(0)  # let the other updaters read the same state: force races
        obj["spec"]["counter"] = value + 1
        return obj

    results = await asyncio.gather(*(s.guaranteed_update(fixtures.key("c"), increment) for _ in range(20)))
    final = await s.get(fixtures.key("c"))
    assert final["spec"]["counter"] == 20
    assert s.current_revision() == start + 20
    assert sorted(fixtures.rv(r) for r in results) == list(range(start + 1, start + 21))


async def check_guaranteed_update_edge_cases(factory: fixtures.Factory) -> None:
    """update of a missing key fails; an error in fn aborts; a no-op update writes nothing."""
    s = await factory()
    b = s.current_revision()  # a shared backend (etcd) starts past 0
    try:
        await s.guaranteed_update(fixtures.key("none"), fixtures.set_counter(1))
        raise AssertionError("update of a missing key must raise KeyNotFound")
    except interface.KeyNotFound:
        pass
    await s.create(fixtures.key("x"), fixtures.pod("x"))
    seen: list[interface.Object] = []

    def boom(obj: interface.Object) -> interface.Object:
        seen.append(obj)
        obj["spec"]["counter"] = 99  # mutating the private copy must not leak into the store
        raise ValueError("refused")

    try:
        await s.guaranteed_update(fixtures.key("x"), boom)
        raise AssertionError("an exception from fn must propagate")
    except ValueError:
        pass
    assert (await s.get(fixtures.key("x")))["spec"]["counter"] == 0
    assert s.current_revision() == b + 1
    assert fixtures.rv(seen[0]) == b + 1, "fn receives the current object with its resourceVersion"
    same = await s.guaranteed_update(fixtures.key("x"), lambda o: o)
    assert fixtures.rv(same) == b + 1 and s.current_revision() == b + 1


async def check_preconditions(factory: fixtures.Factory) -> None:
    """uid and resourceVersion preconditions are enforced on update and delete."""
    s = await factory()
    b = s.current_revision()  # a shared backend (etcd) starts past 0
    created = await s.create(fixtures.key("x"), fixtures.pod("x"))
    uid = created["metadata"]["uid"]
    for bad in (
        interface.Preconditions(uid="other"),
        interface.Preconditions(resource_version="7"),
    ):
        try:
            await s.guaranteed_update(fixtures.key("x"), fixtures.set_counter(1), preconditions=bad)
            raise AssertionError("update with a failing precondition must raise")
        except interface.PreconditionFailed:
            pass
        try:
            await s.delete(fixtures.key("x"), preconditions=bad)
            raise AssertionError("delete with a failing precondition must raise")
        except interface.PreconditionFailed as e:
            assert e.key == fixtures.key("x")
    assert s.current_revision() == b + 1
    good = interface.Preconditions(uid=uid, resource_version=str(b + 1))
    updated = await s.guaranteed_update(fixtures.key("x"), fixtures.set_counter(1), preconditions=good)
    assert fixtures.rv(updated) == b + 2
    try:
        await s.delete(fixtures.key("x"), preconditions=good)
        raise AssertionError("a stale resourceVersion precondition must fail")
    except interface.PreconditionFailed as e:
        assert e.what == "resourceVersion" and e.actual == str(b + 2)
    gone = await s.delete(
        fixtures.key("x"), preconditions=interface.Preconditions(uid=uid, resource_version=str(b + 2))
    )
    assert fixtures.rv(gone) == b + 3


async def check_delete(factory: fixtures.Factory) -> None:
    """delete returns the last state stamped with the deletion's revision; the key is then free."""
    s = await factory()
    b = s.current_revision()  # a shared backend (etcd) starts past 0
    await s.create(fixtures.key("x"), fixtures.pod("x", counter=5))
    await s.create(fixtures.key("y"), fixtures.pod("y"))
    last = await s.delete(fixtures.key("x"))
    assert last["spec"] == {"counter": 5}
    assert fixtures.rv(last) == b + 3 == s.current_revision()
    try:
        await s.get(fixtures.key("x"))
        raise AssertionError("a deleted key must be gone")
    except interface.KeyNotFound:
        pass
    try:
        await s.delete(fixtures.key("x"))
        raise AssertionError("deleting a missing key must raise KeyNotFound")
    except interface.KeyNotFound:
        pass
    assert fixtures.names(await s.list(fixtures.PODS)) == ["y"]
    again = await s.create(fixtures.key("x"), fixtures.pod("x", counter=6))
    assert fixtures.rv(again) == b + 4 and (await s.get(fixtures.key("x")))["spec"] == {"counter": 6}
