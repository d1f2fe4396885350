"""Server-side printing: ``as=Table`` responses for list, get and watch, and ``includeObject``."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.helpers import TABLE_ACCEPT, Kube, cm_path, configmap, deployment, unique

KUBECTL_ACCEPT = f"{TABLE_ACCEPT},application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"


@pytest.fixture(scope="module")
def ns(api: Kube) -> str:
    name = unique("tbl")
    api.ok(
        "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    )
    api.ok("POST", cm_path(name), configmap("c1", name, data={"a": "1", "b": "2"}, labels={"app": "x"}))
    api.ok("POST", cm_path(name), configmap("c2", name, data={"a": "1"}))
    return name


def _table(api: Kube, path: str, **query: Any) -> dict[str, Any]:
    resp = api.get(path, headers={"Accept": KUBECTL_ACCEPT}, query=query or None)
    assert resp.status == 200, resp.body
    # upstream writes the serializer's bare media type, not the requested as=Table form
    # (apiserver handlers/response.go: WriteObjectNegotiated(..., listGVKInContentType=false))
    assert resp.content_type == "application/json", resp.content_type
    doc: dict[str, Any] = resp.json()
    assert doc["kind"] == "Table" and doc["apiVersion"] == "meta.k8s.io/v1"
    return doc


def _cols(table: dict[str, Any]) -> list[str]:
    return [c["name"] for c in table["columnDefinitions"]]


def test_list_as_table(api: Kube, ns: str) -> None:
    """A list asked for as Table: Name/Data/Age, one row per object with PartialObjectMetadata."""
    table = _table(api, cm_path(ns))
    assert _cols(table) == ["Name", "Data", "Age"]
    for col in table["columnDefinitions"]:
        assert {"name", "type", "format", "description", "priority"} <= set(col)
    assert table["columnDefinitions"][0]["format"] == "name"
    rows = {r["cells"][0]: r for r in table["rows"]}
    assert set(rows) == {"c1", "c2"}
    assert rows["c1"]["cells"][1] == 2 and rows["c2"]["cells"][1] == 1
    obj = rows["c1"]["object"]
    assert obj["kind"] == "PartialObjectMetadata" and obj["apiVersion"] == "meta.k8s.io/v1"
    assert obj["metadata"]["labels"] == {"app": "x"} and obj["metadata"]["namespace"] == ns
    assert "data" not in obj
    assert int(table["metadata"]["resourceVersion"]) > 0


def test_get_as_table(api: Kube, ns: str) -> None:
    """A single-object GET with the Table Accept header is a one-row Table."""
    table = _table(api, cm_path(ns, "c1"))
    assert _cols(table)[0] == "Name"
    assert len(table["rows"]) == 1 and table["rows"][0]["cells"][0] == "c1"
    assert table["rows"][0]["object"]["metadata"]["name"] == "c1"


def test_include_object_none(api: Kube, ns: str) -> None:
    """includeObject=None leaves rows without an object."""
    table = _table(api, cm_path(ns), includeObject="None")
    assert table["rows"] and all("object" not in r or r["object"] is None for r in table["rows"])


def test_include_object_object(api: Kube, ns: str) -> None:
    """includeObject=Object embeds the full object (kubectl --sort-by)."""
    table = _table(api, cm_path(ns), includeObject="Object")
    objs = {r["object"]["metadata"]["name"]: r["object"] for r in table["rows"]}
    assert objs["c1"]["kind"] == "ConfigMap" and objs["c1"]["data"] == {"a": "1", "b": "2"}


def test_table_list_paging(api: Kube, ns: str) -> None:
    """A Table list honours limit and carries the continue token in its metadata."""
    table = _table(api, cm_path(ns), limit=1)
    assert len(table["rows"]) == 1 and table["metadata"]["continue"]


def test_plain_json_is_not_a_table(api: Kube, ns: str) -> None:
    """Without the Table media type the list is a ConfigMapList."""
    assert api.ok("GET", cm_path(ns))["kind"] == "ConfigMapList"


def test_deployment_table_columns(api: Kube, ns: str) -> None:
    """Deployments print Name, Ready, Up-to-date, Available, Age; wide adds Containers, Images, Selector."""
    api.ok(
        "POST",
        f"/apis/apps/v1/namespaces/{ns}/deployments",
        deployment("web", ns, replicas=2, image="nginx:1"),
    )
    table = _table(api, f"/apis/apps/v1/namespaces/{ns}/deployments")
    cols = table["columnDefinitions"]
    names = [c["name"] for c in cols]
    assert names == ["Name", "Ready", "Up-to-date", "Available", "Age", "Containers", "Images", "Selector"]
    assert [c["priority"] for c in cols] == [0, 0, 0, 0, 0, 1, 1, 1]
    row = table["rows"][0]["cells"]
    assert row[0] == "web" and row[1].endswith("/2")
    assert row[5] == "main" and row[6] == "nginx:1" and row[7] == "app=web"


def test_pod_table_columns(api: Kube, ns: str) -> None:
    """Pods print Name, Ready, Status, Restarts, Age and the wide IP/Node columns."""
    api.ok(
        "POST",
        f"/api/v1/namespaces/{ns}/pods",
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p1"},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]},
        },
    )
    table = _table(api, f"/api/v1/namespaces/{ns}/pods")
    names = _cols(table)
    assert names[:5] == ["Name", "Ready", "Status", "Restarts", "Age"]
    assert {"IP", "Node"} <= set(names)
    row = table["rows"][0]["cells"]
    assert row[0] == "p1" and row[1] == "0/1"


def test_namespace_table(api: Kube, ns: str) -> None:
    """Namespaces print Name, Status, Age; the built-in namespaces are Active."""
    table = _table(api, "/api/v1/namespaces")
    assert _cols(table) == ["Name", "Status", "Age"]
    rows = {r["cells"][0]: r["cells"] for r in table["rows"]}
    for name in ("default", "kube-system", "kube-public", "kube-node-lease", ns):
        assert rows[name][1] == "Active"


def test_table_watch_first_event_has_columns(api: Kube, ns: str) -> None:
    """A Table watch: the first event's Table has columnDefinitions, later ones have none."""
    with api.watch(cm_path(ns), {"timeoutSeconds": 5}, headers={"Accept": KUBECTL_ACCEPT}) as w:
        assert w.status == 200
        assert w.headers["content-type"] == "application/json", (
            w.headers
        )  # handlers/watch.go: bare media type
        first = w.next()
        assert first is not None and first["type"] == "ADDED"
        assert first["object"]["kind"] == "Table"
        assert _cols(first["object"])[0] == "Name"
        assert len(first["object"]["rows"]) == 1
        second = w.next()
        assert second is not None and second["object"]["kind"] == "Table"
        assert not second["object"].get("columnDefinitions")
        assert second["object"]["rows"][0]["object"]["kind"] == "PartialObjectMetadata"


def test_not_acceptable_media_type_is_406(api: Kube, ns: str) -> None:
    """An Accept header naming only unsupported media types is 406 NotAcceptable."""
    resp = api.get(cm_path(ns, "c1"), headers={"Accept": "application/xml"})
    assert resp.status == 406, resp.body
    assert resp.json()["reason"] == "NotAcceptable"
