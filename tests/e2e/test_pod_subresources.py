"""Pod subresources through a real server: log, binding (what a scheduler posts), eviction."""

from __future__ import annotations

import pytest
from kubernetes import client as k8s_client

from tests.e2e import helpers

NS = "default"


def _pod(name: str, containers: tuple[str, ...] = ("app",)) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": c, "image": "busybox"} for c in containers]},
    }


def _create(api: helpers.Kube, name: str, containers: tuple[str, ...] = ("app",)) -> None:
    api.ok("POST", f"/api/v1/namespaces/{NS}/pods", _pod(name, containers))


def test_binding_sets_node_once(api: helpers.Kube) -> None:
    """POST pods/binding sets spec.nodeName (201 Success); binding again is 409 Conflict."""
    name = helpers.unique("bind")
    _create(api, name)
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": name},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "node-1"},
    }
    resp = api.post(f"/api/v1/namespaces/{NS}/pods/{name}/binding", binding)
    assert resp.status == 201 and resp.json()["status"] == "Success"
    assert api.ok("GET", f"/api/v1/namespaces/{NS}/pods/{name}")["spec"]["nodeName"] == "node-1"
    again = api.post(f"/api/v1/namespaces/{NS}/pods/{name}/binding", binding)
    assert "already assigned to node" in helpers.assert_status(again, 409, "Conflict")["message"]


def test_log_rules_match_upstream(api: helpers.Kube, k8s: k8s_client.ApiClient) -> None:
    """Logs: container choice enforced, an unbound pod has no log (400), a bound one an empty log."""
    name = helpers.unique("logs")
    _create(api, name, ("a", "b"))
    base = f"/api/v1/namespaces/{NS}/pods/{name}/log"
    msg = helpers.assert_status(api.get(base), 400, "BadRequest")["message"]
    assert msg == f"a container name must be specified for pod {name}, choose one of: [a b]"
    msg = helpers.assert_status(api.get(base, query={"container": "zzz"}), 400)["message"]
    assert msg == f"container zzz is not valid for pod {name}"
    msg = helpers.assert_status(api.get(base, query={"container": "a"}), 400)["message"]
    assert msg == f'pod "{name}" does not have a host assigned'
    api.ok(
        "POST",
        f"/api/v1/namespaces/{NS}/pods/{name}/binding",
        {"metadata": {"name": name}, "target": {"kind": "Node", "name": "node-1"}},
    )
    # Bound, but no kubelet has started it (this server runs no controllers): the kubelet's refusal
    # (pkg/kubelet/kubelet_pods.go validateContainerLogStatus).
    msg = helpers.assert_status(api.get(base, query={"container": "a"}), 400)["message"]
    assert msg == f'container "a" in pod "{name}" is waiting to start: ContainerCreating'
    msg = helpers.assert_status(api.get(base, query={"container": "a", "previous": "true"}), 400)["message"]
    assert msg == f'previous terminated container "a" in pod "{name}" not found'


@pytest.mark.parametrize("dry_run", [False, True], ids=["evict", "dry-run"])
def test_eviction_deletes_the_pod(api: helpers.Kube, dry_run: bool) -> None:
    """POST pods/eviction answers 201 Success and deletes the pod (not under dryRun)."""
    name = helpers.unique("evict")
    _create(api, name)
    eviction: dict[str, object] = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name}}
    if dry_run:
        eviction["deleteOptions"] = {"dryRun": ["All"]}
    resp = api.post(f"/api/v1/namespaces/{NS}/pods/{name}/eviction", eviction)
    assert resp.status == 201 and resp.json()["status"] == "Success"
    after = api.get(f"/api/v1/namespaces/{NS}/pods/{name}")
    assert after.status == (200 if dry_run else 404)


def test_discovery_lists_only_served_pod_subresources(api: helpers.Kube) -> None:
    """Every pods/* entry in discovery answers something other than 404 for its verb."""
    resources = api.ok("GET", "/api/v1")["resources"]
    subs = {r["name"].split("/")[1] for r in resources if r["name"].startswith("pods/")}
    assert {"status", "log", "binding", "eviction"} <= subs
