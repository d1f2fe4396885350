"""The Deployment's status, as upstream's ``pkg/controller/deployment`` writes it (``sync.go``'s
``syncDeploymentStatus``, ``progress.go``'s ``syncRolloutStatus``, ``checkPausedConditions``).

``DeploymentStatus`` owns every status write of the Deployment controller: the counts computed from
the ReplicaSets (``deployutil.calculate_status``), the Progressing condition (NewReplicaSetAvailable,
ReplicaSetUpdated, ProgressDeadlineExceeded, DeploymentPaused/Resumed) and ReplicaFailure copied
from a ReplicaSet. A status equal to the stored one (counts and conditions compared as
``calculate_status`` spells them) is not written. After a write the caller's Deployment dict holds
the written status and resourceVersion, so later writes in the same sync build on it.
"""

from __future__ import annotations

from kplane import runtime
from kplane._util import clock as clock_mod
from kplane.client import dynamic
from kplane.controllers import deployutil as du
from kplane.controllers import workload
from kplane.controllers.workload import Object, meta


class DeploymentStatus:
    """Computes and writes Deployments' status through ``api`` (a dynamic client) at ``clock``'s time."""

    def __init__(self, api: dynamic.DynamicClient, clock: clock_mod.Clock) -> None:
        self._api = api
        self._clock = clock

    async def sync(self, d: Object, all_rss: list[Object], new_rs: Object | None) -> None:
        status = du.calculate_status(all_rss, new_rs, d, self._clock.now())
        if _normal(status) != _normal(d.get("status") or {}):
            await self.write(d, status)

    async def sync_rollout(
        self, d: Object, all_rss: list[Object], new_rs: Object | None
    ) -> runtime.Result | None:
        """``syncRolloutStatus``: status plus the Progressing condition; a requeue at the deadline."""
        now = self._clock.now()
        status = du.calculate_status(all_rss, new_rs, d, now)
        current = du.condition(status, du.PROGRESSING)
        if du.has_progress_deadline(d) and not (current and current.get("reason") == du.TIMED_OUT):
            subject = f'ReplicaSet "{meta(new_rs)["name"]}"' if new_rs else f'Deployment "{meta(d)["name"]}"'
            if du.complete(d, status):
                msg = f"{subject} has successfully progressed."
                du.set_condition(
                    status, du.new_condition(du.PROGRESSING, "True", du.NEW_RS_AVAILABLE, msg, now)
                )
            elif du.progressing(d, status):
                cond = du.new_condition(
                    du.PROGRESSING, "True", du.RS_UPDATED, f"{subject} is progressing.", now
                )
                if current and current.get("status") == "True":
                    cond["lastTransitionTime"] = current.get("lastTransitionTime")
                du.remove_condition(status, du.PROGRESSING)
                du.set_condition(status, cond)
            else:
                left = du.deadline_left(d, status, now)
                if left is not None and left < 0:
                    msg = f"{subject} has timed out progressing."
                    du.set_condition(
                        status, du.new_condition(du.PROGRESSING, "False", du.TIMED_OUT, msg, now)
                    )
        failures = [c for rs in all_rss if (c := du.condition(rs.get("status") or {}, du.REPLICA_FAILURE))]
        if failures:
            f = failures[0]
            du.set_condition(
                status,
                du.new_condition(
                    du.REPLICA_FAILURE,
                    f.get("status", "True"),
                    f.get("reason", ""),
                    f.get("message", ""),
                    now,
                ),
            )
        else:
            du.remove_condition(status, du.REPLICA_FAILURE)
        if _normal(status) != _normal(d.get("status") or {}):
            await self.write(d, status)
        left = du.deadline_left(d, status, now)
        if left is None or du.complete(d, status):
            return None
        return runtime.Result(requeue_after=max(left, 0.0) + 1.0)

    async def paused_condition(self, d: Object) -> None:
        """``checkPausedConditions``: Progressing Unknown DeploymentPaused / DeploymentResumed."""
        if not du.has_progress_deadline(d):
            return
        status = workload.deep_copy(d.get("status") or {})
        cond = du.condition(status, du.PROGRESSING)
        if cond and cond.get("reason") == du.TIMED_OUT:
            return
        paused_cond = cond is not None and cond.get("reason") == du.PAUSED
        now = self._clock.now()
        if du.spec(d).get("paused") and not paused_cond:
            du.set_condition(
                status, du.new_condition(du.PROGRESSING, "Unknown", du.PAUSED, "Deployment is paused", now)
            )
        elif not du.spec(d).get("paused") and paused_cond:
            du.set_condition(
                status, du.new_condition(du.PROGRESSING, "Unknown", du.RESUMED, "Deployment is resumed", now)
            )
        else:
            return
        await self.write(d, status)
        d["status"] = status

    async def write(self, d: Object, status: Object) -> None:
        """Put ``status`` on ``d`` (``workload.update_status``: a conflict reads and retries once)."""
        body = {k: v for k, v in status.items() if k != "conditions" or v}
        written = await workload.update_status(self._api.resource(workload.DEPLOYMENTS), d, body)
        if written is None:
            return
        meta(d)["resourceVersion"] = meta(written)["resourceVersion"]
        d["status"] = status


_COUNTS = ("replicas", "updatedReplicas", "readyReplicas", "availableReplicas", "unavailableReplicas")


def _normal(status: Object) -> Object:
    """``status`` as ``calculate_status`` spells it (zero counts present, conditions a list)."""
    out = {k: v for k, v in status.items() if v is not None}
    for field in _COUNTS:
        out.setdefault(field, 0)
    out["conditions"] = [dict(c) for c in status.get("conditions") or ()]
    return out
