"""The TTL-after-finished controller, as upstream's ``pkg/controller/ttlafterfinished``
(reference/cluster.md §7.3): a Job with ``spec.ttlSecondsAfterFinished`` is deleted that many seconds
after the ``lastTransitionTime`` of its True ``Complete``/``Failed`` condition — after a fresh
(uncached) read confirms it, with ``propagationPolicy: Foreground`` and a UID precondition so a
re-created Job of the same name is never hit. Time is the manager's clock.
"""

from __future__ import annotations

import datetime

from kplane import runtime
from kplane.api import errors
from kplane.controllers import jobutil, workload
from kplane.controllers.workload import Object, meta


def expires_in(job: Object, now: datetime.datetime) -> float | None:
    """Seconds until ``job`` expires (≤ 0: now); None when it has no TTL or has not finished."""
    ttl = (job.get("spec") or {}).get("ttlSecondsAfterFinished")
    done = jobutil.finished(job)
    if ttl is None or done is None or meta(job).get("deletionTimestamp"):
        return None
    since = workload.parse_time(done.get("lastTransitionTime"))
    if since is None:
        return 0.0
    return float(ttl) - (now - since).total_seconds()


class TTLAfterFinishedController:
    """Deletes finished Jobs whose TTL has run out; ``setup`` wires it to the manager."""

    def __init__(self, manager: runtime.Manager) -> None:
        self.manager = manager
        self.jobs = manager.api.dynamic.resource(jobutil.JOBS)
        self.clock = manager.clock

    async def setup(self) -> runtime.Controller:
        """Build the controller (added to the manager by the builder)."""
        return (
            await runtime.Builder(self.manager).for_(jobutil.JOBS).named("ttl-after-finished").complete(self)
        )

    async def reconcile(self, request: runtime.Request) -> runtime.Result | None:
        try:
            job = await self.manager.client.get(jobutil.JOBS, request.name, request.namespace)
        except errors.NotFound:
            return None
        left = expires_in(job, self.clock.now())
        if left is None:
            return None
        if left > 0:
            return runtime.Result(requeue_after=left + 0.05)
        try:  # the cache may be stale (TTL changed, Job re-created): decide on the server's copy
            fresh = await self.jobs.get(request.name, namespace=request.namespace)
            left = expires_in(fresh, self.clock.now())
            if left is None:
                return None
            if left > 0:
                return runtime.Result(requeue_after=left + 0.05)
            await self.jobs.delete(
                request.name,
                namespace=request.namespace,
                propagation_policy="Foreground",
                preconditions={"uid": meta(fresh).get("uid", "")},
            )
        except (errors.NotFound, errors.Conflict):
            return None
        return None
