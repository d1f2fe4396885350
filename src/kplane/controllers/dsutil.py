"""What the DaemonSet controller computes without the API, as upstream's
``pkg/controller/daemon/util`` and ``daemon_controller.go`` (reference/cluster.md §6.2): which nodes
should run a daemon pod, the pod for a node (automatic tolerations, node affinity pinned to the
node for the scheduler to bind), the node a pod targets, and rolling-update budgets.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from kplane.controllers import common, scheduler, workload
from kplane.controllers.workload import Object, meta

REVISION_LABEL = "controller-revision-hash"
GENERATION_LABEL = "pod-template-generation"

_AUTO_TOLERATIONS = (
    (common.NOT_READY_TAINT, "NoExecute"),
    (common.UNREACHABLE_TAINT, "NoExecute"),
    ("node.kubernetes.io/disk-pressure", "NoSchedule"),
    ("node.kubernetes.io/memory-pressure", "NoSchedule"),
    ("node.kubernetes.io/pid-pressure", "NoSchedule"),
    (common.UNSCHEDULABLE_TAINT, "NoSchedule"),
)
_NETWORK_UNAVAILABLE = ("node.kubernetes.io/network-unavailable", "NoSchedule")


def spec(ds: Object) -> Object:
    s: Object = ds.get("spec") or {}
    return s


def template(ds: Object) -> Object:
    t: Object = spec(ds).get("template") or {}
    return t


def with_tolerations(pod_spec: Object) -> Object:
    """``pod_spec`` with upstream's daemon tolerations (``Exists``, no seconds) added or replacing a
    toleration of the same key and effect."""
    wanted = list(_AUTO_TOLERATIONS)
    if pod_spec.get("hostNetwork"):
        wanted.append(_NETWORK_UNAVAILABLE)
    tolerations = [dict(t) for t in pod_spec.get("tolerations") or ()]
    for key, effect in wanted:
        auto = {"key": key, "operator": "Exists", "effect": effect}
        tolerations = [t for t in tolerations if (t.get("key"), t.get("effect")) != (key, effect)]
        tolerations.append(auto)
    return {**pod_spec, "tolerations": tolerations}


def should_run(ds: Object, node: Object) -> tuple[bool, bool]:
    """(should run a daemon pod, may keep running one) on ``node`` (upstream's
    ``NodeShouldRunDaemonPod``): the template's ``nodeName``, ``nodeSelector`` and required node
    affinity must hold; an untolerated NoSchedule/NoExecute taint stops new pods, and an
    untolerated NoExecute taint also removes running ones."""
    pod_spec = with_tolerations(template(ds).get("spec") or {})
    wanted_node = pod_spec.get("nodeName")
    if wanted_node and wanted_node != meta(node).get("name"):
        return False, False
    if not scheduler.affinity_ok({"spec": pod_spec}, node):
        return False, False
    tolerations = pod_spec.get("tolerations") or []
    taints = [
        t
        for t in (node.get("spec") or {}).get("taints") or ()
        if t.get("effect") in ("NoSchedule", "NoExecute")
    ]
    untolerated = [t for t in taints if common.tolerates(tolerations, t) is None]
    if untolerated:
        return False, not any(t.get("effect") == "NoExecute" for t in untolerated)
    return True, True


def new_pod(ds: Object, node_name: str, hash_: str) -> Object:
    """The daemon pod for ``node_name``: the template with the revision labels and tolerations, its
    required node affinity replaced by ``metadata.name In [node]`` (the scheduler binds it)."""
    tmpl = copy.deepcopy(template(ds))
    tmeta = tmpl.get("metadata") or {}
    labels = {**(tmeta.get("labels") or {}), REVISION_LABEL: hash_}
    generation = meta(ds).get("generation")
    if generation is not None:
        labels[GENERATION_LABEL] = str(generation)
    pod_meta: Object = {
        "generateName": f"{meta(ds)['name']}-",
        "namespace": meta(ds)["namespace"],
        "labels": labels,
    }
    for field in ("annotations", "finalizers"):
        if tmeta.get(field):
            pod_meta[field] = tmeta[field]
    pod_spec = with_tolerations(tmpl.get("spec") or {})
    affinity = dict(pod_spec.get("affinity") or {})
    node_affinity = dict(affinity.get("nodeAffinity") or {})
    node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {
        "nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}
        ]
    }
    affinity["nodeAffinity"] = node_affinity
    pod_spec["affinity"] = affinity
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": pod_spec}


def target_node(pod: Object) -> str:
    """The node a daemon pod runs on or is pinned to (``nodeName``, else its ``metadata.name`` term)."""
    pod_spec = pod.get("spec") or {}
    if pod_spec.get("nodeName"):
        return str(pod_spec["nodeName"])
    required = ((pod_spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    for term in required.get("nodeSelectorTerms") or ():
        for field in term.get("matchFields") or ():
            values = field.get("values") or []
            if field.get("key") == "metadata.name" and field.get("operator") == "In" and len(values) == 1:
                return str(values[0])
    return ""


def is_updated(pod: Object, hash_: str) -> bool:
    return bool(hash_) and (meta(pod).get("labels") or {}).get(REVISION_LABEL) == hash_


def is_available(pod: Object, min_ready: int, now: Any) -> bool:
    left = workload.available_in(pod, min_ready, now)
    return left is not None and left <= 0


def rolling(ds: Object) -> bool:
    return bool((spec(ds).get("updateStrategy") or {}).get("type", "RollingUpdate") == "RollingUpdate")


def budgets(ds: Object, desired: int) -> tuple[int, int]:
    """(maxSurge, maxUnavailable) against ``desired`` nodes, percentages rounded up; both 0 → 1
    unavailable (upstream's ``SurgeCount``/``UnavailableCount``)."""
    rolling_update = (spec(ds).get("updateStrategy") or {}).get("rollingUpdate") or {}
    surge = workload.int_or_percent(rolling_update.get("maxSurge", 0), desired, round_up=True)
    unavailable = workload.int_or_percent(rolling_update.get("maxUnavailable", 1), desired, round_up=True)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


def oldest_first(pods: list[Object]) -> list[Object]:
    """By creation time (then name), oldest first."""
    return sorted(pods, key=lambda p: (meta(p).get("creationTimestamp") or "", meta(p).get("name") or ""))


class FailedPodBackoff:
    """client-go's ``flowcontrol.Backoff`` as the DaemonSet controller uses it for failed pods, per
    (DaemonSet, node): 1 s doubling to 15 min; an entry idle for twice the maximum starts over.
    Times are ``monotonic()`` seconds."""

    def __init__(
        self, monotonic: Callable[[], float], *, initial: float = 1.0, maximum: float = 900.0
    ) -> None:
        self._monotonic = monotonic
        self._initial = initial
        self._maximum = maximum
        self._entries: dict[str, tuple[float, float]] = {}  # key -> (delay, last update)

    def in_backoff(self, key: str) -> float:
        """Seconds left before ``key`` may act again (0: it may now)."""
        entry = self._entries.get(key)
        if entry is None:
            return 0.0
        delay, last = entry
        return max(0.0, delay - (self._monotonic() - last))

    def next(self, key: str) -> None:
        """Record an action for ``key``: its delay starts at the initial one or doubles (capped)."""
        now = self._monotonic()
        entry = self._entries.get(key)
        if entry is None or now - entry[1] > 2 * self._maximum:
            delay = self._initial
        else:
            delay = min(entry[0] * 2, self._maximum)
        self._entries[key] = (delay, now)
        if len(self._entries) > 10_000:  # bounded: drop entries idle long enough to start over
            stale = [k for k, (_d, at) in self._entries.items() if now - at > 2 * self._maximum]
            for k in stale:
                del self._entries[k]
