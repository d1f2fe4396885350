"""Storage contract checks of single-key writes and reads, revisions and lists.

create/get, key order, prefix isolation by path segment, the one global revision, resourceVersion
stamping (results are never restamped later), lists at a past revision and paging through one
snapshot. Each check opens its own store through the ``Factory`` and counts revisions from the
store's revision when opened.
"""

from __future__ import annotations

from kplane.server.storage import interface
from kplane.server.storage.testing import fixtures

# -- single keys and revisions ----------------------------------------------------------------------


async def check_create_then_get(factory: fixtures.Factory) -> None:
    """create stores a stamped object that get returns; a second create and a missing get fail."""
    s = await factory()
    b = s.current_revision()  # a shared backend (etcd) starts past 0
    assert s.current_revision() == b
    created = await s.create(fixtures.key("x"), fixtures.pod("x", counter=1))
    assert fixtures.rv(created) == b + 1
    got = await s.get(fixtures.key("x"))
    assert got["spec"] == {"counter": 1}
    assert fixtures.rv(got) == b + 1
    try:
        await s.create(fixtures.key("x"), fixtures.pod("x", counter=2))
        raise AssertionError("create on an existing key must raise KeyExists")
    except interface.KeyExists as e:
        assert e.key == fixtures.key("x")
    assert (await s.get(fixtures.key("x")))["spec"] == {"counter": 1}
    try:
        await s.get(fixtures.key("missing"))
        raise AssertionError("get of a missing key must raise KeyNotFound")
    except interface.KeyNotFound:
        pass
    assert s.current_revision() == b + 1


async def check_list_in_key_order(factory: fixtures.Factory) -> None:
    """list returns items in key order whatever the write order, at the current revision."""
    s = await factory()
    b = s.current_revision()  # a shared backend (etcd) starts past 0
    for n in ["m", "b", "z", "a", "k"]:
        await s.create(fixtures.key(n), fixtures.pod(n))
    result = await s.list(fixtures.PODS)
    assert fixtures.names(result) == ["a", "b", "k", "m", "z"]
    assert result.revision == s.current_revision() == b + 5
    assert not result.more and result.remaining == 0 and result.last_key == ""
    assert (await s.list("/registry/core/nothing/")).items == []


async def check_prefix_isolation(factory: fixtures.Factory) -> None:
    """A prefix matches whole path segments: namespace ``a`` does not see namespace ``ab``."""
    s = await factory()
    b = s.current_revision()  # a shared backend (etcd) starts past 0
    await s.create(fixtures.key("x", namespace="a"), fixtures.pod("x", namespace="a"))
    await s.create(fixtures.key("y", namespace="ab"), fixtures.pod("y", namespace="ab"))
    await s.create(fixtures.key("z", namespace="a"), fixtures.pod("z", namespace="a"))
    await s.create("/registry/core/podsx/a/w", fixtures.pod("w"))
    assert fixtures.names(await s.list(f"{fixtures.PODS}a/")) == ["x", "z"]
    assert fixtures.names(await s.list(f"{fixtures.PODS}ab/")) == ["y"]
    assert fixtures.names(await s.list(fixtures.PODS)) == ["x", "z", "y"]
    assert fixtures.names(await s.list("/registry/core/")) == ["x", "z", "y", "w"]
    w = s.watch(f"{fixtures.PODS}a/", b)
    events = await fixtures.take(w, 2)
    assert [e.key for e in events] == [fixtures.key("x"), fixtures.key("z", namespace="a")]
    await s.create(fixtures.key("v", namespace="ab"), fixtures.pod("v", namespace="ab"))
    await s.create(fixtures.key("u", namespace="a"), fixtures.pod("u", namespace="a"))
    (event,) = await fixtures.take(w, 1)
    assert event.key == fixtures.key("u")
    w.close()


async def check_revision_is_global(factory: fixtures.Factory) -> None:
    """Every write, on any key, increments the one global revision by exactly one."""
    s = await factory()
    b = s.current_revision()  # a shared backend (etcd) starts past 0
    a = await s.create(fixtures.key("a"), fixtures.pod("a"))
    other = await s.create("/registry/apps/deployments/a/b", fixtures.pod("b"))
    a2 = await s.guaranteed_update(fixtures.key("a"), fixtures.set_counter(7))
    gone = await s.delete("/registry/apps/deployments/a/b")
    assert [fixtures.rv(a), fixtures.rv(other), fixtures.rv(a2), fixtures.rv(gone)] == [
        b + 1,
        b + 2,
        b + 3,
        b + 4,
    ]
    assert s.current_revision() == b + 4
    assert (await s.list(fixtures.PODS)).revision == b + 4


async def check_resource_version_stamping(factory: fixtures.Factory) -> None:
    """Stored objects carry their last write's revision; returned objects are not changed later."""
    s = await factory()
    b = s.current_revision()  # a shared backend (etcd) starts past 0
    obj = fixtures.pod("x")
    obj["metadata"]["resourceVersion"] = str(b + 999)
    first = await s.create(fixtures.key("x"), obj)
    assert first["metadata"]["resourceVersion"] == str(b + 1)
    second = await s.guaranteed_update(fixtures.key("x"), fixtures.set_counter(1))
    assert second["metadata"]["resourceVersion"] == str(b + 2)
    assert (await s.get(fixtures.key("x")))["metadata"]["resourceVersion"] == str(b + 2)
    last = await s.delete(fixtures.key("x"))
    assert last["metadata"]["resourceVersion"] == str(b + 3)
    assert first["metadata"]["resourceVersion"] == str(b + 1), "an earlier result must not be restamped"
    assert second["metadata"]["resourceVersion"] == str(b + 2), "a delete must not restamp the shared state"
    assert second["spec"] == {"counter": 1}


# -- lists -------------------------------------------------------------------------------------------


async def check_list_at_historical_revision(factory: fixtures.Factory) -> None:
    """list at an older revision returns the exact snapshot of that revision."""
    s = await factory()
    b = s.current_revision()  # a shared backend (etcd) starts past 0
    await s.create(fixtures.key("a"), fixtures.pod("a", counter=1))  # 1
    await s.create(fixtures.key("b"), fixtures.pod("b", counter=1))  # 2
    await s.guaranteed_update(fixtures.key("a"), fixtures.set_counter(2))  # 3
    await s.delete(fixtures.key("b"))  # 4
    await s.create(fixtures.key("c"), fixtures.pod("c"))  # 5
    at2 = await s.list(fixtures.PODS, revision=b + 2)
    assert at2.revision == b + 2
    assert fixtures.names(at2) == ["a", "b"]
    assert [o["spec"]["counter"] for o in at2.items] == [1, 1]
    assert [fixtures.rv(o) for o in at2.items] == [b + 1, b + 2]
    at4 = await s.list(fixtures.PODS, revision=b + 4)
    assert (
        fixtures.names(at4) == ["a"]
        and fixtures.rv(at4.items[0]) == b + 3
        and at4.items[0]["spec"]["counter"] == 2
    )
    now = await s.list(fixtures.PODS)
    assert fixtures.names(now) == ["a", "c"] and now.revision == b + 5
    assert fixtures.names(await s.list(fixtures.PODS, revision=b + 5)) == ["a", "c"]


async def check_list_paging(factory: fixtures.Factory) -> None:
    """limit/start_after page through one snapshot: more, remaining and last_key are exact."""
    s = await factory()
    for n in ["p1", "p2", "p3", "p4", "p5"]:
        await s.create(fixtures.key(n), fixtures.pod(n))
    page1 = await s.list(fixtures.PODS, limit=2)
    assert fixtures.names(page1) == ["p1", "p2"]
    assert page1.more and page1.remaining == 3 and page1.last_key == fixtures.key("p2")
    # Writes between pages must not show up in later pages of the same snapshot.
    await s.delete(fixtures.key("p4"))
    await s.create(fixtures.key("p35"), fixtures.pod("p35"))
    page2 = await s.list(fixtures.PODS, revision=page1.revision, start_after=page1.last_key, limit=2)
    assert fixtures.names(page2) == ["p3", "p4"]
    assert page2.revision == page1.revision
    assert page2.more and page2.remaining == 1 and page2.last_key == fixtures.key("p4")
    page3 = await s.list(fixtures.PODS, revision=page1.revision, start_after=page2.last_key, limit=2)
    assert fixtures.names(page3) == ["p5"]
    assert not page3.more and page3.remaining == 0 and page3.last_key == ""
    whole = await s.list(fixtures.PODS, limit=10)
    assert fixtures.names(whole) == ["p1", "p2", "p3", "p35", "p5"] and not whole.more
    exact = await s.list(fixtures.PODS, limit=5)
    assert not exact.more and exact.remaining == 0
    after = await s.list(fixtures.PODS, start_after=fixtures.key("p35"))
    assert fixtures.names(after) == ["p5"]
