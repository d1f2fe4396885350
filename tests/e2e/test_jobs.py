"""Jobs through the real kubectl against ``kplane serve`` (its default controllers: simulated nodes
and kubelet run the pods, scripted by ``kplane.dev/*`` annotations). Conditions, reasons and messages
are upstream's (pkg/controller/job/job_controller.go, 1.32; reference/cluster.md §7.3)."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from typing import Any

import pytest

from tests.e2e import conftest as e2e
from tests.e2e import helpers

pytestmark = [e2e.requires_kubectl, pytest.mark.timeout(120)]


def _apply(cluster: e2e.Server, manifest: dict[str, Any]) -> None:
    assert e2e.KUBECTL is not None
    subprocess.run(
        [e2e.KUBECTL, "--kubeconfig", str(cluster.kubeconfig), "apply", "-f", "-"],
        input=json.dumps(manifest), text=True, check=True, capture_output=True, timeout=30,
    )  # fmt: skip


def _job(name: str, *, annotations: dict[str, str], **spec: Any) -> dict[str, Any]:
    template = {
        "metadata": {"annotations": annotations},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "work", "image": "busybox"}]},
    }
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
            "spec": {**spec, "template": template}}  # fmt: skip


def _get(cluster: e2e.Server, kind: str, name: str) -> dict[str, Any]:
    return dict(json.loads(cluster.kubectl("get", kind, name, "-o", "json").stdout))


def _conditions(job: dict[str, Any]) -> dict[str, tuple[str, str, str]]:
    return {c["type"]: (c["status"], c.get("reason", ""), c.get("message", ""))
            for c in job.get("status", {}).get("conditions", ())}  # fmt: skip


def test_job_completes_five_two_at_a_time(cluster: e2e.Server) -> None:
    _apply(cluster, _job("five", annotations={"kplane.dev/run-seconds": "0.5"}, completions=5, parallelism=2))
    most: list[int] = []
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            out = cluster.kubectl("get", "pods", "-l", "job-name=five", "-o", "json", check=False).stdout
            if out:
                pods = json.loads(out)["items"]
                running = [p for p in pods if p.get("status", {}).get("phase") not in ("Succeeded", "Failed")
                           and not p["metadata"].get("deletionTimestamp")]  # fmt: skip
                most.append(len(running))
            time.sleep(0.05)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        cluster.kubectl("wait", "--for=condition=Complete", "job/five", "--timeout=60s")
    finally:
        stop.set()
        watcher.join()
    assert most and max(most) <= 2
    job = _get(cluster, "job", "five")
    status = job["status"]
    assert status["succeeded"] == 5
    assert status.get("failed", 0) == 0 and status["active"] == 0
    assert status["uncountedTerminatedPods"] == {}
    assert status["completionTime"] and status["startTime"]
    conds = _conditions(job)
    assert conds["SuccessCriteriaMet"] == (
        "True",
        "CompletionsReached",
        "Reached expected number of succeeded pods",
    )
    assert conds["Complete"] == ("True", "CompletionsReached", "Reached expected number of succeeded pods")
    pods = json.loads(cluster.kubectl("get", "pods", "-l", "job-name=five", "-o", "json").stdout)["items"]
    assert len(pods) == 5
    assert all(
        "batch.kubernetes.io/job-tracking" not in (p["metadata"].get("finalizers") or ()) for p in pods
    )
    assert all(p["metadata"]["ownerReferences"][0]["kind"] == "Job" for p in pods)
    out = cluster.kubectl("get", "job", "five").stdout
    assert "5/5" in out


def test_failing_job_reaches_backoff_limit(cluster: e2e.Server) -> None:
    _apply(
        cluster,
        _job(
            "fails",
            annotations={"kplane.dev/run-seconds": "0.2", "kplane.dev/exit-code": "1"},
            backoffLimit=1,
        ),
    )
    cluster.kubectl("wait", "--for=condition=Failed", "job/fails", "--timeout=60s")
    job = _get(cluster, "job", "fails")
    conds = _conditions(job)
    reason = ("True", "BackoffLimitExceeded", "Job has reached the specified backoff limit")
    assert conds["FailureTarget"] == reason
    assert conds["Failed"] == reason
    assert job["status"]["failed"] == 2  # backoffLimit 1: the second failure exceeds it
    assert "completionTime" not in job["status"]
    events = cluster.kubectl("get", "events", "--field-selector", "involvedObject.name=fails").stdout
    assert "BackoffLimitExceeded" in events


def test_indexed_job_and_deadline(cluster: e2e.Server) -> None:
    _apply(
        cluster,
        _job(
            "idx",
            annotations={"kplane.dev/run-seconds": "0.2"},
            completions=3,
            parallelism=3,
            completionMode="Indexed",
        ),
    )
    cluster.kubectl("wait", "--for=condition=Complete", "job/idx", "--timeout=60s")
    job = _get(cluster, "job", "idx")
    assert job["status"]["completedIndexes"] == "0-2"
    pods = json.loads(cluster.kubectl("get", "pods", "-l", "job-name=idx", "-o", "json").stdout)["items"]
    by_index = {p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"]: p for p in pods}
    assert sorted(by_index) == ["0", "1", "2"]
    pod = by_index["1"]
    assert pod["metadata"]["name"].startswith("idx-1-")
    assert pod["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"] == "1"
    assert pod["spec"]["hostname"] == "idx-1"
    env = pod["spec"]["containers"][0]["env"]
    field_path = "metadata.annotations['batch.kubernetes.io/job-completion-index']"
    index_env = {"fieldRef": {"apiVersion": "v1", "fieldPath": field_path}}
    assert {"name": "JOB_COMPLETION_INDEX", "valueFrom": index_env} in env

    _apply(cluster, _job("slow", annotations={}, activeDeadlineSeconds=2))
    cluster.kubectl("wait", "--for=condition=Failed", "job/slow", "--timeout=60s")
    conds = _conditions(_get(cluster, "job", "slow"))
    assert conds["Failed"] == ("True", "DeadlineExceeded", "Job was active longer than specified deadline")


def test_ttl_after_finished_deletes_the_job(cluster: e2e.Server) -> None:
    _apply(cluster, _job("brief", annotations={"kplane.dev/run-seconds": "0.1"}, ttlSecondsAfterFinished=1))
    cluster.kubectl("wait", "--for=condition=Complete", "job/brief", "--timeout=60s")
    gone = helpers.until(lambda: cluster.kubectl("get", "job", "brief", check=False).returncode != 0)
    assert gone


def test_pods_of_a_deleted_job_lose_the_tracking_finalizer(cluster: e2e.Server) -> None:
    _apply(cluster, _job("gone", annotations={}, parallelism=2, completions=2))

    def pods() -> list[dict[str, Any]]:
        out = cluster.kubectl("get", "pods", "-l", "job-name=gone", "-o", "json").stdout
        return list(json.loads(out)["items"])

    def tracked() -> bool:
        items = pods()
        return len(items) == 2 and all(TRACKING in (p["metadata"].get("finalizers") or ()) for p in items)

    assert helpers.until(tracked)
    cluster.kubectl("delete", "job", "gone", "--wait=false")
    assert helpers.until(lambda: all(TRACKING not in (p["metadata"].get("finalizers") or ()) for p in pods()))


TRACKING = "batch.kubernetes.io/job-tracking"


def test_suspend_and_resume(cluster: e2e.Server) -> None:
    _apply(cluster, _job("pause", annotations={}, parallelism=2, completions=4))

    def live() -> list[dict[str, Any]]:
        out = cluster.kubectl("get", "pods", "-l", "job-name=pause", "-o", "json").stdout
        return list(json.loads(out)["items"])

    assert helpers.until(lambda: len(live()) == 2)
    cluster.kubectl("patch", "job", "pause", "-p", '{"spec":{"suspend":true}}')
    assert helpers.until(lambda: live() == [])  # deleted and released by the controller
    job = _get(cluster, "job", "pause")
    assert _conditions(job)["Suspended"] == ("True", "JobSuspended", "Job suspended")
    assert job["status"].get("failed", 0) == 0  # pods removed by suspension are not failures
    cluster.kubectl("patch", "job", "pause", "-p", '{"spec":{"suspend":false}}')
    assert helpers.until(lambda: len(live()) == 2)
    resumed = helpers.until(lambda: _conditions(_get(cluster, "job", "pause"))["Suspended"][0] == "False")
    assert resumed
    assert _conditions(_get(cluster, "job", "pause"))["Suspended"] == ("False", "JobResumed", "Job resumed")
