"""The StatefulSet controller, as upstream's ``pkg/controller/statefulset`` (reference/cluster.md §6.1).

Each sync claims the namespace's pods (adopting orphans the selector matches), brings the set's
ControllerRevisions up to date (``history``: the update revision is the one equal to the live
template; the current revision is ``status.currentRevision``, or the update revision at first),
and, unless the set is being deleted, takes upstream's steps in order:

1. ordinals ``start … start+replicas-1`` ascending: a Failed pod is deleted (Warning
   ``RecreatingFailedPod``); a missing pod is created with its claims (PVCs from
   ``volumeClaimTemplates``, created first), at the current revision below the partition and the
   update revision otherwise; a Pending pod's missing claims are created and removed identity
   labels put back; with ``OrderedReady`` the sync stops at the first creation and at a
   pod that is terminating, not Running and Ready, or not yet available (``minReadySeconds``);
   ``Parallel`` goes on;
2. pods beyond the range are deleted from the highest ordinal down, one per sync with
   ``OrderedReady`` and only when every lower pod is healthy; with ``whenScaled: Delete`` their
   PVCs first get the pod as owner, so the garbage collector takes them with it;
3. ``RollingUpdate``: from the top ordinal down to ``partition``, the first pod not at the update
   revision is deleted (step 1 recreates it), and an unhealthy pod stops the walk: one at a time.
   ``OnDelete`` replaces nothing; pods deleted by the user come back at the update revision.

Then the status (``stsutil.status``) is written when it changed and the history is truncated to
``revisionHistoryLimit``, keeping the current and update revisions and those of live pods.
"""

from __future__ import annotations

import logging
from typing import Any

from kplane import runtime
from kplane.api import errors
from kplane.client import dynamic, events
from kplane.controllers import history, stsutil, workload
from kplane.controllers.workload import Object, meta
from kplane.runtime import ownership

log = logging.getLogger(__name__)

STATEFULSETS = dynamic.Resource("apps", "v1", "statefulsets", "StatefulSet", namespaced=True)
PVCS = dynamic.Resource("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", namespaced=True)
COMPONENT = "statefulset-controller"


class StatefulSetController:
    """Reconciles StatefulSets; ``setup`` wires it to the manager (StatefulSets and their pods)."""

    def __init__(self, manager: runtime.Manager, *, workers: int = 5) -> None:
        self.manager = manager
        self.api = manager.api.dynamic
        self.clock = manager.clock
        self.history = history.History(self.api, STATEFULSETS)
        self.recorder: events.EventRecorder = manager.event_recorder(COMPONENT)
        self._workers = workers
        self._lister: Any = None

    async def setup(self) -> runtime.Controller:
        """Build the controller (added to the manager by the builder)."""
        self._lister = (await self.manager.cache.informer(STATEFULSETS)).lister()
        await self.manager.cache.informer(history.CONTROLLERREVISIONS)
        return await (
            runtime.Builder(self.manager)
            .for_(STATEFULSETS)
            .watches(workload.PODS, _PodHandler(self))
            .named("statefulset")
            .with_options(runtime.ControllerOptions(max_concurrent_reconciles=self._workers))
            .complete(self)
        )

    def owners_of(self, pod: Object) -> list[runtime.Request]:
        return workload.owners_of(pod, "StatefulSet", self._lister)

    async def reconcile(self, request: runtime.Request) -> runtime.Result | None:
        try:
            sts = await self.manager.client.get(STATEFULSETS, request.name, request.namespace)
        except errors.NotFound:
            return None
        sts = stsutil.with_kind(sts)
        ns = request.namespace
        cached = await self.manager.cache.list(workload.PODS, ns, deep_copy=False)
        pods = await workload.claim_with(self.api, STATEFULSETS, sts, cached, workload.PODS)
        revisions = await self.history.claim(
            sts, await self.manager.cache.list(history.CONTROLLERREVISIONS, ns)
        )
        data = history.revision_data(sts)
        try:
            update, revisions = await self.history.sync(
                sts, revisions, name_hash=lambda collisions: history.revision_hash(data, collisions)
            )
        except history.Collision:
            collisions = int((sts.get("status") or {}).get("collisionCount") or 0) + 1
            await self._write_status(sts, {"collisionCount": collisions})
            return runtime.Result(requeue=True)
        wanted = (sts.get("status") or {}).get("currentRevision")
        current = next((r for r in revisions if meta(r).get("name") == wanted), update)
        members = [p for p in pods if stsutil.ordinal_of(sts, p) is not None]
        if not meta(sts).get("deletionTimestamp"):
            await self._update(sts, members, current, update)
        status, wait = stsutil.status(
            sts, members, meta(current)["name"], meta(update)["name"], self.clock.now()
        )
        old = sts.get("status") or {}
        if any(old.get(k) != v for k, v in status.items()):
            await self._write_status(sts, status)
        keep = {status["currentRevision"], status["updateRevision"]} | {
            stsutil.revision_of(p) for p in members
        }
        await self.history.truncate(sts, revisions, keep)
        if wait is not None:
            return runtime.Result(requeue_after=wait + 0.05)
        return None

    # The three steps.

    async def _update(self, sts: Object, pods: list[Object], current: Object, update: Object) -> None:
        start, count = stsutil.start_ordinal(sts), stsutil.replicas(sts)
        slots: dict[int, Object] = {}
        condemned: list[tuple[int, Object]] = []
        for pod in pods:
            ordinal = stsutil.ordinal_of(sts, pod)
            assert ordinal is not None
            if start <= ordinal < start + count:
                slots[ordinal] = pod
            else:
                condemned.append((ordinal, pod))
        monotonic = stsutil.ordered(sts)
        min_ready = int(stsutil.spec(sts).get("minReadySeconds") or 0)
        now = self.clock.now()
        partition = stsutil.partition(sts) if stsutil.rolling(sts) else 0
        for ordinal in range(start, start + count):
            slot = slots.get(ordinal)
            if slot is None:
                at_current = stsutil.rolling(sts) and ordinal - start < partition
                await self._create_pod(sts, current if at_current else update, ordinal)
                if monotonic:
                    return
                continue
            pod = slot
            if stsutil.is_failed(pod) and not stsutil.is_terminating(pod):
                self.recorder.event(
                    sts,
                    "Warning",
                    "RecreatingFailedPod",
                    f"StatefulSet {meta(sts)['namespace']}/{meta(sts)['name']} is recreating failed Pod "
                    f"{meta(pod)['name']}",
                )
                await self._delete_pod(sts, pod)
                if monotonic:
                    return
                continue
            if (pod.get("status") or {}).get("phase") == "Pending" and stsutil.claim_templates(sts):
                await self._create_claims(sts, ordinal)  # upstream: a pending pod's missing claims
            if not stsutil.identity_matches(sts, pod, ordinal):
                await self._restore_identity(pod, ordinal)
            if monotonic and (
                stsutil.is_terminating(pod)
                or not stsutil.is_running_ready(pod)
                or (workload.available_in(pod, min_ready, now) or 0) > 0
            ):
                return
        unhealthy = [p for p in slots.values() if not stsutil.is_healthy(p)]
        for _ordinal, pod in sorted(condemned, key=lambda item: -item[0]):
            if stsutil.is_terminating(pod):
                if monotonic:
                    return
                continue
            if monotonic and unhealthy:
                return
            await self._condemn(sts, pod)
            if monotonic:
                return
        if not stsutil.rolling(sts):
            return
        for index in range(count - 1, partition - 1, -1):
            target = slots.get(start + index)
            if target is None:
                return
            pod = target
            if stsutil.revision_of(pod) != meta(update)["name"] and not stsutil.is_terminating(pod):
                await self._delete_pod(sts, pod)
                return
            if not stsutil.is_healthy(pod):
                return

    # Writes.

    async def _create_pod(self, sts: Object, revision: Object, ordinal: int) -> None:
        ns, name = meta(sts)["namespace"], meta(sts)["name"]
        pod = stsutil.new_pod(sts, revision, ordinal)
        pod_name = pod["metadata"]["name"]
        if not await self._create_claims(sts, ordinal):
            return
        try:
            await self.api.resource(workload.PODS).create(pod, namespace=ns)
        except errors.AlreadyExists:
            return
        except errors.APIError as err:
            if workload.namespace_terminating(err):
                return
            self.recorder.event(
                sts,
                "Warning",
                "FailedCreate",
                f"create Pod {pod_name} in StatefulSet {name} failed error: {err.message}",
            )
            raise
        self.recorder.event(
            sts, "Normal", "SuccessfulCreate", f"create Pod {pod_name} in StatefulSet {name} successful"
        )

    async def _create_claims(self, sts: Object, ordinal: int) -> bool:
        """Create the claims of ``ordinal`` that do not exist yet; False when the namespace is
        terminating (nothing more to create)."""
        ns, name = meta(sts)["namespace"], meta(sts)["name"]
        pod_name = stsutil.pod_name(sts, ordinal)
        for template in stsutil.claim_templates(sts).values():
            claim = stsutil.new_claim(sts, template, ordinal)
            claim_name = claim["metadata"]["name"]
            try:
                await self.api.resource(PVCS).create(claim, namespace=ns)
            except errors.AlreadyExists:
                continue
            except errors.APIError as err:
                if workload.namespace_terminating(err):
                    return False
                self.recorder.event(
                    sts,
                    "Warning",
                    "FailedCreate",
                    f"create Claim {claim_name} for Pod {pod_name} in StatefulSet {name} "
                    f"failed error: {err.message}",
                )
                raise
            self.recorder.event(
                sts,
                "Normal",
                "SuccessfulCreate",
                f"create Claim {claim_name} Pod {pod_name} in StatefulSet {name} success",
            )
        return True

    async def _restore_identity(self, pod: Object, ordinal: int) -> None:
        """Put back the identity labels of a member pod (upstream's ``updateIdentity``)."""
        labels = {stsutil.POD_NAME_LABEL: meta(pod)["name"], stsutil.POD_INDEX_LABEL: str(ordinal)}
        try:
            await self.api.resource(workload.PODS).patch(
                meta(pod)["name"],
                {"metadata": {"labels": labels}},
                patch_type="merge",
                namespace=meta(pod)["namespace"],
            )
        except (errors.NotFound, errors.Conflict):
            pass

    async def _delete_pod(self, sts: Object, pod: Object) -> None:
        name, pod_name = meta(sts)["name"], meta(pod)["name"]
        try:
            await self.api.resource(workload.PODS).delete(
                pod_name, namespace=meta(pod)["namespace"], preconditions={"uid": meta(pod).get("uid", "")}
            )
        except (errors.NotFound, errors.Conflict):
            return
        except errors.APIError as err:
            self.recorder.event(
                sts,
                "Warning",
                "FailedDelete",
                f"delete Pod {pod_name} in StatefulSet {name} failed error: {err.message}",
            )
            raise
        self.recorder.event(
            sts, "Normal", "SuccessfulDelete", f"delete Pod {pod_name} in StatefulSet {name} successful"
        )

    async def _condemn(self, sts: Object, pod: Object) -> None:
        """Delete a pod beyond the range; with ``whenScaled: Delete`` its claims go with it."""
        if stsutil.retention(sts, "whenScaled") == "Delete":
            ordinal = stsutil.ordinal_of(sts, pod)
            assert ordinal is not None
            ref = ownership.owner_reference({**pod, "apiVersion": "v1", "kind": "Pod"})
            claims = self.api.resource(PVCS)
            for claim in stsutil.claim_templates(sts):
                # read and update, as upstream (its role grants claims get and update, not patch)
                try:
                    pvc = await claims.get(
                        stsutil.claim_name(claim, sts, ordinal), namespace=meta(sts)["namespace"]
                    )
                    refs = [r for r in meta(pvc).get("ownerReferences") or () if r.get("uid") != ref["uid"]]
                    meta(pvc)["ownerReferences"] = [*refs, ref]
                    await claims.update(pvc, namespace=meta(sts)["namespace"])
                except errors.NotFound:
                    pass
        await self._delete_pod(sts, pod)

    async def _write_status(self, sts: Object, status: Object) -> None:
        """Put ``status`` over the StatefulSet's current one (upstream's ``UpdateStatus``)."""
        body = {**(sts.get("status") or {}), **status}
        await workload.update_status(self.api.resource(STATEFULSETS), sts, body)


class _PodHandler:
    """Pod events enqueue the StatefulSet that controls the pod (or every one selecting an orphan)."""

    def __init__(self, ctrl: StatefulSetController) -> None:
        self.ctrl = ctrl

    def create(self, obj: Any, queue: Any) -> None:
        for req in self.ctrl.owners_of(obj):
            queue.add(req)

    def update(self, old: Any, new: Any, queue: Any) -> None:
        if meta(old).get("resourceVersion") == meta(new).get("resourceVersion"):
            return
        reqs = set(self.ctrl.owners_of(new))
        if meta(old).get("labels") != meta(new).get("labels") or ownership.controller_of(
            old
        ) != ownership.controller_of(new):
            reqs.update(self.ctrl.owners_of(old))
        for req in reqs:
            queue.add(req)

    def delete(self, obj: Any, queue: Any) -> None:
        obj = getattr(obj, "obj", obj)
        if isinstance(obj, dict):
            for req in self.ctrl.owners_of(obj):
                queue.add(req)

    def generic(self, obj: Any, queue: Any) -> None:
        for req in self.ctrl.owners_of(obj):
            queue.add(req)
