"""Deployment arithmetic and bookkeeping, as upstream's ``pkg/controller/deployment/util``: the
pod-template hash, fenceposts (maxSurge/maxUnavailable), revision and replica annotations,
conditions and the status computed from the ReplicaSets (reference/cluster.md §5).

The template hash is FNV-32a, with the collision count appended as 4 little-endian bytes, and the
decimal of the sum rendered through ``SafeEncodeString`` as upstream's ``ComputeHash``. Departure:
upstream hashes Go's ``spew`` dump of the template struct, which only Go's type layout can
reproduce; kplane hashes the template's canonical JSON (sorted keys), so the same template gives a
stable hash of the same shape, not the number kube-controller-manager would pick.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable

import orjson

from kplane.controllers import workload
from kplane.controllers.workload import Object, meta

HASH_LABEL = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"
REVISION_HISTORY = "deployment.kubernetes.io/revision-history"
DESIRED_REPLICAS = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
ROLLBACK_TO = "deprecated.deployment.rollback.to"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
MAX_REVISION_HISTORY_CHARS = 2000
_SKIP_COPY = {LAST_APPLIED, REVISION, REVISION_HISTORY, DESIRED_REPLICAS, MAX_REPLICAS, ROLLBACK_TO}

PROGRESSING, AVAILABLE, REPLICA_FAILURE = "Progressing", "Available", "ReplicaFailure"
NEW_RS_CREATED = "NewReplicaSetCreated"
FOUND_NEW_RS = "FoundNewReplicaSet"
RS_UPDATED = "ReplicaSetUpdated"
NEW_RS_AVAILABLE = "NewReplicaSetAvailable"
TIMED_OUT = "ProgressDeadlineExceeded"
PAUSED = "DeploymentPaused"
RESUMED = "DeploymentResumed"
RS_CREATE_ERROR = "ReplicaSetCreateError"
MIN_AVAILABLE = "MinimumReplicasAvailable"
MIN_UNAVAILABLE = "MinimumReplicasUnavailable"
_MAX_INT32 = 2**31 - 1
_FNV_OFFSET, _FNV_PRIME = 0x811C9DC5, 0x01000193


def fnv32a(data: bytes, h: int = _FNV_OFFSET) -> int:
    for byte in data:
        h = ((h ^ byte) * _FNV_PRIME) & 0xFFFFFFFF
    return h


def compute_hash(template: Object, collision_count: int | None) -> str:
    """The ``pod-template-hash`` of ``template`` (see the module docstring)."""
    h = fnv32a(orjson.dumps(template, option=orjson.OPT_SORT_KEYS))
    if collision_count is not None:
        h = fnv32a((collision_count & 0xFFFFFFFF).to_bytes(4, "little"), h)
    return workload.safe_encode(str(h))


def without_hash(template: Object) -> Object:
    labels = dict((template.get("metadata") or {}).get("labels") or {})
    labels.pop(HASH_LABEL, None)
    out = {**template, "metadata": {**(template.get("metadata") or {}), "labels": labels}}
    if not labels:
        del out["metadata"]["labels"]
    return out


def equal_ignore_hash(a: Object, b: Object) -> bool:
    return without_hash(a) == without_hash(b)


def spec(obj: Object) -> Object:
    s: Object = obj.get("spec") or {}
    return s


def replicas(obj: Object) -> int:
    value = spec(obj).get("replicas", 1)
    return int(value) if value is not None else 1


def status_int(obj: Object, field: str) -> int:
    return int((obj.get("status") or {}).get(field) or 0)


def is_rolling(d: Object) -> bool:
    kind: str = (spec(d).get("strategy") or {}).get("type") or "RollingUpdate"
    return kind == "RollingUpdate"


def fenceposts(d: Object) -> tuple[int, int]:
    """``ResolveFenceposts``: (maxSurge rounded up, maxUnavailable rounded down); both 0 → 0, 1."""
    rolling = (spec(d).get("strategy") or {}).get("rollingUpdate") or {}
    want = replicas(d)
    surge = workload.int_or_percent(rolling.get("maxSurge", "25%"), want, round_up=True)
    unavailable = workload.int_or_percent(rolling.get("maxUnavailable", "25%"), want, round_up=False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


def max_surge(d: Object) -> int:
    return fenceposts(d)[0] if is_rolling(d) else 0


def max_unavailable(d: Object) -> int:
    if not is_rolling(d) or replicas(d) == 0:
        return 0
    return min(fenceposts(d)[1], replicas(d))


def revision(rs: Object) -> int:
    try:
        return int((meta(rs).get("annotations") or {}).get(REVISION, "0"))
    except ValueError:
        return 0


def has_progress_deadline(d: Object) -> bool:
    value = spec(d).get("progressDeadlineSeconds")
    return value is not None and value != _MAX_INT32


def set_new_rs_annotations(d: Object, rs: Object, new_revision: str, exists: bool) -> bool:
    """``SetNewReplicaSetAnnotations``: copy the Deployment's annotations, raise the revision (keeping
    the old one in ``revision-history``) and, on a new ReplicaSet, the replica annotations."""
    annotations = rs.setdefault("metadata", {}).setdefault("annotations", {})
    changed = False
    for key, value in (meta(d).get("annotations") or {}).items():
        if key not in _SKIP_COPY and annotations.get(key) != value:
            annotations[key] = value
            changed = True
    old = annotations.get(REVISION, "")
    try:
        old_int = int(old) if old else 0
    except ValueError:
        return changed
    if old_int < int(new_revision):
        annotations[REVISION] = new_revision
        changed = True
        if old:
            history = annotations.get(REVISION_HISTORY, "")
            entries = [e for e in history.split(",") if e]
            entries.append(old)
            while len(",".join(entries)) > MAX_REVISION_HISTORY_CHARS and len(entries) > 1:
                entries.pop(0)
            annotations[REVISION_HISTORY] = ",".join(entries)
    if not exists and set_replicas_annotations(rs, replicas(d), replicas(d) + max_surge(d)):
        changed = True
    return changed


def set_replicas_annotations(rs: Object, desired: int, maximum: int) -> bool:
    annotations = rs.setdefault("metadata", {}).setdefault("annotations", {})
    if annotations.get(DESIRED_REPLICAS) == str(desired) and annotations.get(MAX_REPLICAS) == str(maximum):
        return False
    annotations[DESIRED_REPLICAS] = str(desired)
    annotations[MAX_REPLICAS] = str(maximum)
    return True


def replicas_annotations_differ(rs: Object, d: Object) -> bool:
    annotations = meta(rs).get("annotations") or {}
    return annotations.get(DESIRED_REPLICAS) != str(replicas(d)) or annotations.get(MAX_REPLICAS) != str(
        replicas(d) + max_surge(d)
    )


# Conditions.


def condition(status: Object, kind: str) -> Object | None:
    for cond in status.get("conditions") or ():
        if cond.get("type") == kind:
            return dict(cond)
    return None


def new_condition(kind: str, state: str, reason: str, message: str, now: datetime.datetime) -> Object:
    stamp = workload.format_time(now)
    return {
        "type": kind,
        "status": state,
        "lastUpdateTime": stamp,
        "lastTransitionTime": stamp,
        "reason": reason,
        "message": message,
    }


def set_condition(status: Object, cond: Object) -> None:
    """``SetDeploymentCondition``: same status and reason → unchanged; same status → keep the
    transition time."""
    current = condition(status, cond["type"])
    if current and current.get("status") == cond["status"] and current.get("reason") == cond["reason"]:
        return
    if current and current.get("status") == cond["status"]:
        cond = {**cond, "lastTransitionTime": current.get("lastTransitionTime")}
    remove_condition(status, cond["type"])
    status.setdefault("conditions", []).append(cond)


def remove_condition(status: Object, kind: str) -> None:
    status["conditions"] = [c for c in status.get("conditions") or () if c.get("type") != kind]


# Status.


def calculate_status(
    all_rss: Iterable[Object], new_rs: Object | None, d: Object, now: datetime.datetime
) -> Object:
    """``calculateStatus``: counts from the ReplicaSets, the Available condition, conditions kept."""
    rss = list(all_rss)
    available = sum(status_int(rs, "availableReplicas") for rs in rss)
    total = sum(replicas(rs) for rs in rss)
    old = d.get("status") or {}
    status: Object = {
        "observedGeneration": meta(d).get("generation", 0),
        "replicas": sum(status_int(rs, "replicas") for rs in rss),
        "updatedReplicas": status_int(new_rs, "replicas") if new_rs else 0,
        "readyReplicas": sum(status_int(rs, "readyReplicas") for rs in rss),
        "availableReplicas": available,
        "unavailableReplicas": max(0, total - available),
        "conditions": [dict(c) for c in old.get("conditions") or ()],
    }
    if old.get("collisionCount") is not None:
        status["collisionCount"] = old["collisionCount"]
    if available >= replicas(d) - max_unavailable(d):
        cond = new_condition(AVAILABLE, "True", MIN_AVAILABLE, "Deployment has minimum availability.", now)
    else:
        cond = new_condition(
            AVAILABLE, "False", MIN_UNAVAILABLE, "Deployment does not have minimum availability.", now
        )
    set_condition(status, cond)
    return status


def complete(d: Object, status: Object) -> bool:
    want = replicas(d)
    return (
        status.get("updatedReplicas") == want
        and status.get("replicas") == want
        and status.get("availableReplicas") == want
        and int(status.get("observedGeneration") or 0) >= int(meta(d).get("generation") or 0)
    )


def progressing(d: Object, status: Object) -> bool:
    old = d.get("status") or {}

    def get(s: Object, f: str) -> int:
        return int(s.get(f) or 0)

    return (
        get(status, "updatedReplicas") > get(old, "updatedReplicas")
        or get(status, "replicas") - get(status, "updatedReplicas")
        < get(old, "replicas") - get(old, "updatedReplicas")
        or get(status, "readyReplicas") > get(old, "readyReplicas")
        or get(status, "availableReplicas") > get(old, "availableReplicas")
    )


def deadline_left(d: Object, status: Object, now: datetime.datetime) -> float | None:
    """Seconds until the progress deadline passes (≤ 0: passed); None when there is none to watch."""
    if not has_progress_deadline(d):
        return None
    cond = condition(status, PROGRESSING)
    if cond is None or cond.get("reason") in (NEW_RS_AVAILABLE, TIMED_OUT):
        return None
    since = workload.parse_time(cond.get("lastUpdateTime"))
    if since is None:
        return None
    return float(spec(d)["progressDeadlineSeconds"]) - (now - since).total_seconds()


def go_round(x: float) -> int:
    """Go's ``math.Round``: halves away from zero."""
    return int(x + 0.5) if x >= 0 else -int(-x + 0.5)
