"""List semantics over raw HTTP: selectors, pagination, resourceVersion and resourceVersionMatch."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.helpers import Kube, assert_status, cm_path, configmap, unique


def _names(lst: dict[str, Any]) -> set[str]:
    return {i["metadata"]["name"] for i in lst["items"]}


@pytest.fixture
def ns(api: Kube) -> Iterator[str]:
    """A fresh namespace, so lists see only what the test created."""
    name = unique("ls")
    api.ok(
        "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    )
    yield name
    api.delete(f"/api/v1/namespaces/{name}")


@pytest.fixture
def labelled(api: Kube, ns: str) -> str:
    """Five ConfigMaps in ``ns``: a{env=prod,tier=fe} b{env=dev,tier=be} c{env=test} d{tier=fe} e{}."""
    labels = {
        "a": {"env": "prod", "tier": "fe"},
        "b": {"env": "dev", "tier": "be"},
        "c": {"env": "test"},
        "d": {"tier": "fe"},
        "e": {},
    }
    for name, lab in labels.items():
        api.ok("POST", cm_path(ns), configmap(name, ns, labels=lab))
    return ns


SELECTORS = [
    ("env=prod", {"a"}),
    ("env==prod", {"a"}),
    ("env!=prod", {"b", "c", "d", "e"}),
    ("env in (prod,dev)", {"a", "b"}),
    ("env notin (prod,dev)", {"c", "d", "e"}),
    ("env", {"a", "b", "c"}),
    ("!env", {"d", "e"}),
    ("tier=fe,env", {"a"}),
    ("tier=fe,!env", {"d"}),
    ("env in (prod),tier notin (be)", {"a"}),
    ("", {"a", "b", "c", "d", "e"}),
]


@pytest.mark.parametrize(("selector", "expected"), SELECTORS, ids=[s or "<empty>" for s, _ in SELECTORS])
def test_label_selector_grammar(api: Kube, labelled: str, selector: str, expected: set[str]) -> None:
    """Every label selector operator filters as upstream does (comma is AND)."""
    lst = api.ok("GET", cm_path(labelled), query={"labelSelector": selector})
    assert _names(lst) == expected


def test_invalid_label_selector_is_400(api: Kube, ns: str) -> None:
    """A syntactically invalid label selector is 400 BadRequest."""
    assert_status(api.get(cm_path(ns), query={"labelSelector": "env in (prod"}), 400, "BadRequest")


def test_field_selector_metadata_name_and_namespace(api: Kube, labelled: str) -> None:
    """metadata.name and metadata.namespace field selectors work with =, == and !=."""
    assert _names(api.ok("GET", cm_path(labelled), query={"fieldSelector": "metadata.name=b"})) == {"b"}
    assert _names(api.ok("GET", cm_path(labelled), query={"fieldSelector": "metadata.name==c"})) == {"c"}
    assert _names(api.ok("GET", cm_path(labelled), query={"fieldSelector": "metadata.name!=a"})) == {
        "b",
        "c",
        "d",
        "e",
    }
    everywhere = api.ok(
        "GET", "/api/v1/configmaps", query={"fieldSelector": f"metadata.namespace={labelled}"}
    )
    assert _names(everywhere) == {"a", "b", "c", "d", "e"}
    both = api.ok(
        "GET", "/api/v1/configmaps", query={"fieldSelector": f"metadata.namespace={labelled},metadata.name=d"}
    )
    assert _names(both) == {"d"}


def test_field_and_label_selectors_combine(api: Kube, labelled: str) -> None:
    """Label and field selectors apply together (AND)."""
    lst = api.ok(
        "GET", cm_path(labelled), query={"labelSelector": "tier=fe", "fieldSelector": "metadata.name!=a"}
    )
    assert _names(lst) == {"d"}


def test_unsupported_field_selector_is_400(api: Kube, ns: str) -> None:
    """A field label the resource does not support is 400 'field label not supported: <field>'."""
    st = assert_status(api.get(cm_path(ns), query={"fieldSelector": "spec.foo=x"}), 400, "BadRequest")
    assert st["message"] == "field label not supported: spec.foo", st
    st = assert_status(
        api.get(f"/api/v1/namespaces/{ns}/secrets", query={"fieldSelector": "status.phase=x"}),
        400,
        "BadRequest",
    )
    assert "field label not supported: status.phase" in st["message"], st


def _pod(name: str, ns: str, node: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "busybox"}]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns}, "spec": spec}


def test_pod_field_selectors(api: Kube, ns: str) -> None:
    """Pods filter by spec.nodeName and status.phase."""
    node = unique("node")
    api.ok("POST", f"/api/v1/namespaces/{ns}/pods", _pod("on-node", ns, node))
    api.ok("POST", f"/api/v1/namespaces/{ns}/pods", _pod("floating", ns))
    pods = f"/api/v1/namespaces/{ns}/pods"
    assert _names(api.ok("GET", pods, query={"fieldSelector": f"spec.nodeName={node}"})) == {"on-node"}
    assert _names(api.ok("GET", pods, query={"fieldSelector": "spec.nodeName="})) == {"floating"}
    assert _names(api.ok("GET", "/api/v1/pods", query={"fieldSelector": f"spec.nodeName={node}"})) == {
        "on-node"
    }
    # Give one pod a terminal phase through the status subresource; the other keeps its own phase.
    api.ok(
        "PATCH",
        f"{pods}/floating/status",
        {"status": {"phase": "Succeeded"}},
        content_type="application/merge-patch+json",
    )
    succeeded = api.ok("GET", pods, query={"fieldSelector": "status.phase=Succeeded"})
    assert _names(succeeded) == {"floating"}
    assert "floating" not in _names(api.ok("GET", pods, query={"fieldSelector": "status.phase!=Succeeded"}))


def test_secret_type_field_selector(api: Kube, ns: str) -> None:
    """Secrets filter by type."""
    base = f"/api/v1/namespaces/{ns}/secrets"
    api.ok(
        "POST",
        base,
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "opaque"},
            "type": "Opaque",
            "stringData": {"a": "b"},
        },
    )
    api.ok(
        "POST",
        base,
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "tls"},
            "type": "kubernetes.io/tls",
            "data": {"tls.crt": "", "tls.key": ""},
        },
    )
    assert _names(api.ok("GET", base, query={"fieldSelector": "type=kubernetes.io/tls"})) == {"tls"}
    assert _names(api.ok("GET", base, query={"fieldSelector": "type=Opaque"})) == {"opaque"}


def test_event_involved_object_field_selector(api: Kube, ns: str) -> None:
    """core/v1 Events filter by involvedObject.name (as kubectl describe does)."""
    base = f"/api/v1/namespaces/{ns}/events"
    for name, target in (("ev1", "pod-a"), ("ev2", "pod-b")):
        api.ok(
            "POST",
            base,
            {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"name": name},
                "involvedObject": {"kind": "Pod", "name": target, "namespace": ns},
                "reason": "Test",
                "message": "m",
                "type": "Normal",
            },
        )
    sel = f"involvedObject.name=pod-a,involvedObject.namespace={ns}"
    assert _names(api.ok("GET", base, query={"fieldSelector": sel})) == {"ev1"}
    assert _names(api.ok("GET", base, query={"fieldSelector": "involvedObject.kind=Pod"})) == {"ev1", "ev2"}


def test_limit_continue_remaining_item_count(api: Kube, ns: str) -> None:
    """limit/continue pages through a consistent snapshot and reports remainingItemCount."""
    for i in range(5):
        api.ok("POST", cm_path(ns), configmap(f"p{i}", ns))
    first = api.ok("GET", cm_path(ns), query={"limit": 2})
    assert len(first["items"]) == 2
    meta = first["metadata"]
    assert meta["continue"] and meta["remainingItemCount"] == 3
    # A write between pages is not visible in later pages: they read the first page's snapshot.
    api.ok("POST", cm_path(ns), configmap("p9-late", ns))
    second = api.ok("GET", cm_path(ns), query={"limit": 2, "continue": meta["continue"]})
    assert len(second["items"]) == 2 and second["metadata"]["remainingItemCount"] == 1
    third = api.ok("GET", cm_path(ns), query={"limit": 2, "continue": second["metadata"]["continue"]})
    assert len(third["items"]) == 1
    assert not third["metadata"].get("continue")
    assert "remainingItemCount" not in third["metadata"] or third["metadata"]["remainingItemCount"] == 0
    names = [i["metadata"]["name"] for page in (first, second, third) for i in page["items"]]
    assert names == [f"p{i}" for i in range(5)]
    assert second["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]


def test_list_without_limit_has_no_continue(api: Kube, labelled: str) -> None:
    """A list without limit returns every item, no continue token, and an RV."""
    lst = api.ok("GET", cm_path(labelled))
    assert lst["kind"] == "ConfigMapList" and lst["apiVersion"] == "v1"
    assert len(lst["items"]) == 5
    assert not lst["metadata"].get("continue")
    assert int(lst["metadata"]["resourceVersion"]) > 0


def test_empty_list_has_items_array(api: Kube, ns: str) -> None:
    """An empty list still carries "items": [] (the Python client rejects null)."""
    lst = api.ok("GET", f"/api/v1/namespaces/{ns}/secrets")
    assert lst["items"] == []


def test_resource_version_semantics(api: Kube, ns: str) -> None:
    """RV unset is the latest state; RV 0 any state; Exact N is the state at N; NotOlderThan N is >= N."""
    api.ok("POST", cm_path(ns), configmap("before", ns))
    rv_mid = api.ok("GET", cm_path(ns))["metadata"]["resourceVersion"]
    api.ok("POST", cm_path(ns), configmap("after", ns))
    latest = api.ok("GET", cm_path(ns))
    assert _names(latest) == {"before", "after"}
    assert int(latest["metadata"]["resourceVersion"]) > int(rv_mid)
    any_rv = api.ok("GET", cm_path(ns), query={"resourceVersion": "0"})
    assert "before" in _names(any_rv)
    exact = api.ok("GET", cm_path(ns), query={"resourceVersion": rv_mid, "resourceVersionMatch": "Exact"})
    assert _names(exact) == {"before"}
    assert exact["metadata"]["resourceVersion"] == rv_mid
    newer = api.ok(
        "GET", cm_path(ns), query={"resourceVersion": rv_mid, "resourceVersionMatch": "NotOlderThan"}
    )
    assert "before" in _names(newer)
    assert int(newer["metadata"]["resourceVersion"]) >= int(rv_mid)
    legacy = api.ok("GET", cm_path(ns), query={"resourceVersion": rv_mid})
    assert int(legacy["metadata"]["resourceVersion"]) >= int(rv_mid)


INVALID = [
    ("match-without-rv", {"resourceVersionMatch": "Exact"}),
    ("exact-with-rv-0", {"resourceVersion": "0", "resourceVersionMatch": "Exact"}),
    ("unknown-match", {"resourceVersion": "1", "resourceVersionMatch": "Sometimes"}),
    (
        "match-with-continue",
        {"resourceVersion": "1", "resourceVersionMatch": "NotOlderThan", "continue": "abc"},
    ),
    ("send-initial-events-on-list", {"sendInitialEvents": "true"}),
    ("watch-initial-events-without-match", {"watch": "true", "sendInitialEvents": "true"}),
    ("watch-with-exact", {"watch": "true", "resourceVersion": "1", "resourceVersionMatch": "Exact"}),
]


@pytest.mark.parametrize(("case", "query"), INVALID, ids=[c for c, _ in INVALID])
def test_invalid_list_options_are_422(api: Kube, ns: str, case: str, query: dict[str, str]) -> None:
    """Invalid resourceVersion / resourceVersionMatch / sendInitialEvents combinations are 422 Invalid."""
    st = assert_status(api.get(cm_path(ns), query=query), 422, "Invalid")
    assert st["details"]["kind"] == "ListOptions" and st["details"]["group"] == "meta.k8s.io", st
    assert st["details"]["causes"], st


def test_too_large_resource_version_is_504(api: Kube, ns: str) -> None:
    """A list at an RV the server has not reached is 504 Timeout 'Too large resource version'."""
    st = assert_status(
        api.get(
            cm_path(ns),
            query={"resourceVersion": "999999999", "resourceVersionMatch": "NotOlderThan"},
            timeout=15,
        ),
        504,
        "Timeout",
    )
    assert st["message"].startswith("Too large resource version: 999999999"), st
    assert st["details"]["causes"][0]["reason"] == "ResourceVersionTooLarge"


def test_list_across_namespaces(api: Kube, ns: str) -> None:
    """The cluster-wide collection URL lists objects from every namespace."""
    other = unique("ls2")
    api.ok(
        "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": other}}
    )
    api.ok("POST", cm_path(ns), configmap("x1", ns, labels={"mark": ns}))
    api.ok("POST", cm_path(other), configmap("x2", other, labels={"mark": ns}))
    lst = api.ok("GET", "/api/v1/configmaps", query={"labelSelector": f"mark={ns}"})
    assert {(i["metadata"]["namespace"], i["metadata"]["name"]) for i in lst["items"]} == {
        (ns, "x1"),
        (other, "x2"),
    }
