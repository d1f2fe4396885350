"""What the StatefulSet controller computes without the API, as upstream's
``pkg/controller/statefulset/stateful_set_utils.go`` (reference/cluster.md §6.1): pod identity
(``<set>-<ordinal>``, hostname, subdomain, labels), claim names, the pod a revision makes, health,
and the status of a set of pods.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from kplane.controllers import history, workload
from kplane.controllers.workload import Object, meta
from kplane.runtime import ownership

REVISION_LABEL = "controller-revision-hash"
POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"
_ORDINAL = re.compile(r"^(.*)-([0-9]+)$")


def spec(sts: Object) -> Object:
    s: Object = sts.get("spec") or {}
    return s


def replicas(sts: Object) -> int:
    value = spec(sts).get("replicas", 1)
    return value if isinstance(value, int) else 1


def start_ordinal(sts: Object) -> int:
    value = (spec(sts).get("ordinals") or {}).get("start", 0)
    return value if isinstance(value, int) else 0


def ordered(sts: Object) -> bool:
    """``OrderedReady`` (the default): one pod at a time, each waiting for the previous to be ready."""
    return bool(spec(sts).get("podManagementPolicy", "OrderedReady") != "Parallel")


def rolling(sts: Object) -> bool:
    return bool((spec(sts).get("updateStrategy") or {}).get("type", "RollingUpdate") == "RollingUpdate")


def partition(sts: Object) -> int:
    value = ((spec(sts).get("updateStrategy") or {}).get("rollingUpdate") or {}).get("partition", 0)
    return value if isinstance(value, int) else 0


def ordinal_of(sts: Object, pod: Object) -> int | None:
    """The ordinal of a pod named ``<set>-<n>``, or None for a pod that is not a member by name."""
    match = _ORDINAL.match(meta(pod).get("name") or "")
    if not match or match.group(1) != meta(sts).get("name"):
        return None
    return int(match.group(2))


def pod_name(sts: Object, ordinal: int) -> str:
    return f"{meta(sts)['name']}-{ordinal}"


def claim_name(template_name: str, sts: Object, ordinal: int) -> str:
    return f"{template_name}-{pod_name(sts, ordinal)}"


def identity_matches(sts: Object, pod: Object, ordinal: int) -> bool:
    """The pod carries its identity labels (the name and the ordinal)."""
    labels = meta(pod).get("labels") or {}
    return labels.get(POD_NAME_LABEL) == pod_name(sts, ordinal) and labels.get(POD_INDEX_LABEL) == str(
        ordinal
    )


def revision_of(pod: Object) -> str:
    return str((meta(pod).get("labels") or {}).get(REVISION_LABEL, ""))


def is_terminating(pod: Object) -> bool:
    return bool(meta(pod).get("deletionTimestamp"))


def is_failed(pod: Object) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Failed", "Succeeded")


def is_running_ready(pod: Object) -> bool:
    return (pod.get("status") or {}).get("phase") == "Running" and workload.is_ready(pod)


def is_healthy(pod: Object) -> bool:
    """Running, ready and not terminating (upstream's ``isHealthy``)."""
    return is_running_ready(pod) and not is_terminating(pod)


def new_pod(sts: Object, revision: Object, ordinal: int) -> Object:
    """The pod of ``ordinal`` at ``revision`` (its template), with the set's identity and claims."""
    template = copy.deepcopy(history.template_of(revision))
    tmeta = template.get("metadata") or {}
    name = pod_name(sts, ordinal)
    labels = {
        **(tmeta.get("labels") or {}),
        POD_NAME_LABEL: name,
        POD_INDEX_LABEL: str(ordinal),
        REVISION_LABEL: meta(revision)["name"],
    }
    pod_meta: Object = {"name": name, "namespace": meta(sts)["namespace"], "labels": labels}
    for field in ("annotations", "finalizers"):
        if tmeta.get(field):
            pod_meta[field] = tmeta[field]
    pod_meta["ownerReferences"] = [ownership.owner_reference(with_kind(sts), controller=True)]
    pod_spec: Object = dict(template.get("spec") or {})
    pod_spec["hostname"] = name
    if spec(sts).get("serviceName"):
        pod_spec["subdomain"] = spec(sts)["serviceName"]
    claims = claim_templates(sts)
    if claims:
        volumes = [v for v in pod_spec.get("volumes") or () if v.get("name") not in claims]
        for claim in claims:
            volumes.append(
                {"name": claim, "persistentVolumeClaim": {"claimName": claim_name(claim, sts, ordinal)}}
            )
        pod_spec["volumes"] = volumes
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": pod_spec}


def claim_templates(sts: Object) -> dict[str, Object]:
    """``volumeClaimTemplates`` by name."""
    out: dict[str, Object] = {}
    for claim in spec(sts).get("volumeClaimTemplates") or ():
        name = (claim.get("metadata") or {}).get("name")
        if name:
            out[name] = claim
    return out


def new_claim(sts: Object, template: Object, ordinal: int) -> Object:
    """The PVC of ``template`` for ``ordinal``: the template's labels plus the set's selector labels;
    owned by the set when ``whenDeleted: Delete`` (the garbage collector then takes it)."""
    tmeta = template.get("metadata") or {}
    selector = (spec(sts).get("selector") or {}).get("matchLabels") or {}
    body: Object = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": claim_name(tmeta["name"], sts, ordinal),
            "namespace": meta(sts)["namespace"],
            "labels": {**(tmeta.get("labels") or {}), **selector},
        },
        "spec": copy.deepcopy(template.get("spec") or {}),
    }
    if tmeta.get("annotations"):
        body["metadata"]["annotations"] = dict(tmeta["annotations"])
    if retention(sts, "whenDeleted") == "Delete":
        body["metadata"]["ownerReferences"] = [ownership.owner_reference(with_kind(sts))]
    return body


def retention(sts: Object, when: str) -> str:
    policy = spec(sts).get("persistentVolumeClaimRetentionPolicy") or {}
    return str(policy.get(when) or "Retain")


def with_kind(sts: Object) -> Object:
    return {**sts, "apiVersion": sts.get("apiVersion") or "apps/v1", "kind": sts.get("kind") or "StatefulSet"}


def status(
    sts: Object, pods: list[Object], current: str, update: str, now: Any
) -> tuple[Object, float | None]:
    """The set's status over its member ``pods`` (and when to look again for availability), with
    upstream's ``completeRollingUpdate``: once every replica is updated and ready, current := update."""
    min_ready = int(spec(sts).get("minReadySeconds") or 0)
    count = ready = available = cur = upd = 0
    wait: float | None = None
    for pod in pods:
        if is_terminating(pod):
            continue
        count += 1
        if is_running_ready(pod):
            ready += 1
            left = workload.available_in(pod, min_ready, now)
            if left is not None and left <= 0:
                available += 1
            elif left is not None:
                wait = left if wait is None else min(wait, left)
        revision = revision_of(pod)
        if revision == current:
            cur += 1
        if revision == update:
            upd += 1
    out: Object = {
        "observedGeneration": meta(sts).get("generation", 0),
        "replicas": count,
        "readyReplicas": ready,
        "availableReplicas": available,
        "currentReplicas": cur,
        "updatedReplicas": upd,
        "currentRevision": current,
        "updateRevision": update,
    }
    collisions = (sts.get("status") or {}).get("collisionCount")
    if collisions is not None:
        out["collisionCount"] = collisions
    if rolling(sts) and upd == count and ready == count:
        out["currentRevision"] = update
        out["currentReplicas"] = upd
    return out, wait
