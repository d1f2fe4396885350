"""Server-populated metadata and write semantics over raw HTTP: uid, timestamps, RVs, deletes."""

from __future__ import annotations

import re
import uuid
from typing import Any

import pytest

from tests.e2e.helpers import Kube, assert_status, cm_path, configmap, deployment, unique

MERGE = "application/merge-patch+json"
RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
CONFLICT = (
    'Operation cannot be fulfilled on configmaps "{}": the object has been modified; '
    "please apply your changes to the latest version and try again"
)


@pytest.fixture(scope="module")
def ns(api: Kube) -> str:
    name = unique("meta")
    api.ok(
        "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    )
    return name


def _cm(api: Kube, ns: str, name: str, **extra: Any) -> dict[str, Any]:
    return api.ok("POST", cm_path(ns), configmap(name, ns, **extra))


def test_create_populates_system_fields(api: Kube, ns: str) -> None:
    """Create sets uid (UUID), creationTimestamp (RFC 3339, seconds, UTC), resourceVersion and namespace."""
    resp = api.post(cm_path(ns), configmap("sys", ns))
    assert resp.status == 201
    meta = resp.json()["metadata"]
    uuid.UUID(meta["uid"])
    assert RFC3339.match(meta["creationTimestamp"]), meta["creationTimestamp"]
    assert int(meta["resourceVersion"]) > 0
    assert meta["namespace"] == ns
    assert "generation" not in meta or meta["generation"] in (0, None)


def test_client_cannot_set_system_fields(api: Kube, ns: str) -> None:
    """uid, creationTimestamp and resourceVersion sent on create are replaced by the server's."""
    body = configmap("forged", ns)
    body["metadata"].update({"uid": "forged-uid", "creationTimestamp": "2000-01-01T00:00:00Z"})
    meta = api.ok("POST", cm_path(ns), body)["metadata"]
    assert meta["uid"] != "forged-uid" and not meta["creationTimestamp"].startswith("2000")


def test_namespace_in_body_must_match_url(api: Kube, ns: str) -> None:
    """A body namespace different from the URL's is 400 BadRequest."""
    body = configmap(unique("nsmis"), "default")
    st = assert_status(api.post(cm_path(ns), body), 400, "BadRequest")
    assert "namespace" in st["message"]


def test_every_write_bumps_resource_version(api: Kube, ns: str) -> None:
    """Update, patch, and metadata-only writes each produce a new, larger resourceVersion; uid is stable."""
    c = _cm(api, ns, "rv")
    rvs = [int(c["metadata"]["resourceVersion"])]
    c["data"] = {"k": "2"}
    c = api.ok("PUT", cm_path(ns, "rv"), c)
    rvs.append(int(c["metadata"]["resourceVersion"]))
    c = api.ok(
        "PATCH",
        cm_path(ns, "rv"),
        {"metadata": {"labels": {"x": "y"}}},
        content_type="application/merge-patch+json",
    )
    rvs.append(int(c["metadata"]["resourceVersion"]))
    assert rvs == sorted(rvs) and len(set(rvs)) == 3
    assert api.ok("GET", cm_path(ns, "rv"))["metadata"]["uid"] == c["metadata"]["uid"]


def test_put_with_stale_rv_conflicts(api: Kube, ns: str) -> None:
    """PUT with an old resourceVersion is 409 Conflict with the exact upstream message."""
    c = _cm(api, ns, "stale")
    api.ok("PATCH", cm_path(ns, "stale"), {"data": {"k": "new"}}, content_type="application/merge-patch+json")
    c["data"] = {"k": "lost"}
    st = assert_status(api.put(cm_path(ns, "stale"), c), 409, "Conflict")
    assert st["message"] == CONFLICT.format("stale")
    assert api.ok("GET", cm_path(ns, "stale"))["data"] == {"k": "new"}


def test_put_without_rv_is_unconditional(api: Kube, ns: str) -> None:
    """PUT without metadata.resourceVersion overwrites (ConfigMaps allow unconditional update)."""
    _cm(api, ns, "uncond")
    out = api.ok("PUT", cm_path(ns, "uncond"), configmap("uncond", ns, data={"k": "over"}))
    assert out["data"] == {"k": "over"}


def test_patch_with_rv_is_a_precondition(api: Kube, ns: str) -> None:
    """A patch carrying a stale metadata.resourceVersion is 409 Conflict."""
    c = _cm(api, ns, "patchrv")
    api.ok("PATCH", cm_path(ns, "patchrv"), {"data": {"k": "1"}}, content_type="application/merge-patch+json")
    st = assert_status(
        api.patch(
            cm_path(ns, "patchrv"),
            {"metadata": {"resourceVersion": c["metadata"]["resourceVersion"]}, "data": {"k": "2"}},
        ),
        409,
        "Conflict",
    )
    assert st["message"] == CONFLICT.format("patchrv")


def test_delete_returns_status_for_configmaps(api: Kube, ns: str) -> None:
    """Deleting a ConfigMap returns a Success Status naming the resource and uid."""
    c = _cm(api, ns, "del")
    st = api.ok("DELETE", cm_path(ns, "del"))
    assert st["kind"] == "Status" and st["status"] == "Success"
    assert st["details"]["name"] == "del" and st["details"]["kind"] == "configmaps"
    assert st["details"]["uid"] == c["metadata"]["uid"]
    assert api.get(cm_path(ns, "del")).status == 404


def test_delete_returns_object_for_pods(api: Kube, ns: str) -> None:
    """Deleting a Pod returns the Pod (ReturnDeletedObject types)."""
    api.ok(
        "POST",
        f"/api/v1/namespaces/{ns}/pods",
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "dp"},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]},
        },
    )
    out = api.ok("DELETE", f"/api/v1/namespaces/{ns}/pods/dp")
    assert out["kind"] == "Pod" and out["metadata"]["name"] == "dp"


def test_delete_preconditions(api: Kube, ns: str) -> None:
    """DeleteOptions preconditions on uid or resourceVersion that do not match are 409 and keep the object."""
    c = _cm(api, ns, "precond")
    assert_status(
        api.delete(cm_path(ns, "precond"), {"preconditions": {"uid": str(uuid.uuid4())}}), 409, "Conflict"
    )
    assert_status(
        api.delete(cm_path(ns, "precond"), {"preconditions": {"resourceVersion": "1"}}), 409, "Conflict"
    )
    assert api.get(cm_path(ns, "precond")).status == 200
    api.ok(
        "DELETE",
        cm_path(ns, "precond"),
        {"preconditions": {"uid": c["metadata"]["uid"], "resourceVersion": c["metadata"]["resourceVersion"]}},
    )
    assert api.get(cm_path(ns, "precond")).status == 404


def test_finalizer_delete_returns_object_with_deletion_timestamp(api: Kube, ns: str) -> None:
    """DELETE of an object with finalizers returns 200 and the object with deletionTimestamp; it remains."""
    _cm(api, ns, "held", finalizers=["example.com/x"])
    out = api.ok("DELETE", cm_path(ns, "held"))
    assert out["kind"] == "ConfigMap"
    assert RFC3339.match(out["metadata"]["deletionTimestamp"])
    assert out["metadata"].get("deletionGracePeriodSeconds", 0) == 0
    assert api.ok("GET", cm_path(ns, "held"))["metadata"]["deletionTimestamp"]
    api.ok(
        "PATCH",
        cm_path(ns, "held"),
        {"metadata": {"finalizers": None}},
        content_type="application/merge-patch+json",
    )
    assert api.get(cm_path(ns, "held")).status == 404


def test_deployment_generation(api: Kube, ns: str) -> None:
    """Deployment generation starts at 1, bumps on spec or annotation changes, not on labels or status."""
    base = f"/apis/apps/v1/namespaces/{ns}/deployments"
    dep = api.ok("POST", base, deployment("g", ns))
    assert dep["metadata"]["generation"] == 1
    dep = api.ok("PATCH", f"{base}/g", {"spec": {"replicas": 4}}, content_type="application/merge-patch+json")
    assert dep["metadata"]["generation"] == 2
    dep = api.ok(
        "PATCH",
        f"{base}/g",
        {"metadata": {"labels": {"l": "v"}}},
        content_type="application/merge-patch+json",
    )
    assert dep["metadata"]["generation"] == 2
    dep = api.ok(
        "PATCH", f"{base}/g/status", {"status": {"replicas": 4}}, content_type="application/merge-patch+json"
    )
    assert dep["metadata"]["generation"] == 2
    dep = api.ok("PATCH", f"{base}/g", {"metadata": {"annotations": {"a": "b"}}}, content_type=MERGE)
    assert dep["metadata"]["generation"] == 3


def test_server_side_apply_creates_with_201(api: Kube, ns: str) -> None:
    """An apply patch for a missing object creates it (201) and records an Apply managedFields entry."""
    resp = api.patch(
        cm_path(ns, "ssa"),
        configmap("ssa", ns, data={"a": "b"}),
        ptype="apply",
        query={"fieldManager": "e2e"},
    )
    assert resp.status == 201, resp.body
    obj = resp.json()
    assert obj["data"] == {"a": "b"}
    again = api.patch(
        cm_path(ns, "ssa"),
        configmap("ssa", ns, data={"a": "c"}),
        ptype="apply",
        query={"fieldManager": "e2e"},
    )
    assert again.status == 200 and again.json()["data"] == {"a": "c"}
    managers = {(m["manager"], m["operation"]) for m in again.json()["metadata"].get("managedFields", [])}
    assert ("e2e", "Apply") in managers


def test_apply_patch_requires_field_manager(api: Kube, ns: str) -> None:
    """An apply patch without fieldManager is 422 with a cause on fieldManager."""
    st = assert_status(api.patch(cm_path(ns, "nofm"), configmap("nofm", ns), ptype="apply"), 422, "Invalid")
    assert any(c.get("field") == "fieldManager" for c in st["details"]["causes"]), st
    assert api.get(cm_path(ns, "nofm")).status == 404


def test_dry_run_create_has_no_resource_version(api: Kube, ns: str) -> None:
    """dryRun=All create is 201 with uid and creationTimestamp but no resourceVersion; nothing is stored."""
    resp = api.post(cm_path(ns), configmap("dry", ns), query={"dryRun": "All"})
    assert resp.status == 201
    meta = resp.json()["metadata"]
    assert meta.get("uid") and meta.get("creationTimestamp") and not meta.get("resourceVersion")
    assert api.get(cm_path(ns, "dry")).status == 404


def test_dry_run_delete_keeps_object(api: Kube, ns: str) -> None:
    """A DELETE with DeleteOptions dryRun ["All"] leaves the object in place."""
    c = _cm(api, ns, "drydel")
    api.ok("DELETE", cm_path(ns, "drydel"), {"dryRun": ["All"]})
    assert (
        api.ok("GET", cm_path(ns, "drydel"))["metadata"]["resourceVersion"]
        == c["metadata"]["resourceVersion"]
    )


def test_unknown_dry_run_value_is_400(api: Kube, ns: str) -> None:
    """An unrecognised dryRun value is rejected and nothing is stored."""
    resp = api.post(cm_path(ns), configmap("drybad", ns), query={"dryRun": "Sometimes"})
    assert resp.status in (400, 422), resp.body
    assert api.get(cm_path(ns, "drybad")).status == 404
