"""Discovery end to end: legacy documents, aggregated v2/v2beta1 negotiation, OpenAPI v3, explain."""

from __future__ import annotations

from typing import Any

from tests.e2e.conftest import Server, requires_kubectl
from tests.e2e.helpers import Kube

V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
V2BETA1 = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"


def _ct_params(content_type: str) -> dict[str, str]:
    parts = [p.strip() for p in content_type.split(";")]
    return {k: v for k, _, v in (p.partition("=") for p in parts[1:])}


def test_version_reports_1_32(api: Kube) -> None:
    """/version answers a 1.32 version document (it picks the dispatcher's kubectl)."""
    doc = api.ok("GET", "/version")
    assert doc["major"] == "1" and doc["minor"] == "32"
    assert doc["gitVersion"].startswith("v1.32.")
    assert doc["platform"]


def test_legacy_api_root(api: Kube) -> None:
    """GET /api is an APIVersions listing v1."""
    doc = api.ok("GET", "/api")
    assert doc["kind"] == "APIVersions"
    assert doc["versions"] == ["v1"]
    assert doc["serverAddressByClientCIDRs"]


def test_legacy_apis_group_list(api: Kube) -> None:
    """GET /apis is an APIGroupList whose groups carry versions and a preferred version."""
    doc = api.ok("GET", "/apis")
    assert doc["kind"] == "APIGroupList" and doc["apiVersion"] == "v1"
    groups = {g["name"]: g for g in doc["groups"]}
    for name in ("apps", "batch", "coordination.k8s.io", "events.k8s.io"):
        assert name in groups, sorted(groups)
    apps = groups["apps"]
    assert {"groupVersion": "apps/v1", "version": "v1"} in apps["versions"]
    assert apps["preferredVersion"] == {"groupVersion": "apps/v1", "version": "v1"}


def test_legacy_apis_group(api: Kube) -> None:
    """GET /apis/apps is one APIGroup."""
    doc = api.ok("GET", "/apis/apps")
    assert doc["kind"] == "APIGroup" and doc["name"] == "apps"
    assert doc["preferredVersion"]["groupVersion"] == "apps/v1"


def _resources(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["name"]: r for r in doc["resources"]}


def test_legacy_core_v1_resources(api: Kube) -> None:
    """GET /api/v1 lists core resources with the fields clients need."""
    doc = api.ok("GET", "/api/v1")
    assert doc["kind"] == "APIResourceList" and doc["groupVersion"] == "v1"
    res = _resources(doc)
    pods = res["pods"]
    assert pods["singularName"] == "pod" and pods["namespaced"] is True and pods["kind"] == "Pod"
    assert set(pods["verbs"]) >= {
        "create",
        "delete",
        "deletecollection",
        "get",
        "list",
        "patch",
        "update",
        "watch",
    }
    assert "po" in pods["shortNames"]
    assert "all" in pods.get("categories", [])
    assert res["namespaces"]["namespaced"] is False
    assert res["nodes"]["namespaced"] is False
    assert "pods/status" in res
    for r in res.values():
        assert isinstance(r["singularName"], str) and isinstance(r["verbs"], list), r


def test_legacy_apps_v1_resources(api: Kube) -> None:
    """GET /apis/apps/v1 has deployments (deploy, category all) and scale/status subresources."""
    doc = api.ok("GET", "/apis/apps/v1")
    assert doc["kind"] == "APIResourceList" and doc["groupVersion"] == "apps/v1"
    res = _resources(doc)
    dep = res["deployments"]
    assert dep["kind"] == "Deployment" and dep["singularName"] == "deployment"
    assert dep["shortNames"] == ["deploy"] and "all" in dep["categories"]
    scale = res["deployments/scale"]
    assert (scale["group"], scale["version"], scale["kind"]) == ("autoscaling", "v1", "Scale")
    assert set(scale["verbs"]) >= {"get", "patch", "update"}
    assert res["deployments/status"]["kind"] == "Deployment"


def test_aggregated_discovery_v2(api: Kube) -> None:
    """Asking for v2 aggregated discovery gets a v2 APIGroupDiscoveryList with embedded resources."""
    resp = api.get("/apis", headers={"Accept": f"{V2},{V2BETA1},application/json"})
    assert resp.status == 200
    params = _ct_params(resp.content_type)
    assert (params.get("g"), params.get("v"), params.get("as")) == (
        "apidiscovery.k8s.io",
        "v2",
        "APIGroupDiscoveryList",
    ), resp.content_type
    doc = resp.json()
    assert doc["kind"] == "APIGroupDiscoveryList" and doc["apiVersion"] == "apidiscovery.k8s.io/v2"
    apps = next(i for i in doc["items"] if i["metadata"]["name"] == "apps")
    v1 = apps["versions"][0]
    assert v1["version"] == "v1"
    dep = next(r for r in v1["resources"] if r["resource"] == "deployments")
    assert dep["responseKind"] == {"group": "apps", "version": "v1", "kind": "Deployment"}
    assert dep["scope"] == "Namespaced" and dep["singularResource"] == "deployment"
    assert dep["shortNames"] == ["deploy"]
    subs = {s["subresource"]: s for s in dep["subresources"]}
    assert subs["scale"]["responseKind"]["kind"] == "Scale"
    assert "status" in subs


def test_aggregated_discovery_core_v2(api: Kube) -> None:
    """/api in aggregated form is one item with an empty name holding the v1 resources."""
    resp = api.get("/api", headers={"Accept": f"{V2},application/json"})
    assert resp.status == 200 and _ct_params(resp.content_type).get("v") == "v2", resp.content_type
    doc = resp.json()
    assert len(doc["items"]) == 1 and doc["items"][0]["metadata"].get("name", "") == ""
    names = {r["resource"] for r in doc["items"][0]["versions"][0]["resources"]}
    assert {"pods", "configmaps", "namespaces"} <= names


def test_aggregated_discovery_v2beta1_only(api: Kube) -> None:
    """A client asking only for v2beta1 (kubectl 1.29) gets v2beta1, never v2."""
    resp = api.get("/apis", headers={"Accept": f"{V2BETA1},application/json"})
    assert resp.status == 200
    params = _ct_params(resp.content_type)
    assert (params.get("g"), params.get("v"), params.get("as")) == (
        "apidiscovery.k8s.io",
        "v2beta1",
        "APIGroupDiscoveryList",
    ), resp.content_type
    doc = resp.json()
    assert doc["apiVersion"] == "apidiscovery.k8s.io/v2beta1" and doc["kind"] == "APIGroupDiscoveryList"
    assert any(i["metadata"]["name"] == "apps" for i in doc["items"])


def test_plain_json_accept_gets_legacy(api: Kube) -> None:
    """Accept: application/json alone gets legacy discovery."""
    resp = api.get("/apis", headers={"Accept": "application/json"})
    assert resp.content_type.split(";")[0] == "application/json"
    assert "g=apidiscovery" not in resp.content_type
    assert resp.json()["kind"] == "APIGroupList"


def test_openapi_v3_index_and_group_doc(api: Kube) -> None:
    """/openapi/v3 indexes every served GV; the apps/v1 doc has the Deployment PATCH op and schemas."""
    index = api.ok("GET", "/openapi/v3")["paths"]
    assert "api/v1" in index and "apis/apps/v1" in index and "apis/batch/v1" in index
    url = index["apis/apps/v1"]["serverRelativeURL"]
    assert url.startswith("/openapi/v3/apis/apps/v1")
    doc = api.ok("GET", url)
    assert doc["openapi"].startswith("3.")
    op = doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"]
    assert op["x-kubernetes-group-version-kind"] == {"group": "apps", "version": "v1", "kind": "Deployment"}
    assert any(p.get("name") == "fieldValidation" for p in op["parameters"])
    schemas = doc["components"]["schemas"]
    assert any(s.get("x-kubernetes-group-version-kind") for s in schemas.values())


def test_openapi_v3_unknown_gv_is_404(api: Kube) -> None:
    """An OpenAPI document for a group-version that is not served is a 404."""
    assert api.get("/openapi/v3/apis/nope.example.com/v1").status == 404


@requires_kubectl
def test_kubectl_explain_deployment_spec(server: Server) -> None:
    """kubectl explain deployment.spec prints the field documentation."""
    out = server.kubectl("explain", "deployment.spec").stdout
    assert "KIND:" in out and "Deployment" in out
    assert "replicas" in out and "selector" in out and "template" in out


@requires_kubectl
def test_kubectl_api_versions(server: Server) -> None:
    """kubectl api-versions lists v1 and the group versions."""
    lines = server.kubectl("api-versions").stdout.split()
    assert "v1" in lines and "apps/v1" in lines and "batch/v1" in lines and "coordination.k8s.io/v1" in lines
