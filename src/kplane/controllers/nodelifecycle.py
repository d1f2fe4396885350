"""The node lifecycle controller and taint-based eviction (kube-controller-manager's
``nodelifecycle`` and ``taint-eviction-controller``), for every Node, simulated or not.

Every 5 s: a node whose Lease ``renewTime`` (or Ready heartbeat) has not moved for the
``node-monitor-grace-period`` (50 s in 1.32; 60 s for a node that never reported) has its
conditions set ``Unknown`` (``NodeStatusUnknown``, ``Kubelet stopped posting node status.``) and an
event ``NodeNotReady``; its pods get Ready False. Taints follow the Ready condition: Unknown →
``node.kubernetes.io/unreachable``, False → ``node.kubernetes.io/not-ready``, each NoSchedule and
NoExecute (NoExecute stamped with ``timeAdded``); True → neither. ``spec.unschedulable`` adds
``node.kubernetes.io/unschedulable:NoSchedule``.

Eviction: a pod on a node with a NoExecute taint it does not tolerate is deleted at once; one it
tolerates for ``tolerationSeconds`` (300 s for the API server's defaults) is deleted when that much
time has passed since the taint's ``timeAdded`` (event ``TaintManagerEviction``
``Marking for deletion Pod <ns>/<name>``, condition ``DisruptionTarget``). Time is the manager's clock.
"""

from __future__ import annotations

import contextlib
import datetime
import logging
from typing import Any

from kplane import runtime
from kplane.api import errors
from kplane.client import events
from kplane.controllers import common

log = logging.getLogger(__name__)

MONITOR_PERIOD = 5.0
GRACE_PERIOD = 50.0
STARTUP_GRACE_PERIOD = 60.0
_CONDITIONS = ("MemoryPressure", "DiskPressure", "PIDPressure", "Ready")
_MANAGED = (common.NOT_READY_TAINT, common.UNREACHABLE_TAINT, common.UNSCHEDULABLE_TAINT)


class NodeLifecycle:
    """The controller (module docstring): one loop over the cached Nodes, Leases and pods."""

    def __init__(self, manager: runtime.Manager) -> None:
        self.manager = manager
        self.clock = manager.clock
        self.node_events = events.EventRecorder(
            manager.api.dynamic.resource(common.EVENTS),
            events.EventSource("node-controller"),
            clock=self.clock,
        )
        self.taint_events = events.EventRecorder(
            manager.api.dynamic.resource(common.EVENTS),
            events.EventSource("taint-eviction-controller"),
            clock=self.clock,
        )
        self._seen: dict[str, tuple[str, float]] = {}  # node -> (last heartbeat seen, when seen)
        self._nodes: Any = None
        self._leases: Any = None
        self._pods: Any = None

    async def setup(self) -> NodeLifecycle:
        self._nodes = await self.manager.cache.informer(common.NODES)
        self._leases = await self.manager.cache.informer(common.LEASES)
        self._pods = await self.manager.cache.informer(common.PODS)
        common.index_by_node(self._pods)
        return self

    async def start(self) -> None:
        while True:
            await self.clock.sleep(MONITOR_PERIOD)
            for node in self._nodes.store.list():
                try:
                    await self.monitor(node)
                except errors.APIError as err:
                    log.warning("node %s: %s", node["metadata"]["name"], err)

    async def monitor(self, node: common.Object) -> None:
        """One pass over ``node``: staleness, taints, evictions."""
        name = node["metadata"]["name"]
        lease = self._leases.store.get_by_key(f"{common.NODE_LEASE_NAMESPACE}/{name}")
        conditions = {c.get("type"): c for c in (node.get("status") or {}).get("conditions") or []}
        ready = conditions.get("Ready")
        beat = max(
            str(((lease or {}).get("spec") or {}).get("renewTime") or ""),
            str((ready or {}).get("lastHeartbeatTime") or ""),
        )
        now = self.clock.monotonic()
        last, since = self._seen.get(name, ("", now))
        if beat != last or name not in self._seen:
            self._seen[name] = (beat, now)
            since = now
        grace = GRACE_PERIOD if ready else STARTUP_GRACE_PERIOD
        if now - since > grace and (ready or {}).get("status") != "Unknown":
            node = await self._mark_unknown(node, ready is not None)
            conditions = {c.get("type"): c for c in (node.get("status") or {}).get("conditions") or []}
            ready = conditions.get("Ready")
        node = await self._taint(node, (ready or {}).get("status"))
        await self._evict(node)

    async def _mark_unknown(self, node: common.Object, reported: bool) -> common.Object:
        stamp = common.rfc3339(self.clock)
        reason, message = (
            ("NodeStatusUnknown", "Kubelet stopped posting node status.")
            if reported
            else ("NodeStatusNeverUpdated", "Kubelet never posted node status.")
        )
        old = {c.get("type"): c for c in (node.get("status") or {}).get("conditions") or []}
        conditions = []
        for kind in _CONDITIONS:
            c = dict(old.get(kind) or {"type": kind, "lastHeartbeatTime": None})
            c.update(status="Unknown", reason=reason, message=message, lastTransitionTime=stamp)
            conditions.append(c)
        conditions += [c for kind, c in old.items() if kind not in _CONDITIONS]
        name = node["metadata"]["name"]
        nodes = self.manager.api.dynamic.resource(common.NODES)
        updated: common.Object = await nodes.patch(
            name, {"status": {"conditions": conditions}}, patch_type="merge", subresource="status"
        )
        self.node_events.event(
            {"kind": "Node", "apiVersion": "v1", "name": name, "uid": name},
            "Normal",
            "NodeNotReady",
            f"Node {name} status is now: NodeNotReady",
        )
        await self._mark_pods_not_ready(name, stamp)
        return updated

    async def _mark_pods_not_ready(self, node: str, stamp: str) -> None:
        """Upstream's ``MarkPodsNotReady``: each pod on a lost node gets Ready False (its kubelet,
        when back, reports the truth again) and a Warning ``NodeNotReady``."""
        for pod in self._pods.store.by_index(common.NODE_NAME_INDEX, node):
            meta = pod["metadata"]
            conditions = (pod.get("status") or {}).get("conditions") or []
            if common.is_terminal(pod) or not any(
                c.get("type") == "Ready" and c.get("status") == "True" for c in conditions
            ):
                continue
            patch = {
                "status": {"conditions": [{"type": "Ready", "status": "False", "lastTransitionTime": stamp}]}
            }
            pods = self.manager.api.dynamic.resource(common.PODS, meta["namespace"])
            with contextlib.suppress(errors.NotFound):
                await pods.patch(meta["name"], patch, patch_type="strategic", subresource="status")
            self.node_events.event(pod, "Warning", "NodeNotReady", "Node is not ready")

    async def _taint(self, node: common.Object, ready: str | None) -> common.Object:
        spec = node.get("spec") or {}
        taints = [t for t in spec.get("taints") or [] if isinstance(t, dict)]
        wanted: list[tuple[str, str]] = []
        if ready == "Unknown":
            wanted = [(common.UNREACHABLE_TAINT, "NoSchedule"), (common.UNREACHABLE_TAINT, "NoExecute")]
        elif ready == "False":
            wanted = [(common.NOT_READY_TAINT, "NoSchedule"), (common.NOT_READY_TAINT, "NoExecute")]
        if spec.get("unschedulable"):
            wanted.append((common.UNSCHEDULABLE_TAINT, "NoSchedule"))
        have = {(t.get("key"), t.get("effect")) for t in taints if t.get("key") in _MANAGED}
        if have == set(wanted):
            return node
        stamp = common.rfc3339(self.clock)
        kept = [
            t for t in taints if t.get("key") not in _MANAGED or (t.get("key"), t.get("effect")) in wanted
        ]
        for key, effect in wanted:
            if (key, effect) not in have:
                taint: common.Object = {"key": key, "effect": effect}
                if effect == "NoExecute":
                    taint["timeAdded"] = stamp
                kept.append(taint)
        nodes = self.manager.api.dynamic.resource(common.NODES)
        meta = node["metadata"]
        patch = {
            "metadata": {"resourceVersion": meta.get("resourceVersion")},
            "spec": {"taints": kept or None},
        }
        try:
            result: common.Object = await nodes.patch(meta["name"], patch, patch_type="merge")
        except errors.Conflict:
            return node  # changed meanwhile: the next pass sees the new state
        return result

    async def _evict(self, node: common.Object) -> None:
        taints = [t for t in (node.get("spec") or {}).get("taints") or [] if t.get("effect") == "NoExecute"]
        if not taints:
            return
        now = self.clock.now()
        for pod in self._pods.store.by_index(common.NODE_NAME_INDEX, node["metadata"]["name"]):
            meta = pod["metadata"]
            if meta.get("deletionTimestamp"):
                continue
            tolerations = [t for t in (pod.get("spec") or {}).get("tolerations") or [] if isinstance(t, dict)]
            deadline: datetime.datetime | None = None
            evict = False
            for taint in taints:
                match = common.tolerates(tolerations, taint)
                if match is None:
                    evict = True
                    break
                seconds = match.get("tolerationSeconds")
                if seconds is None:
                    continue
                added = common.parse_time(taint.get("timeAdded")) or now
                due = added + datetime.timedelta(seconds=max(0, int(seconds)))
                deadline = due if deadline is None else min(deadline, due)
            if evict or (deadline is not None and now >= deadline):
                await self._delete(pod)

    async def _delete(self, pod: common.Object) -> None:
        meta = pod["metadata"]
        pods = self.manager.api.dynamic.resource(common.PODS, meta["namespace"])
        condition = {
            "type": "DisruptionTarget",
            "status": "True",
            "lastProbeTime": None,
            "lastTransitionTime": common.rfc3339(self.clock),
            "reason": "DeletionByTaintManager",
            "message": "Taint manager: deleting due to NoExecute taint",
        }
        self.taint_events.event(
            {
                "kind": "Pod",
                "apiVersion": "v1",
                "namespace": meta["namespace"],
                "name": meta["name"],
                "uid": meta.get("uid"),
            },
            "Normal",
            "TaintManagerEviction",
            f"Marking for deletion Pod {meta['namespace']}/{meta['name']}",
        )
        with contextlib.suppress(errors.NotFound, errors.Conflict):
            await pods.patch(
                meta["name"],
                {"status": {"conditions": [condition]}},
                patch_type="strategic",
                subresource="status",
            )
            await pods.delete(meta["name"], preconditions={"uid": meta.get("uid", "")})
