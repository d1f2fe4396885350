"""CustomResourceDefinitions end to end: schema validation, defaults, pruning, subresources, versions."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s_client
from kubernetes.client.exceptions import ApiException

from tests.e2e.conftest import Server, requires_kubectl
from tests.e2e.helpers import TABLE_ACCEPT, Kube, assert_status, poll, unique

GROUP = "e2e.kplane.dev"
CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"

WIDGET_CRD = f"""
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.{GROUP}
spec:
  group: {GROUP}
  scope: Namespaced
  names:
    plural: widgets
    singular: widget
    kind: Widget
    listKind: WidgetList
    shortNames: [wdg]
    categories: [all]
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {{}}
      scale:
        specReplicasPath: .spec.replicas
        statusReplicasPath: .status.replicas
    additionalPrinterColumns:
    - name: Color
      type: string
      jsonPath: .spec.color
    - name: Size
      type: string
      jsonPath: .spec.size
    - name: Replicas
      type: integer
      jsonPath: .spec.replicas
    - name: Age
      type: date
      jsonPath: .metadata.creationTimestamp
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            description: The desired widget.
            required: [color]
            properties:
              color:
                type: string
                description: Paint colour of the widget.
              size:
                type: string
                enum: [small, large]
                default: small
              replicas:
                type: integer
                minimum: 0
                maximum: 10
                default: 1
          status:
            type: object
            properties:
              replicas:
                type: integer
              phase:
                type: string
"""


def _crd(plural: str, kind: str, versions: list[dict[str, Any]], **names: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {"plural": plural, "singular": kind.lower(), "kind": kind, **names},
            "versions": versions,
        },
    }


def _version(name: str, served: bool = True, storage: bool = True, **schema: Any) -> dict[str, Any]:
    props = schema or {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
    return {
        "name": name,
        "served": served,
        "storage": storage,
        "schema": {"openAPIV3Schema": {"type": "object", "properties": props}},
    }


def _discovered(api: Kube, version: str, plural: str) -> bool:
    resp = api.get(f"/apis/{GROUP}/{version}")
    return resp.status == 200 and any(r["name"] == plural for r in resp.json()["resources"])


def _install(api: Kube, crd: dict[str, Any]) -> dict[str, Any]:
    created = api.ok("POST", CRD_PATH, crd)
    served = [v["name"] for v in crd["spec"]["versions"] if v["served"]]
    plural = crd["spec"]["names"]["plural"]
    poll(lambda: all(_discovered(api, v, plural) for v in served))
    return created


@pytest.fixture(scope="module")
def widgets(server: Server, api: Kube) -> Iterator[str]:
    """The Widget CRD, installed with kubectl from YAML; yields the namespaced collection path's prefix."""
    server.kubectl("apply", "-f", "-", input=WIDGET_CRD)
    crd = poll(lambda: _established(api, f"widgets.{GROUP}"))
    assert crd["status"]["acceptedNames"]["kind"] == "Widget"
    poll(lambda: _discovered(api, "v1", "widgets"))
    yield f"/apis/{GROUP}/v1/namespaces"


def _established(api: Kube, name: str) -> dict[str, Any] | None:
    obj = api.ok("GET", f"{CRD_PATH}/{name}")
    conds = {c["type"]: c["status"] for c in obj.get("status", {}).get("conditions", [])}
    return obj if conds.get("Established") == "True" else None


@pytest.fixture
def ns(api: Kube) -> str:
    name = unique("crd")
    api.ok(
        "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    )
    return name


def _widget(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "metadata": {"name": name}, "spec": spec}


def _wpath(widgets: str, ns: str, name: str = "", sub: str = "") -> str:
    path = f"{widgets}/{ns}/widgets"
    if name:
        path += f"/{name}"
    if sub:
        path += f"/{sub}"
    return path


def _obj(value: object) -> dict[str, Any]:
    """A CustomObjectsApi result, which must be a decoded JSON object."""
    assert isinstance(value, dict), value
    return value


def _rows(out: str) -> list[list[str]]:
    return [re.split(r"\s{2,}", line.strip()) for line in out.strip().splitlines()]


# --- kubectl --------------------------------------------------------------------------------------


@requires_kubectl
def test_get_shows_printer_columns(server: Server, api: Kube, widgets: str, ns: str) -> None:
    """kubectl get widgets prints NAME then exactly the CRD's additionalPrinterColumns (a date as an age)."""
    api.ok("POST", _wpath(widgets, ns), _widget("w1", color="red", size="large", replicas=3))
    rows = _rows(server.kubectl("get", "widgets", "-n", ns).stdout)
    assert rows[0] == ["NAME", "COLOR", "SIZE", "REPLICAS", "AGE"]
    assert rows[1][:4] == ["w1", "red", "large", "3"]
    assert re.fullmatch(r"\d+s", rows[1][4]), rows


@requires_kubectl
def test_shortname_and_category(server: Server, api: Kube, widgets: str, ns: str) -> None:
    """kubectl get <shortName> and kubectl get all (category) both list the custom resource."""
    api.ok("POST", _wpath(widgets, ns), _widget("short", color="blue"))
    by_short = _rows(server.kubectl("get", "wdg", "-n", ns).stdout)
    assert [r[0] for r in by_short[1:]] == ["short"]
    everything = server.kubectl("get", "all", "-n", ns).stdout
    assert f"widget.{GROUP}/short" in everything


@requires_kubectl
def test_kubectl_scale(server: Server, api: Kube, widgets: str, ns: str) -> None:
    """kubectl scale goes through the scale subresource and lands in .spec.replicas."""
    api.ok("POST", _wpath(widgets, ns), _widget("sc", color="green", replicas=2))
    out = server.kubectl("scale", f"widgets.{GROUP}/sc", "--replicas=4", "-n", ns).stdout
    assert out.strip() == f"widget.{GROUP}/sc scaled"
    assert api.ok("GET", _wpath(widgets, ns, "sc"))["spec"]["replicas"] == 4
    scale = api.ok("GET", _wpath(widgets, ns, "sc", "scale"))
    assert scale["kind"] == "Scale" and scale["apiVersion"] == "autoscaling/v1"
    assert scale["spec"]["replicas"] == 4


@requires_kubectl
def test_explain_custom_resource(server: Server, widgets: str) -> None:
    """kubectl explain widget.spec prints the CRD's own fields, types and descriptions."""
    out = server.kubectl("explain", "widget.spec").stdout
    assert "KIND:       Widget" in out and f"GROUP:      {GROUP}" in out
    assert "FIELDS:" in out
    assert re.search(r"color\t<string> -required-", out), out
    assert "Paint colour of the widget." in out
    assert "replicas\t<integer>" in out and "size\t<string>" in out


@requires_kubectl
def test_kubectl_create_strict_unknown_field(server: Server, widgets: str, ns: str) -> None:
    """kubectl create (fieldValidation=Strict) refuses an unknown field of a custom resource."""
    doc = yaml.safe_dump(_widget("typo", color="red", colour="red") | {"metadata": {"name": "typo"}})
    res = server.kubectl("create", "-n", ns, "-f", "-", input=doc, check=False)
    assert res.returncode != 0
    assert 'strict decoding error: unknown field "spec.colour"' in res.stderr


# --- validation, defaults, pruning (raw HTTP) -----------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "field", "cause_type", "message"),
    [
        ({"color": "red", "replicas": "three"}, "spec.replicas", "FieldValueTypeInvalid", "integer"),
        ({"color": "red", "size": "huge"}, "spec.size", "FieldValueNotSupported", '"small", "large"'),
        ({"size": "small"}, "spec.color", "FieldValueRequired", "Required value"),
        ({"color": "red", "replicas": 11}, "spec.replicas", "FieldValueInvalid", "less than or equal to 10"),
    ],
    ids=["wrong-type", "enum", "required", "maximum"],
)
def test_invalid_custom_resource(
    api: Kube, widgets: str, ns: str, spec: dict[str, Any], field: str, cause_type: str, message: str
) -> None:
    """A schema violation is a 422 Invalid whose causes name the field, the kind of error and a message."""
    resp = api.post(_wpath(widgets, ns), _widget("bad", **spec))
    st = assert_status(resp, 422, "Invalid")
    assert st["details"]["kind"] == "Widget" and st["details"]["group"] == GROUP
    assert st["details"]["name"] == "bad"
    causes = st["details"]["causes"]
    assert [c["field"] for c in causes] == [field], causes
    assert causes[0]["reason"] == cause_type, causes
    assert message in causes[0]["message"], causes
    assert st["message"].startswith(f'Widget.{GROUP} "bad" is invalid: {field}: '), st["message"]
    assert_status(api.get(_wpath(widgets, ns, "bad")), 404, "NotFound")


def test_defaults_filled(api: Kube, widgets: str, ns: str) -> None:
    """Schema defaults appear in the created object and in later reads."""
    created = api.ok("POST", _wpath(widgets, ns), _widget("def", color="red"))
    assert created["spec"] == {"color": "red", "size": "small", "replicas": 1}
    assert api.ok("GET", _wpath(widgets, ns, "def"))["spec"] == created["spec"]


@pytest.mark.parametrize("mode", ["Warn", "Ignore", None])
def test_unknown_fields_pruned(api: Kube, widgets: str, ns: str, mode: str | None) -> None:
    """Unknown fields are pruned under Warn, Ignore and the default; only Warn(/default) warns."""
    name = f"prune-{(mode or 'default').lower()}"
    body = _widget(name, color="red", bogus=1) | {"extra": {"x": 1}}
    query = {"fieldValidation": mode} if mode else None
    resp = api.post(_wpath(widgets, ns), body, query=query)
    assert resp.status == 201, resp.body
    stored = api.ok("GET", _wpath(widgets, ns, name))
    assert "bogus" not in stored["spec"] and "extra" not in stored
    warning = resp.headers.get("warning", "")
    if mode == "Ignore":
        assert warning == ""
    else:
        assert 'unknown field \\"spec.bogus\\"' in warning and 'unknown field \\"extra\\"' in warning


def test_unknown_fields_strict(api: Kube, widgets: str, ns: str) -> None:
    """fieldValidation=Strict refuses an unknown custom-resource field with a 400 naming it."""
    resp = api.post(
        _wpath(widgets, ns), _widget("strict", color="red", bogus=1), query={"fieldValidation": "Strict"}
    )
    st = assert_status(resp, 400, "BadRequest")
    assert 'unknown field "spec.bogus"' in st["message"], st
    assert_status(api.get(_wpath(widgets, ns, "strict")), 404, "NotFound")


# --- subresources and generation ------------------------------------------------------------------


def test_status_subresource_and_generation(api: Kube, widgets: str, ns: str) -> None:
    """/status writes change only status without bumping generation; the main endpoint ignores status."""
    obj = api.ok("POST", _wpath(widgets, ns), _widget("gen", color="red"))
    assert obj["metadata"]["generation"] == 1
    obj["status"] = {"phase": "Ready", "replicas": 1}
    obj["spec"]["color"] = "ignored-by-status"
    st = api.ok("PUT", _wpath(widgets, ns, "gen", "status"), obj)
    assert st["status"] == {"phase": "Ready", "replicas": 1}
    assert st["spec"]["color"] == "red"
    assert st["metadata"]["generation"] == 1
    assert int(st["metadata"]["resourceVersion"]) > int(obj["metadata"]["resourceVersion"])

    st["status"] = {"phase": "Changed-via-main"}
    st["spec"]["color"] = "blue"
    main = api.ok("PUT", _wpath(widgets, ns, "gen"), st)
    assert main["spec"]["color"] == "blue"
    assert main["status"] == {"phase": "Ready", "replicas": 1}
    assert main["metadata"]["generation"] == 2

    patched = api.ok(
        "PATCH",
        _wpath(widgets, ns, "gen", "status"),
        {"status": {"phase": "Done"}},
        content_type="application/merge-patch+json",
    )
    assert patched["status"]["phase"] == "Done" and patched["metadata"]["generation"] == 2
    only_status = api.patch(_wpath(widgets, ns, "gen"), {"status": {"phase": "X"}})
    assert only_status.status == 200, only_status.body
    assert only_status.json()["status"]["phase"] == "Done"
    assert only_status.json()["metadata"]["generation"] == 2


def test_status_merge_patches_own_status_fields_only(api: Kube, widgets: str, ns: str) -> None:
    """An operator's status merge PATCHes (fieldManager set) change status alone: the creator's
    managedFields entry is kept as it was, the operator gets an Update entry for ``status`` with
    ``subresource: status`` that grows with each patch (structured-merge-diff's rules, as
    kube-apiserver records them), and status fields a patch leaves alone are kept."""
    path = _wpath(widgets, ns, "ops")
    created = api.ok(
        "POST", _wpath(widgets, ns), _widget("ops", color="red"), query={"fieldManager": "creator"}
    )
    (creator,) = created["metadata"]["managedFields"]
    first = api.ok(
        "PATCH",
        f"{path}/status",
        {"status": {"phase": "Ready"}},
        content_type="application/merge-patch+json",
        query={"fieldManager": "operator"},
    )
    second = api.ok(
        "PATCH",
        f"{path}/status",
        {"status": {"replicas": 2}, "spec": {"color": "ignored"}, "metadata": {"labels": {"x": "y"}}},
        content_type="application/merge-patch+json",
        query={"fieldManager": "operator"},
    )
    assert second["spec"] == created["spec"] and "labels" not in second["metadata"]
    assert second["status"] == {"phase": "Ready", "replicas": 2}
    assert second["metadata"]["generation"] == created["metadata"]["generation"]
    entries = second["metadata"]["managedFields"]
    assert entries[0] == creator
    operator = entries[1]
    assert [k for k in operator] == [
        "manager",
        "operation",
        "apiVersion",
        "time",
        "fieldsType",
        "fieldsV1",
        "subresource",
    ]
    assert (operator["manager"], operator["operation"], operator["subresource"]) == (
        "operator",
        "Update",
        "status",
    )
    assert operator["fieldsV1"] == {
        "f:status": {".": {}, "f:phase": {}, "f:replicas": {}},
    }
    assert first["metadata"]["managedFields"][1]["fieldsV1"] == {
        "f:status": {".": {}, "f:phase": {}},
    }
    assert api.ok("GET", path) == second


def test_scale_subresource_reads_status(api: Kube, widgets: str, ns: str) -> None:
    """The scale subresource reports spec replicas and status replicas from the configured paths."""
    obj = api.ok("POST", _wpath(widgets, ns), _widget("scl", color="red", replicas=3))
    obj["status"] = {"replicas": 2}
    api.ok("PUT", _wpath(widgets, ns, "scl", "status"), obj)
    scale = api.ok("GET", _wpath(widgets, ns, "scl", "scale"))
    assert scale["spec"] == {"replicas": 3} and scale["status"]["replicas"] == 2
    scale["spec"]["replicas"] = 5
    api.ok("PUT", _wpath(widgets, ns, "scl", "scale"), scale)
    after = api.ok("GET", _wpath(widgets, ns, "scl"))
    assert after["spec"]["replicas"] == 5 and after["metadata"]["generation"] == 2


def test_strategic_merge_patch_unsupported(api: Kube, widgets: str, ns: str) -> None:
    """A strategic merge patch on a custom resource is a 415, as upstream."""
    api.ok("POST", _wpath(widgets, ns), _widget("smp", color="red"))
    resp = api.patch(_wpath(widgets, ns, "smp"), {"spec": {"color": "blue"}}, ptype="strategic")
    assert_status(resp, 415, "UnsupportedMediaType")
    assert api.ok("GET", _wpath(widgets, ns, "smp"))["spec"]["color"] == "red"


def test_server_side_apply_custom_resource(api: Kube, widgets: str, ns: str) -> None:
    """Server-side apply on a custom resource creates it with defaults and records the manager."""
    body = json.dumps(_widget("ssa", color="red", replicas=2))
    resp = api.patch(_wpath(widgets, ns, "ssa"), body, ptype="apply", query={"fieldManager": "e2e"})
    assert resp.status == 201, resp.body
    obj = resp.json()
    assert obj["spec"] == {"color": "red", "size": "small", "replicas": 2}
    managers = {m["manager"]: m["operation"] for m in obj["metadata"]["managedFields"]}
    assert managers == {"e2e": "Apply"}


# --- CRD lifecycle and versions -------------------------------------------------------------------


def test_crd_deletion_removes_objects_and_discovery(api: Kube, ns: str) -> None:
    """Deleting a CRD deletes its custom resources and drops it from discovery (default table first)."""
    crd = _crd("gizmos", "Gizmo", [_version("v1")])
    _install(api, crd)
    path = f"/apis/{GROUP}/v1/namespaces/{ns}/gizmos"
    api.ok("POST", path, {"apiVersion": f"{GROUP}/v1", "kind": "Gizmo", "metadata": {"name": "g"}})
    assert len(api.ok("GET", path)["items"]) == 1
    # Without additionalPrinterColumns the table has the default Name and Age columns.
    tbl = api.ok("GET", path, headers={"Accept": TABLE_ACCEPT})
    assert [c["name"] for c in tbl["columnDefinitions"]] == ["Name", "Age"]
    assert tbl["rows"][0]["cells"][0] == "g"
    resp = api.delete(f"{CRD_PATH}/gizmos.{GROUP}")
    assert resp.status == 200, resp.body
    poll(lambda: api.get(f"{CRD_PATH}/gizmos.{GROUP}").status == 404)
    poll(lambda: not _discovered(api, "v1", "gizmos"))
    assert api.get(f"{path}/g").status == 404
    # Recreating the CRD must not bring the old object back.
    _install(api, _crd("gizmos", "Gizmo", [_version("v1")]))
    assert api.ok("GET", path)["items"] == []
    api.ok("DELETE", f"{CRD_PATH}/gizmos.{GROUP}")


def test_crd_deletion_removes_objects_of_a_version_no_longer_served(api: Kube, ns: str) -> None:
    """A CRD whose versions are all unserved still takes its objects with it: upstream's finalizer
    deletes them through the storage version's store, so recreating the CRD brings none back."""
    name = f"thingies.{GROUP}"
    _install(api, _crd("thingies", "Thingy", [_version("v1")]))
    path = f"/apis/{GROUP}/v1/namespaces/{ns}/thingies"
    api.ok("POST", path, {"apiVersion": f"{GROUP}/v1", "kind": "Thingy", "metadata": {"name": "t"}})
    unserved = [{"op": "replace", "path": "/spec/versions/0/served", "value": False}]
    resp = api.patch(f"{CRD_PATH}/{name}", unserved, "json")
    assert resp.status == 200, resp.body
    poll(lambda: not _discovered(api, "v1", "thingies"))
    assert api.delete(f"{CRD_PATH}/{name}").status == 200
    poll(lambda: api.get(f"{CRD_PATH}/{name}").status == 404)
    _install(api, _crd("thingies", "Thingy", [_version("v1")]))
    assert api.ok("GET", path)["items"] == []
    api.ok("DELETE", f"{CRD_PATH}/{name}")


def test_crd_deletion_completes_while_its_objects_are_written(api: Kube, ns: str) -> None:
    """Writes to a custom object while its CRD is terminating do not stop the deletion: the object's
    own finalizer holds the CRD, and once it goes the objects, the CRD and its discovery entry go
    (upstream's crd_finalizer.go deletes every instance and requeues until none remain)."""
    _install(api, _crd("doodads", "Doodad", [_version("v1")]))
    path = f"/apis/{GROUP}/v1/namespaces/{ns}/doodads"
    for i in range(3):
        api.ok("POST", path, {"apiVersion": f"{GROUP}/v1", "kind": "Doodad", "metadata": {"name": f"d{i}"}})
    assert api.patch(f"{path}/d0", {"metadata": {"finalizers": ["e2e.kplane.dev/hold"]}}).status == 200
    assert api.delete(f"{CRD_PATH}/doodads.{GROUP}").status == 200
    poll(lambda: [i["metadata"]["name"] for i in api.ok("GET", path)["items"]] == ["d0"])
    for n in range(5):  # another writer keeps changing the held object during the deletion
        assert api.patch(f"{path}/d0", {"metadata": {"labels": {"touch": str(n)}}}).status == 200
    assert api.ok("GET", f"{CRD_PATH}/doodads.{GROUP}")["metadata"].get("deletionTimestamp")
    assert api.patch(f"{path}/d0", {"metadata": {"finalizers": None}}).status == 200
    poll(lambda: api.get(f"{CRD_PATH}/doodads.{GROUP}").status == 404)
    poll(lambda: not _discovered(api, "v1", "doodads"))
    assert api.get(f"{path}/d0").status == 404


# apiextensions-apiserver's customresource_handler.go (serveResource, verb "create"):
# NewMethodNotSupported with this message, so 405 MethodNotAllowed, details {group, kind: resource}.
TERMINATING_CREATE = "create not allowed while custom resource definition is terminating"


@requires_kubectl
def test_no_create_while_the_crd_is_terminating(
    server: Server, api: Kube, k8s: k8s_client.ApiClient, ns: str
) -> None:
    """While a CRD waits for its objects' finalizers, a new object is refused (raw, kubectl and the
    Python client see upstream's 405); the held object can still be written, and once released the
    CRD goes. Before the delete, the same create works."""
    name = f"whatsits.{GROUP}"
    _install(api, _crd("whatsits", "Whatsit", [_version("v1")]))
    path = f"/apis/{GROUP}/v1/namespaces/{ns}/whatsits"
    held = {"name": "held", "finalizers": ["e2e.kplane.dev/hold"]}
    api.ok("POST", path, {"apiVersion": f"{GROUP}/v1", "kind": "Whatsit", "metadata": held})
    late = {"apiVersion": f"{GROUP}/v1", "kind": "Whatsit", "metadata": {"name": "late"}}
    api.ok("POST", path, {**late, "metadata": {"name": "early"}})
    assert api.delete(f"{CRD_PATH}/{name}").status == 200

    st = assert_status(api.post(path, late), 405, "MethodNotAllowed")
    assert st["message"] == TERMINATING_CREATE
    assert st["details"] == {"group": GROUP, "kind": "whatsits"}
    out = server.kubectl("create", "-n", ns, "-f", "-", input=json.dumps(late), check=False)
    assert out.returncode != 0 and TERMINATING_CREATE in out.stderr, out.stderr
    with pytest.raises(ApiException) as refused:
        k8s_client.CustomObjectsApi(k8s).create_namespaced_custom_object(GROUP, "v1", ns, "whatsits", late)
    assert refused.value.status == 405 and TERMINATING_CREATE in str(refused.value.body)

    assert api.patch(f"{path}/held", {"metadata": {"labels": {"still": "writable"}}}).status == 200
    assert api.patch(f"{path}/held", {"metadata": {"finalizers": None}}).status == 200
    poll(lambda: api.get(f"{CRD_PATH}/{name}").status == 404)
    assert api.get(f"{path}/late").status == 404


# The Terminating condition's words, from apiextensions-apiserver: the first delete's in
# pkg/registry/customresourcedefinition/etcd.go, the finalizer's in
# pkg/controller/finalizer/crd_finalizer.go.
PENDING_MESSAGE = "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon"
IN_PROGRESS_MESSAGE = "CustomResource deletion is in progress"


def _terminating(crd: dict[str, Any]) -> list[tuple[str, str, str]]:
    found = [c for c in crd["status"].get("conditions") or [] if c["type"] == "Terminating"]
    return [(c["status"], c["reason"], c["message"]) for c in found]


@requires_kubectl
def test_crd_deletion_reports_its_progress_on_the_terminating_condition(
    server: Server, api: Kube, k8s: k8s_client.ApiClient, ns: str
) -> None:
    """A CRD whose object is held by a finalizer reports the instance deletion in progress on its
    Terminating condition (kubectl wait and the Python client both see it), and goes once released."""
    name = f"thingamajigs.{GROUP}"
    _install(api, _crd("thingamajigs", "Thingamajig", [_version("v1")]))
    path = f"/apis/{GROUP}/v1/namespaces/{ns}/thingamajigs"
    held = {"name": "held", "finalizers": ["e2e.kplane.dev/hold"]}
    api.ok("POST", path, {"apiVersion": f"{GROUP}/v1", "kind": "Thingamajig", "metadata": held})
    # A dry run answers what the first delete would store, and stores nothing.
    rehearsed = api.ok("DELETE", f"{CRD_PATH}/{name}", query={"dryRun": "All"})
    assert _terminating(rehearsed) == [("True", "InstanceDeletionPending", PENDING_MESSAGE)]
    assert _terminating(api.ok("GET", f"{CRD_PATH}/{name}")) == []
    marked = api.ok("DELETE", f"{CRD_PATH}/{name}")
    assert _terminating(marked) == [("True", "InstanceDeletionPending", PENDING_MESSAGE)]
    server.kubectl("wait", f"crd/{name}", "--for=condition=Terminating", "--timeout=30s")
    jsonpath = '{.status.conditions[?(@.type=="Terminating")].reason}'
    poll(
        lambda: (
            server.kubectl("get", "crd", name, "-o", f"jsonpath={jsonpath}").stdout
            == "InstanceDeletionInProgress"
        )
    )
    crd = k8s_client.ApiextensionsV1Api(k8s).read_custom_resource_definition(name)
    found = [c for c in crd.status.conditions if c.type == "Terminating"]
    assert [(c.status, c.reason, c.message) for c in found] == [
        ("True", "InstanceDeletionInProgress", IN_PROGRESS_MESSAGE)
    ]
    assert api.patch(f"{path}/held", {"metadata": {"finalizers": None}}).status == 200
    poll(lambda: api.get(f"{CRD_PATH}/{name}").status == 404)
    assert api.get(f"{path}/held").status == 404


def test_two_versions(api: Kube, ns: str) -> None:
    """A CRD served at v1beta1 and v1 (storage) serves each object at both with the asked apiVersion."""
    crd = _crd("gadgets", "Gadget", [_version("v1beta1", storage=False), _version("v1")])
    _install(api, crd)
    stored = poll(
        lambda: api.ok("GET", f"{CRD_PATH}/gadgets.{GROUP}").get("status", {}).get("storedVersions")
    )
    assert stored == ["v1"]
    beta = f"/apis/{GROUP}/v1beta1/namespaces/{ns}/gadgets"
    ga = f"/apis/{GROUP}/v1/namespaces/{ns}/gadgets"
    made = api.ok(
        "POST",
        beta,
        {"apiVersion": f"{GROUP}/v1beta1", "kind": "Gadget", "metadata": {"name": "g"}, "spec": {"a": 1}},
    )
    assert made["apiVersion"] == f"{GROUP}/v1beta1"
    as_ga = api.ok("GET", f"{ga}/g")
    assert as_ga["apiVersion"] == f"{GROUP}/v1" and as_ga["spec"] == {"a": 1}
    assert as_ga["metadata"]["uid"] == made["metadata"]["uid"]
    assert api.ok("GET", f"{beta}/g")["apiVersion"] == f"{GROUP}/v1beta1"
    listed = api.ok("GET", beta)
    assert listed["apiVersion"] == f"{GROUP}/v1beta1" and listed["kind"] == "GadgetList"
    assert [i["apiVersion"] for i in listed["items"]] == [f"{GROUP}/v1beta1"]
    group = api.ok("GET", f"/apis/{GROUP}")
    assert {v["version"] for v in group["versions"]} >= {"v1", "v1beta1"}
    api.ok("DELETE", f"{CRD_PATH}/gadgets.{GROUP}")


# --- official Python client -----------------------------------------------------------------------


def test_python_custom_objects_api(k8s: k8s_client.ApiClient, widgets: str, ns: str) -> None:
    """CustomObjectsApi create/get/patch(merge)/delete of a Widget, with defaults and 404 after delete."""
    co = k8s_client.CustomObjectsApi(k8s)
    created = _obj(co.create_namespaced_custom_object(GROUP, "v1", ns, "widgets", _widget("py", color="red")))
    assert created["spec"] == {"color": "red", "size": "small", "replicas": 1}
    got = _obj(co.get_namespaced_custom_object(GROUP, "v1", ns, "widgets", "py"))
    assert got["metadata"]["uid"] == created["metadata"]["uid"]
    patched = _obj(
        co.patch_namespaced_custom_object(GROUP, "v1", ns, "widgets", "py", {"spec": {"size": "large"}})
    )
    assert patched["spec"] == {"color": "red", "size": "large", "replicas": 1}
    assert patched["metadata"]["generation"] == 2
    listed = _obj(co.list_namespaced_custom_object(GROUP, "v1", ns, "widgets"))
    assert [i["metadata"]["name"] for i in listed["items"]] == ["py"]
    with pytest.raises(ApiException) as err:
        co.patch_namespaced_custom_object(GROUP, "v1", ns, "widgets", "py", {"spec": {"replicas": 99}})
    assert err.value.status == 422
    co.delete_namespaced_custom_object(GROUP, "v1", ns, "widgets", "py")
    with pytest.raises(ApiException) as err:
        co.get_namespaced_custom_object(GROUP, "v1", ns, "widgets", "py")
    assert err.value.status == 404
