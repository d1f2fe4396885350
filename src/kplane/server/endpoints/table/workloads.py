"""Printers for workload controllers: apps/v1, batch/v1 and core ReplicationController.

Replica counts that the API server would have defaulted (``spec.replicas`` → 1,
``spec.suspend`` → false) are read with the same default, so a cell never shows a value the
stored object could not have had upstream.
"""

from __future__ import annotations

from typing import Any

from kplane.server.endpoints.table import _format
from kplane.server.endpoints.table import printer as p


def _template_spec(obj: _format.Obj) -> Any:
    return _format.get(obj, "spec", "template", "spec")


# -- apps/v1 Deployment ----------------------------------------------------------------------

DEPLOYMENT_COLUMNS = (
    p.NAME,
    p.column("Ready", description="Ready pods out of the desired replicas."),
    p.column("Up-to-date", description="Pods that run the current template."),
    p.column("Available", description="Pods ready for at least minReadySeconds."),
    p.AGE,
    p.CONTAINERS,
    p.IMAGES,
    p.selector_column("pods"),
)


def deployment_cells(obj: _format.Obj, ctx: _format.Context) -> list[Any]:
    meta = _format.as_dict(obj.get("metadata"))
    spec = _format.as_dict(obj.get("spec"))
    status = _format.as_dict(obj.get("status"))
    names, images = _format.containers(_template_spec(obj))
    return [
        meta.get("name", ""),
        f"{_format.as_int(status.get('readyReplicas'))}/{_format.as_int(spec.get('replicas'), 1)}",
        _format.as_int(status.get("updatedReplicas")),
        _format.as_int(status.get("availableReplicas")),
        ctx.age(meta.get("creationTimestamp")),
        names,
        images,
        _format.selector_string(spec.get("selector")),
    ]


# -- apps/v1 ReplicaSet, core/v1 ReplicationController ---------------------------------------

REPLICA_SET_COLUMNS = (
    p.NAME,
    p.column("Desired", "integer", "The number of pods wanted."),
    p.column("Current", "integer", "The number of pods that exist."),
    p.column("Ready", "integer", "The number of ready pods."),
    p.AGE,
    p.CONTAINERS,
    p.IMAGES,
    p.selector_column("pods"),
)


def replica_set_cells(obj: _format.Obj, ctx: _format.Context) -> list[Any]:
    meta = _format.as_dict(obj.get("metadata"))
    spec = _format.as_dict(obj.get("spec"))
    status = _format.as_dict(obj.get("status"))
    names, images = _format.containers(_template_spec(obj))
    return [
        meta.get("name", ""),
        _format.as_int(spec.get("replicas"), 1),
        _format.as_int(status.get("replicas")),
        _format.as_int(status.get("readyReplicas")),
        ctx.age(meta.get("creationTimestamp")),
        names,
        images,
        _format.format_selector(spec.get("selector")),
    ]


def replication_controller_cells(obj: _format.Obj, ctx: _format.Context) -> list[Any]:
    row = replica_set_cells(obj, ctx)
    row[-1] = _format.format_labels(_format.get(obj, "spec", "selector"))  # a plain label map here
    return row


# -- apps/v1 StatefulSet ---------------------------------------------------------------------

STATEFUL_SET_COLUMNS = (
    p.NAME,
    p.column("Ready", description="Ready pods out of the desired replicas."),
    p.AGE,
    p.CONTAINERS,
    p.IMAGES,
)


def stateful_set_cells(obj: _format.Obj, ctx: _format.Context) -> list[Any]:
    meta = _format.as_dict(obj.get("metadata"))
    names, images = _format.containers(_template_spec(obj))
    ready = _format.as_int(_format.get(obj, "status", "readyReplicas"))
    return [
        meta.get("name", ""),
        f"{ready}/{_format.as_int(_format.get(obj, 'spec', 'replicas'), 1)}",
        ctx.age(meta.get("creationTimestamp")),
        names,
        images,
    ]


# -- apps/v1 DaemonSet -----------------------------------------------------------------------

DAEMON_SET_COLUMNS = (
    p.NAME,
    p.column("Desired", "integer", "Nodes that should run the daemon pod."),
    p.column("Current", "integer", "Nodes running at least one daemon pod."),
    p.column("Ready", "integer", "Nodes whose daemon pod is ready."),
    p.column("Up-to-date", "integer", "Nodes running the current template."),
    p.column("Available", "integer", "Nodes whose daemon pod has been ready for minReadySeconds."),
    p.column("Node Selector", description="Labels a node needs to run the daemon pod."),
    p.AGE,
    p.CONTAINERS,
    p.IMAGES,
    p.selector_column("pods"),
)


def daemon_set_cells(obj: _format.Obj, ctx: _format.Context) -> list[Any]:
    meta = _format.as_dict(obj.get("metadata"))
    status = _format.as_dict(obj.get("status"))
    template_spec = _template_spec(obj)
    names, images = _format.containers(template_spec)
    return [
        meta.get("name", ""),
        _format.as_int(status.get("desiredNumberScheduled")),
        _format.as_int(status.get("currentNumberScheduled")),
        _format.as_int(status.get("numberReady")),
        _format.as_int(status.get("updatedNumberScheduled")),
        _format.as_int(status.get("numberAvailable")),
        _format.format_labels(_format.get(template_spec, "nodeSelector")),
        ctx.age(meta.get("creationTimestamp")),
        names,
        images,
        _format.format_selector(_format.get(obj, "spec", "selector")),
    ]


# -- apps/v1 ControllerRevision --------------------------------------------------------------

CONTROLLER_REVISION_COLUMNS = (
    p.NAME,
    p.column("Controller", description="The object that owns this revision."),
    p.column("Revision", description="The revision number."),
    p.AGE,
)


def controller_revision_cells(obj: _format.Obj, ctx: _format.Context) -> list[Any]:
    meta = _format.as_dict(obj.get("metadata"))
    owner = "<none>"
    for ref in _format.as_list(meta.get("ownerReferences")):
        if isinstance(ref, dict) and ref.get("controller") is True:
            group = _format.as_str(ref.get("apiVersion")).rpartition("/")[0]
            kind = _format.as_str(ref.get("kind"))
            qualified = f"{kind}.{group}" if group else kind
            owner = (
                f"{qualified.lower()}/{_format.as_str(ref.get('name'))}"
                if kind
                else _format.as_str(ref.get("name"))
            )
            break
    return [
        meta.get("name", ""),
        owner,
        _format.as_int(obj.get("revision")),
        ctx.age(meta.get("creationTimestamp")),
    ]


# -- batch/v1 Job ----------------------------------------------------------------------------

JOB_COLUMNS = (
    p.NAME,
    p.column("Status", description="Status of the job."),
    p.column("Completions", description="Succeeded pods out of the completions wanted."),
    p.column("Duration", description="Time the job ran (so far, while it runs)."),
    p.AGE,
    p.CONTAINERS,
    p.IMAGES,
    p.selector_column("pods"),
)


def _job_condition(status: _format.Obj, kind: str) -> bool:
    for cond in _format.as_list(status.get("conditions")):
        if isinstance(cond, dict) and cond.get("type") == kind:
            return cond.get("status") == "True"
    return False


def job_status(job: _format.Obj) -> str:
    """Complete, Failed, Terminating, Suspended, FailureTarget or Running (first that applies)."""
    status = _format.as_dict(job.get("status"))
    if _job_condition(status, "Complete"):
        return "Complete"
    if _job_condition(status, "Failed"):
        return "Failed"
    if _format.get(job, "metadata", "deletionTimestamp"):
        return "Terminating"
    if _job_condition(status, "Suspended"):
        return "Suspended"
    if _job_condition(status, "FailureTarget"):
        return "FailureTarget"
    return "Running"


def job_cells(obj: _format.Obj, ctx: _format.Context) -> list[Any]:
    meta = _format.as_dict(obj.get("metadata"))
    spec = _format.as_dict(obj.get("spec"))
    status = _format.as_dict(obj.get("status"))
    succeeded = _format.as_int(status.get("succeeded"))
    if isinstance(spec.get("completions"), int):
        completions = f"{succeeded}/{_format.as_int(spec.get('completions'))}"
    elif _format.as_int(spec.get("parallelism")) > 1:
        completions = f"{succeeded}/1 of {_format.as_int(spec.get('parallelism'))}"
    else:
        completions = f"{succeeded}/1"
    start = status.get("startTime")
    if not start:
        took = ""
    elif status.get("completionTime"):
        took = ctx.between(start, status.get("completionTime"))
    else:
        took = ctx.age(start)
    names, images = _format.containers(_template_spec(obj))
    return [
        meta.get("name", ""),
        job_status(obj),
        completions,
        took,
        ctx.age(meta.get("creationTimestamp")),
        names,
        images,
        _format.format_selector(spec.get("selector")),
    ]


# -- batch/v1 CronJob ------------------------------------------------------------------------

CRON_JOB_COLUMNS = (
    p.NAME,
    p.column("Schedule", description="The schedule, in cron format."),
    p.column("Timezone", description="The time zone the schedule is read in."),
    p.column("Suspend", "boolean", "Whether new runs are held back."),
    p.column("Active", "integer", "Jobs of this CronJob that are running."),
    p.column("Last Schedule", description="When a job was last scheduled."),
    p.AGE,
    p.CONTAINERS,
    p.IMAGES,
    p.selector_column("pods"),
)


def cron_job_cells(obj: _format.Obj, ctx: _format.Context) -> list[Any]:
    meta = _format.as_dict(obj.get("metadata"))
    spec = _format.as_dict(obj.get("spec"))
    status = _format.as_dict(obj.get("status"))
    last = status.get("lastScheduleTime")
    job_spec = _format.get(spec, "jobTemplate", "spec")
    names, images = _format.containers(_format.get(job_spec, "template", "spec"))
    return [
        meta.get("name", ""),
        _format.as_str(spec.get("schedule")),
        _format.as_str(spec.get("timeZone")) or _format.NONE,
        _format.bool_text(spec.get("suspend")),
        len(_format.as_list(status.get("active"))),
        ctx.age(last) if last else _format.NONE,
        ctx.age(meta.get("creationTimestamp")),
        names,
        images,
        _format.format_selector(_format.get(job_spec, "selector")),
    ]


PRINTERS: dict[tuple[str, str], p.Printer] = {
    ("apps", "Deployment"): p.Printer(DEPLOYMENT_COLUMNS, deployment_cells),
    ("apps", "ReplicaSet"): p.Printer(REPLICA_SET_COLUMNS, replica_set_cells),
    ("", "ReplicationController"): p.Printer(REPLICA_SET_COLUMNS, replication_controller_cells),
    ("apps", "StatefulSet"): p.Printer(STATEFUL_SET_COLUMNS, stateful_set_cells),
    ("apps", "DaemonSet"): p.Printer(DAEMON_SET_COLUMNS, daemon_set_cells),
    ("apps", "ControllerRevision"): p.Printer(CONTROLLER_REVISION_COLUMNS, controller_revision_cells),
    ("batch", "Job"): p.Printer(JOB_COLUMNS, job_cells),
    ("batch", "CronJob"): p.Printer(CRON_JOB_COLUMNS, cron_job_cells),
}
