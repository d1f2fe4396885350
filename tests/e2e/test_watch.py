"""Watch semantics over raw HTTP and through the official Python client's ``watch.Watch``.

This module's server keeps a short event history (``--history-window``) so that resuming from an old
resourceVersion is answered with 410 Expired after a few dozen writes, and sends periodic bookmarks often.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s_client
from kubernetes import watch as k8s_watch
from kubernetes.client.rest import ApiException

from tests.e2e.conftest import Server, start_server
from tests.e2e.helpers import Kube, assert_status, cm_path, configmap, named, unique

HISTORY_WINDOW = 40


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = start_server(
        tmp_path_factory.mktemp("kplane-watch"),
        "--history-window",
        str(HISTORY_WINDOW),
        "--watch-bookmark-interval",
        "0.5",
    )
    yield srv
    srv.stop()


@pytest.fixture
def ns(api: Kube) -> str:
    """A fresh namespace, so a namespaced watch sees only the test's own events."""
    name = unique("w")
    api.ok(
        "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    )
    return name


def _rv(api: Kube, ns: str) -> str:
    rv: str = api.ok("GET", cm_path(ns))["metadata"]["resourceVersion"]
    return rv


def _assert_typed(ev: dict[str, Any], kind: str = "ConfigMap", api_version: str = "v1") -> None:
    obj = ev["object"]
    assert obj.get("kind") == kind and obj.get("apiVersion") == api_version, ev


@pytest.mark.parametrize("flag", ["true", "1", "True"])
def test_watch_param_spellings(api: Kube, ns: str, flag: str) -> None:
    """watch=true, watch=1 and watch=True (the Python client) all start a watch."""
    rv = _rv(api, ns)
    with api.watch(cm_path(ns), {"watch": flag, "resourceVersion": rv}) as w:
        assert w.status == 200 and w.headers["content-type"].startswith("application/json")
        api.ok("POST", cm_path(ns), configmap("a", ns))
        ev = w.next()
        assert ev is not None and named(ev, "ADDED", "a")


def test_added_modified_deleted_with_kind_and_rv(api: Kube, ns: str) -> None:
    """A watch from N sees ADDED, MODIFIED, DELETED in order, each with kind/apiVersion and increasing RVs."""
    rv = _rv(api, ns)
    with api.watch(cm_path(ns), {"resourceVersion": rv}) as w:
        created = api.ok("POST", cm_path(ns), configmap("x", ns))
        api.ok("PATCH", cm_path(ns, "x"), {"data": {"k": "v2"}}, content_type="application/merge-patch+json")
        api.ok("DELETE", cm_path(ns, "x"))
        events = [w.next() for _ in range(3)]
    assert [e["type"] for e in events if e] == ["ADDED", "MODIFIED", "DELETED"]
    rvs = []
    for ev in events:
        assert ev is not None
        _assert_typed(ev)
        rvs.append(int(ev["object"]["metadata"]["resourceVersion"]))
    assert rvs == sorted(rvs) and len(set(rvs)) == 3
    assert rvs[0] == int(created["metadata"]["resourceVersion"])
    assert events[1] is not None and events[1]["object"]["data"] == {"k": "v2"}
    # DELETED carries the last state of the object, at the deletion's resourceVersion.
    assert events[2] is not None and events[2]["object"]["data"] == {"k": "v2"}


def test_watch_without_rv_sends_current_state_first(api: Kube, ns: str) -> None:
    """RV unset and RV 0 start with a synthetic ADDED per existing object, then live events."""
    existing = {"old1", "old2"}
    for name in existing:
        api.ok("POST", cm_path(ns), configmap(name, ns))
    for query in ({}, {"resourceVersion": "0"}):
        with api.watch(cm_path(ns), query) as w:
            initial = [w.next() for _ in existing]
            assert {
                e["object"]["metadata"]["name"] for e in initial if e and e["type"] == "ADDED"
            } == existing
            fresh = unique("new")
            api.ok("POST", cm_path(ns), configmap(fresh, ns))
            assert w.until(lambda e, n=fresh: named(e, "ADDED", n))  # type: ignore[misc]
            existing = existing | {fresh}


def test_watch_from_rv_sends_only_later_changes(api: Kube, ns: str) -> None:
    """A watch from RV N replays only events after N, with no synthetic ADDED for older objects."""
    api.ok("POST", cm_path(ns), configmap("before", ns))
    rv = _rv(api, ns)
    api.ok("POST", cm_path(ns), configmap("after", ns))
    with api.watch(cm_path(ns), {"resourceVersion": rv}) as w:
        ev = w.next()
        assert ev is not None and named(ev, "ADDED", "after"), ev


def test_watch_all_namespaces(api: Kube, ns: str) -> None:
    """The cluster-wide watch URL sees events from any namespace."""
    rv = api.ok("GET", "/api/v1/configmaps")["metadata"]["resourceVersion"]
    name = unique("everywhere")
    with api.watch("/api/v1/configmaps", {"resourceVersion": rv}) as w:
        api.ok("POST", cm_path(ns), configmap(name, ns))
        ev = w.until(lambda e: named(e, "ADDED", name))
        assert ev["object"]["metadata"]["namespace"] == ns


def test_timeout_seconds_ends_stream_cleanly(api: Kube, ns: str) -> None:
    """timeoutSeconds=1 closes the stream (clean end of the chunked body) after about a second."""
    start = time.monotonic()
    with api.watch(cm_path(ns), {"resourceVersion": _rv(api, ns), "timeoutSeconds": 1}) as w:
        assert w.status == 200
        assert w.rest() == []
    assert 0.8 <= time.monotonic() - start < 4


def test_send_initial_events_bookmark(api: Kube, ns: str) -> None:
    """sendInitialEvents: ADDED for the current state, then a BOOKMARK annotated k8s.io/initial-events-end."""
    for i in range(3):
        api.ok("POST", cm_path(ns), configmap(f"i{i}", ns))
    query = {
        "sendInitialEvents": "true",
        "resourceVersionMatch": "NotOlderThan",
        "allowWatchBookmarks": "true",
        "timeoutSeconds": 10,
    }
    with api.watch(cm_path(ns), query) as w:
        assert w.status == 200, w.resp.read()
        added = [w.next() for _ in range(3)]
        assert {e["object"]["metadata"]["name"] for e in added if e and e["type"] == "ADDED"} == {
            "i0",
            "i1",
            "i2",
        }
        mark = w.next()
        assert mark is not None and mark["type"] == "BOOKMARK", mark
        _assert_typed(mark)
        meta = mark["object"]["metadata"]
        assert meta["annotations"]["k8s.io/initial-events-end"] == "true"
        assert int(meta["resourceVersion"]) >= max(
            int(e["object"]["metadata"]["resourceVersion"]) for e in added if e
        )
        api.ok("POST", cm_path(ns), configmap("live", ns))
        assert w.until(lambda e: named(e, "ADDED", "live"))


def test_send_initial_events_from_rv(api: Kube, ns: str) -> None:
    """sendInitialEvents with an explicit resourceVersion also ends the initial state with the bookmark."""
    api.ok("POST", cm_path(ns), configmap("s0", ns))
    query = {
        "sendInitialEvents": "true",
        "resourceVersionMatch": "NotOlderThan",
        "allowWatchBookmarks": "true",
        "resourceVersion": _rv(api, ns),
        "timeoutSeconds": 10,
    }
    with api.watch(cm_path(ns), query) as w:
        assert w.status == 200, w.resp.read()
        ev = w.next()
        assert ev is not None and named(ev, "ADDED", "s0")
        mark = w.until(lambda e: e["type"] == "BOOKMARK")
        assert mark["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"] == "true"


def test_send_initial_events_requires_match(api: Kube, ns: str) -> None:
    """sendInitialEvents without resourceVersionMatch=NotOlderThan is 422 Invalid."""
    st = assert_status(
        api.get(cm_path(ns), query={"watch": "true", "sendInitialEvents": "true"}), 422, "Invalid"
    )
    assert any(c["field"] == "resourceVersionMatch" for c in st["details"]["causes"]), st


def test_periodic_bookmarks_when_allowed(api: Kube, ns: str) -> None:
    """With allowWatchBookmarks the server sends BOOKMARKs carrying only kind, apiVersion and an RV."""
    with api.watch(
        cm_path(ns), {"resourceVersion": _rv(api, ns), "allowWatchBookmarks": "true", "timeoutSeconds": 5}
    ) as w:
        mark = w.until(lambda e: e["type"] == "BOOKMARK")
    _assert_typed(mark)
    assert int(mark["object"]["metadata"]["resourceVersion"]) > 0
    assert "name" not in mark["object"]["metadata"]


def test_no_bookmarks_unless_allowed(api: Kube, ns: str) -> None:
    """Without allowWatchBookmarks no BOOKMARK event is ever sent."""
    with api.watch(cm_path(ns), {"resourceVersion": _rv(api, ns), "timeoutSeconds": 2}) as w:
        assert all(e["type"] != "BOOKMARK" for e in w.rest())


def test_label_selector_watch_sees_object_leave_and_enter(api: Kube, ns: str) -> None:
    """A selector watch reports DELETED when a label change takes an object out, carrying the last
    state that matched at the change's resourceVersion, and ADDED when it comes back."""
    # Upstream, staging/src/k8s.io/apiserver/pkg/storage/cacher/cache_watcher.go
    # (convertToWatchEvent): "return a delete event with the previous object content, but with the
    # event's resource version".
    api.ok("POST", cm_path(ns), configmap("sel", ns, labels={"app": "web"}, data={"k": "before"}))
    rv = _rv(api, ns)
    with api.watch(cm_path(ns), {"resourceVersion": rv, "labelSelector": "app=web"}) as w:
        moved = api.ok(
            "PATCH",
            cm_path(ns, "sel"),
            {"metadata": {"labels": {"app": "db"}}, "data": {"k": "after"}},
            content_type="application/merge-patch+json",
        )
        ev = w.next()
        assert ev is not None and named(ev, "DELETED", "sel"), ev
        assert ev["object"]["metadata"]["labels"] == {"app": "web"}, ev
        assert ev["object"]["data"] == {"k": "before"}, ev
        assert ev["object"]["metadata"]["resourceVersion"] == moved["metadata"]["resourceVersion"]
        api.ok(
            "PATCH",
            cm_path(ns, "sel"),
            {"metadata": {"labels": {"app": "web"}}},
            content_type="application/merge-patch+json",
        )
        ev = w.next()
        assert ev is not None and named(ev, "ADDED", "sel"), ev
        assert ev["object"]["metadata"]["labels"] == {"app": "web"}, ev


def test_field_selector_watch(api: Kube, ns: str) -> None:
    """A metadata.name field selector watch (kubectl delete/wait) sees only that object."""
    rv = _rv(api, ns)
    with api.watch(cm_path(ns), {"resourceVersion": rv, "fieldSelector": "metadata.name=target"}) as w:
        api.ok("POST", cm_path(ns), configmap("other", ns))
        api.ok("POST", cm_path(ns), configmap("target", ns))
        api.ok("DELETE", cm_path(ns, "target"))
        first, second = w.next(), w.next()
    assert first is not None and named(first, "ADDED", "target"), first
    assert second is not None and named(second, "DELETED", "target"), second


def _churn(api: Kube, ns: str, writes: int) -> None:
    api.ok("POST", cm_path(ns), configmap("churn", ns))
    for i in range(writes):
        api.ok(
            "PATCH",
            cm_path(ns, "churn"),
            {"data": {"i": str(i)}},
            content_type="application/merge-patch+json",
        )


def test_too_old_rv_is_error_event_410(api: Kube, ns: str) -> None:
    """A watch from an RV older than the history window: HTTP 200, one ERROR Expired 410 event, the end."""
    old = _rv(api, ns)
    _churn(api, ns, HISTORY_WINDOW + 10)
    with api.watch(cm_path(ns), {"resourceVersion": old}) as w:
        assert w.status == 200
        events = w.rest()
    assert len(events) == 1, events
    ev = events[0]
    assert ev["type"] == "ERROR"
    st = ev["object"]
    assert st["kind"] == "Status" and st["apiVersion"] == "v1"
    assert st["status"] == "Failure" and st["code"] == 410 and st["reason"] == "Expired", st
    assert st["message"]


def test_exact_list_at_old_rv(api: Kube, ns: str) -> None:
    """A list with resourceVersionMatch=Exact at an old RV is either 410 Expired or exactly that old state."""
    old = _rv(api, ns)
    _churn(api, ns, HISTORY_WINDOW + 10)
    resp = api.get(cm_path(ns), query={"resourceVersion": old, "resourceVersionMatch": "Exact"})
    if resp.status == 410:
        assert_status(resp, 410, "Expired")
    else:
        lst = resp.json()
        assert resp.status == 200 and lst["items"] == [], lst
        assert lst["metadata"]["resourceVersion"] == old


def test_table_watch(api: Kube, ns: str) -> None:
    """A Table watch sends one-row Tables; the first carries columnDefinitions, later ones none."""
    api.ok("POST", cm_path(ns), configmap("t0", ns, data={"a": "1", "b": "2"}))
    accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
    with api.watch(cm_path(ns), {"timeoutSeconds": 10}, headers={"Accept": accept}) as w:
        # upstream names the bare media type for a Table watch too (apiserver handlers/watch.go)
        assert w.headers["content-type"] == "application/json", w.headers
        first = w.next()
        assert first is not None and first["type"] == "ADDED"
        table = first["object"]
        assert table["kind"] == "Table" and table["apiVersion"] == "meta.k8s.io/v1"
        cols = [c["name"] for c in table["columnDefinitions"]]
        assert cols[0] == "Name" and "Data" in cols and "Age" in cols
        assert len(table["rows"]) == 1
        row = table["rows"][0]
        assert row["cells"][0] == "t0"
        assert row["cells"][cols.index("Data")] == 2
        assert row["object"]["kind"] == "PartialObjectMetadata"
        assert row["object"]["metadata"]["name"] == "t0"
        api.ok("POST", cm_path(ns), configmap("t1", ns))
        second = w.next()
        assert second is not None and second["type"] == "ADDED"
        assert not second["object"].get("columnDefinitions")
        assert second["object"]["rows"][0]["cells"][0] == "t1"


# --- the official Python client -------------------------------------------------------------------


def test_python_watch_stream_added_modified_deleted(k8s: k8s_client.ApiClient, api: Kube, ns: str) -> None:
    """watch.Watch().stream(list_namespaced_config_map) yields typed ADDED, MODIFIED, DELETED events."""
    core = k8s_client.CoreV1Api(k8s)
    rv = core.list_namespaced_config_map(ns).metadata.resource_version
    core.create_namespaced_config_map(ns, configmap("py", ns))
    core.patch_namespaced_config_map("py", ns, {"data": {"k": "v2"}})
    core.delete_namespaced_config_map("py", ns)
    seen: list[tuple[str, str, dict[str, str] | None]] = []
    w = k8s_watch.Watch()
    for ev in w.stream(core.list_namespaced_config_map, ns, resource_version=rv, timeout_seconds=3):
        obj = ev["object"]
        assert isinstance(obj, k8s_client.V1ConfigMap)
        seen.append((ev["type"], obj.metadata.name, obj.data))
        if ev["type"] == "DELETED":
            w.stop()
    assert seen == [
        ("ADDED", "py", {"k": "v"}),
        ("MODIFIED", "py", {"k": "v2"}),
        ("DELETED", "py", {"k": "v2"}),
    ]


def test_python_watch_resumes_from_resource_version(k8s: k8s_client.ApiClient, api: Kube, ns: str) -> None:
    """Resuming a Python watch from the last seen RV yields exactly the later events."""
    core = k8s_client.CoreV1Api(k8s)
    rv0 = core.list_namespaced_config_map(ns).metadata.resource_version
    core.create_namespaced_config_map(ns, configmap("r1", ns))
    w = k8s_watch.Watch()
    last = ""
    for ev in w.stream(core.list_namespaced_config_map, ns, resource_version=rv0, timeout_seconds=3):
        assert ev["object"].metadata.name == "r1"
        last = ev["object"].metadata.resource_version
        w.stop()
    assert last
    core.create_namespaced_config_map(ns, configmap("r2", ns))
    names = []
    w2 = k8s_watch.Watch()
    for ev in w2.stream(core.list_namespaced_config_map, ns, resource_version=last, timeout_seconds=3):
        names.append((ev["type"], ev["object"].metadata.name))
        w2.stop()
    assert names == [("ADDED", "r2")]


def test_python_watch_expired_rv_raises_410(k8s: k8s_client.ApiClient, api: Kube, ns: str) -> None:
    """With timeout_seconds set, the Python client surfaces the ERROR 410 event as ApiException(410)."""
    core = k8s_client.CoreV1Api(k8s)
    old = core.list_namespaced_config_map(ns).metadata.resource_version
    _churn(api, ns, HISTORY_WINDOW + 10)
    w = k8s_watch.Watch()
    with pytest.raises(ApiException) as err:
        for _ in w.stream(core.list_namespaced_config_map, ns, resource_version=old, timeout_seconds=3):
            pass
    assert err.value.status == 410


def test_python_watch_timeout_ends(k8s: k8s_client.ApiClient, ns: str, tmp_path: Path) -> None:
    """A Python watch with timeout_seconds and no changes ends on its own without events."""
    core = k8s_client.CoreV1Api(k8s)
    rv = core.list_namespaced_config_map(ns).metadata.resource_version
    start = time.monotonic()
    events = list(
        k8s_watch.Watch().stream(core.list_namespaced_config_map, ns, resource_version=rv, timeout_seconds=1)
    )
    assert events == []
    assert time.monotonic() - start < 5


@pytest.fixture(scope="module")
def plain_api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kube]:
    """A server with the default (one minute) bookmark interval, so only the pre-timeout bookmark is due."""
    srv = start_server(tmp_path_factory.mktemp("kplane-watch-default"))
    try:
        yield Kube.from_kubeconfig(srv.kubeconfig, srv.data_dir / "e2e-pki")
    finally:
        srv.stop()


def test_bookmark_two_seconds_before_timeout(plain_api: Kube) -> None:
    """With allowWatchBookmarks, a watch gets a BOOKMARK at the current resourceVersion about two
    seconds before its timeoutSeconds ends, then the stream ends; a watch of two seconds or less gets none."""
    # Upstream, staging/src/k8s.io/apiserver/pkg/storage/cacher/cache_watcher.go (nextBookmarkTime):
    # "We try to send bookmarks: (a) right before the watcher timeout - for now we simply set it 2s
    # before the deadline; (b) roughly every minute"; "if heartbeatTime.Before(now)" none is sent.
    api = plain_api
    path = cm_path("default")
    rv = _rv(api, "default")
    other = unique("elsewhere")  # a write in another namespace moves the store's revision
    api.ok(
        "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": other}}
    )
    current = api.ok("POST", cm_path(other), configmap("x", other))["metadata"]["resourceVersion"]
    start = time.monotonic()
    with api.watch(path, {"resourceVersion": rv, "allowWatchBookmarks": "true", "timeoutSeconds": 5}) as w:
        mark = w.next()
        at = time.monotonic() - start
        assert mark is not None and mark["type"] == "BOOKMARK", mark
        _assert_typed(mark)
        assert int(mark["object"]["metadata"]["resourceVersion"]) >= int(current)
        assert w.rest() == []
        ended = time.monotonic() - start
    assert 2.0 <= at < 4.5, at
    assert 4.5 <= ended < 8, ended
    with api.watch(path, {"resourceVersion": rv, "allowWatchBookmarks": "true", "timeoutSeconds": 2}) as w:
        assert w.rest() == []
