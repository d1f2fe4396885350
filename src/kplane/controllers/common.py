"""What the simulated nodes, scheduler, kubelet and node lifecycle controller share: resource
references, annotation names, quantities, pod requests and tolerations."""

from __future__ import annotations

import datetime
import re
from typing import Any

from kplane._util import clock as clock_mod
from kplane.client import dynamic

Object = dict[str, Any]

PODS = dynamic.Resource("", "v1", "pods", "Pod", namespaced=True)
NODES = dynamic.Resource("", "v1", "nodes", "Node", namespaced=False)
LEASES = dynamic.Resource("coordination.k8s.io", "v1", "leases", "Lease", namespaced=True)
EVENTS = dynamic.Resource("", "v1", "events", "Event", namespaced=True)
NODE_LEASE_NAMESPACE = "kube-node-lease"

ANNOTATION_PREFIX = "kplane.dev/"
HEARTBEAT = ANNOTATION_PREFIX + "heartbeat"
"""On a Node: ``stopped`` makes its simulated kubelet stop renewing the Lease, posting status and
running pods (a lost node, for tests); removing it brings the node back."""
RUN_SECONDS = ANNOTATION_PREFIX + "run-seconds"
"""On a Pod: seconds each container runs before it exits (absent: until the pod is deleted)."""
EXIT_CODE = ANNOTATION_PREFIX + "exit-code"
"""On a Pod: the exit code of a container that exits (default 0)."""
OUTPUT = ANNOTATION_PREFIX + "output"
"""On a Pod: what each container prints when it starts (lines, as the annotation's text)."""
CPU_USAGE = ANNOTATION_PREFIX + "cpu-usage"
"""On a Pod: the CPU each running container uses (``250m``, or per container ``app=250m,side=5m``),
reported to the metrics API (``resourceusage``); on a Node: what its system daemons use."""
MEMORY_USAGE = ANNOTATION_PREFIX + "memory-usage"
"""On a Pod: the memory each running container uses (``64Mi``, or per container); on a Node: what
its system daemons use."""
TERMINATION_SECONDS = ANNOTATION_PREFIX + "termination-seconds"
"""On a Pod: seconds a container takes to exit after SIGTERM (default 0; capped by the grace period)."""

NOT_READY_TAINT = "node.kubernetes.io/not-ready"
UNREACHABLE_TAINT = "node.kubernetes.io/unreachable"
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"

_QUANTITY = re.compile(r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)([a-zA-Z]*)$")
_SUFFIX = {
    "": 1.0,
    "m": 1e-3,
    "k": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "P": 1e15,
    "E": 1e18,
    "Ki": 2.0**10,
    "Mi": 2.0**20,
    "Gi": 2.0**30,
    "Ti": 2.0**40,
    "Pi": 2.0**50,
    "Ei": 2.0**60,
    "n": 1e-9,
    "u": 1e-6,
}


def quantity(value: Any) -> float:
    """A resource quantity (``500m``, ``1Gi``, ``2``) as a number; 0 when unreadable (the API
    server validated it already)."""
    if isinstance(value, (int, float)):
        return float(value)
    match = _QUANTITY.match(str(value).strip())
    if not match or match.group(2) not in _SUFFIX:
        return 0.0
    try:
        return float(match.group(1)) * _SUFFIX[match.group(2)]
    except ValueError:
        return 0.0


def pod_requests(pod: Object) -> dict[str, float]:
    """What the scheduler counts for ``pod``: per resource, the larger of the containers' sum and
    any init container's request, plus the pod overhead (upstream's ``PodRequests``)."""
    spec = pod.get("spec") or {}
    total: dict[str, float] = {}
    for c in spec.get("containers") or []:
        for name, value in ((c.get("resources") or {}).get("requests") or {}).items():
            total[name] = total.get(name, 0.0) + quantity(value)
    for c in spec.get("initContainers") or []:
        for name, value in ((c.get("resources") or {}).get("requests") or {}).items():
            total[name] = max(total.get(name, 0.0), quantity(value))
    for name, value in (spec.get("overhead") or {}).items():
        total[name] = total.get(name, 0.0) + quantity(value)
    return total


def tolerates(tolerations: list[Object], taint: Object) -> Object | None:
    """The first toleration of ``tolerations`` that tolerates ``taint`` (upstream's
    ``ToleratesTaint``), or None."""
    for t in tolerations:
        if t.get("effect") and t.get("effect") != taint.get("effect"):
            continue
        if t.get("key") and t.get("key") != taint.get("key"):
            continue
        op = t.get("operator") or "Equal"
        if op == "Exists" or (op == "Equal" and (t.get("value") or "") == (taint.get("value") or "")):
            return t
    return None


def rfc3339(clock: clock_mod.Clock) -> str:
    """The clock's time as API timestamps are written (seconds)."""
    return clock.now().astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(value: Any) -> datetime.datetime | None:
    """An API timestamp, or None."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


NODE_NAME_INDEX = "spec.nodeName"
"""The pod informer's index of pods by the node they are bound to (``index_by_node``)."""


def _node_name(pod: Any) -> list[str]:
    node = (pod.get("spec") or {}).get("nodeName")
    return [node] if node else []


def index_by_node(pods: Any) -> None:
    """Give the shared pod informer ``pods`` the ``NODE_NAME_INDEX`` index, unless it has it."""
    if NODE_NAME_INDEX not in pods.store.indexers():
        pods.add_indexers({NODE_NAME_INDEX: _node_name})


def is_terminal(pod: Object) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")
