"""The ReplicaSet controller: keeps ``spec.replicas`` active pods matching the selector, as upstream's
``pkg/controller/replicaset`` (reference/cluster.md §1, §4).

Each sync claims the namespace's active pods (adopting matching orphans, releasing children that no
longer match), then, once the creates/deletes of the previous sync have been observed
(``workload.Expectations``) and the ReplicaSet is not being deleted, creates the missing pods in
slow-start batches (1, 2, 4, …; a failed batch stops the rest) or deletes the surplus ranked as
upstream's ``ActivePodsWithRanks`` — at most 500 either way per sync — and always writes the status
(``replicas``, ``fullyLabeledReplicas``, ``readyReplicas``, ``availableReplicas``,
``observedGeneration``, condition ``ReplicaFailure``) when it changed. Pods are named by the server
from ``generateName: <rs>-`` (5 characters of its alphabet).

Departure: the co-location rank (step 5 of the deletion order) counts the pods of this ReplicaSet
on each node, not those of its sibling ReplicaSets under the same Deployment.
"""

from __future__ import annotations

import asyncio
import math
from typing import Any

from kplane import runtime
from kplane.api import errors
from kplane.client import events
from kplane.controllers import workload
from kplane.controllers.workload import Object, meta
from kplane.runtime import ownership

BURST_REPLICAS = 500
COMPONENT = "replicaset-controller"
DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"
_PHASE_ORDER = {"Pending": 0, "Unknown": 1, "Running": 2}


class ReplicaSetController:
    """Reconciles ReplicaSets; ``setup`` wires it to the manager (ReplicaSets and their pods)."""

    def __init__(self, manager: runtime.Manager, *, workers: int = 10) -> None:
        self.manager = manager
        self.client = manager.client
        self.api = manager.api.dynamic
        self.clock = manager.clock
        self.expectations = workload.Expectations(manager.clock.monotonic)
        self.recorder: events.EventRecorder = manager.event_recorder(COMPONENT)
        self._workers = workers
        self._rs_lister: Any = None
        self._pods: Any = None

    async def setup(self) -> runtime.Controller:
        """Build the controller (added to the manager by the builder)."""
        self._rs_lister = (await self.manager.cache.informer(workload.REPLICASETS)).lister()
        self._pods = await self.manager.cache.informer(workload.PODS)
        workload.index_by_controller(self._pods)
        return await (
            runtime.Builder(self.manager)
            .for_(workload.REPLICASETS)
            .watches(workload.PODS, workload.PodHandler(self))
            .named("replicaset")
            .with_options(runtime.ControllerOptions(max_concurrent_reconciles=self._workers))
            .complete(self)
        )

    def owners_of(self, pod: Object) -> list[runtime.Request]:
        """The ReplicaSets to sync for ``pod``: its controller, or every ReplicaSet selecting an orphan."""
        return workload.owners_of(pod, "ReplicaSet", self._rs_lister)

    async def reconcile(self, request: runtime.Request) -> runtime.Result | None:
        key = str(request)
        try:
            rs = await self.client.get(workload.REPLICASETS, request.name, request.namespace)
        except errors.NotFound:
            self.expectations.forget(key)
            return None
        # the cache's own objects (no copies: 1,000 pods a sync): read here, never modified
        cached = workload.claim_candidates(self._pods, rs)
        candidates = [p for p in cached if workload.is_active(p)]
        pods = await workload.claim_with(self.api, workload.REPLICASETS, rs, candidates, workload.PODS)
        failure: errors.APIError | None = None
        if self.expectations.satisfied(key) and not meta(rs).get("deletionTimestamp"):
            failure = await self._manage(rs, key, pods)
        now = self.clock.now()
        min_ready = int((rs.get("spec") or {}).get("minReadySeconds") or 0)
        status, wait = self._status(rs, pods, failure, now, min_ready)
        await self._write_status(rs, status)
        if failure is not None:
            raise failure
        if wait is not None:
            return runtime.Result(requeue_after=wait + 0.05)
        return None

    # Pods.

    async def _manage(self, rs: Object, key: str, pods: list[Object]) -> errors.APIError | None:
        want = int((rs.get("spec") or {}).get("replicas", 1) or 0)
        diff = len(pods) - want
        if diff < 0:
            count = min(-diff, BURST_REPLICAS)
            self.expectations.expect(key, adds=count)
            return await self._create(rs, key, count)
        if diff > 0:
            victims = sorted(pods, key=_rank_key(pods, self.clock.now()))[: min(diff, BURST_REPLICAS)]
            self.expectations.expect(key, deletes=[workload.pod_key(p) for p in victims])
            results = await asyncio.gather(*(self._delete(rs, key, p) for p in victims))
            return next((r for r in results if r is not None), None)
        return None

    async def _create(self, rs: Object, key: str, count: int) -> errors.APIError | None:
        template = (rs.get("spec") or {}).get("template") or {}
        created = 0
        for size in workload.slow_start_batches(count):
            results = await asyncio.gather(*(self._create_one(rs, template) for _ in range(size)))
            failures = [r for r in results if r is not None]
            created += size - len(failures)
            for _ in failures:
                self.expectations.created(key)
            if failures:
                for _ in range(count - created - len(failures)):  # the batches never sent
                    self.expectations.created(key)
                return failures[0]
        return None

    async def _create_one(self, rs: Object, template: Object) -> errors.APIError | None:
        tmeta = template.get("metadata") or {}
        pod_meta: Object = {"generateName": f"{meta(rs)['name']}-", "namespace": meta(rs)["namespace"]}
        for field in ("labels", "annotations", "finalizers"):
            if tmeta.get(field):
                pod_meta[field] = tmeta[field]
        pod_meta["ownerReferences"] = [ownership.owner_reference(_with_kind(rs), controller=True)]
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": template.get("spec") or {}}
        try:
            made = await self.api.resource(workload.PODS).create(pod, namespace=meta(rs)["namespace"])
        except errors.APIError as err:
            if workload.namespace_terminating(err):
                return None
            self.recorder.event(rs, "Warning", "FailedCreate", f"Error creating: {err.message}")
            return err
        self.recorder.event(rs, "Normal", "SuccessfulCreate", f"Created pod: {meta(made).get('name')}")
        return None

    async def _delete(self, rs: Object, key: str, pod: Object) -> errors.APIError | None:
        name = meta(pod)["name"]
        try:
            await self.api.resource(workload.PODS).delete(name, namespace=meta(pod)["namespace"])
        except errors.NotFound:
            self.expectations.deleted(key, workload.pod_key(pod))
            return None
        except errors.APIError as err:
            self.expectations.deleted(key, workload.pod_key(pod))
            self.recorder.event(rs, "Warning", "FailedDelete", f"Error deleting: {err.message}")
            return err
        self.recorder.event(rs, "Normal", "SuccessfulDelete", f"Deleted pod: {name}")
        return None

    # Status.

    def _status(
        self, rs: Object, pods: list[Object], failure: errors.APIError | None, now: Any, min_ready: int
    ) -> tuple[Object, float | None]:
        spec = rs.get("spec") or {}
        template_labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
        ready = available = labeled = 0
        wait: float | None = None
        for pod in pods:
            labels = meta(pod).get("labels") or {}
            if all(labels.get(k) == v for k, v in template_labels.items()):
                labeled += 1
            left = workload.available_in(pod, min_ready, now)
            if left is None:
                continue
            ready += 1
            if left <= 0:
                available += 1
            else:
                wait = left if wait is None else min(wait, left)
        old = rs.get("status") or {}
        conditions = [c for c in old.get("conditions") or () if c.get("type") != "ReplicaFailure"]
        if failure is not None:
            reason = "FailedCreate" if len(pods) < int(spec.get("replicas", 1) or 0) else "FailedDelete"
            prior = next((c for c in old.get("conditions") or () if c.get("type") == "ReplicaFailure"), None)
            conditions.append(
                prior
                or {
                    "type": "ReplicaFailure",
                    "status": "True",
                    "lastTransitionTime": workload.format_time(now),
                    "reason": reason,
                    "message": failure.message,
                }
            )
        status: Object = {
            "replicas": len(pods),
            "fullyLabeledReplicas": labeled,
            "readyReplicas": ready,
            "availableReplicas": available,
            "observedGeneration": meta(rs).get("generation", 0),
        }
        if conditions:
            status["conditions"] = conditions
        return status, wait

    async def _write_status(self, rs: Object, status: Object) -> None:
        old = rs.get("status") or {}
        if all(old.get(k, 0) == v for k, v in status.items() if k != "conditions") and (
            old.get("conditions") or []
        ) == (status.get("conditions") or []):
            return
        await workload.update_status(self.api.resource(workload.REPLICASETS), _with_kind(rs), status)


def _with_kind(rs: Object) -> Object:
    return {**rs, "apiVersion": rs.get("apiVersion") or "apps/v1", "kind": rs.get("kind") or "ReplicaSet"}


def _log_bucket(seconds: float) -> int:
    return int(math.log2(seconds)) if seconds >= 1 else -1


def _rank_key(pods: list[Object], now: Any) -> Any:
    """upstream's ``ActivePodsWithRanks.Less`` as a sort key: the first pods are deleted first."""
    on_node: dict[str, int] = {}
    for pod in pods:
        node = (pod.get("spec") or {}).get("nodeName") or ""
        on_node[node] = on_node.get(node, 0) + 1

    def key(pod: Object) -> tuple[Any, ...]:
        spec, status, m = pod.get("spec") or {}, pod.get("status") or {}, meta(pod)
        node = spec.get("nodeName") or ""
        ready = workload.is_ready(pod)
        try:
            cost = int((m.get("annotations") or {}).get(DELETION_COST, 0))
        except ValueError:
            cost = 0
        ready_age = 0
        if ready:
            since = workload.parse_time((workload.ready_condition(pod) or {}).get("lastTransitionTime"))
            ready_age = _log_bucket((now - since).total_seconds()) if since else 0
        restarts = max((c.get("restartCount", 0) for c in status.get("containerStatuses") or ()), default=0)
        created = workload.parse_time(m.get("creationTimestamp"))
        age = _log_bucket((now - created).total_seconds()) if created else 0
        return (
            1 if node else 0,
            _PHASE_ORDER.get(status.get("phase", ""), 0),
            1 if ready else 0,
            cost,
            -on_node.get(node, 0) if node else 0,
            ready_age,
            -restarts,
            age,
            m.get("uid", ""),
        )

    return key
