"""Storage contract checks of updates and deletes.

``guaranteed_update`` under concurrency (no lost update), its edge cases (a raising or no-op update
function), a ``cached`` starting object that is current or stale, preconditions (UID,
resourceVersion) on update and delete, and delete's result and errors. Each check opens its own
store through the ``Factory``.
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


async def check_cached_hint(factory: fixtures.Factory) -> None:
    """``cached``: a current one is used as given (fn gets a private copy); a stale one changes
    nothing about the outcome: the update lands on the current state, and an error or a failed
    precondition that only the stale state causes is not reported."""
    s = await factory()
    old = await s.create(fixtures.key("h"), fixtures.pod("h"))
    old = dict(old)  # the state at creation, kept as a (soon stale) hint
    now = await s.guaranteed_update(fixtures.key("h"), fixtures.set_counter(1), cached=old)
    assert now["spec"]["counter"] == 1 and fixtures.rv(now) == fixtures.rv(old) + 1
    seen: list[interface.Object] = []

    def increment_unless_zero(obj: interface.Object) -> interface.Object:
        seen.append(obj)
        if obj["spec"]["counter"] == 0:
            raise ValueError("stale")
        obj["spec"]["counter"] += 1
        return obj

    stale = await s.guaranteed_update(fixtures.key("h"), increment_unless_zero, cached=old)
    assert stale["spec"]["counter"] == 2 and fixtures.rv(stale) == fixtures.rv(now) + 1
    assert seen[-1]["spec"]["counter"] == 2  # the last run saw the current state
    current = await s.get(fixtures.key("h"))
    refused = interface.Preconditions(resource_version=current["metadata"]["resourceVersion"])
    after = await s.guaranteed_update(
        fixtures.key("h"), fixtures.set_counter(3), preconditions=refused, cached=old
    )
    assert after["spec"]["counter"] == 3

    def mutate_then_fail(obj: interface.Object) -> interface.Object:
        obj["spec"]["counter"] = 99
        raise ValueError("refused")

    latest = await s.get(fixtures.key("h"))
    try:
        await s.guaranteed_update(fixtures.key("h"), mutate_then_fail, cached=latest)
        raise AssertionError("an exception from fn on the current state must propagate")
    except ValueError:
        pass
    assert latest["spec"]["counter"] == 3, "fn must get a copy, not the cached object"
    assert (await s.get(fixtures.key("h")))["spec"]["counter"] == 3


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
