"""Listers: reads from the cache with label predicates and NotFound on a miss."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from kplane.api import errors, gvk
from kplane.informers import listers, store

PODS = gvk.GroupResource("", "pods")


def _pod(name: str, ns: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": ns, "labels": labels}}


def _app_is(value: str) -> listers.LabelPredicate:
    def matches(labels: Mapping[str, str]) -> bool:
        return labels.get("app") == value

    return matches


@pytest.fixture
def lister() -> listers.Lister[dict[str, Any]]:
    s: store.Store[dict[str, Any]] = store.Store()
    s.add(_pod("a", "ns1", app="web"))
    s.add(_pod("b", "ns1", app="db"))
    s.add(_pod("c", "ns2", app="web"))
    s.add({"metadata": {"name": "nolabels", "namespace": "ns2"}})
    return listers.Lister(s, PODS)


def _names(objs: list[dict[str, Any]]) -> list[str]:
    return sorted(o["metadata"]["name"] for o in objs)


def test_list_filters_by_label_predicate(lister: listers.Lister[dict[str, Any]]) -> None:
    """list(selector) keeps exactly the objects whose labels match."""
    assert _names(lister.list()) == ["a", "b", "c", "nolabels"]
    assert _names(lister.list(_app_is("web"))) == ["a", "c"]
    assert lister.list(lambda labels: False) == []


def test_namespaced_list_and_get(lister: listers.Lister[dict[str, Any]]) -> None:
    """A namespace lister sees only its namespace; "" means all namespaces."""
    assert _names(lister.namespaced("ns1").list()) == ["a", "b"]
    assert _names(lister.namespaced("ns2").list(_app_is("web"))) == ["c"]
    assert len(lister.namespaced("").list()) == 4
    assert lister.namespaced("ns1").get("b")["metadata"]["labels"] == {"app": "db"}


def test_get_miss_raises_not_found(lister: listers.Lister[dict[str, Any]]) -> None:
    """A cache miss raises the API's NotFound with upstream's message."""
    with pytest.raises(errors.NotFound, match='pods "zz" not found'):
        lister.namespaced("ns1").get("zz")
    with pytest.raises(errors.NotFound):
        lister.get("a")  # Namespaced objects are not found by a cluster-scoped get.
