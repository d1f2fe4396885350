"""The informer store: keys, atomic index maintenance, and client-go's Indexer API."""

from __future__ import annotations

import dataclasses
import threading
from typing import Any

import pytest

from kplane.informers import store


def _pod(name: str, ns: str | None = "default", **labels: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": labels}
    if ns is not None:
        meta["namespace"] = ns
    return {"kind": "Pod", "metadata": meta}


def _by_app(obj: Any) -> list[str]:
    app = obj["metadata"]["labels"].get("app")
    return [app] if app else []


def _by_tiers(obj: Any) -> list[str]:
    return [t for t in obj["metadata"]["labels"].get("tiers", "").split(",") if t]


@pytest.mark.parametrize(
    ("obj", "key"),
    [(_pod("a"), "default/a"), (_pod("n1", None), "n1"), ("ns/x", "ns/x")],
    ids=["namespaced", "cluster-scoped", "explicit-key"],
)
def test_meta_namespace_key(obj: Any, key: str) -> None:
    """Keys are namespace/name, or name alone for cluster-scoped objects."""
    assert store.meta_namespace_key(obj) == key


def test_split_key_inverts_and_rejects_bad_keys() -> None:
    """split_meta_namespace_key undoes the key function and rejects extra slashes."""
    assert store.split_meta_namespace_key("ns/a") == ("ns", "a")
    assert store.split_meta_namespace_key("a") == ("", "a")
    with pytest.raises(ValueError):
        store.split_meta_namespace_key("a/b/c")


def test_key_of_a_typed_object() -> None:
    """Objects with a metadata attribute are keyed like dicts."""

    @dataclasses.dataclass
    class Meta:
        name: str
        namespace: str

    @dataclasses.dataclass
    class Obj:
        metadata: Meta

    assert store.meta_namespace_key(Obj(Meta("a", "ns"))) == "ns/a"


def test_add_get_update_delete() -> None:
    """The basic keyed operations see the latest write."""
    s: store.Store[dict[str, Any]] = store.Store()
    pod = _pod("a")
    s.add(pod)
    assert s.get_by_key("default/a") is pod
    newer = _pod("a", app="x")
    s.update(newer)
    assert s.get(pod) is newer
    assert len(s) == 1
    s.delete(pod)
    assert s.get_by_key("default/a") is None
    s.delete(pod)  # Deleting a missing object is a no-op.
    assert s.list() == []


def test_put_returns_the_replaced_object() -> None:
    """put is add that hands back what it replaced (None for a new key); the namespace index
    keeps one entry per object across replacements."""
    s: store.Store[dict[str, Any]] = store.Store()
    first, second = _pod("a", "ns1"), _pod("a", "ns1", app="x")
    assert s.put(first) is None
    assert s.put(second) is first
    assert s.get_by_key("ns1/a") is second
    assert s.index_keys(store.NAMESPACE_INDEX, "ns1") == ["ns1/a"]
    s.delete(second)
    assert s.list_index_values(store.NAMESPACE_INDEX) == []


def test_key_errors_match_for_dicts_and_typed_objects() -> None:
    """An object without a name has no key, whatever its shape; an empty name counts as none."""
    for obj in ({"metadata": {"namespace": "ns"}}, {"metadata": {"name": ""}}, {"kind": "Pod"}):
        with pytest.raises(ValueError, match=r"no metadata\.name"):
            store.meta_namespace_key(obj)


def test_namespace_index_is_built_in() -> None:
    """by_index("namespace", ns) returns exactly that namespace's objects."""
    s: store.Store[dict[str, Any]] = store.Store()
    s.add(_pod("a", "ns1"))
    s.add(_pod("b", "ns1"))
    s.add(_pod("c", "ns2"))
    names = sorted(o["metadata"]["name"] for o in s.by_index(store.NAMESPACE_INDEX, "ns1"))
    assert names == ["a", "b"]
    assert sorted(s.list_index_values("namespace")) == ["ns1", "ns2"]


def test_update_moves_index_entries() -> None:
    """Changing an indexed value removes the old entry and adds the new one."""
    s: store.Store[dict[str, Any]] = store.Store(indexers={"app": _by_app})
    s.add(_pod("a", app="web"))
    s.update(_pod("a", app="db"))
    assert s.by_index("app", "web") == []
    assert s.index_keys("app", "db") == ["default/a"]
    assert s.list_index_values("app") == ["db"]


def test_delete_removes_index_entries() -> None:
    """A deleted object disappears from every index, and empty values vanish."""
    s: store.Store[dict[str, Any]] = store.Store(indexers={"app": _by_app})
    s.add(_pod("a", app="web"))
    s.delete_key("default/a")
    assert s.index_keys("app", "web") == []
    assert s.list_index_values("app") == []
    assert s.list_index_values("namespace") == []


def test_multi_valued_index_and_index_by_object() -> None:
    """index(name, obj) returns each object sharing any value once."""
    s: store.Store[dict[str, Any]] = store.Store(indexers={"tiers": _by_tiers})
    s.add(_pod("a", tiers="fe,be"))
    s.add(_pod("b", tiers="be"))
    s.add(_pod("c", tiers="db"))
    probe = _pod("probe", tiers="fe,be")
    assert sorted(o["metadata"]["name"] for o in s.index("tiers", probe)) == ["a", "b"]
    assert sorted(s.list_index_values("tiers")) == ["be", "db", "fe"]


def test_unknown_index_is_an_error() -> None:
    """Every index query names an existing index or fails with upstream's message."""
    s: store.Store[dict[str, Any]] = store.Store()
    with pytest.raises(store.IndexerError, match="Index with name nope does not exist"):
        s.by_index("nope", "x")
    with pytest.raises(store.IndexerError):
        s.index_keys("nope", "x")
    with pytest.raises(store.IndexerError):
        s.list_index_values("nope")
    with pytest.raises(store.IndexerError):
        s.index("nope", _pod("a"))


def test_add_indexers_indexes_existing_items_and_rejects_conflicts() -> None:
    """Indexes added later cover existing objects; a taken name is refused."""
    s: store.Store[dict[str, Any]] = store.Store()
    s.add(_pod("a", app="web"))
    s.add_indexers({"app": _by_app})
    assert s.index_keys("app", "web") == ["default/a"]
    with pytest.raises(store.IndexerError, match="conflict"):
        s.add_indexers({"app": _by_app})
    with pytest.raises(store.IndexerError):
        s.add_indexers({"namespace": _by_app})
    assert set(s.indexers()) == {"namespace", "app"}


def test_replace_swaps_content_and_rebuilds_indexes() -> None:
    """replace drops absent objects, indexes the new ones and records the resource version."""
    s: store.Store[dict[str, Any]] = store.Store(indexers={"app": _by_app})
    s.add(_pod("old", app="web"))
    s.replace([_pod("a", app="db"), _pod("b", "other", app="db")], "42")
    assert sorted(s.list_keys()) == ["default/a", "other/b"]
    assert s.index_keys("app", "web") == []
    assert sorted(s.index_keys("app", "db")) == ["default/a", "other/b"]
    assert s.resource_version == "42"
    assert "other/b" in s


def test_concurrent_writers_keep_indexes_consistent() -> None:
    """Threads writing at once leave every index agreeing with the items."""
    s: store.Store[dict[str, Any]] = store.Store(indexers={"app": _by_app})

    def writer(t: int) -> None:
        for i in range(200):
            s.add(_pod(f"p{i % 20}", f"ns{t}", app=f"a{i % 3}"))
            if i % 7 == 0:
                s.delete_key(f"ns{t}/p{(i + 3) % 20}")

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for value in s.list_index_values("app"):
        for key in s.index_keys("app", value):
            obj = s.get_by_key(key)
            assert obj is not None and _by_app(obj) == [value]
    indexed = sum(len(s.index_keys("app", v)) for v in s.list_index_values("app"))
    assert indexed == len(s)


def test_public_surface() -> None:
    """kplane.informers exports the store and lister names, and each resolves."""
    import kplane.informers as pkg

    assert {"Store", "Lister", "NamespaceLister", "meta_namespace_key", "IndexerError"} <= set(pkg.__all__)
    assert all(getattr(pkg, name) is not None for name in pkg.__all__)
