"""The Job controller, as upstream's ``pkg/controller/job`` in 1.32 (reference/cluster.md §7).

A sync reads the Job's pods from the server (uncached, so pods it just created are never missed and
``parallelism`` is never exceeded), claims them, then:

1. **Tracking**: a finished pod (phase Succeeded/Failed; a terminating pod that did not succeed counts
   as failed, as with ``podReplacementPolicy: TerminatingOrFailed``, unless the Job is suspended: then
   it is only released) still carrying ``batch.kubernetes.io/job-tracking`` goes into
   ``status.uncountedTerminatedPods`` (status write), loses the finalizer, then moves into
   ``succeeded``/``failed`` (and, Indexed, ``completedIndexes``) (status write).
2. **Outcome**: ``failed > backoffLimit`` → ``FailureTarget`` ``BackoffLimitExceeded``; active longer
   than ``activeDeadlineSeconds`` since ``startTime`` → ``FailureTarget`` ``DeadlineExceeded``;
   completions reached (Indexed: every index completed; no ``completions``: a success and nothing
   active) → ``SuccessCriteriaMet`` ``CompletionsReached``. Active pods are then deleted and, once
   none is left with the finalizer, the terminal ``Failed``/``Complete`` (same reason and message;
   ``completionTime`` on success) is added — 1.31+'s order.
3. **Suspend**: active pods deleted, ``Suspended`` True ``JobSuspended``; on resume False
   ``JobResumed`` and ``startTime`` reset.
4. **Pods**: ``min(completions - succeeded, parallelism) - active`` created (NonIndexed; Indexed: the
   lowest indexes neither completed nor active, up to ``parallelism``), slow-start batches of at most
   500, each ``generateName: <job>-`` (Indexed ``<job>-<i>-``, ``hostname <job>-<i>``, annotation and
   label ``batch.kubernetes.io/job-completion-index``, env ``JOB_COMPLETION_INDEX`` in every
   (init) container), controller ref and the tracking finalizer; surplus active pods deleted
   (not-ready first). After failures, new pods wait ``10 s · 2^(failed-1)`` (at most 6 min) from the
   last failure (upstream's pod back-off).

Departures: ``podFailurePolicy``, ``backoffLimitPerIndex``, ``successPolicy`` and ``managedBy`` are
not implemented (such Jobs are handled as if unset); the back-off counts every failure of the Job
rather than those since the last success.

Pods whose Job is gone lose the tracking finalizer (so a Background-deleted Job's pods can go).
"""

from __future__ import annotations

import datetime
from typing import Any

from kplane import runtime
from kplane.api import errors
from kplane.client import events
from kplane.client import options as options_mod
from kplane.controllers import jobutil, workload
from kplane.controllers.jobutil import TRACKING_FINALIZER
from kplane.controllers.workload import Object, meta
from kplane.runtime import ownership

COMPONENT = "job-controller"
MAX_PER_SYNC = 500
BACKOFF_BASE, BACKOFF_MAX = 10.0, 360.0


class JobController:
    """Reconciles Jobs; ``setup`` wires it to the manager (Jobs and their pods)."""

    def __init__(self, manager: runtime.Manager, *, workers: int = 5) -> None:
        self.manager = manager
        self.client = manager.client
        self.api = manager.api.dynamic
        self.pods = manager.api.dynamic.resource(workload.PODS)
        self.jobs = manager.api.dynamic.resource(jobutil.JOBS)
        self.clock = manager.clock
        self.recorder: events.EventRecorder = manager.event_recorder(COMPONENT)
        self._workers = workers
        self._lister: Any = None
        self._last_failure: dict[str, datetime.datetime] = {}

    def note_failure(self, job: Object, when: datetime.datetime) -> None:
        """Remember the latest failure of ``job`` (the start of its back-off)."""
        uid = meta(job).get("uid", "")
        last = self._last_failure.get(uid)
        if last is None or when > last:
            self._last_failure[uid] = when

    def backoff_left(self, job: Object, failed: int, now: datetime.datetime) -> float:
        """Seconds before ``job`` may create pods again after ``failed`` failures (0: now)."""
        last = self._last_failure.get(meta(job).get("uid", ""))
        if failed <= 0 or last is None:
            return 0.0
        delay: float = min(BACKOFF_BASE * float(2 ** min(failed - 1, 16)), BACKOFF_MAX)
        return max(0.0, delay - (now - last).total_seconds())

    async def setup(self) -> runtime.Controller:
        """Build the controller (added to the manager by the builder)."""
        self._lister = (await self.manager.cache.informer(jobutil.JOBS)).lister()
        return await (
            runtime.Builder(self.manager)
            .for_(jobutil.JOBS)
            .watches(workload.PODS, self._owners_of)
            .named("job")
            .with_options(runtime.ControllerOptions(max_concurrent_reconciles=self._workers))
            .complete(self)
        )

    def _owners_of(self, pod: Object) -> list[runtime.Request]:
        return workload.owners_of(pod, "Job", self._lister, group_prefix="batch/")

    async def reconcile(self, request: runtime.Request) -> runtime.Result | None:
        try:
            job = await self.client.get(jobutil.JOBS, request.name, request.namespace)
        except errors.NotFound:
            await self._release_orphans(request)
            return None
        job = {**job, "apiVersion": "batch/v1", "kind": "Job"}
        pods = await self._pods(job)
        if meta(job).get("deletionTimestamp") or jobutil.finished(job):
            self._last_failure.pop(meta(job).get("uid", ""), None)
            await self._strip_finalizers(
                p for p in pods if TRACKING_FINALIZER in (meta(p).get("finalizers") or ())
            )
            return None
        sync = _Sync(self, job, pods)
        return await sync.run()

    async def _release_orphans(self, request: runtime.Request) -> None:
        """Strip the tracking finalizer from pods whose Job is gone (else they could never go)."""
        orphans = []
        for pod in await self.client.list(workload.PODS, request.namespace):
            ref = ownership.controller_of(pod) or {}
            mine = ref.get("kind") == "Job" and ref.get("name") == request.name
            if mine and TRACKING_FINALIZER in (meta(pod).get("finalizers") or ()):
                orphans.append(pod)
        await self._strip_finalizers(orphans)

    async def _pods(self, job: Object) -> list[Object]:
        ns = meta(job)["namespace"]
        match = ((job.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
        selector = ",".join(f"{k}={v}" for k, v in sorted(match.items()))
        listed = await self.pods.list(options_mod.ListOptions(label_selector=selector), namespace=ns)
        return await workload.claim_with(self.api, jobutil.JOBS, job, listed["items"], workload.PODS)

    async def _strip_finalizers(self, pods: Any) -> None:
        for pod in pods:
            finalizers = [f for f in meta(pod).get("finalizers") or () if f != TRACKING_FINALIZER]
            body = {
                "metadata": {
                    "finalizers": finalizers or None,
                    "resourceVersion": meta(pod).get("resourceVersion"),
                }
            }
            try:
                await self.pods.patch(
                    meta(pod)["name"], body, patch_type="merge", namespace=meta(pod)["namespace"]
                )
            except errors.NotFound:
                pass

    async def write_status(self, job: Object, status: Object) -> Object:
        body = {**job, "status": status}
        updated: Object = await self.jobs.update(body, namespace=meta(job)["namespace"], subresource="status")
        return updated


class _Sync:
    """One sync of one Job (see the module docstring for the steps)."""

    def __init__(self, ctrl: JobController, job: Object, pods: list[Object]) -> None:
        self.ctrl = ctrl
        self.job = job
        self.pods = pods
        self.spec: Object = job.get("spec") or {}
        self.status: Object = workload.deep_copy(job.get("status") or {})
        self.now = ctrl.clock.now()
        self.indexed = self.spec.get("completionMode") == "Indexed"

    async def run(self) -> runtime.Result | None:
        status = self.status
        suspended = bool(self.spec.get("suspend"))
        if not suspended and not status.get("startTime"):
            status["startTime"] = workload.format_time(self.now)
        await self._track(counting_terminating=not suspended)
        active = [p for p in self.pods if workload.is_active(p)]
        wait: float | None = None
        target = jobutil.condition(status, "FailureTarget") or jobutil.condition(status, "SuccessCriteriaMet")
        if target is None and not suspended:
            target, wait = self._outcome(active)
        if target is not None or suspended:
            await self._delete(active, "the Job is finished" if target else "the Job is suspended")
            active = []
        else:
            wait = _min(wait, await self._manage(active))
        self._suspension(suspended)
        lingering = [p for p in self.pods if TRACKING_FINALIZER in (meta(p).get("finalizers") or ())
                     and not jobutil.terminal(p)]  # fmt: skip
        if target is not None and not lingering:
            self._finish(target)
        self._counts(active)
        if status != (self.job.get("status") or {}):
            await self.ctrl.write_status(self.job, status)
        return runtime.Result(requeue_after=wait + 0.05) if wait is not None else None

    # 1. Tracking.

    async def _track(self, *, counting_terminating: bool) -> None:
        status = self.status
        uncounted = status.setdefault("uncountedTerminatedPods", {})
        seen = set(uncounted.get("succeeded") or ()) | set(uncounted.get("failed") or ())
        newly = False
        done: list[Object] = []
        for pod in self.pods:
            if TRACKING_FINALIZER not in (meta(pod).get("finalizers") or ()):
                continue
            outcome = jobutil.outcome(pod, counting_terminating)
            if outcome is None:
                if meta(pod).get("deletionTimestamp"):
                    done.append(pod)  # deleted while suspended: released, not counted
                continue
            done.append(pod)
            uid = meta(pod).get("uid", "")
            if uid in seen:
                continue
            uncounted.setdefault(outcome, []).append(uid)
            newly = True
            if outcome == "succeeded" and self.indexed:
                index = jobutil.index_of(pod)
                if index is not None and index < int(self.spec.get("completions") or 0):
                    done_set = jobutil.parse_indexes(status.get("completedIndexes", "")) | {index}
                    status["completedIndexes"] = jobutil.format_indexes(done_set)
            if outcome == "failed":
                self.ctrl.note_failure(self.job, jobutil.finish_time(pod) or self.now)
        if newly:
            self.job = await self.ctrl.write_status(self.job, status)
        await self.ctrl._strip_finalizers(done)
        for outcome in ("succeeded", "failed"):
            uids = uncounted.pop(outcome, None) or []
            status[outcome] = int(status.get(outcome) or 0) + len(uids)
        status["uncountedTerminatedPods"] = {}
        self.pods = [p for p in self.pods if p not in done] + [
            {**p, "metadata": {**meta(p), "finalizers": None}} for p in done
        ]

    # 2. Outcome.

    def _outcome(self, active: list[Object]) -> tuple[Object | None, float | None]:
        status, spec = self.status, self.spec
        failed, succeeded = int(status.get("failed") or 0), int(status.get("succeeded") or 0)
        if failed > int(spec.get("backoffLimit", 6)):
            return self._target("FailureTarget", *jobutil.BACKOFF_EXCEEDED), None
        deadline = spec.get("activeDeadlineSeconds")
        started = workload.parse_time(status.get("startTime"))
        if deadline is not None and started is not None:
            left = float(deadline) - (self.now - started).total_seconds()
            if left <= 0:
                return self._target("FailureTarget", *jobutil.DEADLINE_EXCEEDED), None
            wait: float | None = left
        else:
            wait = None
        completions = spec.get("completions")
        if self.indexed and completions is not None:
            done = len(jobutil.parse_indexes(status.get("completedIndexes", "")))
            reached = done >= int(completions)
        elif completions is not None:
            reached = succeeded >= int(completions)
        else:
            reached = succeeded > 0 and not active
        if reached:
            return self._target("SuccessCriteriaMet", *jobutil.COMPLETIONS_REACHED), None
        return None, wait

    def _target(self, kind: str, reason: str, message: str) -> Object:
        cond = jobutil.new_condition(kind, reason, message, self.now)
        self.status.setdefault("conditions", []).append(cond)
        return cond

    def _finish(self, target: Object) -> None:
        terminal = "Failed" if target["type"] == "FailureTarget" else "Complete"
        if jobutil.condition(self.status, terminal) is not None:
            return
        self.status["conditions"].append(
            jobutil.new_condition(terminal, target["reason"], target["message"], self.now)
        )
        if terminal == "Complete":
            self.status["completionTime"] = workload.format_time(self.now)
            self.ctrl.recorder.event(self.job, "Normal", "Completed", "Job completed")
        else:
            self.ctrl.recorder.event(self.job, "Warning", target["reason"], target["message"])

    def _suspension(self, suspended: bool) -> None:
        cond = jobutil.condition(self.status, "Suspended", value=None)
        if suspended and (cond is None or cond.get("status") != "True"):
            self._set_suspended("True", "JobSuspended", "Job suspended")
            self.ctrl.recorder.event(self.job, "Normal", "Suspended", "Job suspended")
        elif not suspended and cond is not None and cond.get("status") == "True":
            self._set_suspended("False", "JobResumed", "Job resumed")
            self.status["startTime"] = workload.format_time(self.now)
            self.ctrl.recorder.event(self.job, "Normal", "Resumed", "Job resumed")

    def _set_suspended(self, value: str, reason: str, message: str) -> None:
        conds = [c for c in self.status.get("conditions") or () if c.get("type") != "Suspended"]
        cond = jobutil.new_condition("Suspended", reason, message, self.now)
        cond["status"] = value
        self.status["conditions"] = [*conds, cond]

    def _counts(self, active: list[Object]) -> None:
        status = self.status
        status["active"] = len(active)
        status["ready"] = sum(1 for p in active if workload.is_ready(p))
        status["terminating"] = sum(
            1 for p in self.pods if meta(p).get("deletionTimestamp") and not jobutil.terminal(p)
        )
        for field in ("succeeded", "failed"):
            status[field] = int(status.get(field) or 0)
        status.setdefault("uncountedTerminatedPods", {})

    # 4. Pods.

    async def _manage(self, active: list[Object]) -> float | None:
        spec, status = self.spec, self.status
        parallelism = int(spec.get("parallelism", 1) if spec.get("parallelism") is not None else 1)
        completions = spec.get("completions")
        succeeded = int(status.get("succeeded") or 0)
        if self.indexed and completions is not None:
            taken = jobutil.parse_indexes(status.get("completedIndexes", ""))
            taken |= {i for p in active if (i := jobutil.index_of(p)) is not None}
            missing = [i for i in range(int(completions)) if i not in taken]
            want_new = min(len(missing), max(0, parallelism - len(active)))
            indexes: list[int | None] = list(missing[:want_new])
            surplus = max(0, len(active) - parallelism)
        else:
            if completions is None:
                want = 0 if succeeded > 0 else parallelism
            else:
                want = min(int(completions) - succeeded, parallelism)
            want = max(0, want)
            indexes = [None] * max(0, want - len(active))
            surplus = max(0, len(active) - want)
        if surplus:
            victims = sorted(
                active, key=lambda p: (workload.is_ready(p), meta(p).get("creationTimestamp", ""))
            )
            await self._delete(victims[:surplus], "too many active pods")
            return None
        if not indexes:
            return None
        wait = self.ctrl.backoff_left(self.job, int(status.get("failed") or 0), self.now)
        if wait > 0:
            return wait
        await self._create(indexes[:MAX_PER_SYNC])
        return None

    async def _create(self, indexes: list[int | None]) -> None:
        pending = list(indexes)
        for size in workload.slow_start_batches(len(pending)):
            batch, pending = pending[:size], pending[size:]
            for index in batch:
                try:
                    made = await self.ctrl.pods.create(
                        jobutil.pod_for(self.job, index), namespace=meta(self.job)["namespace"]
                    )
                except errors.APIError as err:
                    if any(c.reason == "NamespaceTerminating" for c in err.causes):
                        return
                    self.ctrl.recorder.event(
                        self.job, "Warning", "FailedCreate", f"Error creating: {err.message}"
                    )
                    raise
                self.ctrl.recorder.event(
                    self.job, "Normal", "SuccessfulCreate", f"Created pod: {meta(made)['name']}"
                )

    async def _delete(self, pods: list[Object], why: str) -> None:
        for pod in pods:
            try:
                await self.ctrl.pods.delete(meta(pod)["name"], namespace=meta(pod)["namespace"])
            except errors.NotFound:
                continue
            self.ctrl.recorder.event(
                self.job, "Normal", "SuccessfulDelete", f"Deleted pod: {meta(pod)['name']}"
            )


def _min(a: float | None, b: float | None) -> float | None:
    if a is None:
        return b
    return a if b is None else min(a, b)
