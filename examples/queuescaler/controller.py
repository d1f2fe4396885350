"""The QueueScaler controller: scale a Deployment by the length of a Redis list.

Each reconcile (on a spec change, and every ``pollSeconds``) reads ``LLEN`` of the list and wants
``ceil(length / messagesPerReplica)`` replicas, clamped to ``[minReplicas, maxReplicas]``. Scaling
up happens at once; scaling down only once the queue has not needed the current replica count for
``cooldownSeconds`` (``status.lastBusyTime`` is the last time it did), so a queue that drains
between bursts does not make the workers flap.

Writes go through the Deployment's ``scale`` subresource as read-modify-write with the Scale's
``resourceVersion``: a concurrent writer (another autoscaler, ``kubectl scale``, a rollout) makes
the PUT fail with 409 and the controller reads again and decides again (``retry_on_conflict``), so
it never overwrites a write it has not seen, and it touches nothing but ``spec.replicas``. What it
saw and did goes to ``status`` (queue length, desired and current replicas, the last scale and the
conflicts it retried, a ``Ready`` condition) and to Events (``Scaled``, ``QueueUnavailable``,
``TargetNotFound``).
"""

from __future__ import annotations

import dataclasses
import datetime
import math
from typing import Any

from examples.queuescaler import crd, resp
from kplane import runtime
from kplane.api import errors
from kplane.client import dynamic, retry
from kplane.runtime import conditions

Object = dict[str, Any]
DEPLOYMENTS = dynamic.Resource("apps", "v1", "deployments", "Deployment", namespaced=True)
COMPONENT = "queuescaler"

_RETRY = dataclasses.replace(retry.DEFAULT_RETRY, steps=20)
"""client-go's conflict pacing with more attempts: other writers may be busy on the same target."""


def desired_replicas(length: int, spec: Object) -> int:
    """``ceil(length / messagesPerReplica)`` within ``[minReplicas, maxReplicas]``."""
    per = max(1, int(spec["messagesPerReplica"]))
    low, high = int(spec.get("minReplicas", 1)), int(spec["maxReplicas"])
    return max(low, min(high, math.ceil(length / per)))


def _time(when: datetime.datetime) -> str:
    return when.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _parse(text: Any) -> datetime.datetime | None:
    try:
        return datetime.datetime.fromisoformat(str(text).replace("Z", "+00:00")) if text else None
    except ValueError:
        return None


class QueueScalerReconciler:
    """Scales one QueueScaler's target (module docstring)."""

    def __init__(self, manager: runtime.Manager) -> None:
        self.client = manager.client
        self.live = manager.api.dynamic
        self.clock = manager.clock
        self.recorder = manager.event_recorder(COMPONENT)
        self._queues: dict[str, resp.Redis] = {}

    def _queue(self, url: str) -> resp.Redis:
        queue = self._queues.get(url)
        if queue is None:
            queue = self._queues[url] = resp.Redis(url)
        return queue

    async def reconcile(self, request: runtime.Request) -> runtime.Result:
        try:
            # a live read, not the cache: lastBusyTime (the cool-down's start) must be the latest
            scalers = self.live.resource(crd.QUEUE_SCALERS, request.namespace)
            qs: Object = await scalers.get(request.name)
        except errors.NotFound:
            return runtime.Result()
        spec = qs["spec"]
        status: Object = dict(qs.get("status") or {})
        status["observedGeneration"] = qs["metadata"].get("generation", 0)
        poll = float(spec.get("pollSeconds", 5))
        try:
            length = await self._queue(spec["redisURL"]).llen(spec["listKey"])
        except (resp.RedisError, ValueError) as err:
            self.recorder.event(qs, "Warning", "QueueUnavailable", f"cannot read the queue: {err}")
            await self._finish(qs, status, "False", "QueueUnavailable", f"cannot read the queue: {err}")
            return runtime.Result(requeue_after=poll)
        want = desired_replicas(length, spec)
        status.update(queueLength=length, desiredReplicas=want)
        try:
            current, target, wait = await self._scale(qs, status, want)
        except errors.NotFound:
            message = f'deployment "{spec["deployment"]}" not found'
            self.recorder.event(qs, "Warning", "TargetNotFound", message)
            await self._finish(qs, status, "False", "TargetNotFound", message)
            return runtime.Result(requeue_after=poll)
        if target != current:
            per = spec["messagesPerReplica"]
            self.recorder.event(
                qs,
                "Normal",
                "Scaled",
                f"Scaled deployment {spec['deployment']} from {current} to {target} replicas: "
                f"queue length {length} at {per} messages per replica",
            )
        status["currentReplicas"] = target
        message = f"queue {spec['listKey']} holds {length} messages: {want} replicas wanted, {target} running"
        if wait is not None:
            message += f"; scaling down in {math.ceil(wait)}s (cool-down)"
        await self._finish(qs, status, "True", "QueueRead", message)
        return runtime.Result(requeue_after=poll if wait is None else min(poll, max(wait, 0.001)))

    async def _scale(self, qs: Object, status: Object, want: int) -> tuple[int, int, float | None]:
        """Read-modify-write the target's scale: (replicas found, replicas set, seconds until a
        pending scale-down is allowed or None). Conflicts are retried from a fresh read."""
        spec = qs["spec"]
        scales = self.live.resource(DEPLOYMENTS, qs["metadata"]["namespace"])
        cooldown = datetime.timedelta(seconds=int(spec.get("cooldownSeconds", 300)))
        outcome: dict[str, Any] = {}

        async def once() -> None:
            now = self.clock.now()
            scale: Object = await scales.get_subresource(spec["deployment"], "scale")
            current = int((scale.get("spec") or {}).get("replicas") or 0)
            busy = (
                _parse(status.get("lastBusyTime")) or _parse(qs["metadata"].get("creationTimestamp")) or now
            )
            target, wait = current, None
            if want >= current:
                status["lastBusyTime"] = _time(now)
                target = want
            elif now - busy >= cooldown:
                target = want
            else:
                wait = (busy + cooldown - now).total_seconds()
            if target != current:
                scale["spec"]["replicas"] = target
                try:
                    await scales.update(scale, subresource="scale")
                except errors.Conflict:
                    status["conflictsRetried"] = int(status.get("conflictsRetried", 0)) + 1
                    raise
                status["lastScaleTime"] = _time(now)
            outcome.update(current=current, target=target, wait=wait)

        await retry.retry_on_conflict(once, backoff=_RETRY, clock=self.clock)
        return outcome["current"], outcome["target"], outcome["wait"]

    async def _finish(self, qs: Object, status: Object, ready: str, reason: str, message: str) -> None:
        conds = list(status.get("conditions") or [])
        conditions.set_status_condition(
            conds, {"type": "Ready", "status": ready, "reason": reason, "message": message}, clock=self.clock
        )
        status["conditions"] = conds
        if status != qs.get("status"):
            qs["status"] = status
            await self.client.update_status(qs)

    async def close(self) -> None:
        for queue in self._queues.values():
            await queue.close()


async def setup(manager: runtime.Manager, *, workers: int = 1) -> QueueScalerReconciler:
    """Register the QueueScaler controller with ``workers`` concurrent reconciles; returns its
    reconciler (``close`` it when done). Status writes do not trigger reconciles (generation
    predicate): the poll period does."""
    reconciler = QueueScalerReconciler(manager)
    await (
        runtime.Builder(manager)
        .for_(crd.QUEUE_SCALERS, predicates=[runtime.predicate.GenerationChanged()])
        .named("queuescaler")
        .with_options(runtime.ControllerOptions(max_concurrent_reconciles=workers))
        .complete(reconciler)
    )
    return reconciler
