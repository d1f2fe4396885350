"""Built-in schemas end to end: kubectl create (protobuf), explain, server-side apply, dry run, strictness."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s_client

from tests.e2e.conftest import Server, requires_kubectl
from tests.e2e.helpers import Kube, assert_status, cm_path, configmap, deployment, unique


@pytest.fixture
def ns(api: Kube) -> str:
    """A fresh namespace, created over raw HTTP."""
    name = unique("sch")
    api.ok(
        "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    )
    return name


def _get(server: Server, *args: str) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(server.kubectl("get", *args, "-o", "json").stdout)
    return out


def _create(server: Server, *args: str) -> str:
    """``kubectl create ...`` that must send a protobuf body; returns kubectl's one-line answer."""
    res = server.kubectl("create", *args, "-v=8")
    assert "Content-Type: application/vnd.kubernetes.protobuf" in res.stderr, res.stderr[-2000:]
    return res.stdout.strip()


def _dep_path(ns: str, name: str = "") -> str:
    base = f"/apis/apps/v1/namespaces/{ns}/deployments"
    return f"{base}/{name}" if name else base


def _write(path: Path, doc: dict[str, Any]) -> str:
    path.write_text(yaml.safe_dump(doc))
    return str(path)


# --- kubectl create (protobuf request bodies) -----------------------------------------------------


@requires_kubectl
def test_create_namespace_configmap_secret(server: Server) -> None:
    """kubectl create namespace/configmap/secret store the literal data (secret data base64-encoded)."""
    ns = unique("kc")
    assert _create(server, "namespace", ns) == f"namespace/{ns} created"
    assert _get(server, "namespace", ns)["status"]["phase"] == "Active"
    assert _create(server, "configmap", "y", "--from-literal=a=b", "-n", ns) == "configmap/y created"
    assert _get(server, "configmap", "y", "-n", ns)["data"] == {"a": "b"}
    assert _create(server, "secret", "generic", "s", "--from-literal=k=v", "-n", ns) == "secret/s created"
    secret = _get(server, "secret", "s", "-n", ns)
    assert secret["data"] == {"k": "dg=="}
    assert secret["type"] == "Opaque"


@requires_kubectl
def test_create_deployment_defaults(server: Server, ns: str) -> None:
    """kubectl create deployment stores replicas 1, RollingUpdate 25%/25% and container defaults."""
    assert _create(server, "deployment", "d", "--image=nginx", "-n", ns) == "deployment.apps/d created"
    spec = _get(server, "deployment", "d", "-n", ns)["spec"]
    assert spec["replicas"] == 1
    assert spec["selector"] == {"matchLabels": {"app": "d"}}
    assert spec["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"},
    }
    assert spec["revisionHistoryLimit"] == 10 and spec["progressDeadlineSeconds"] == 600
    pod = spec["template"]["spec"]
    assert pod["restartPolicy"] == "Always" and pod["dnsPolicy"] == "ClusterFirst"
    assert pod["terminationGracePeriodSeconds"] == 30
    (container,) = pod["containers"]
    assert container["name"] == "nginx" and container["image"] == "nginx"
    assert container["imagePullPolicy"] == "Always"
    assert container["terminationMessagePath"] == "/dev/termination-log"
    assert container["terminationMessagePolicy"] == "File"


@requires_kubectl
def test_create_serviceaccount_role_rolebinding(server: Server, ns: str) -> None:
    """kubectl create serviceaccount/role/rolebinding store the rules, roleRef and subjects given."""
    assert _create(server, "serviceaccount", "sa", "-n", ns) == "serviceaccount/sa created"
    assert _get(server, "serviceaccount", "sa", "-n", ns)["metadata"]["name"] == "sa"
    out = _create(server, "role", "r", "--verb=get", "--resource=pods", "-n", ns)
    assert out == "role.rbac.authorization.k8s.io/r created"
    role = _get(server, "role", "r", "-n", ns)
    assert role["rules"] == [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]
    out = _create(server, "rolebinding", "rb", "--role=r", "--user=u", "-n", ns)
    assert out == "rolebinding.rbac.authorization.k8s.io/rb created"
    rb = _get(server, "rolebinding", "rb", "-n", ns)
    assert rb["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"}
    assert rb["subjects"] == [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "u"}]


@requires_kubectl
def test_create_job_and_cronjob(server: Server, ns: str) -> None:
    """kubectl create job/cronjob store batch/v1 objects with the upstream defaults filled."""
    assert _create(server, "job", "j", "--image=busybox", "-n", ns) == "job.batch/j created"
    job = _get(server, "job", "j", "-n", ns)
    assert job["apiVersion"] == "batch/v1"
    assert job["spec"]["backoffLimit"] == 6 and job["spec"]["completions"] == 1
    assert job["spec"]["parallelism"] == 1 and job["spec"]["completionMode"] == "NonIndexed"
    assert job["spec"]["template"]["spec"]["restartPolicy"] == "Never"
    assert job["spec"]["template"]["spec"]["containers"][0]["image"] == "busybox"
    out = _create(server, "cronjob", "cj", "--image=busybox", "--schedule=*/5 * * * *", "-n", ns)
    assert out == "cronjob.batch/cj created"
    cj = _get(server, "cronjob", "cj", "-n", ns)
    assert cj["spec"]["schedule"] == "*/5 * * * *"
    assert cj["spec"]["concurrencyPolicy"] == "Allow" and cj["spec"]["suspend"] is False
    assert cj["spec"]["successfulJobsHistoryLimit"] == 3 and cj["spec"]["failedJobsHistoryLimit"] == 1
    tpl = cj["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    assert tpl["restartPolicy"] == "OnFailure" and tpl["containers"][0]["imagePullPolicy"] == "Always"


@requires_kubectl
def test_create_priorityclass_and_quota(server: Server, ns: str) -> None:
    """kubectl create priorityclass/quota store the value, preemption default and hard limits."""
    pc = unique("pc")
    out = _create(server, "priorityclass", pc, "--value=1000", "--description=e2e")
    assert out == f"priorityclass.scheduling.k8s.io/{pc} created"
    obj = _get(server, "priorityclass", pc)
    assert obj["value"] == 1000 and obj["description"] == "e2e"
    assert obj["preemptionPolicy"] == "PreemptLowerPriority"
    out = _create(server, "quota", "q", "--hard=pods=10,requests.cpu=2", "-n", ns)
    assert out == "resourcequota/q created"
    assert _get(server, "quota", "q", "-n", ns)["spec"]["hard"] == {"pods": "10", "requests.cpu": "2"}


# --- explain --------------------------------------------------------------------------------------


@requires_kubectl
def test_explain_deployment_spec(server: Server) -> None:
    """kubectl explain deployment.spec prints the OpenAPI schema: kind, FIELDS and typed fields."""
    out = server.kubectl("explain", "deployment.spec").stdout
    assert "KIND:       Deployment" in out and "VERSION:    v1" in out
    assert "FIELDS:" in out
    assert "replicas\t<integer>" in out
    assert "template\t<PodTemplateSpec> -required-" in out
    assert "selector\t<LabelSelector> -required-" in out
    leaf = server.kubectl("explain", "deployment.spec.replicas").stdout
    assert "FIELD: replicas <integer>" in leaf and "Defaults to 1" in leaf


# --- server-side apply ----------------------------------------------------------------------------


@requires_kubectl
def test_server_side_apply_conflict_and_force(server: Server, ns: str, tmp_path: Path) -> None:
    """A second manager changing a field owned by the first gets the conflict; --force-conflicts takes it."""
    manifest = deployment("ssa", ns, replicas=2)
    path = _write(tmp_path / "ssa.yaml", manifest)
    first = server.kubectl("apply", "--server-side", "--field-manager=a", "-f", path)
    assert first.stdout.strip() == "deployment.apps/ssa serverside-applied"
    manifest["spec"]["replicas"] = 3
    _write(tmp_path / "ssa.yaml", manifest)
    res = server.kubectl("apply", "--server-side", "--field-manager=b", "-f", path, check=False)
    assert res.returncode != 0
    assert 'Apply failed with 1 conflict: conflict with "a": .spec.replicas' in res.stderr
    assert "--force-conflicts" in res.stderr
    assert _get(server, "deploy", "ssa", "-n", ns)["spec"]["replicas"] == 2
    forced = server.kubectl("apply", "--server-side", "--field-manager=b", "--force-conflicts", "-f", path)
    assert forced.stdout.strip() == "deployment.apps/ssa serverside-applied"
    obj = _get(server, "deploy", "ssa", "-n", ns, "--show-managed-fields")
    assert obj["spec"]["replicas"] == 3
    owners = {m["manager"]: m for m in obj["metadata"]["managedFields"]}
    assert owners["a"]["operation"] == "Apply" and owners["b"]["operation"] == "Apply"
    assert "f:replicas" not in owners["a"]["fieldsV1"]["f:spec"]
    assert "f:replicas" in owners["b"]["fieldsV1"]["f:spec"]
    # Both still co-own the image they applied with the same value.
    for m in ("a", "b"):
        containers = owners[m]["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"]
        assert 'k:{"name":"main"}' in containers


# --- dry run --------------------------------------------------------------------------------------


@requires_kubectl
def test_apply_dry_run_server(server: Server, ns: str, tmp_path: Path) -> None:
    """kubectl apply --dry-run=server reports "(server dry run)" and stores nothing."""
    path = _write(tmp_path / "dry.yaml", deployment("dry", ns))
    out = server.kubectl("apply", "--dry-run=server", "-f", path).stdout
    assert out.strip() == "deployment.apps/dry created (server dry run)"
    res = server.kubectl("get", "deploy", "dry", "-n", ns, check=False)
    assert res.returncode != 0
    assert 'Error from server (NotFound): deployments.apps "dry" not found' in res.stderr


def test_dry_run_all_write_verbs(api: Kube, ns: str) -> None:
    """dryRun=All on POST, PUT, PATCH and DELETE returns the would-be result and changes nothing."""
    dry = {"dryRun": "All"}
    created = api.post(cm_path(ns), configmap("dry", ns, data={"a": "1"}), query=dry)
    assert created.status == 201, created.body
    assert created.json()["data"] == {"a": "1"} and created.json()["metadata"]["name"] == "dry"
    assert created.json()["metadata"]["uid"] and created.json()["metadata"]["creationTimestamp"]
    assert_status(api.get(cm_path(ns, "dry")), 404, "NotFound")

    real = api.ok("POST", cm_path(ns), configmap("real", ns, data={"a": "1"}))
    rv = real["metadata"]["resourceVersion"]
    real["data"] = {"a": "2"}
    put = api.ok("PUT", cm_path(ns, "real"), real, query=dry)
    assert put["data"] == {"a": "2"}
    patched = api.patch(cm_path(ns, "real"), {"data": {"b": "3"}}, query=dry)
    assert patched.status == 200, patched.body
    assert patched.json()["data"] == {"a": "1", "b": "3"}
    deleted = api.delete(cm_path(ns, "real"), {"dryRun": ["All"]})
    assert deleted.status == 200, deleted.body
    # ConfigMaps answer a delete with a success Status naming the would-be deleted object, as upstream.
    assert deleted.json()["status"] == "Success"
    assert deleted.json()["details"]["uid"] == real["metadata"]["uid"]
    stored = api.ok("GET", cm_path(ns, "real"))
    assert stored["data"] == {"a": "1"}
    assert stored["metadata"]["resourceVersion"] == rv
    assert "deletionTimestamp" not in stored["metadata"]


def test_dry_run_rejects_unknown_value(api: Kube, ns: str) -> None:
    """dryRun with a value other than All is upstream's 422 on CreateOptions (handlers/create.go
    ValidateCreateOptions)."""
    resp = api.post(cm_path(ns), configmap("bad", ns), query={"dryRun": "Some"})
    assert_status(resp, 422, "Invalid")
    assert_status(api.get(cm_path(ns, "bad")), 404, "NotFound")


# --- unknown fields -------------------------------------------------------------------------------


def _misspelled(name: str, ns: str) -> dict[str, Any]:
    doc = deployment(name, ns)
    doc["spec"]["replica"] = doc["spec"].pop("replicas") + 1
    return doc


@requires_kubectl
def test_kubectl_unknown_field_strict(server: Server, ns: str, tmp_path: Path) -> None:
    """kubectl apply of a misspelled field fails with the upstream strict decoding error."""
    path = _write(tmp_path / "typo.yaml", _misspelled("typo", ns))
    res = server.kubectl("apply", "-f", path, check=False)
    assert res.returncode != 0
    assert (
        f'Error from server (BadRequest): error when creating "{path}": Deployment in version "v1" '
        'cannot be handled as a Deployment: strict decoding error: unknown field "spec.replica"'
    ) in res.stderr
    assert server.kubectl("get", "deploy", "typo", "-n", ns, check=False).returncode != 0


def test_unknown_field_warn_prunes(api: Kube, ns: str) -> None:
    """fieldValidation=Warn stores the object without the field and sends a 299 warning naming it."""
    resp = api.post(_dep_path(ns), _misspelled("warn", ns), query={"fieldValidation": "Warn"})
    assert resp.status == 201, resp.body
    assert resp.headers.get("warning") == '299 - "unknown field \\"spec.replica\\""'
    spec = api.ok("GET", _dep_path(ns, "warn"))["spec"]
    assert "replica" not in spec and spec["replicas"] == 1


def test_unknown_field_ignore_prunes(api: Kube, ns: str) -> None:
    """fieldValidation=Ignore stores the object without the field and sends no warning."""
    resp = api.post(_dep_path(ns), _misspelled("ign", ns), query={"fieldValidation": "Ignore"})
    assert resp.status == 201, resp.body
    assert "warning" not in resp.headers
    assert "replica" not in api.ok("GET", _dep_path(ns, "ign"))["spec"]


def test_unknown_field_strict_raw(api: Kube, ns: str) -> None:
    """fieldValidation=Strict refuses the object with a 400 naming the field, and stores nothing."""
    resp = api.post(_dep_path(ns), _misspelled("strict", ns), query={"fieldValidation": "Strict"})
    st = assert_status(resp, 400, "BadRequest")
    assert 'strict decoding error: unknown field "spec.replica"' in st["message"]
    assert_status(api.get(_dep_path(ns, "strict")), 404, "NotFound")


# --- official Python client -----------------------------------------------------------------------


def test_python_client_deployment_defaults(k8s: k8s_client.ApiClient, ns: str) -> None:
    """AppsV1Api.create_namespaced_deployment returns the object with the server defaults filled."""
    apps = k8s_client.AppsV1Api(k8s)
    body = k8s_client.V1Deployment(
        metadata=k8s_client.V1ObjectMeta(name="py"),
        spec=k8s_client.V1DeploymentSpec(
            selector=k8s_client.V1LabelSelector(match_labels={"app": "py"}),
            template=k8s_client.V1PodTemplateSpec(
                metadata=k8s_client.V1ObjectMeta(labels={"app": "py"}),
                spec=k8s_client.V1PodSpec(containers=[k8s_client.V1Container(name="c", image="nginx:1.25")]),
            ),
        ),
    )
    created = apps.create_namespaced_deployment(ns, body)
    spec = created.spec
    assert spec is not None and spec.strategy is not None and spec.strategy.rolling_update is not None
    assert spec.replicas == 1 and spec.strategy.type == "RollingUpdate"
    assert spec.strategy.rolling_update.max_surge == "25%"
    assert spec.template.spec is not None
    container = spec.template.spec.containers[0]
    assert container.image_pull_policy == "IfNotPresent"  # tagged image, not :latest
    assert container.termination_message_path == "/dev/termination-log"
    read = apps.read_namespaced_deployment("py", ns)
    assert read.spec is not None and read.metadata is not None
    assert read.spec.revision_history_limit == 10 and read.metadata.generation == 1
