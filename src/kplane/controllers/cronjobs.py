"""The CronJob controller, as upstream's ``pkg/controller/cronjob`` (v2; reference/cluster.md §7.4).

A sync of a CronJob: drops finished or vanished Jobs from ``status.active`` (``SawCompletedJob``;
``lastSuccessfulTime`` from a Complete Job's ``completionTime``), deletes finished Jobs beyond
``successfulJobsHistoryLimit`` (3) / ``failedJobsHistoryLimit`` (1) oldest first, then — unless
suspended or being deleted — takes the latest scheduled time in (``lastScheduleTime`` or
creation, now], raised to ``now - startingDeadlineSeconds``, in ``spec.timeZone`` (or a ``TZ=``
prefix; UTC otherwise). For it: ``Forbid`` with active Jobs skips (``JobAlreadyActive``),
``Replace`` deletes them first, and a Job ``<cronjob>-<scheduled minutes since the epoch>`` is
created from ``jobTemplate`` with a controller ref and annotation
``batch.kubernetes.io/cronjob-scheduled-timestamp`` (RFC 3339 in the CronJob's zone); it is added
to ``status.active`` and ``lastScheduleTime`` becomes the scheduled time. The sync is requeued for
the next scheduled time (+100 ms). All time is the manager's clock.
"""

from __future__ import annotations

import datetime
from typing import Any

from kplane import runtime
from kplane.api import errors
from kplane.client import dynamic, events
from kplane.controllers import cronsched, jobutil, workload
from kplane.controllers.workload import Object, meta
from kplane.runtime import ownership

CRONJOBS = dynamic.Resource("batch", "v1", "cronjobs", "CronJob", namespaced=True)
COMPONENT = "cronjob-controller"
SCHEDULED_TIMESTAMP = "batch.kubernetes.io/cronjob-scheduled-timestamp"
MAX_MISSED = 100
_SEARCH_CAP = 100_000
# pkg/controller/cronjob/cronjob_controllerv2.go: the JobAlreadyActive event.
FORBID_MESSAGE = "Not starting job because prior execution is running and concurrency policy is Forbid"


class CronJobController:
    """Reconciles CronJobs; ``setup`` wires it to the manager (CronJobs and their Jobs)."""

    def __init__(self, manager: runtime.Manager, *, workers: int = 5) -> None:
        self.manager = manager
        self.client = manager.client
        self.cronjobs = manager.api.dynamic.resource(CRONJOBS)
        self.jobs = manager.api.dynamic.resource(jobutil.JOBS)
        self.clock = manager.clock
        self.recorder: events.EventRecorder = manager.event_recorder(COMPONENT)
        self._workers = workers

    async def setup(self) -> runtime.Controller:
        """Build the controller (added to the manager by the builder)."""
        return await (
            runtime.Builder(self.manager)
            .for_(CRONJOBS)
            .watches(jobutil.JOBS, _owner)
            .named("cronjob")
            .with_options(runtime.ControllerOptions(max_concurrent_reconciles=self._workers))
            .complete(self)
        )

    async def reconcile(self, request: runtime.Request) -> runtime.Result | None:
        try:
            cj = await self.client.get(CRONJOBS, request.name, request.namespace)
        except errors.NotFound:
            return None
        cj = {**cj, "apiVersion": "batch/v1", "kind": "CronJob"}
        uid = meta(cj).get("uid")
        children = [
            j
            for j in await self.client.list(jobutil.JOBS, request.namespace)
            if (ownership.controller_of(j) or {}).get("uid") == uid
        ]
        status = workload.deep_copy(cj.get("status") or {})
        self._track(cj, status, children)
        await self._cleanup(cj, children)
        result = None
        if not meta(cj).get("deletionTimestamp"):
            result = await self._schedule(cj, status, children)
        if status != (cj.get("status") or {}):
            await self.cronjobs.update(
                {**cj, "status": status}, namespace=request.namespace, subresource="status"
            )
        return result

    def _track(self, cj: Object, status: Object, children: list[Object]) -> None:
        by_uid = {meta(j).get("uid"): j for j in children}
        active = []
        for ref in status.get("active") or ():
            job = by_uid.get(ref.get("uid"))
            if job is None:
                self.recorder.event(cj, "Normal", "MissingJob", f"Active job went missing: {ref.get('name')}")
                continue
            done = jobutil.finished(job)
            if done is None:
                active.append(ref)
                continue
            saw = f"Saw completed job: {meta(job)['name']}, status: {done['type']}"
            self.recorder.event(cj, "Normal", "SawCompletedJob", saw)
            if done["type"] == "Complete":
                when = (job.get("status") or {}).get("completionTime")
                last = status.get("lastSuccessfulTime")
                if when and (not last or workload.parse_time(when) > workload.parse_time(last)):  # type: ignore[operator]
                    status["lastSuccessfulTime"] = when
        if active:
            status["active"] = active
        else:
            status.pop("active", None)

    async def _cleanup(self, cj: Object, children: list[Object]) -> None:
        spec = cj.get("spec") or {}
        for kind, limit in (("Complete", spec.get("successfulJobsHistoryLimit", 3)),
                            ("Failed", spec.get("failedJobsHistoryLimit", 1))):  # fmt: skip
            if limit is None:
                continue
            done = [j for j in children if (jobutil.finished(j) or {}).get("type") == kind]
            done.sort(
                key=lambda j: (j.get("status") or {}).get("startTime") or meta(j).get("creationTimestamp", "")
            )
            for job in done[: max(0, len(done) - int(limit))]:
                await self._delete(cj, job)

    async def _delete(self, cj: Object, job: Object) -> None:
        try:
            await self.jobs.delete(
                meta(job)["name"], namespace=meta(job)["namespace"], propagation_policy="Background"
            )
        except errors.NotFound:
            return
        self.recorder.event(cj, "Normal", "SuccessfulDelete", f"Deleted job {meta(job)['name']}")

    async def _schedule(self, cj: Object, status: Object, children: list[Object]) -> runtime.Result | None:
        spec = cj.get("spec") or {}
        try:
            zone = cronsched.load_zone(spec["timeZone"]) if spec.get("timeZone") else None
        except cronsched.ScheduleError:
            self.recorder.event(
                cj, "Warning", "UnknownTimeZone", f"invalid timeZone: {spec.get('timeZone')!r}"
            )
            return None
        try:
            sched = cronsched.parse(str(spec.get("schedule", "")), zone)
        except cronsched.ScheduleError as err:
            self.recorder.event(cj, "Warning", "UnparseableSchedule",
                                f"unparseable schedule: {spec.get('schedule')!r} : {err}")  # fmt: skip
            return None
        if spec.get("suspend"):
            return None
        now = self.clock.now()
        nxt = sched.next_after(now)
        requeue = runtime.Result(requeue_after=(nxt - now).total_seconds() + 0.1) if nxt else None
        scheduled = self._most_recent(cj, sched, now)
        if scheduled is None:
            return requeue
        deadline = spec.get("startingDeadlineSeconds")
        if deadline is not None and (now - scheduled).total_seconds() > float(deadline):
            self.recorder.event(cj, "Warning", "MissSchedule",
                                f"Missed scheduled time to start a job: {_rfc1123z(scheduled)}")  # fmt: skip
            return requeue
        name = f"{meta(cj)['name']}-{int(scheduled.timestamp()) // 60}"
        if any(meta(j).get("name") == name for j in children):
            return requeue
        active = status.get("active") or []
        policy = spec.get("concurrencyPolicy") or "Allow"
        if policy == "Forbid" and active:
            self.recorder.event(cj, "Normal", "JobAlreadyActive", FORBID_MESSAGE)
            return requeue
        if policy == "Replace":
            by_uid = {meta(j).get("uid"): j for j in children}
            for ref in active:
                if ref.get("uid") in by_uid:
                    await self._delete(cj, by_uid[ref["uid"]])
            status.pop("active", None)
        job = self._job(cj, name, scheduled, sched.zone)
        try:
            made = await self.jobs.create(job, namespace=meta(cj)["namespace"])
        except errors.AlreadyExists:
            return requeue
        except errors.APIError as err:
            self.recorder.event(cj, "Warning", "FailedCreate", f"Error creating job: {err.message}")
            raise
        self.recorder.event(cj, "Normal", "SuccessfulCreate", f"Created job {name}")
        m = meta(made)
        ref = {"apiVersion": "batch/v1", "kind": "Job", "name": m["name"], "namespace": m["namespace"],
               "uid": m["uid"], "resourceVersion": m.get("resourceVersion")}  # fmt: skip
        status["active"] = [*(status.get("active") or []), ref]
        status["lastScheduleTime"] = workload.format_time(scheduled)
        return requeue

    def _most_recent(
        self, cj: Object, sched: cronsched.Schedule, now: datetime.datetime
    ) -> datetime.datetime | None:
        spec, status = cj.get("spec") or {}, cj.get("status") or {}
        earliest = workload.parse_time(status.get("lastScheduleTime")) or workload.parse_time(
            meta(cj).get("creationTimestamp")
        )
        if earliest is None:
            earliest = now
        deadline = spec.get("startingDeadlineSeconds")
        if deadline is not None:
            earliest = max(earliest, now - datetime.timedelta(seconds=float(deadline)))
        latest, missed, t = None, 0, earliest
        while missed < _SEARCH_CAP:
            nxt = sched.next_after(t)
            if nxt is None or nxt > now:
                break
            latest, t, missed = nxt, nxt, missed + 1
        if missed > MAX_MISSED:
            message = (
                f"too many missed start times: {missed}."
                " Set or decrease .spec.startingDeadlineSeconds or check clock skew"
            )
            self.recorder.event(cj, "Warning", "TooManyMissedTimes", message)
        return latest

    def _job(self, cj: Object, name: str, scheduled: datetime.datetime, zone: Any) -> Object:
        template = workload.deep_copy((cj.get("spec") or {}).get("jobTemplate") or {})
        tmeta = template.get("metadata") or {}
        annotations = dict(tmeta.get("annotations") or {})
        local = scheduled.astimezone(zone or datetime.UTC)
        annotations[SCHEDULED_TIMESTAMP] = local.isoformat().replace("+00:00", "Z")
        job_meta: Object = {
            "name": name,
            "annotations": annotations,
            "ownerReferences": [ownership.owner_reference(cj, controller=True)],
        }
        if tmeta.get("labels"):
            job_meta["labels"] = tmeta["labels"]
        return {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": job_meta,
            "spec": template.get("spec") or {},
        }


def _owner(job: Object) -> list[runtime.Request]:
    ref = ownership.controller_of(job)
    if ref is None or ref.get("kind") != "CronJob":
        return []
    return [runtime.Request(meta(job).get("namespace", ""), str(ref.get("name", "")))]


def _rfc1123z(when: datetime.datetime) -> str:
    return when.strftime("%a, %d %b %Y %H:%M:%S %z")
