"""The resource metrics API (``metrics.k8s.io/v1beta1``) fed by the simulated kubelets, through the
real kubectl (``kubectl top``) and raw requests against ``kplane serve`` (3 nodes, controllers)."""

from __future__ import annotations

import json
from typing import Any

from tests.e2e.conftest import Server
from tests.e2e.helpers import until as _until


def _raw(cluster: Server, path: str) -> tuple[int, dict[str, Any]]:
    res = cluster.kubectl("get", "--raw", path, check=False)
    if res.returncode != 0:
        return 1, {"error": res.stderr}
    return 0, json.loads(res.stdout)


def _run(cluster: Server, name: str, *annotations: str, labels: str = "app=top") -> None:
    overrides = {
        "metadata": {"annotations": dict(a.split("=", 1) for a in annotations)},
    }
    cluster.kubectl(
        "run",
        name,
        "--image=nginx",
        f"--labels={labels}",
        f"--overrides={json.dumps(overrides)}",
    )


def test_discovery_and_apiservice(cluster: Server) -> None:
    """The group is discovered and its APIService is metrics-server's, Available."""
    groups = json.loads(cluster.kubectl("get", "--raw", "/apis").stdout)
    metrics = next(g for g in groups["groups"] if g["name"] == "metrics.k8s.io")
    assert metrics["preferredVersion"]["groupVersion"] == "metrics.k8s.io/v1beta1"
    resources = json.loads(cluster.kubectl("get", "--raw", "/apis/metrics.k8s.io/v1beta1").stdout)
    by_name = {r["name"]: r for r in resources["resources"]}
    assert by_name["pods"]["kind"] == "PodMetrics" and by_name["pods"]["namespaced"] is True
    assert by_name["nodes"]["kind"] == "NodeMetrics" and by_name["nodes"]["namespaced"] is False
    assert sorted(by_name["pods"]["verbs"]) == ["get", "list"]
    svc = json.loads(cluster.kubectl("get", "apiservice", "v1beta1.metrics.k8s.io", "-o", "json").stdout)
    # metrics-server's manifests/base/apiservice.yaml
    assert svc["spec"]["service"] == {"name": "metrics-server", "namespace": "kube-system", "port": 443}
    assert (svc["spec"]["groupPriorityMinimum"], svc["spec"]["versionPriority"]) == (100, 100)
    available = next(c for c in svc["status"]["conditions"] if c["type"] == "Available")
    # kube-aggregator's availability controller on a passing discovery check
    assert (available["status"], available["reason"], available["message"]) == (
        "True",
        "Passed",
        "all checks passed",
    )


def test_top_pods_containers_and_nodes(cluster: Server) -> None:
    """kubectl top shows the usage the pods' annotations set, per pod, per container, per node."""
    _run(cluster, "busy", "kplane.dev/cpu-usage=250m", "kplane.dev/memory-usage=64Mi")

    def shown() -> str:
        res = cluster.kubectl("top", "pod", "busy", "--no-headers", check=False)
        return res.stdout if res.returncode == 0 else ""

    line = _until(shown)
    assert line.split() == ["busy", "250m", "64Mi"], line
    containers = cluster.kubectl("top", "pod", "busy", "--containers", "--no-headers").stdout.split()
    assert containers == ["busy", "busy", "250m", "64Mi"]
    listed = cluster.kubectl("top", "pods", "-l", "app=top", "--no-headers").stdout
    assert "busy" in listed
    assert cluster.kubectl("top", "pods", "-l", "app=nothing", check=False).stdout.strip() == ""

    pod = json.loads(cluster.kubectl("get", "pod", "busy", "-o", "json").stdout)
    node = pod["spec"]["nodeName"]
    top_nodes = cluster.kubectl("top", "nodes", "--no-headers").stdout.splitlines()
    rows = {line.split()[0]: line.split() for line in top_nodes}
    assert set(rows) == {"kplane-node-0", "kplane-node-1", "kplane-node-2"}
    cpu = int(rows[node][1].rstrip("m"))
    assert cpu >= 250  # the pod's share at least (other tests' pods may run there too)

    code, metrics = _raw(cluster, "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/busy")
    assert code == 0
    assert metrics["kind"] == "PodMetrics" and metrics["metadata"]["labels"] == {"app": "top"}
    assert metrics["window"] == "15s"
    assert metrics["containers"] == [{"name": "busy", "usage": {"cpu": "250m", "memory": "64Mi"}}]


def test_usage_follows_the_annotation(cluster: Server) -> None:
    """Changing the annotation changes what kubectl top reports."""
    _run(cluster, "changing", "kplane.dev/cpu-usage=100m", labels="app=changing")
    assert _until(lambda: "100m" in cluster.kubectl("top", "pod", "changing", check=False).stdout)
    cluster.kubectl("annotate", "pod", "changing", "--overwrite", "kplane.dev/cpu-usage=700m")
    assert _until(lambda: "700m" in cluster.kubectl("top", "pod", "changing", check=False).stdout)


def test_missing_metrics_are_not_found(cluster: Server) -> None:
    """A pod that does not exist: its own NotFound; kubectl says so."""
    res = cluster.kubectl("top", "pod", "no-such-pod", check=False)
    assert res.returncode != 0
    res = cluster.kubectl(
        "get", "--raw", "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/no-such-pod", check=False
    )
    assert 'pods \\"no-such-pod\\" not found' in res.stderr or "NotFound" in res.stderr


def test_feed_refuses_hostile_reports(cluster: Server) -> None:
    """Reports for unknown nodes or malformed ones get a Status, never a 500."""
    path = "/kplane/v1/nodes/{}/resource-usage"
    res = cluster.kubectl("replace", "--raw", path.format("nope"), "-f", "-", check=False, input="{}")
    assert res.returncode != 0 and "not found" in res.stderr
    bad = json.dumps({"timestamp": "now", "pods": []})
    res = cluster.kubectl("replace", "--raw", path.format("kplane-node-0"), "-f", "-", check=False, input=bad)
    assert res.returncode != 0 and "timestamp must be an RFC 3339 time" in res.stderr
    too_many = json.dumps({"timestamp": "2026-01-01T00:00:00Z", "pods": [{}] * 1001})
    res = cluster.kubectl(
        "replace", "--raw", path.format("kplane-node-0"), "-f", "-", check=False, input=too_many
    )
    assert res.returncode != 0 and "at most 1000" in res.stderr


_BUSY_DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: hot
spec:
  replicas: 1
  selector:
    matchLabels: {app: hot}
  template:
    metadata:
      labels: {app: hot}
      annotations: {kplane.dev/cpu-usage: 250m}
    spec:
      containers:
      - name: app
        image: nginx
        resources:
          requests: {cpu: 100m}
"""


def test_kubectl_autoscale_scales_on_simulated_cpu(cluster: Server) -> None:
    """kubectl autoscale on a Deployment whose pods use 250% of their request: the HPA scales it
    up to its max, and kubectl get hpa shows the targets (upstream's printer)."""
    cluster.kubectl("apply", "-f", "-", input=_BUSY_DEPLOYMENT)
    cluster.kubectl("autoscale", "deployment", "hot", "--cpu-percent=50", "--min=1", "--max=3")

    def replicas() -> int:
        out = cluster.kubectl("get", "deployment", "hot", "-o", "jsonpath={.spec.replicas}").stdout
        return int(out or 0)

    assert _until(lambda: replicas() == 3, timeout=90), replicas()

    def row() -> str:
        line = cluster.kubectl("get", "hpa", "hot", "--no-headers").stdout
        cells = line.split()
        return line if len(cells) > 6 and cells[3] == "250%/50%" and cells[6] == "3" else ""

    shown = _until(row, timeout=60)
    # NAME REFERENCE TARGETS MINPODS MAXPODS REPLICAS AGE (kubectl 1.32 prints the metric's name)
    assert shown.split()[:7] == ["hot", "Deployment/hot", "cpu:", "250%/50%", "1", "3", "3"], shown
    events = cluster.kubectl(
        "get", "events", "--field-selector", "involvedObject.kind=HorizontalPodAutoscaler", "-o", "json"
    ).stdout
    messages = [e["message"] for e in json.loads(events)["items"] if e["reason"] == "SuccessfulRescale"]
    assert any(m.startswith("New size: ") and "above target" in m for m in messages), messages
