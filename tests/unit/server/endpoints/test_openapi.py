"""OpenAPI v3: the index, per group-version documents, converted schemas and caching."""

from __future__ import annotations

import dataclasses
import hashlib
from typing import Any

import orjson
import pytest

from kplane.api import catalog as catalog_mod
from kplane.api.builtin import records
from kplane.server.endpoints import openapi

_SCHEMAS = "#/components/schemas/"


@pytest.fixture
def cat() -> catalog_mod.Catalog:
    return records.builtin_catalog()


def _doc(cat: catalog_mod.Catalog, group: str, version: str) -> dict[str, Any]:
    body = openapi.openapi_document(cat, group, version)
    assert body is not None
    doc: dict[str, Any] = orjson.loads(body)
    return doc


def _gvk(group: str, version: str, kind: str) -> dict[str, str]:
    return {"group": group, "version": version, "kind": kind}


def _refs(node: Any, out: set[str]) -> set[str]:
    """Every ``$ref`` value under ``node`` (a property *named* ``$ref`` is not a reference)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                out.add(value)
            elif key == "properties":
                for prop in value.values():
                    _refs(prop, out)
            else:
                _refs(value, out)
    elif isinstance(node, list):
        for value in node:
            _refs(value, out)
    return out


def _crd_record() -> catalog_mod.ResourceRecord:
    schema = {
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": {"size": {"type": "integer"}}}},
    }
    return catalog_mod.ResourceRecord(
        group="stable.example.com",
        version="v1",
        plural="crontabs",
        singular="crontab",
        kind="CronTab",
        list_kind="CronTabList",
        scope="Namespaced",
        custom=True,
        has_status=True,
        schema=schema,
    )


def test_index_lists_every_group_version(cat: catalog_mod.Catalog) -> None:
    """The index has one hashed entry per served group-version."""
    paths = openapi.index(cat)["paths"]
    expected = {openapi.gv_path(gv.group, gv.version) for gv in cat.group_versions()}
    assert set(paths) == expected and "api/v1" in paths and "apis/apps/v1" in paths
    url = paths["apis/apps/v1"]["serverRelativeURL"]
    assert url == f"/openapi/v3/apis/apps/v1?hash={openapi.gv_hash(cat, 'apps', 'v1')}"


def test_apps_deployment_patch_enables_server_side_validation(cat: catalog_mod.Catalog) -> None:
    """The Deployment item PATCH carries its GVK and the fieldValidation query parameter."""
    doc = _doc(cat, "apps", "v1")
    assert doc["openapi"].startswith("3.0") and doc["info"]["title"] == "Kubernetes"
    item = doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]
    patch = item["patch"]
    assert patch["x-kubernetes-group-version-kind"] == {
        "group": "apps",
        "version": "v1",
        "kind": "Deployment",
    }
    assert patch["x-kubernetes-action"] == "patch"
    query = {p["name"] for p in patch["parameters"] if p["in"] == "query"}
    assert {"fieldValidation", "fieldManager", "dryRun"} <= query
    assert {"get", "put", "patch", "delete"} <= set(item)
    assert {p["name"] for p in item["parameters"] if p["in"] == "path"} == {"name", "namespace"}
    collection = doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments"]
    assert collection["post"]["x-kubernetes-action"] == "post"
    assert collection["delete"]["x-kubernetes-action"] == "deletecollection"
    assert "fieldValidation" in {p["name"] for p in collection["post"]["parameters"]}
    scale = doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale"]["patch"]
    assert scale["x-kubernetes-group-version-kind"]["kind"] == "Scale"
    assert "/apis/apps/v1/deployments" in doc["paths"]


def test_cluster_scoped_paths_have_no_namespace(cat: catalog_mod.Catalog) -> None:
    """Cluster-scoped resources get /<plural>/{name} paths; verbs limit the operations."""
    doc = _doc(cat, "", "v1")
    assert "/api/v1/namespaces/{name}" in doc["paths"]
    assert "delete" not in doc["paths"]["/api/v1/namespaces"]  # no deletecollection verb
    assert doc["paths"]["/api/v1/namespaces/{name}/finalize"]["put"]["x-kubernetes-action"] == "put"
    eviction = doc["paths"]["/api/v1/namespaces/{namespace}/pods/{name}/eviction"]["post"]
    assert eviction["x-kubernetes-group-version-kind"] == {
        "group": "policy",
        "version": "v1",
        "kind": "Eviction",
    }
    assert "io.k8s.api.policy.v1.Eviction" in doc["components"]["schemas"]


def test_deployment_schema_converted_with_merge_keys(cat: catalog_mod.Catalog) -> None:
    """Component schemas are the real 1.32 ones in OpenAPI 3 form, merge keys kept."""
    schemas = _doc(cat, "apps", "v1")["components"]["schemas"]
    deploy = schemas["io.k8s.api.apps.v1.Deployment"]
    assert deploy["type"] == "object"
    assert deploy["x-kubernetes-group-version-kind"] == [
        {"group": "apps", "kind": "Deployment", "version": "v1"}
    ]
    assert deploy["properties"]["spec"]["allOf"] == [{"$ref": _SCHEMAS + "io.k8s.api.apps.v1.DeploymentSpec"}]
    assert "enum" not in deploy["properties"]["apiVersion"]
    containers = schemas["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    assert containers["x-kubernetes-patch-merge-key"] == "name"
    assert containers["x-kubernetes-patch-strategy"] == "merge"
    assert containers["items"] == {"$ref": _SCHEMAS + "io.k8s.api.core.v1.Container"}
    assert schemas["io.k8s.api.core.v1.PodSpec"]["properties"]["volumes"]["type"] == "array"
    assert schemas["io.k8s.api.apps.v1.DeploymentSpec"]["properties"]["replicas"] == {
        "description": schemas["io.k8s.api.apps.v1.DeploymentSpec"]["properties"]["replicas"]["description"],
        "format": "int32",
        "type": "integer",
    }
    int_or_string = schemas["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]
    assert int_or_string["x-kubernetes-int-or-string"] is True
    assert "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" in schemas
    assert "io.k8s.api.batch.v1.Job" not in schemas  # only what apps/v1 reaches


def test_every_ref_resolves_and_no_json_schema_leftovers(cat: catalog_mod.Catalog) -> None:
    """Each document is self-contained: all $refs resolve, no $defs or null types remain."""
    for gv in cat.group_versions():
        doc = _doc(cat, gv.group, gv.version)
        schemas = doc["components"]["schemas"]
        refs = _refs(doc, set())
        assert refs, gv
        assert all(r.startswith(_SCHEMAS) and r.removeprefix(_SCHEMAS) in schemas for r in refs), gv
        for name in (
            "io.k8s.apimachinery.pkg.apis.meta.v1.Status",
            "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions",
        ):
            assert name in schemas, (gv, name)
    body = openapi.openapi_document(cat, "", "v1")
    assert body is not None and b'"null"' not in body and b"$defs" not in body


def test_custom_resource_schema_is_wrapped(cat: catalog_mod.Catalog) -> None:
    """A CRD's schema becomes its kind's component, with apiVersion/kind/metadata and GVK added."""
    cat.replace_group_resource(None, [_crd_record()])
    assert "apis/stable.example.com/v1" in openapi.index(cat)["paths"]
    doc = _doc(cat, "stable.example.com", "v1")
    schemas = doc["components"]["schemas"]
    crontab = schemas["com.example.stable.v1.CronTab"]
    assert crontab["properties"]["spec"]["properties"]["size"] == {"type": "integer"}
    assert {"apiVersion", "kind", "metadata"} <= set(crontab["properties"])
    assert crontab["x-kubernetes-group-version-kind"] == [
        {"group": "stable.example.com", "kind": "CronTab", "version": "v1"}
    ]
    patch = doc["paths"]["/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}"]["patch"]
    assert "application/strategic-merge-patch+json" not in patch["requestBody"]["content"]
    assert all(r.removeprefix(_SCHEMAS) in schemas for r in _refs(doc, set()))


def test_documents_cached_and_hash_follows_changes(cat: catalog_mod.Catalog) -> None:
    """Documents are built once per generation; a GV's hash changes only when its inputs do."""
    first = openapi.openapi_document(cat, "apps", "v1")
    assert openapi.openapi_document(cat, "apps", "v1") is first
    apps_hash = openapi.gv_hash(cat, "apps", "v1")
    cat.replace_group_resource(None, [_crd_record()])
    assert openapi.gv_hash(cat, "apps", "v1") == apps_hash
    before = openapi.gv_hash(cat, "stable.example.com", "v1")
    changed = dataclasses.replace(_crd_record(), schema={"type": "object"})
    cat.replace_group_resource(changed.group_resource, [changed])
    assert openapi.gv_hash(cat, "stable.example.com", "v1") != before
    found = openapi.document_bytes_and_etag(cat, "apps", "v1")
    assert found is not None and found[1] == hashlib.sha512(found[0]).hexdigest()
    assert openapi.openapi_document(cat, "nope", "v1") is None
    assert openapi.gv_hash(cat, "nope", "v1") is None


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        pytest.param("api/v1", ("", "v1"), id="core"),
        pytest.param("/apis/apps/v1", ("apps", "v1"), id="group"),
        pytest.param("apis/apps", None, id="short"),
        pytest.param("api/v1/extra", None, id="long"),
    ],
)
def test_parse_gv_path(path: str, expected: tuple[str, str] | None) -> None:
    """Index keys parse back into group-versions; malformed keys give None."""
    assert openapi.parse_gv_path(path) == expected
