"""The Pod printer: readiness, the one-word status kubectl shows, restarts.

The status word follows kube-apiserver's rules, in order: the phase (or ``status.reason``);
``SchedulingGated`` while gated; init containers (``Init:1/3``, ``Init:CrashLoopBackOff``,
``Init:ExitCode:1``) while initializing; otherwise the first container with a waiting or
terminated reason (``CrashLoopBackOff``, ``Completed``, ``ExitCode:2``, ``Signal:9``), with
``Completed`` turned back into ``Running``/``NotReady`` while another container still runs;
finally ``Terminating`` (or ``Unknown`` for a pod lost with its node) once deletion began.
"""

from __future__ import annotations

from typing import Any

from kplane.api import duration
from kplane.server.endpoints.table import _format
from kplane.server.endpoints.table import printer as p

COLUMNS = (
    p.NAME,
    p.column("Ready", description="Ready containers out of all containers of the pod."),
    p.column("Status", description="The aggregate status of the pod's containers."),
    p.column(
        "Restarts",
        description="Container restarts in this pod, and how long ago the last one happened.",
    ),
    p.AGE,
    p.column("IP", description="The pod's primary IP address.", priority=1),
    p.column("Node", description="The node the pod is bound to.", priority=1),
    p.column(
        "Nominated Node",
        description="The node where the pod may run once preemption frees room.",
        priority=1,
    ),
    p.column(
        "Readiness Gates", description="Readiness gates that are True, out of all declared.", priority=1
    ),
)

_SUCCEEDED = [
    {
        "type": "Completed",
        "status": "True",
        "reason": "Succeeded",
        "message": "The pod has completed successfully.",
    }
]
_FAILED = [{"type": "Completed", "status": "True", "reason": "Failed", "message": "The pod failed."}]


def conditions(pod: _format.Obj) -> list[dict[str, Any]] | None:
    """Row conditions: pods that ran to completion are marked ``Completed``."""
    phase = _format.get(pod, "status", "phase")
    if phase == "Succeeded":
        return _SUCCEEDED
    if phase == "Failed":
        return _FAILED
    return None


def _condition_true(status: _format.Obj, kind: str) -> bool:
    return any(
        isinstance(c, dict) and c.get("type") == kind and c.get("status") == "True"
        for c in _format.as_list(status.get("conditions"))
    )


def _terminated_reason(terminated: _format.Obj, prefix: str) -> str:
    reason = _format.as_str(terminated.get("reason"))
    if reason:
        return prefix + reason
    signal = _format.as_int(terminated.get("signal"))
    if signal:
        return f"{prefix}Signal:{signal}"
    return f"{prefix}ExitCode:{_format.as_int(terminated.get('exitCode'))}"


class _Restarts:
    """Sum of restart counts and the latest ``lastState.terminated.finishedAt`` seen."""

    __slots__ = ("count", "last")

    def __init__(self) -> None:
        self.count = 0
        self.last = ""

    def add(self, status: _format.Obj) -> None:
        self.count += _format.as_int(status.get("restartCount"))
        finished = _format.get(status, "lastState", "terminated", "finishedAt")
        if isinstance(finished, str) and _later(finished, self.last):
            self.last = finished


def _later(candidate: str, current: str) -> bool:
    if not current:
        return True
    a, b = duration.parse_timestamp(candidate), duration.parse_timestamp(current)
    return a is not None and (b is None or a > b)


def cells(pod: _format.Obj, ctx: _format.Context) -> list[Any]:
    """Name, Ready, Status, Restarts, Age, IP, Node, Nominated Node, Readiness Gates."""
    meta = _format.as_dict(pod.get("metadata"))
    spec = _format.as_dict(pod.get("spec"))
    status = _format.as_dict(pod.get("status"))
    phase = _format.as_str(status.get("phase"))
    reason = _format.as_str(status.get("reason")) or phase
    for cond in _format.as_list(status.get("conditions")):
        if _format.get(cond, "type") == "PodScheduled" and _format.get(cond, "reason") == "SchedulingGated":
            reason = "SchedulingGated"

    init_specs = [c for c in _format.as_list(spec.get("initContainers")) if isinstance(c, dict)]
    sidecars = {_format.as_str(c.get("name")) for c in init_specs if c.get("restartPolicy") == "Always"}
    total = len(_format.as_list(spec.get("containers"))) + len(sidecars)
    ready = 0

    all_restarts = _Restarts()
    sidecar_restarts = _Restarts()
    initializing = False
    for i, cs in enumerate(_format.as_list(status.get("initContainerStatuses"))):
        cs = _format.as_dict(cs)
        all_restarts.add(cs)
        is_sidecar = _format.as_str(cs.get("name")) in sidecars
        if is_sidecar:
            sidecar_restarts.add(cs)
        state = _format.as_dict(cs.get("state"))
        terminated = state.get("terminated")
        waiting = state.get("waiting")
        if isinstance(terminated, dict) and _format.as_int(terminated.get("exitCode")) == 0:
            continue
        if is_sidecar and cs.get("started") is True:
            if cs.get("ready") is True:
                ready += 1
            continue
        if isinstance(terminated, dict):
            reason = _terminated_reason(terminated, "Init:")
        elif isinstance(waiting, dict) and _format.as_str(waiting.get("reason")) not in (
            "",
            "PodInitializing",
        ):
            reason = "Init:" + _format.as_str(waiting.get("reason"))
        else:
            reason = f"Init:{i}/{len(init_specs)}"
        initializing = True
        break

    restarts = all_restarts
    if not initializing or _condition_true(status, "Initialized"):
        restarts = sidecar_restarts
        has_running = False
        for cs in reversed(_format.as_list(status.get("containerStatuses"))):
            cs = _format.as_dict(cs)
            restarts.add(cs)
            state = _format.as_dict(cs.get("state"))
            waiting = state.get("waiting")
            terminated = state.get("terminated")
            if isinstance(waiting, dict) and _format.as_str(waiting.get("reason")):
                reason = _format.as_str(waiting.get("reason"))
            elif isinstance(terminated, dict):
                reason = _terminated_reason(terminated, "")
            elif cs.get("ready") is True and isinstance(state.get("running"), dict):
                has_running = True
                ready += 1
        if reason == "Completed" and has_running:
            reason = "Running" if _condition_true(status, "Ready") else "NotReady"

    if meta.get("deletionTimestamp"):
        if status.get("reason") == "NodeLost":
            reason = "Unknown"
        elif phase not in ("Succeeded", "Failed"):
            reason = "Terminating"

    restarts_text = str(restarts.count)
    if restarts.count and restarts.last:
        restarts_text = f"{restarts.count} ({ctx.age(restarts.last)} ago)"

    pod_ips = _format.as_list(status.get("podIPs"))
    ip = _format.as_str(_format.get(pod_ips[0], "ip")) if pod_ips else _format.as_str(status.get("podIP"))
    gates = [g for g in _format.as_list(spec.get("readinessGates")) if isinstance(g, dict)]
    gates_text = _format.NONE
    if gates:
        by_type: dict[str, Any] = {}
        for cond in _format.as_list(status.get("conditions")):
            if isinstance(cond, dict):
                by_type.setdefault(_format.as_str(cond.get("type")), cond.get("status"))
        passed = sum(1 for g in gates if by_type.get(_format.as_str(g.get("conditionType"))) == "True")
        gates_text = f"{passed}/{len(gates)}"

    return [
        meta.get("name", ""),
        f"{ready}/{total}",
        reason,
        restarts_text,
        ctx.age(meta.get("creationTimestamp")),
        ip or _format.NONE,
        _format.as_str(spec.get("nodeName")) or _format.NONE,
        _format.as_str(status.get("nominatedNodeName")) or _format.NONE,
        gates_text,
    ]


PRINTER = p.Printer(COLUMNS, cells, conditions)
