"""The scheduler: binds pending pods to nodes through ``pods/binding``, as kube-scheduler's default
profile does for what kplane models.

A pod is scheduled when it has no ``nodeName``, ``schedulerName`` is ``default-scheduler``, it is
not being deleted and has no scheduling gates. Filters, in upstream's plugin order, each giving
upstream's reason for a node it rejects: NodeUnschedulable, TaintToleration (NoSchedule and
NoExecute), NodeAffinity (``nodeSelector`` and required terms), NodeResourcesFit (requests
against allocatable minus the pods already there). Scores: NodeResourcesFit's LeastAllocated on
cpu and memory (100m / 200Mi for containers without requests) plus NodeAffinity's preferred
terms (weight 2) and TaintToleration's PreferNoSchedule count (weight 3); the highest wins.

When no node fits: condition ``PodScheduled`` False ``Unschedulable`` and a ``FailedScheduling``
Warning, with upstream's message (``0/3 nodes are available: 3 Insufficient cpu. preemption: ...``).
Such pods are tried again when a node changes or a bound pod goes, and at least every 5 minutes.
Preemption itself is not done: the message says what upstream's preemption would find when no
pod has a lower priority.

What each node holds comes from ``schedcache.PodAccounting``, kept up to date by this
controller's pod watch (upstream's scheduler cache): pods bound here but not yet seen bound are
"assumed" on their node, so a burst of pods is not all placed by the same stale picture, and a
node's usage is read in constant time however many pods it runs.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from kplane import runtime
from kplane.api import errors
from kplane.client import events
from kplane.controllers import common, schedcache

log = logging.getLogger(__name__)

NAME = "default-scheduler"
RETRY_UNSCHEDULABLE = 300.0
_DEFAULT_CPU = 0.1
_DEFAULT_MEMORY = 200 * 2.0**20
_MAX_BINDING = 32
_UNRESOLVABLE = "Preemption is not helpful for scheduling"
_NO_VICTIMS = "No preemption victims found for incoming pod"


def _pending(pod: common.Object) -> bool:
    spec = pod.get("spec") or {}
    return (
        not spec.get("nodeName")
        and (spec.get("schedulerName") or NAME) == NAME
        and not (pod.get("metadata") or {}).get("deletionTimestamp")
        and not spec.get("schedulingGates")
        and not common.is_terminal(pod)
    )


def _match_expression(expr: common.Object, value: str | None) -> bool:
    op, values = expr.get("operator"), expr.get("values") or []
    if op == "In":
        return value is not None and value in values
    if op == "NotIn":
        return value is None or value not in values
    if op == "Exists":
        return value is not None
    if op == "DoesNotExist":
        return value is None
    if op in ("Gt", "Lt") and value is not None and values:
        try:
            number, bound = int(value), int(values[0])
        except ValueError:
            return False
        return number > bound if op == "Gt" else number < bound
    return False


def term_matches(term: common.Object, node: common.Object) -> bool:
    """A NodeSelectorTerm: every matchExpressions (labels) and matchFields (metadata.name) holds."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    exprs, fields = term.get("matchExpressions") or [], term.get("matchFields") or []
    if not exprs and not fields:
        return False
    name = (node.get("metadata") or {}).get("name")
    return all(_match_expression(e, labels.get(e.get("key"))) for e in exprs) and all(
        _match_expression(f, name if f.get("key") == "metadata.name" else None) for f in fields
    )


def affinity_ok(pod: common.Object, node: common.Object) -> bool:
    """``nodeSelector`` and required node affinity of ``pod`` hold on ``node``."""
    spec = pod.get("spec") or {}
    labels = (node.get("metadata") or {}).get("labels") or {}
    if any(labels.get(k) != v for k, v in (spec.get("nodeSelector") or {}).items()):
        return False
    required = (
        ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        )
    ) or {}
    terms = required.get("nodeSelectorTerms")
    return not terms or any(term_matches(t, node) for t in terms)


class Scheduler:
    """The reconciler (module docstring); one worker, so decisions are made one pod at a time."""

    def __init__(self, manager: runtime.Manager) -> None:
        self.manager = manager
        self.events = events.EventRecorder(
            manager.api.dynamic.resource(common.EVENTS), events.EventSource(NAME), clock=manager.clock
        )
        self.accounting = schedcache.PodAccounting()
        self._binding: set[asyncio.Task[None]] = set()
        self.unschedulable: set[tuple[str, str]] = set()
        self._pods: Any = None
        self._nodes: Any = None

    async def setup(self) -> runtime.Controller:
        self._pods = await self.manager.cache.informer(common.PODS)
        self._nodes = await self.manager.cache.informer(common.NODES)
        return await (
            runtime.Builder(self.manager)
            .named("scheduler")
            .for_(common.PODS, predicates=[_pending])
            .watches(common.NODES, lambda _node: self.retry_all())
            .watches(common.PODS, _PodEvents(self))
            .complete(self)
        )

    def retry_all(self) -> list[runtime.Request]:
        return [runtime.Request(ns, name) for ns, name in list(self.unschedulable)]

    async def reconcile(self, request: runtime.Request) -> runtime.Result:
        key = f"{request.namespace}/{request.name}"
        pod = self._pods.store.get_by_key(key)
        if pod is None or not _pending(pod):
            self.unschedulable.discard((request.namespace, request.name))
            return runtime.Result()
        uid = pod["metadata"].get("uid", "")
        if self.accounting.is_assumed(key, uid):
            return runtime.Result()  # bound already; the cache has not seen it yet
        # a pod re-created under the same name (a StatefulSet's) is a new pod, whatever became of
        # the assumption about its predecessor
        self.accounting.unassume(key)
        nodes = sorted(self._nodes.store.list(), key=lambda n: n["metadata"]["name"])
        reasons: dict[str, list[str]] = {}
        resolvable: dict[str, bool] = {}
        best: tuple[float, str] | None = None
        requests = common.pod_requests(pod)
        for node in nodes:
            name = node["metadata"]["name"]
            usage = self.accounting.usage(name)
            why, can_preempt = self._filter(pod, node, requests, usage)
            if why:
                reasons[name] = why
                resolvable[name] = can_preempt
                continue
            score = self._score(pod, node, requests, usage.requested)
            if best is None or score > best[0]:
                best = (score, name)
        if best is None:
            await self._unschedulable(pod, self._fit_error(len(nodes), reasons, resolvable))
            return runtime.Result(requeue_after=RETRY_UNSCHEDULABLE)
        # As upstream's binding cycle: the pod is assumed on its node at once and bound in the
        # background, so the next pod is scheduled without waiting for this round trip.
        self.accounting.assume(key, uid, best[1], requests)
        task = asyncio.get_running_loop().create_task(self._bind(pod, best[1]))
        self._binding.add(task)
        task.add_done_callback(self._binding.discard)
        if len(self._binding) >= _MAX_BINDING:
            await asyncio.wait(set(self._binding), return_when=asyncio.FIRST_COMPLETED)
        return runtime.Result()

    # Filters.

    def _filter(
        self,
        pod: common.Object,
        node: common.Object,
        requests: dict[str, float],
        usage: schedcache.NodeUsage,
    ) -> tuple[list[str], bool]:
        """Upstream's reasons for rejecting ``node`` (empty: it fits), and whether preemption could help."""
        spec = pod.get("spec") or {}
        tolerations = [t for t in spec.get("tolerations") or [] if isinstance(t, dict)]
        node_spec = node.get("spec") or {}
        if node_spec.get("unschedulable") and not common.tolerates(
            tolerations, {"key": common.UNSCHEDULABLE_TAINT, "effect": "NoSchedule"}
        ):
            return ["node(s) were unschedulable"], False
        for taint in node_spec.get("taints") or []:
            if taint.get("effect") in ("NoSchedule", "NoExecute") and not common.tolerates(
                tolerations, taint
            ):
                return [
                    f"node(s) had untolerated taint {{{taint.get('key')}: {taint.get('value') or ''}}}"
                ], False
        if not affinity_ok(pod, node):
            return ["node(s) didn't match Pod's node affinity/selector"], False
        allocatable = (node.get("status") or {}).get("allocatable") or {}
        used, count = usage.requested, usage.pods
        why = []
        if count + 1 > common.quantity(allocatable.get("pods", 0)):
            why.append("Too many pods")
        for res, value in sorted(requests.items()):
            if value <= 0:
                continue
            if value > common.quantity(allocatable.get(res, 0)) - used.get(res, 0.0):
                why.append(f"Insufficient {res}")
        return why, True

    def _score(
        self, pod: common.Object, node: common.Object, req: dict[str, float], used: dict[str, float]
    ) -> float:
        allocatable = (node.get("status") or {}).get("allocatable") or {}
        score = 0.0
        for res, default in (("cpu", _DEFAULT_CPU), ("memory", _DEFAULT_MEMORY)):
            total = common.quantity(allocatable.get(res, 0))
            if total > 0:
                want = used.get(res, 0.0) + (req.get(res) or default)
                score += max(0.0, (total - want) / total) * 50  # mean of the two, 0..100
        spec = pod.get("spec") or {}
        preferred = (
            ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
                "preferredDuringSchedulingIgnoredDuringExecution"
            )
        ) or []
        total_weight = sum(int(p.get("weight") or 0) for p in preferred)
        if total_weight:
            got = sum(
                int(p.get("weight") or 0) for p in preferred if term_matches(p.get("preference") or {}, node)
            )
            score += 2 * 100 * got / total_weight
        tolerations = [t for t in spec.get("tolerations") or [] if isinstance(t, dict)]
        untolerated = sum(
            1
            for t in (node.get("spec") or {}).get("taints") or []
            if t.get("effect") == "PreferNoSchedule" and not common.tolerates(tolerations, t)
        )
        return score - 3 * 10 * untolerated

    @staticmethod
    def _fit_error(total: int, reasons: dict[str, list[str]], resolvable: dict[str, bool]) -> str:
        """Upstream's FitError text: reasons counted across nodes, sorted as strings."""
        if total == 0:
            return "no nodes available to schedule pods"

        def histogram(items: dict[str, list[str]]) -> str:
            counts: dict[str, int] = {}
            for why in items.values():
                for reason in why:
                    counts[reason] = counts.get(reason, 0) + 1
            return ", ".join(sorted(f"{n} {r}" for r, n in counts.items()))

        preemption = {n: [_NO_VICTIMS if resolvable[n] else _UNRESOLVABLE] for n in reasons}
        return (
            f"0/{total} nodes are available: {histogram(reasons)}. "
            f"preemption: 0/{total} nodes are available: {histogram(preemption)}."
        )

    # Outcomes.

    async def _bind(self, pod: common.Object, node: str) -> None:
        """POST the binding of an assumed pod; on failure it is forgotten and tried again later."""
        meta = pod["metadata"]
        key = f"{meta['namespace']}/{meta['name']}"
        path = f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}/binding"
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": meta["name"], "namespace": meta["namespace"], "uid": meta.get("uid")},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        try:
            await self.manager.api.rest.request("POST", path, body=body)
        except (errors.Conflict, errors.NotFound):
            self.accounting.unassume(key)
            return  # bound by someone else, or gone
        except (errors.APIError, OSError) as err:
            self.accounting.unassume(key)
            self.unschedulable.add((meta["namespace"], meta["name"]))
            log.warning("binding %s to %s failed: %s", key, node, err)
            return
        except BaseException:
            self.accounting.unassume(key)
            raise
        self.unschedulable.discard((meta["namespace"], meta["name"]))
        self.events.event(pod, "Normal", "Scheduled", f"Successfully assigned {key} to {node}")

    async def _unschedulable(self, pod: common.Object, message: str) -> None:
        meta = pod["metadata"]
        self.unschedulable.add((meta["namespace"], meta["name"]))
        conditions = (pod.get("status") or {}).get("conditions") or []
        current = next((c for c in conditions if c.get("type") == "PodScheduled"), None)
        if not (current and current.get("status") == "False" and current.get("message") == message):
            condition = {
                "type": "PodScheduled",
                "status": "False",
                "lastProbeTime": None,
                "lastTransitionTime": (
                    current["lastTransitionTime"]
                    if current and current.get("status") == "False"
                    else common.rfc3339(self.manager.clock)
                ),
                "reason": "Unschedulable",
                "message": message,
            }
            patch = {"status": {"conditions": [condition]}}
            pods = self.manager.api.dynamic.resource(common.PODS, meta["namespace"])
            try:
                await pods.patch(meta["name"], patch, patch_type="strategic", subresource="status")
            except errors.NotFound:
                return
        self.events.event(pod, "Warning", "FailedScheduling", message[:1024])


class _PodEvents:
    """The scheduler's pod watch: keeps ``PodAccounting`` up to date, in event order, and retries
    unschedulable pods when a bound pod goes away (deleting or finished), which frees room."""

    def __init__(self, scheduler: Scheduler) -> None:
        self._scheduler = scheduler

    def create(self, obj: Any, queue: Any) -> None:
        self._scheduler.accounting.observe(obj)

    def update(self, old: Any, new: Any, queue: Any) -> None:
        self._scheduler.accounting.observe(new)
        if (new.get("spec") or {}).get("nodeName") and (
            (new.get("metadata") or {}).get("deletionTimestamp") or common.is_terminal(new)
        ):
            self._retry(queue)

    def delete(self, obj: Any, queue: Any) -> None:
        self._scheduler.accounting.forget(obj)
        if (obj.get("spec") or {}).get("nodeName"):
            self._retry(queue)

    def generic(self, obj: Any, queue: Any) -> None:
        pass

    def _retry(self, queue: Any) -> None:
        for request in self._scheduler.retry_all():
            queue.add(request)
