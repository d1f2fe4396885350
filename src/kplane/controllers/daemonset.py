"""The DaemonSet controller, as upstream's ``pkg/controller/daemon`` (reference/cluster.md §6.2).

Each sync claims the namespace's pods, brings the ControllerRevisions up to date (``history``; name
``<ds>-<hash>`` with the pod-template hash, which daemon pods carry as ``controller-revision-hash``)
and groups the pods by the node they run on or are pinned to. Once the previous sync's creates and
deletes have been observed (``workload.Expectations``) and the DaemonSet is not being deleted:

* **manage**, per node (``dsutil.should_run``): a node that should run a daemon pod and has none
  gets one (node affinity pinned to it; the scheduler binds it), at most 250 per sync in slow-start
  batches; Failed pods are deleted (Warning ``FailedDaemonPod``), per node no sooner than a
  back-off of 1 s doubling to 15 min since the last such deletion; surplus pods go, keeping the
  oldest (with ``maxSurge``, the oldest updated and the oldest old one); pods on nodes that must
  not keep running one (an untolerated NoExecute taint, a selector no longer matching) are deleted;
* **rolling update**, when manage had nothing to do: without surge, old pods are deleted on up to
  ``maxUnavailable`` minus the unavailable nodes (old pods that are unavailable anyway always go)
  and manage recreates them next time; with surge, a new pod starts beside the old one on up to
  ``maxSurge`` nodes and the old one is deleted once the new one is available. ``OnDelete`` replaces
  only pods users delete.

Then the status (``desiredNumberScheduled``, ``currentNumberScheduled``, ``numberMisscheduled``,
``numberReady``, ``numberAvailable``, ``numberUnavailable``, ``updatedNumberScheduled``,
``observedGeneration``) is written when it changed, and the history truncated. Node events
(added, removed, labels, taints) wake every DaemonSet.

Departure: pods pinned to a node that no longer exists are deleted here (upstream leaves bound
ones to the pod garbage collector, which kplane does not run).
"""

from __future__ import annotations

import asyncio
from typing import Any

from kplane import runtime
from kplane.api import errors
from kplane.client import dynamic, events
from kplane.controllers import common, deployutil, dsutil, history, workload
from kplane.controllers.workload import Object, meta
from kplane.runtime import ownership

DAEMONSETS = dynamic.Resource("apps", "v1", "daemonsets", "DaemonSet", namespaced=True)
COMPONENT = "daemonset-controller"
BURST = 250


class DaemonSetController:
    """Reconciles DaemonSets; ``setup`` wires it to the manager (DaemonSets, their pods, nodes)."""

    def __init__(self, manager: runtime.Manager, *, workers: int = 2) -> None:
        self.manager = manager
        self.api = manager.api.dynamic
        self.clock = manager.clock
        self.expectations = workload.Expectations(manager.clock.monotonic)
        self.failed_backoff = dsutil.FailedPodBackoff(manager.clock.monotonic)
        self.history = history.History(self.api, DAEMONSETS)
        self.recorder: events.EventRecorder = manager.event_recorder(COMPONENT)
        self._workers = workers
        self._lister: Any = None

    async def setup(self) -> runtime.Controller:
        """Build the controller (added to the manager by the builder)."""
        self._lister = (await self.manager.cache.informer(DAEMONSETS)).lister()
        await self.manager.cache.informer(history.CONTROLLERREVISIONS)
        return await (
            runtime.Builder(self.manager)
            .for_(DAEMONSETS)
            .watches(workload.PODS, workload.PodHandler(self))
            .watches(common.NODES, _NodeHandler(self))
            .named("daemonset")
            .with_options(runtime.ControllerOptions(max_concurrent_reconciles=self._workers))
            .complete(self)
        )

    def owners_of(self, pod: Object) -> list[runtime.Request]:
        return workload.owners_of(pod, "DaemonSet", self._lister)

    def all_daemonsets(self) -> list[runtime.Request]:
        if self._lister is None:
            return []
        return [runtime.Request(meta(d)["namespace"], meta(d)["name"]) for d in self._lister.list()]

    async def reconcile(self, request: runtime.Request) -> runtime.Result | None:
        key = str(request)
        try:
            ds = await self.manager.client.get(DAEMONSETS, request.name, request.namespace)
        except errors.NotFound:
            self.expectations.forget(key)
            return None
        ds = {**ds, "apiVersion": ds.get("apiVersion") or "apps/v1", "kind": ds.get("kind") or "DaemonSet"}
        ns = request.namespace
        nodes = await self.manager.cache.list(common.NODES, "", deep_copy=False)
        cached = await self.manager.cache.list(workload.PODS, ns, deep_copy=False)
        pods = await workload.claim_with(self.api, DAEMONSETS, ds, cached, workload.PODS)
        revisions = await self.history.claim(
            ds, await self.manager.cache.list(history.CONTROLLERREVISIONS, ns)
        )
        template = dsutil.template(ds)
        collisions = (ds.get("status") or {}).get("collisionCount")
        hash_ = deployutil.compute_hash(template, collisions)
        try:
            update, revisions = await self.history.sync(
                ds,
                revisions,
                name_hash=lambda c: deployutil.compute_hash(template, c),
                extra_labels=lambda h: {dsutil.REVISION_LABEL: h},
            )
        except history.Collision:
            await self._write_status(ds, {"collisionCount": int(collisions or 0) + 1})
            return runtime.Result(requeue=True)
        by_node: dict[str, list[Object]] = {}
        for pod in pods:
            by_node.setdefault(dsutil.target_node(pod), []).append(pod)
        now = self.clock.now()
        backoff: float | None = None
        if self.expectations.satisfied(key) and not meta(ds).get("deletionTimestamp"):
            acted, backoff = await self._manage(ds, key, nodes, by_node, hash_)
            if not acted and dsutil.rolling(ds):
                await self._rolling_update(ds, key, nodes, by_node, hash_, now)
        status, wait = self._status(ds, nodes, by_node, hash_, now)
        if backoff is not None:
            wait = backoff if wait is None else min(wait, backoff)
        old = ds.get("status") or {}
        if any(old.get(k, 0) != v for k, v in status.items()):
            await self._write_status(ds, status)
        name = meta(ds)["name"]
        keep = {meta(update)["name"]} | {
            history.revision_name(name, str((meta(p).get("labels") or {}).get(dsutil.REVISION_LABEL, "")))
            for p in pods
        }
        await self.history.truncate(ds, revisions, keep)
        if wait is not None:
            return runtime.Result(requeue_after=wait + 0.05)
        return None

    # Pods per node.

    async def _manage(
        self, ds: Object, key: str, nodes: list[Object], by_node: dict[str, list[Object]], hash_: str
    ) -> tuple[bool, float | None]:
        """Create and delete pods so each node has what it should: whether anything was sent, and
        when to come back for a failed pod held by its back-off."""
        surge, _ = dsutil.budgets(ds, len(nodes))
        creates: list[str] = []
        deletes: list[Object] = []
        known: set[str] = set()
        held: float | None = None
        for node in nodes:
            name = meta(node)["name"]
            known.add(name)
            run, keep = dsutil.should_run(ds, node)
            node_pods = by_node.get(name, [])
            if run and not node_pods:
                creates.append(name)
            elif keep:
                running: list[Object] = []
                for pod in node_pods:
                    if meta(pod).get("deletionTimestamp"):
                        continue
                    if common.is_terminal(pod):
                        # upstream: deleting failed pods fights a kubelet that rejects them; back off
                        backoff_key = f"{meta(ds).get('uid')}/{name}"
                        left = self.failed_backoff.in_backoff(backoff_key)
                        if left > 0:
                            held = left if held is None else min(held, left)
                            continue
                        self.failed_backoff.next(backoff_key)
                        self.recorder.event(
                            ds,
                            "Warning",
                            "FailedDaemonPod",
                            f"Found failed daemon pod {meta(pod)['namespace']}/{meta(pod)['name']} on node "
                            f"{name}, will try to kill it",
                        )
                        deletes.append(pod)
                    else:
                        running.append(pod)
                deletes.extend(_surplus(dsutil.oldest_first(running), hash_, surge > 0))
            else:
                deletes.extend(p for p in node_pods if not meta(p).get("deletionTimestamp"))
        for name, node_pods in by_node.items():
            if name not in known:  # pinned to a node that is gone (see the module docstring)
                deletes.extend(p for p in node_pods if not meta(p).get("deletionTimestamp"))
        creates = creates[:BURST]
        if not creates and not deletes:
            return False, held
        self.expectations.expect(key, adds=len(creates), deletes=[workload.pod_key(p) for p in deletes])
        await self._delete(ds, key, deletes)
        await self._create(ds, key, creates, hash_)
        return True, held

    async def _rolling_update(
        self,
        ds: Object,
        key: str,
        nodes: list[Object],
        by_node: dict[str, list[Object]],
        hash_: str,
        now: Any,
    ) -> None:
        eligible = [meta(n)["name"] for n in nodes if dsutil.should_run(ds, n)[0]]
        surge, unavailable = dsutil.budgets(ds, len(eligible))
        min_ready = int(dsutil.spec(ds).get("minReadySeconds") or 0)
        busy = 0  # nodes unavailable (no surge) or surging (surge)
        allowed: list[str] = []
        candidates: list[str] = []
        old_by_node: dict[str, Object] = {}
        old_to_delete: list[Object] = []
        for name in eligible:
            running = [p for p in by_node.get(name, []) if not meta(p).get("deletionTimestamp")]
            new = [p for p in running if dsutil.is_updated(p, hash_)]
            old = [p for p in running if not dsutil.is_updated(p, hash_)]
            if len(new) > 1 or len(old) > 1:
                busy += 1  # manage cleans the duplicates up first
                continue
            new_pod = new[0] if new else None
            old_pod = old[0] if old else None
            if old_pod is None:
                if surge == 0 and (new_pod is None or not dsutil.is_available(new_pod, min_ready, now)):
                    busy += 1
                continue
            old_by_node[name] = old_pod
            if new_pod is not None:
                if surge == 0 or not dsutil.is_available(new_pod, min_ready, now):
                    busy += 1
                elif surge > 0:
                    old_to_delete.append(old_pod)
                continue
            budget = surge if surge > 0 else unavailable
            if not dsutil.is_available(old_pod, min_ready, now):
                allowed.append(name)
            elif busy < budget:
                candidates.append(name)
        budget = surge if surge > 0 else unavailable
        chosen = allowed + candidates[: max(0, budget - busy)]
        if surge > 0:
            if not chosen and not old_to_delete:
                return
            self.expectations.expect(
                key, adds=len(chosen), deletes=[workload.pod_key(p) for p in old_to_delete]
            )
            await self._delete(ds, key, old_to_delete)
            await self._create(ds, key, chosen, hash_)
            return
        victims = [old_by_node[n] for n in chosen]
        if victims:
            self.expectations.expect(key, deletes=[workload.pod_key(p) for p in victims])
            await self._delete(ds, key, victims)

    # Writes.

    async def _create(self, ds: Object, key: str, node_names: list[str], hash_: str) -> None:
        pending = list(node_names)
        for size in workload.slow_start_batches(len(pending)):
            batch, pending = pending[:size], pending[size:]
            results = await asyncio.gather(*(self._create_one(ds, n, hash_) for n in batch))
            for ok in results:
                if not ok:
                    self.expectations.created(key)
            if not all(results):
                for _ in pending:  # the batches never sent
                    self.expectations.created(key)
                return

    async def _create_one(self, ds: Object, node_name: str, hash_: str) -> bool:
        pod = dsutil.new_pod(ds, node_name, hash_)
        pod["metadata"]["ownerReferences"] = [ownership.owner_reference(ds, controller=True)]
        try:
            made = await self.api.resource(workload.PODS).create(pod, namespace=meta(ds)["namespace"])
        except errors.APIError as err:
            if not workload.namespace_terminating(err):
                self.recorder.event(ds, "Warning", "FailedCreate", f"Error creating: {err.message}")
            return False
        self.recorder.event(ds, "Normal", "SuccessfulCreate", f"Created pod: {meta(made).get('name')}")
        return True

    async def _delete(self, ds: Object, key: str, pods: list[Object]) -> None:
        async def one(pod: Object) -> None:
            name = meta(pod)["name"]
            try:
                await self.api.resource(workload.PODS).delete(name, namespace=meta(pod)["namespace"])
            except errors.NotFound:
                self.expectations.deleted(key, workload.pod_key(pod))
                return
            except errors.APIError as err:
                self.expectations.deleted(key, workload.pod_key(pod))
                self.recorder.event(ds, "Warning", "FailedDelete", f"Error deleting: {err.message}")
                return
            self.recorder.event(ds, "Normal", "SuccessfulDelete", f"Deleted pod: {name}")

        await asyncio.gather(*(one(p) for p in pods))

    def _status(
        self, ds: Object, nodes: list[Object], by_node: dict[str, list[Object]], hash_: str, now: Any
    ) -> tuple[Object, float | None]:
        min_ready = int(dsutil.spec(ds).get("minReadySeconds") or 0)
        desired = current = misscheduled = ready = available = updated = 0
        wait: float | None = None
        for node in nodes:
            node_pods = by_node.get(meta(node)["name"], [])
            if not dsutil.should_run(ds, node)[0]:
                misscheduled += 1 if node_pods else 0
                continue
            desired += 1
            if not node_pods:
                continue
            current += 1
            pod = dsutil.oldest_first(node_pods)[0]
            left = workload.available_in(pod, min_ready, now)
            if left is not None:
                ready += 1
                if left <= 0:
                    available += 1
                else:
                    wait = left if wait is None else min(wait, left)
            if dsutil.is_updated(pod, hash_):
                updated += 1
        status: Object = {
            "observedGeneration": meta(ds).get("generation", 0),
            "desiredNumberScheduled": desired,
            "currentNumberScheduled": current,
            "numberMisscheduled": misscheduled,
            "numberReady": ready,
            "numberAvailable": available,
            "numberUnavailable": desired - available,
            "updatedNumberScheduled": updated,
        }
        return status, wait

    async def _write_status(self, ds: Object, status: Object) -> None:
        """Put ``status`` over the DaemonSet's current one (upstream's ``UpdateStatus``)."""
        body = {**(ds.get("status") or {}), **status}
        await workload.update_status(self.api.resource(DAEMONSETS), ds, body)


def _surplus(running: list[Object], hash_: str, surge: bool) -> list[Object]:
    """Pods to delete among a node's running daemon pods (oldest first): all but the oldest, or with
    surge all but the oldest updated one and the oldest old one."""
    if not surge:
        return running[1:]
    kept_new = kept_old = False
    out: list[Object] = []
    for pod in running:
        if dsutil.is_updated(pod, hash_):
            if kept_new:
                out.append(pod)
            kept_new = True
        else:
            if kept_old:
                out.append(pod)
            kept_old = True
    return out


class _NodeHandler:
    """Node events that change where daemon pods belong wake every DaemonSet."""

    def __init__(self, ctrl: DaemonSetController) -> None:
        self.ctrl = ctrl

    def _all(self, queue: Any) -> None:
        for req in self.ctrl.all_daemonsets():
            queue.add(req)

    def create(self, obj: Any, queue: Any) -> None:
        self._all(queue)

    def update(self, old: Any, new: Any, queue: Any) -> None:
        if meta(old).get("labels") != meta(new).get("labels") or (old.get("spec") or {}).get("taints") != (
            new.get("spec") or {}
        ).get("taints"):
            self._all(queue)

    def delete(self, obj: Any, queue: Any) -> None:
        self._all(queue)

    def generic(self, obj: Any, queue: Any) -> None:
        self._all(queue)
