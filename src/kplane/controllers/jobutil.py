"""Job facts the Job, CronJob and TTL controllers share (reference/cluster.md §7): conditions,
pod outcomes, completion indexes in upstream's compressed form (``1,3-5``), and the pod a Job
creates."""

from __future__ import annotations

import datetime

from kplane.client import dynamic
from kplane.controllers import workload
from kplane.controllers.workload import Object, meta
from kplane.runtime import ownership

JOBS = dynamic.Resource("batch", "v1", "jobs", "Job", namespaced=True)
TRACKING_FINALIZER = "batch.kubernetes.io/job-tracking"
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
INDEX_ENV = "JOB_COMPLETION_INDEX"

# pkg/controller/job/job_controller.go: reasons and messages of the conditions.
BACKOFF_EXCEEDED = ("BackoffLimitExceeded", "Job has reached the specified backoff limit")
DEADLINE_EXCEEDED = ("DeadlineExceeded", "Job was active longer than specified deadline")
COMPLETIONS_REACHED = ("CompletionsReached", "Reached expected number of succeeded pods")


def condition(status: Object, kind: str, *, value: str | None = "True") -> Object | None:
    """The condition of type ``kind`` (with status ``value``; None: any status)."""
    for cond in status.get("conditions") or ():
        if cond.get("type") == kind and (value is None or cond.get("status") == value):
            return dict(cond)
    return None


def new_condition(kind: str, reason: str, message: str, now: datetime.datetime) -> Object:
    when = workload.format_time(now)
    return {"type": kind, "status": "True", "lastProbeTime": when, "lastTransitionTime": when,
            "reason": reason, "message": message}  # fmt: skip


def finished(job: Object) -> Object | None:
    """The True ``Complete`` or ``Failed`` condition of a finished Job, else None."""
    status = job.get("status") or {}
    return condition(status, "Complete") or condition(status, "Failed")


def terminal(pod: Object) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def outcome(pod: Object, counting_terminating: bool) -> str | None:
    """``succeeded``/``failed`` for a finished pod, None while it runs. A terminating pod that has
    not succeeded counts as failed when ``counting_terminating``."""
    phase = (pod.get("status") or {}).get("phase")
    if phase == "Succeeded":
        return "succeeded"
    if phase == "Failed":
        return "failed"
    if counting_terminating and meta(pod).get("deletionTimestamp"):
        return "failed"
    return None


def finish_time(pod: Object) -> datetime.datetime | None:
    """When the pod's last container finished (its terminated state's ``finishedAt``)."""
    latest: datetime.datetime | None = None
    for cs in (pod.get("status") or {}).get("containerStatuses") or ():
        t = workload.parse_time(((cs.get("state") or {}).get("terminated") or {}).get("finishedAt"))
        if t is not None and (latest is None or t > latest):
            latest = t
    return latest


def index_of(pod: Object) -> int | None:
    value = (meta(pod).get("annotations") or {}).get(COMPLETION_INDEX)
    if value is None or not value.isdigit():
        return None
    return int(value)


def parse_indexes(text: str) -> set[int]:
    out: set[int] = set()
    for part in (text or "").split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        if lo.isdigit() and (not hi or hi.isdigit()):
            out.update(range(int(lo), int(hi or lo) + 1))
    return out


def format_indexes(indexes: set[int]) -> str:
    parts: list[str] = []
    run: list[int] = []
    for i in sorted(indexes):
        if run and i == run[-1] + 1:
            run.append(i)
            continue
        if run:
            parts.append(_run(run))
        run = [i]
    if run:
        parts.append(_run(run))
    return ",".join(parts)


def _run(run: list[int]) -> str:
    return str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}"


def pod_for(job: Object, index: int | None) -> Object:
    """The pod ``job`` creates (for completion ``index`` when Indexed)."""
    name = meta(job)["name"]
    template = workload.deep_copy((job.get("spec") or {}).get("template") or {})
    tmeta = template.get("metadata") or {}
    spec: Object = template.get("spec") or {}
    labels = dict(tmeta.get("labels") or {})
    annotations = dict(tmeta.get("annotations") or {})
    generate = f"{name}-"
    if index is not None:
        labels[COMPLETION_INDEX] = annotations[COMPLETION_INDEX] = str(index)
        generate = f"{name}-{index}-"
        spec.setdefault("hostname", f"{name}-{index}")
        env = {"name": INDEX_ENV, "valueFrom": {"fieldRef": {
            "fieldPath": f"metadata.annotations['{COMPLETION_INDEX}']"}}}  # fmt: skip
        for field in ("initContainers", "containers"):
            for container in spec.get(field) or ():
                if not any(e.get("name") == INDEX_ENV for e in container.get("env") or ()):
                    container["env"] = [*(container.get("env") or ()), env]
    pod_meta: Object = {
        "generateName": generate[:58],
        "labels": labels,
        "finalizers": [*(tmeta.get("finalizers") or ()), TRACKING_FINALIZER],
        "ownerReferences": [ownership.owner_reference(job, controller=True)],
    }
    if annotations:
        pod_meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": spec}
