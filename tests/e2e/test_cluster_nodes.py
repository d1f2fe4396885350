"""Simulated nodes, the scheduler and the simulated kubelet, through the real kubectl against
``kplane serve`` (its default: 3 nodes and the built-in controllers)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from tests.e2e.conftest import Server


def _until(check: Callable[[], Any], timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result or time.monotonic() > deadline:
            return result
        time.sleep(0.1)


def _pod(cluster: Server, name: str) -> dict[str, Any]:
    res = cluster.kubectl("get", "pod", name, "-o", "json", check=False)
    return json.loads(res.stdout) if res.returncode == 0 else {}


def test_three_ready_nodes(cluster: Server) -> None:
    def ready() -> list[str]:
        out = cluster.kubectl("get", "nodes", "--no-headers").stdout.splitlines()
        return [line for line in out if line.split()[1] == "Ready"]

    assert len(_until(lambda: len(ready()) == 3 and ready())) == 3
    node = json.loads(cluster.kubectl("get", "node", "kplane-node-0", "-o", "json").stdout)
    ready_condition = next(c for c in node["status"]["conditions"] if c["type"] == "Ready")
    # pkg/kubelet/nodestatus/setters.go: ReadyCondition
    assert (ready_condition["reason"], ready_condition["message"]) == (
        "KubeletReady",
        "kubelet is posting ready status",
    )
    version = json.loads(cluster.kubectl("version", "-o", "json").stdout)["serverVersion"]["gitVersion"]
    assert node["status"]["nodeInfo"]["kubeletVersion"] == version
    lease = json.loads(
        cluster.kubectl("get", "lease", "-n", "kube-node-lease", "kplane-node-0", "-o", "json").stdout
    )
    assert lease["spec"]["holderIdentity"] == "kplane-node-0"
    assert lease["spec"]["leaseDurationSeconds"] == 40


def test_run_nginx_becomes_ready_on_a_node(cluster: Server) -> None:
    cluster.kubectl("run", "nginx", "--image=nginx")
    pod = _until(lambda: (p := _pod(cluster, "nginx")).get("status", {}).get("phase") == "Running" and p)
    conditions = {c["type"]: c["status"] for c in pod["status"]["conditions"]}
    assert conditions == {
        "PodReadyToStartContainers": "True",
        "Initialized": "True",
        "Ready": "True",
        "ContainersReady": "True",
        "PodScheduled": "True",
    }
    status = pod["status"]["containerStatuses"][0]
    assert status["ready"] and status["started"] and "running" in status["state"]
    assert status["image"] == "docker.io/library/nginx:latest"
    assert status["containerID"].startswith("containerd://")
    wide = cluster.kubectl("get", "pods", "nginx", "-o", "wide", "--no-headers").stdout.split()
    assert wide[1:3] == ["1/1", "Running"]
    assert wide[5] == pod["status"]["podIP"] and wide[6] == pod["spec"]["nodeName"]
    assert pod["spec"]["nodeName"].startswith("kplane-node-")
    events = cluster.kubectl("get", "events", "--field-selector", "involvedObject.name=nginx").stdout
    assert "Successfully assigned default/nginx to " + pod["spec"]["nodeName"] in events


def test_pod_that_fits_nowhere_reports_failed_scheduling(cluster: Server) -> None:
    overrides = {
        "spec": {
            "containers": [{"name": "big", "image": "nginx", "resources": {"requests": {"cpu": "5000"}}}]
        }
    }
    cluster.kubectl("run", "big", "--image=nginx", f"--overrides={json.dumps(overrides)}")
    # pkg/scheduler/framework/types.go FitError.Error and the default preemption's message (1.32)
    expected = (
        "0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: "
        "3 No preemption victims found for incoming pod."
    )
    described = _until(lambda: expected in (d := cluster.kubectl("describe", "pod", "big").stdout) and d)
    assert "FailedScheduling" in described
    condition = next(c for c in _pod(cluster, "big")["status"]["conditions"] if c["type"] == "PodScheduled")
    assert (condition["status"], condition["reason"], condition["message"]) == (
        "False",
        "Unschedulable",
        expected,
    )


def test_node_selector_and_taints(cluster: Server) -> None:
    cluster.kubectl("taint", "nodes", "kplane-node-1", "dedicated=db:NoSchedule")
    overrides = {"spec": {"nodeSelector": {"kubernetes.io/hostname": "kplane-node-1"}}}
    cluster.kubectl("run", "picky", "--image=nginx", f"--overrides={json.dumps(overrides)}")
    expected = (
        "0/3 nodes are available: 1 node(s) had untolerated taint {dedicated: db}, "
        "2 node(s) didn't match Pod's node affinity/selector. preemption: 0/3 nodes are available: "
        "3 Preemption is not helpful for scheduling."
    )
    _until(lambda: expected in cluster.kubectl("describe", "pod", "picky").stdout)
    assert expected in cluster.kubectl("describe", "pod", "picky").stdout
    cluster.kubectl("taint", "nodes", "kplane-node-1", "dedicated=db:NoSchedule-")
    pod = _until(lambda: (p := _pod(cluster, "picky")).get("spec", {}).get("nodeName") and p)
    assert pod["spec"]["nodeName"] == "kplane-node-1"


def test_crash_loop_logs_and_graceful_delete(cluster: Server) -> None:
    cluster.kubectl(
        "run",
        "crash",
        "--image=busybox",
        "--annotations=kplane.dev/run-seconds=0",
        "--annotations=kplane.dev/exit-code=1",
        "--annotations=kplane.dev/output=boom",
    )
    pod = _until(
        lambda: "CrashLoopBackOff" in cluster.kubectl("get", "pod", "crash").stdout and _pod(cluster, "crash")
    )
    status = pod["status"]["containerStatuses"][0]
    # pkg/kubelet/kuberuntime/kuberuntime_manager.go doBackOff: the first back-off is 10 s
    assert status["state"]["waiting"]["message"] == (
        f"back-off 10s restarting failed container=crash pod=crash_default({pod['metadata']['uid']})"
    )
    assert status["restartCount"] == 1
    assert status["lastState"]["terminated"]["exitCode"] == 1
    assert status["lastState"]["terminated"]["reason"] == "Error"
    assert cluster.kubectl("logs", "crash").stdout == "boom\n"
    assert cluster.kubectl("logs", "crash", "--previous").stdout == "boom\n"

    cluster.kubectl("run", "talker", "--image=busybox", "--annotations=kplane.dev/output=line one\nline two")
    _until(lambda: _pod(cluster, "talker").get("status", {}).get("phase") == "Running")
    follower = cluster.kubectl_popen("logs", "-f", "talker")
    assert follower.stdout is not None
    assert follower.stdout.readline() == "line one\n"
    assert follower.stdout.readline() == "line two\n"
    started = time.monotonic()
    cluster.kubectl("delete", "pod", "talker", timeout=30)  # waits until the kubelet's final delete
    assert time.monotonic() - started < 15
    assert follower.wait(10) == 0
    assert cluster.kubectl("get", "pod", "talker", check=False).returncode != 0


def test_exec_answers_that_no_container_runs(cluster: Server) -> None:
    cluster.kubectl("run", "sleeper", "--image=busybox")
    _until(lambda: _pod(cluster, "sleeper").get("status", {}).get("phase") == "Running")
    res = cluster.kubectl("exec", "sleeper", "--", "true", check=False)
    assert res.returncode != 0
    assert "simulated" in res.stderr


def test_metrics_merge_the_controllers_without_duplicate_families(cluster: Server) -> None:
    """``/metrics`` of ``kplane serve`` appends its controllers' registry to its own: each family
    appears once (the controllers leave out ``process_*``, which the server already exposes; a
    Prometheus parser refuses a family given twice)."""
    from prometheus_client.parser import text_string_to_metric_families

    deadline = time.monotonic() + 20
    while True:  # the controllers' registry is merged once their process serves it
        text = cluster.kubectl("get", "--raw", "/metrics").stdout
        names = [family.name for family in text_string_to_metric_families(text)]
        if "controller_runtime_reconcile" in names or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert "controller_runtime_reconcile" in names and "process_resident_memory_bytes" in names
    assert len(names) == len(set(names)), sorted(n for n in set(names) if names.count(n) > 1)
