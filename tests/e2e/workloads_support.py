"""Workload e2e support: the workload controllers on a manager, and a stand-in kubelet that marks
pods Running and Ready (and finishes their graceful deletion) until simulated nodes run them."""

from __future__ import annotations

import datetime
from typing import Any

from kplane import runtime
from kplane.api import errors
from kplane.controllers import deployment, garbagecollector, replicaset, workload


async def install(manager: runtime.Manager, *, fake_kubelet: bool = True) -> None:
    await replicaset.ReplicaSetController(manager).setup()
    await deployment.DeploymentController(manager).setup()
    manager.add(garbagecollector.GarbageCollector(manager))
    if fake_kubelet:
        await runtime.Builder(manager).for_(workload.PODS).named("fake-kubelet").complete(_Kubelet(manager))


class _Kubelet:
    def __init__(self, manager: runtime.Manager) -> None:
        self.manager = manager
        self.pods = manager.api.dynamic.resource(workload.PODS)

    async def reconcile(self, request: runtime.Request) -> runtime.Result | None:
        try:
            pod = await self.manager.client.get(workload.PODS, request.name, request.namespace)
        except errors.NotFound:
            return None
        meta: dict[str, Any] = pod["metadata"]
        if meta.get("deletionTimestamp"):
            if not meta.get("finalizers"):
                try:
                    await self.pods.delete(request.name, namespace=request.namespace, grace_period_seconds=0)
                except errors.NotFound:
                    pass
            return None
        if workload.is_ready(pod):
            return None
        now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        status = {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": now}],
        }
        await self.pods.patch(
            request.name, {"status": status}, namespace=request.namespace, subresource="status"
        )
        return None
