"""Discovery documents: legacy and aggregated shapes, Accept negotiation, caching and ETags."""

from __future__ import annotations

import hashlib
import re
from typing import Any

import orjson
import pytest

from kplane.api import catalog as catalog_mod
from kplane.api import gvk
from kplane.api.builtin import records
from kplane.server.endpoints import discovery


@pytest.fixture
def cat() -> catalog_mod.Catalog:
    return records.builtin_catalog()


def _by_name(resources: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["name"]: r for r in resources}


def _widget(version: str = "v1", *, preferred: bool = True) -> catalog_mod.ResourceRecord:
    return catalog_mod.ResourceRecord(
        group="example.com",
        version=version,
        plural="widgets",
        singular="widget",
        kind="Widget",
        list_kind="WidgetList",
        scope="Namespaced",
        custom=True,
        preferred=preferred,
    )


def test_version_reports_kubernetes_1_32() -> None:
    """/version names a 1.32 server with every field clients read."""
    info = discovery.version_info()
    assert (info["major"], info["minor"]) == ("1", "32")
    assert info["gitVersion"].startswith("v1.32.")
    assert re.fullmatch(r"[0-9a-f]{40}", info["gitCommit"])
    assert info["compiler"] == "gc" and info["platform"] == "linux/amd64"
    assert {"gitTreeState", "buildDate", "goVersion"} <= set(info)


def test_api_versions_carries_server_address() -> None:
    """/api lists v1 and the given server address, without apiVersion."""
    doc = discovery.api_versions("10.0.0.1:6443")
    assert doc["kind"] == "APIVersions" and doc["versions"] == ["v1"]
    assert doc["serverAddressByClientCIDRs"] == [
        {"clientCIDR": "0.0.0.0/0", "serverAddress": "10.0.0.1:6443"}
    ]
    assert "apiVersion" not in doc


def test_group_list_excludes_core_and_prefers_first_version(cat: catalog_mod.Catalog) -> None:
    """/apis lists every named group with its preferred version."""
    doc = discovery.api_group_list(cat)
    assert (doc["kind"], doc["apiVersion"]) == ("APIGroupList", "v1")
    groups = {g["name"]: g for g in doc["groups"]}
    assert "" not in groups
    assert groups["apps"]["preferredVersion"] == {"groupVersion": "apps/v1", "version": "v1"}
    # kube-apiserver 1.32 serves autoscaling v2 (preferred) and v1
    assert groups["autoscaling"]["versions"] == [
        {"groupVersion": "autoscaling/v2", "version": "v2"},
        {"groupVersion": "autoscaling/v1", "version": "v1"},
    ]


def test_group_versions_follow_preference(cat: catalog_mod.Catalog) -> None:
    """A preferred version is listed first in /apis/<g>, a non-preferred one after it."""
    cat.replace_group_resource(None, [_widget("v1beta1", preferred=False), _widget("v1")])
    doc = discovery.api_group(cat, "example.com")
    assert doc is not None and doc["kind"] == "APIGroup"
    assert [v["version"] for v in doc["versions"]] == ["v1", "v1beta1"]
    assert doc["preferredVersion"]["version"] == "v1"
    assert discovery.api_group(cat, "nope.example.com") is None
    assert discovery.api_group(cat, "") is None


def test_apps_resource_list_shape(cat: catalog_mod.Catalog) -> None:
    """/apis/apps/v1 carries full APIResource entries with status and scale subresources."""
    doc = discovery.api_resource_list(cat, "apps", "v1")
    assert doc is not None
    assert (doc["kind"], doc["apiVersion"], doc["groupVersion"]) == ("APIResourceList", "v1", "apps/v1")
    res = _by_name(doc["resources"])
    deploy = res["deployments"]
    assert deploy == {
        "name": "deployments",
        "singularName": "deployment",
        "namespaced": True,
        "kind": "Deployment",
        "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
        "shortNames": ["deploy"],
        "categories": ["all"],
        "storageVersionHash": "8aSe+NMegvE=",
    }
    assert res["deployments/scale"] == {
        "name": "deployments/scale",
        "singularName": "",
        "namespaced": True,
        "group": "autoscaling",
        "version": "v1",
        "kind": "Scale",
        "verbs": ["get", "patch", "update"],
    }
    assert res["deployments/status"]["kind"] == "Deployment" and "group" not in res["deployments/status"]
    assert "shortNames" not in res["controllerrevisions"] and "categories" not in res["controllerrevisions"]
    names = [r["name"] for r in doc["resources"]]
    assert names == sorted(names)


def test_core_resource_list_has_pod_subresources(cat: catalog_mod.Catalog) -> None:
    """/api/v1 omits apiVersion and lists pods/log, binding, eviction and namespaces/finalize."""
    doc = discovery.api_resource_list(cat, "", "v1")
    assert doc is not None and "apiVersion" not in doc and doc["groupVersion"] == "v1"
    res = _by_name(doc["resources"])
    assert (res["pods/log"]["kind"], res["pods/log"]["verbs"]) == ("Pod", ["get"])
    assert (res["pods/binding"]["kind"], res["pods/binding"]["verbs"]) == ("Binding", ["create"])
    eviction = res["pods/eviction"]
    assert (eviction["group"], eviction["version"], eviction["kind"]) == ("policy", "v1", "Eviction")
    assert res["namespaces/finalize"]["verbs"] == ["update"]
    assert res["namespaces"]["namespaced"] is False
    assert res["pods"]["storageVersionHash"] == "xPOwRZ+Yhw8="
    assert discovery.api_resource_list(cat, "apps", "v9") is None


def test_aggregated_apis_shape(cat: catalog_mod.Catalog) -> None:
    """Aggregated /apis has every named group, responseKind on resources and subresources."""
    doc = discovery.aggregated(cat, legacy_core=False, version="v2")
    assert (doc["kind"], doc["apiVersion"], doc["metadata"]) == (
        "APIGroupDiscoveryList",
        "apidiscovery.k8s.io/v2",
        {},
    )
    items = {i["metadata"]["name"]: i for i in doc["items"]}
    assert "" not in items and "apps" in items
    (apps_v1,) = items["apps"]["versions"]
    assert (apps_v1["version"], apps_v1["freshness"]) == ("v1", "Current")
    deploy = next(r for r in apps_v1["resources"] if r["resource"] == "deployments")
    assert deploy["responseKind"] == {"group": "apps", "version": "v1", "kind": "Deployment"}
    assert (deploy["scope"], deploy["singularResource"], deploy["shortNames"]) == (
        "Namespaced",
        "deployment",
        ["deploy"],
    )
    assert deploy["subresources"] == [
        {
            "subresource": "scale",
            "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
            "verbs": ["get", "patch", "update"],
        },
        {
            "subresource": "status",
            "responseKind": {"group": "apps", "version": "v1", "kind": "Deployment"},
            "verbs": ["get", "patch", "update"],
        },
    ]
    lease = next(i for i in items["coordination.k8s.io"]["versions"][0]["resources"])
    assert "subresources" not in lease and "shortNames" not in lease


def test_aggregated_api_is_core_only(cat: catalog_mod.Catalog) -> None:
    """Aggregated /api is one unnamed item holding the core group, in the requested version."""
    doc = discovery.aggregated(cat, legacy_core=True, version="v2beta1")
    assert doc["apiVersion"] == "apidiscovery.k8s.io/v2beta1"
    (item,) = doc["items"]
    assert item["metadata"].get("name", "") == ""
    (v1,) = item["versions"]
    pods = next(r for r in v1["resources"] if r["resource"] == "pods")
    assert pods["scope"] == "Namespaced" and pods["categories"] == ["all"]
    # kube-apiserver 1.32 (default feature gates) lists these pod subresources
    assert {s["subresource"] for s in pods["subresources"]} == {
        "attach",
        "binding",
        "ephemeralcontainers",
        "eviction",
        "exec",
        "log",
        "portforward",
        "proxy",
        "status",
    }
    ns = next(r for r in v1["resources"] if r["resource"] == "namespaces")
    assert ns["scope"] == "Cluster"


def test_aggregated_versions_in_preference_order(cat: catalog_mod.Catalog) -> None:
    """A group's versions appear preferred first in aggregated discovery."""
    cat.replace_group_resource(None, [_widget("v1alpha1", preferred=False), _widget("v1")])
    doc = discovery.aggregated(cat, legacy_core=False, version="v2")
    item = next(i for i in doc["items"] if i["metadata"]["name"] == "example.com")
    assert [v["version"] for v in item["versions"]] == ["v1", "v1alpha1"]


_V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
_V2B1 = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"


@pytest.mark.parametrize(
    ("accept", "expected"),
    [
        pytest.param(f"{_V2},{_V2B1},application/json", "v2", id="kubectl-1.32-v2-first"),
        pytest.param(f"{_V2B1},application/json", "v2beta1", id="kubectl-1.29-v2beta1-only"),
        pytest.param(f"{_V2B1},{_V2}", "v2beta1", id="v2beta1-first"),
        pytest.param("application/json", None, id="plain-json"),
        pytest.param("application/json, */*", None, id="json-and-star"),
        pytest.param("*/*", None, id="star"),
        pytest.param("", None, id="empty"),
        pytest.param(f"application/json;q=0.5,{_V2}", "v2", id="q-ranks-above-order"),
        pytest.param(f"{_V2};q=0.1,application/json;q=0.9", None, id="q-prefers-legacy"),
        pytest.param(f"{_V2};q=0,{_V2B1}", "v2beta1", id="q-zero-excluded"),
        pytest.param(
            "application/json;g=apidiscovery.k8s.io;v=v3;as=APIGroupDiscoveryList,application/json",
            None,
            id="unknown-version-skipped",
        ),
        pytest.param(
            f"application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,{_V2B1}",
            "v2beta1",
            id="protobuf-skipped",
        ),
        pytest.param("application/json; charset=utf-8", None, id="json-with-charset"),
        pytest.param(
            " Application/JSON ; G=apidiscovery.k8s.io ; V=v2 ; AS=APIGroupDiscoveryList", "v2", id="case"
        ),
        pytest.param(";;;,,=,garbage/%%%;q=abc", None, id="garbage"),
        pytest.param(f"{_V2};q=nope,{_V2B1}", "v2beta1", id="bad-q-skipped"),
    ],
)
def test_negotiate_discovery(accept: str, expected: str | None) -> None:
    """Accept negotiation picks the best servable aggregated version, or legacy (None)."""
    assert discovery.negotiate_discovery(accept) == expected


def test_content_type_round_trips_through_negotiation() -> None:
    """The content type we send is the media type a client asks for."""
    assert discovery.discovery_content_type("v2") == _V2
    assert discovery.negotiate_discovery(discovery.discovery_content_type("v2beta1")) == "v2beta1"


def test_documents_cached_until_generation_changes(cat: catalog_mod.Catalog) -> None:
    """A document is rebuilt only when the catalog changes."""
    first = discovery.api_resource_list(cat, "apps", "v1")
    assert discovery.api_resource_list(cat, "apps", "v1") is first
    assert discovery.api_group(cat, "example.com") is None
    cat.replace_group_resource(None, [_widget()])
    assert discovery.api_resource_list(cat, "apps", "v1") is not first
    assert discovery.api_group(cat, "example.com") is not None


def test_document_bytes_and_etag(cat: catalog_mod.Catalog) -> None:
    """Serialized documents carry a SHA-512 ETag that changes with the content."""
    found = discovery.document_bytes_and_etag(cat, "/apis/apps/v1")
    assert found is not None
    body, etag = found
    assert orjson.loads(body) == discovery.api_resource_list(cat, "apps", "v1")
    assert etag == hashlib.sha512(body).hexdigest()
    agg = discovery.document_bytes_and_etag(cat, "/apis", discovery_version="v2")
    legacy = discovery.document_bytes_and_etag(cat, "/apis/")
    assert agg is not None and legacy is not None
    assert orjson.loads(agg[0])["kind"] == "APIGroupDiscoveryList"
    assert orjson.loads(legacy[0])["kind"] == "APIGroupList"
    before = discovery.document_bytes_and_etag(cat, "/api", discovery_version="v2")
    cat.replace_group_resource(
        gvk.GroupResource("", "secrets"), []
    )  # a change to the core group changes the /api document
    after = discovery.document_bytes_and_etag(cat, "/api", discovery_version="v2")
    assert before is not None and after is not None and before[1] != after[1]
    assert discovery.document_bytes_and_etag(cat, "/apis/nope/v1") is None
    assert discovery.document_bytes_and_etag(cat, "/apis/a/b/c") is None
    api = discovery.document_bytes_and_etag(cat, "/api", server_address="1.2.3.4:443")
    assert api is not None and b"1.2.3.4:443" in api[0]


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        pytest.param('"abc"', True, id="quoted"),
        pytest.param('W/"abc"', True, id="weak"),
        pytest.param('"x", "abc"', True, id="list"),
        pytest.param("*", True, id="star"),
        pytest.param('"abcd"', False, id="other"),
    ],
)
def test_etag_matches(header: str, expected: bool) -> None:
    """If-None-Match matching accepts quoted, weak, listed and wildcard forms."""
    assert discovery.etag_matches(header, "abc") is expected
