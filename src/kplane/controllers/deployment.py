"""The Deployment controller, as upstream's ``pkg/controller/deployment`` (reference/cluster.md §5).

It writes ReplicaSets and the Deployment's status (and its revision annotation), never pods. A sync
claims the namespace's ReplicaSets by selector, then: being deleted → status only; paused → scale,
history cleanup, status; a scaling event (an active ReplicaSet's ``desired-replicas`` differs from
``spec.replicas``) → proportional scaling; else one step of the strategy (RollingUpdate: scale the
new ReplicaSet up within ``replicas + maxSurge``, else the old ones down keeping ``replicas -
maxUnavailable`` available; Recreate: old to 0, wait for their pods to go, new to ``replicas``),
then the status with upstream's Progressing/Available conditions, requeueing at the progress
deadline so ``ProgressDeadlineExceeded`` is reported unprompted.

``kubectl rollout undo`` needs nothing here beyond this: it patches the template back to an old
ReplicaSet's, which then is the new one and gets the next revision.
"""

from __future__ import annotations

from typing import Any

from kplane import runtime
from kplane.api import errors
from kplane.client import events
from kplane.controllers import deploystatus, workload
from kplane.controllers import deployutil as du
from kplane.controllers.workload import Object, meta
from kplane.runtime import ownership

COMPONENT = "deployment-controller"


class DeploymentController:
    """Reconciles Deployments; ``setup`` wires it to Deployments, their ReplicaSets and pods."""

    def __init__(self, manager: runtime.Manager, *, workers: int = 10) -> None:
        self.manager = manager
        self.client = manager.client
        self.api = manager.api.dynamic
        self.clock = manager.clock
        self.recorder: events.EventRecorder = manager.event_recorder(COMPONENT)
        self.status = deploystatus.DeploymentStatus(self.api, self.clock)
        self._workers = workers
        self._d_lister: Any = None
        self._rs_lister: Any = None
        self._replicasets: Any = None
        self._pods: Any = None

    async def setup(self) -> runtime.Controller:
        self._d_lister = (await self.manager.cache.informer(workload.DEPLOYMENTS)).lister()
        self._replicasets = await self.manager.cache.informer(workload.REPLICASETS)
        self._rs_lister = self._replicasets.lister()
        self._pods = await self.manager.cache.informer(workload.PODS)
        workload.index_by_controller(self._replicasets)
        workload.index_by_controller(self._pods)
        return await (
            runtime.Builder(self.manager)
            .for_(workload.DEPLOYMENTS)
            .watches(workload.REPLICASETS, self._for_replicaset)
            .watches(workload.PODS, self._for_pod)
            .named("deployment")
            .with_options(runtime.ControllerOptions(max_concurrent_reconciles=self._workers))
            .complete(self)
        )

    def _for_replicaset(self, rs: Any) -> list[runtime.Request]:
        return workload.owners_of(rs, "Deployment", self._d_lister)

    def _for_pod(self, pod: Any) -> list[runtime.Request]:
        """A pod of a Recreate Deployment's ReplicaSet: it waits for old pods to go."""
        ref = ownership.controller_of(pod)
        if ref is None or ref.get("kind") != "ReplicaSet" or self._rs_lister is None:
            return []
        ns = meta(pod).get("namespace") or ""
        try:
            rs = self._rs_lister.namespaced(ns).get(ref.get("name", ""))
        except errors.NotFound:
            return []
        return [
            r
            for r in workload.owners_of(rs, "Deployment", self._d_lister)
            if not du.is_rolling(self._deployment(r) or {})
        ]

    def _deployment(self, req: runtime.Request) -> Object | None:
        try:
            d: Object = self._d_lister.namespaced(req.namespace).get(req.name)
        except errors.NotFound:
            return None
        return d

    async def reconcile(self, request: runtime.Request) -> runtime.Result | None:
        try:
            d = await self.client.get(workload.DEPLOYMENTS, request.name, request.namespace)
        except errors.NotFound:
            return None
        d.setdefault("apiVersion", "apps/v1")
        d.setdefault("kind", "Deployment")
        raw = du.spec(d).get("selector") or {}
        if not raw.get("matchLabels") and not raw.get("matchExpressions"):
            self.recorder.event(
                d,
                "Warning",
                "SelectingAll",
                "This deployment is selecting all pods. A non-empty selector is required.",
            )
            if (d.get("status") or {}).get("observedGeneration") != meta(d).get("generation"):
                await self.status.write(
                    d, {**(d.get("status") or {}), "observedGeneration": meta(d).get("generation")}
                )
            return None
        # copies of the ReplicaSets that are mine or nobody's only (a namespace may hold many)
        candidates = [_copy(rs) for rs in workload.claim_candidates(self._replicasets, d)]
        rss = await workload.claim_with(self.api, workload.DEPLOYMENTS, d, candidates, workload.REPLICASETS)
        if meta(d).get("deletionTimestamp"):
            new_rs, _ = self._split(d, rss)
            await self.status.sync(d, rss, new_rs)
            return None
        await self.status.paused_condition(d)
        if du.spec(d).get("paused") or self._scaling_event(d, rss):
            return await self._sync(d, rss)
        if du.is_rolling(d):
            return await self._rolling(d, rss)
        return await self._recreate(d, rss)

    # ReplicaSets.

    def _split(self, d: Object, rss: list[Object]) -> tuple[Object | None, list[Object]]:
        """``FindNewReplicaSet`` (the oldest with the Deployment's template) and the others."""
        template = du.spec(d).get("template") or {}
        ordered = sorted(rss, key=_by_creation)
        new_rs = next(
            (rs for rs in ordered if du.equal_ignore_hash(du.spec(rs).get("template") or {}, template)), None
        )
        return new_rs, [rs for rs in ordered if rs is not new_rs]

    async def _new_rs(self, d: Object, rss: list[Object], create: bool) -> tuple[Object | None, list[Object]]:
        """``getAllReplicaSetsAndSyncRevision``: the new ReplicaSet (updated, or created when
        ``create``) with its revision synced to the Deployment, and the old ones."""
        existing, old = self._split(d, rss)
        new_revision = str(max((du.revision(rs) for rs in old), default=0) + 1)
        now = self.clock.now()
        if existing is not None:
            rs = _copy(existing)
            changed = du.set_new_rs_annotations(d, rs, new_revision, True)
            if changed or du.spec(rs).get("minReadySeconds", 0) != du.spec(d).get("minReadySeconds", 0):
                rs["spec"]["minReadySeconds"] = du.spec(d).get("minReadySeconds", 0)
                return await self._update_rs(rs), old
            status = _copy(d.get("status") or {})
            needs = await self._sync_revision(d, (meta(rs).get("annotations") or {}).get(du.REVISION, ""))
            if du.has_progress_deadline(d) and du.condition(status, du.PROGRESSING) is None:
                msg = f'Found new replica set "{meta(rs)["name"]}"'
                du.set_condition(status, du.new_condition(du.PROGRESSING, "True", du.FOUND_NEW_RS, msg, now))
                needs = True
            if needs and status != (d.get("status") or {}):
                await self.status.write(d, status)
            return rs, old
        if not create:
            return None, old
        return await self._create_rs(d, old, new_revision), old

    async def _create_rs(self, d: Object, old: list[Object], new_revision: str) -> Object:
        template = _copy(du.spec(d).get("template") or {})
        collisions = (d.get("status") or {}).get("collisionCount")
        pod_hash = du.compute_hash(template, collisions)
        labels = {**((template.get("metadata") or {}).get("labels") or {}), du.HASH_LABEL: pod_hash}
        template.setdefault("metadata", {})["labels"] = labels
        selector = _copy(du.spec(d).get("selector") or {})
        selector["matchLabels"] = {**(selector.get("matchLabels") or {}), du.HASH_LABEL: pod_hash}
        name = f"{meta(d)['name']}-{pod_hash}"
        rs: Object = {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": name,
                "namespace": meta(d)["namespace"],
                "labels": labels,
                "ownerReferences": [ownership.owner_reference(d, controller=True)],
            },
            "spec": {
                "replicas": 0,
                "minReadySeconds": du.spec(d).get("minReadySeconds", 0),
                "selector": selector,
                "template": template,
            },
        }
        rs["spec"]["replicas"] = self._new_rs_replicas(d, [*old, rs], rs)
        du.set_new_rs_annotations(d, rs, new_revision, False)
        now = self.clock.now()
        status = _copy(d.get("status") or {})
        try:
            created = await self.api.resource(workload.REPLICASETS).create(rs, namespace=meta(d)["namespace"])
        except errors.AlreadyExists:
            try:
                found = await self.api.resource(workload.REPLICASETS).get(
                    name, namespace=meta(d)["namespace"]
                )
            except errors.NotFound:
                raise errors.Conflict(f'replica set "{name}" vanished; retrying') from None
            if ownership.is_controlled_by(found, d) and du.equal_ignore_hash(
                du.spec(found).get("template") or {}, du.spec(d).get("template") or {}
            ):
                return found
            status["collisionCount"] = int(collisions or 0) + 1
            await self.status.write(d, status)
            raise errors.Conflict(f'hash collision for replica set "{name}"; collisionCount raised') from None
        except errors.APIError as err:
            msg = f'Failed to create new replica set "{name}": {err.message}'
            if du.has_progress_deadline(d):
                du.set_condition(
                    status, du.new_condition(du.PROGRESSING, "False", du.RS_CREATE_ERROR, msg, now)
                )
                await self.status.write(d, status)
            self.recorder.event(d, "Warning", du.RS_CREATE_ERROR, msg)
            raise
        if created["spec"].get("replicas", 0) > 0:
            self.recorder.event(
                d,
                "Normal",
                "ScalingReplicaSet",
                f"Scaled up replica set {name} to {created['spec']['replicas']}",
            )
        await self._sync_revision(d, new_revision)
        if du.has_progress_deadline(d):
            msg = f'Created new replica set "{name}"'
            du.set_condition(status, du.new_condition(du.PROGRESSING, "True", du.NEW_RS_CREATED, msg, now))
            await self.status.write(d, status)
        return created

    async def _sync_revision(self, d: Object, new_revision: str) -> bool:
        """``SetDeploymentRevision``: the Deployment's revision annotation follows its new ReplicaSet."""
        annotations = meta(d).setdefault("annotations", {})
        if not new_revision or annotations.get(du.REVISION) == new_revision:
            return False
        annotations[du.REVISION] = new_revision
        # an update, as upstream (its role grants deployments update, not patch); a conflict retries
        written = await self.api.resource(workload.DEPLOYMENTS).update(d, namespace=meta(d)["namespace"])
        meta(d)["resourceVersion"] = meta(written)["resourceVersion"]
        return True

    def _new_rs_replicas(self, d: Object, all_rss: list[Object], new_rs: Object) -> int:
        """``NewRSNewReplicas``: how far the new ReplicaSet may grow in this step."""
        current = du.replicas(new_rs)
        if not du.is_rolling(d):
            return du.replicas(d)
        total = sum(du.replicas(rs) for rs in all_rss)
        ceiling = du.replicas(d) + du.max_surge(d)
        if total >= ceiling:
            return current
        return current + min(ceiling - total, du.replicas(d) - current)

    async def _update_rs(self, rs: Object) -> Object:
        return await self.api.resource(workload.REPLICASETS).update(rs, namespace=meta(rs)["namespace"])

    async def _scale(self, rs: Object, size: int, d: Object) -> tuple[bool, Object]:
        """``scaleReplicaSetAndRecordEvent``: write ``size`` and the replica annotations if either changed."""
        before = du.replicas(rs)
        if before == size and not du.replicas_annotations_differ(rs, d):
            return False, rs
        out = _copy(rs)
        out["spec"]["replicas"] = size
        du.set_replicas_annotations(out, du.replicas(d), du.replicas(d) + du.max_surge(d))
        updated = await self._update_rs(out)
        if before != size:
            way = "up" if size > before else "down"
            self.recorder.event(
                d,
                "Normal",
                "ScalingReplicaSet",
                f"Scaled {way} replica set {meta(rs)['name']} to {size} from {before}",
            )
        return before != size, updated

    # Strategies.

    async def _rolling(self, d: Object, rss: list[Object]) -> runtime.Result | None:
        new_rs, old = await self._new_rs(d, rss, True)
        assert new_rs is not None
        all_rss = [*old, new_rs]
        if await self._reconcile_new(d, all_rss, new_rs):
            return await self.status.sync_rollout(d, all_rss, new_rs)
        if await self._reconcile_old(d, all_rss, old, new_rs):
            return await self.status.sync_rollout(d, all_rss, new_rs)
        if du.complete(d, du.calculate_status(all_rss, new_rs, d, self.clock.now())):
            await self._cleanup(d, old)
        return await self.status.sync_rollout(d, all_rss, new_rs)

    async def _reconcile_new(self, d: Object, all_rss: list[Object], new_rs: Object) -> bool:
        want = du.replicas(d)
        if du.replicas(new_rs) == want:
            return False
        size = want if du.replicas(new_rs) > want else self._new_rs_replicas(d, all_rss, new_rs)
        scaled, updated = await self._scale(new_rs, size, d)
        new_rs.update(updated)
        return scaled

    async def _reconcile_old(
        self, d: Object, all_rss: list[Object], old: list[Object], new_rs: Object
    ) -> bool:
        if sum(du.replicas(rs) for rs in old) == 0:
            return False
        all_count = sum(du.replicas(rs) for rs in all_rss)
        min_available = du.replicas(d) - du.max_unavailable(d)
        new_unavailable = du.replicas(new_rs) - du.status_int(new_rs, "availableReplicas")
        budget = all_count - min_available - new_unavailable
        if budget <= 0:
            return False
        cleaned = 0
        for rs in sorted(old, key=_by_creation):  # unhealthy replicas first
            if cleaned >= budget:
                break
            unhealthy = du.replicas(rs) - du.status_int(rs, "availableReplicas")
            if du.replicas(rs) == 0 or unhealthy <= 0:
                continue
            down = min(budget - cleaned, unhealthy)
            _, updated = await self._scale(rs, du.replicas(rs) - down, d)
            rs.update(updated)
            cleaned += down
        target = sum(du.status_int(rs, "availableReplicas") for rs in all_rss) - min_available
        scaled_down = 0
        for rs in sorted(old, key=_by_creation):
            if scaled_down >= target:
                break
            if du.replicas(rs) == 0:
                continue
            down = min(du.replicas(rs), target - scaled_down)
            _, updated = await self._scale(rs, du.replicas(rs) - down, d)
            rs.update(updated)
            scaled_down += down
        return cleaned + max(scaled_down, 0) > 0

    async def _recreate(self, d: Object, rss: list[Object]) -> runtime.Result | None:
        new_rs, old = await self._new_rs(d, rss, False)
        all_rss = [*old, *([new_rs] if new_rs else [])]
        scaled = False
        for rs in old:
            if du.replicas(rs) != 0:
                changed, updated = await self._scale(rs, 0, d)
                rs.update(updated)
                scaled = scaled or changed
        if scaled or await self._old_pods_running(d, old):
            return await self.status.sync_rollout(d, all_rss, new_rs)
        if new_rs is None:
            new_rs, old = await self._new_rs(d, rss, True)
            assert new_rs is not None
            all_rss = [*old, new_rs]
        _, updated = await self._scale(new_rs, du.replicas(d), d)
        new_rs.update(updated)
        if du.complete(d, du.calculate_status(all_rss, new_rs, d, self.clock.now())):
            await self._cleanup(d, old)
        return await self.status.sync_rollout(d, all_rss, new_rs)

    async def _old_pods_running(self, d: Object, old: list[Object]) -> bool:
        if any(du.status_int(rs, "replicas") > 0 for rs in old):
            return True
        ns = meta(d)["namespace"]
        for rs in old:
            for pod in self._pods.store.by_index(workload.CONTROLLER_UID_INDEX, str(meta(rs).get("uid"))):
                if meta(pod).get("namespace") != ns:
                    continue
                if (pod.get("status") or {}).get("phase") not in ("Failed", "Succeeded"):
                    return True
        return False

    # Scaling, cleanup.

    def _scaling_event(self, d: Object, rss: list[Object]) -> bool:
        for rs in rss:
            if du.replicas(rs) > 0:
                desired = (meta(rs).get("annotations") or {}).get(du.DESIRED_REPLICAS)
                if desired is not None and desired != str(du.replicas(d)):
                    return True
        return False

    async def _sync(self, d: Object, rss: list[Object]) -> runtime.Result | None:
        """``sync``: scale (proportionally during a rollout), clean history when paused, status."""
        new_rs, old = await self._new_rs(d, rss, False)
        await self._proportional(d, new_rs, old)
        if du.spec(d).get("paused"):
            await self._cleanup(d, old)
        all_rss = [*old, *([new_rs] if new_rs else [])]
        await self.status.sync(d, all_rss, new_rs)
        return None

    async def _proportional(self, d: Object, new_rs: Object | None, old: list[Object]) -> None:
        everything = [*old, *([new_rs] if new_rs else [])]
        active = [rs for rs in everything if du.replicas(rs) > 0]
        want = du.replicas(d)
        target: Object | None = None
        if not active:
            target = new_rs or (max(old, key=_by_creation) if old else None)
        elif len(active) == 1:
            target = active[0]
        if target is not None or (len(active) <= 1):
            if target is not None and du.replicas(target) != want:
                _, updated = await self._scale(target, want, d)
                target.update(updated)
            return
        if (
            new_rs is not None
            and du.replicas(new_rs) == want
            and (meta(new_rs).get("annotations") or {}).get(du.DESIRED_REPLICAS) == str(want)
            and du.status_int(new_rs, "availableReplicas") == want
        ):
            for rs in old:
                if du.replicas(rs):
                    _, updated = await self._scale(rs, 0, d)
                    rs.update(updated)
            return
        if not du.is_rolling(d):
            return
        allowed = want + du.max_surge(d)
        to_add = allowed - sum(du.replicas(rs) for rs in active)
        if to_add > 0:
            ordered = sorted(active, key=lambda rs: (-du.replicas(rs), _neg_creation(rs)))
        else:
            ordered = sorted(active, key=lambda rs: (-du.replicas(rs), _by_creation(rs)))
        added = 0
        sizes: dict[str, int] = {}
        for rs in ordered:
            size = du.replicas(rs)
            if to_add != 0 and to_add != added and size != 0:
                fraction = self._fraction(rs, d)
                allowed_left = to_add - added
                portion = min(fraction, allowed_left) if to_add > 0 else max(fraction, allowed_left)
                size += portion
                added += portion
            sizes[meta(rs)["name"]] = size
        if to_add - added != 0 and ordered:
            first = meta(ordered[0])["name"]
            sizes[first] = max(0, sizes[first] + to_add - added)
        for rs in ordered:
            _, updated = await self._scale(rs, sizes[meta(rs)["name"]], d)
            rs.update(updated)

    def _fraction(self, rs: Object, d: Object) -> int:
        if du.replicas(d) == 0:
            return -du.replicas(rs)
        deployment_replicas = du.replicas(d) + du.max_surge(d)
        try:
            annotated = int((meta(rs).get("annotations") or {})[du.MAX_REPLICAS])
        except (KeyError, ValueError):
            annotated = du.status_int(d, "replicas")
        if annotated <= 0:
            return 0
        return du.go_round(du.replicas(rs) * deployment_replicas / annotated) - du.replicas(rs)

    async def _cleanup(self, d: Object, old: list[Object]) -> None:
        """``cleanupDeployment``: delete the oldest scaled-down ReplicaSets beyond the history limit."""
        limit = du.spec(d).get("revisionHistoryLimit", 10)
        if limit is None:
            return
        alive = [rs for rs in old if not meta(rs).get("deletionTimestamp")]
        excess = len(alive) - int(limit)
        if excess <= 0:
            return
        for rs in sorted(alive, key=lambda rs: (du.revision(rs), _by_creation(rs)))[:excess]:
            if (
                du.status_int(rs, "replicas")
                or du.replicas(rs)
                or int(meta(rs).get("generation") or 0) > du.status_int(rs, "observedGeneration")
            ):
                continue
            try:
                await self.api.resource(workload.REPLICASETS).delete(
                    meta(rs)["name"], namespace=meta(rs)["namespace"]
                )
            except errors.NotFound:
                pass


def _copy(obj: Object) -> Object:
    return workload.deep_copy(obj)


def _by_creation(rs: Object) -> tuple[str, str]:
    return (meta(rs).get("creationTimestamp") or "", meta(rs).get("name") or "")


def _neg_creation(rs: Object) -> tuple[int, ...]:
    stamp = meta(rs).get("creationTimestamp") or ""
    return tuple(-ord(c) for c in stamp)
