"""Finishing a CRD deletion: every custom object goes, then the cleanup finalizer, then the CRD.

Upstream's CRD finalizer (apiextensions-apiserver ``pkg/controller/finalizer/crd_finalizer.go``)
keeps ``customresourcecleanup.apiextensions.k8s.io`` on a CRD marked for deletion until it has
deleted every instance, and requeues (rate limited) until none remain; each delete goes through
the store, whose ``GuaranteedUpdate`` re-reads and re-applies on every conflict. kplane's registry
gives up after a bounded number of conflicts (409 "too many retries"), so this controller owns the
"until done" part: a lost race is a reason to try again from a fresh read, never to stop.

Progress is reported as upstream does, on the CRD's ``Terminating`` condition (through
``/status``, as the server's field manager): the first delete sets it True,
``InstanceDeletionPending`` (``pending``, called by the CRD strategy); each pass sets
``InstanceDeletionInProgress``; a failed list or delete ``InstanceDeletionFailed``; objects still
present a minute (``CHECK_TIMEOUT``) after the deletes were issued ``InstanceDeletionCheck``; and the
pass that removes the finalizer first sets it False: ``InstanceDeletionCompleted``,
``NeverEstablished`` (a CRD never established has no instances to delete) or
``OverlappingBuiltInResource`` (a CRD whose resource is stored where a built-in one is: its
"instances" are not deleted).

Contract of ``CRDFinalizer.finish(name, gr)``: it starts at most one task per CRD name, which ends
only once the CRD is gone, no longer terminating, or free of the cleanup finalizer (or on
``close``). Each pass:

1. reads the CRD; gone, not terminating or without the finalizer → done;
2. reports ``InstanceDeletionInProgress``;
3. lists the resource's objects and deletes each through the registry (admission and finalizers
   apply); objects already terminating with finalizers are left to those finalizers;
4. once the list is empty, reports the outcome, then removes the finalizer (the registry then
   deletes the CRD, whose after-write hook drops the resource from the catalog and so from
   discovery).

Between passes it waits on the injected clock (``_delay``): ``POLL`` while objects remain, a
backoff from ``FIRST_BACKOFF`` doubling up to ``MAX_BACKOFF`` after a conflict or an error.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kplane._util.clock import Clock
from kplane.api import errors
from kplane.api.catalog import ResourceRecord
from kplane.api.gvk import GroupResource
from kplane.server import storage
from kplane.server.registry import crdconditions, deletion, store
from kplane.server.registry.fieldschema import WriteOptions
from kplane.server.registry.objects import rfc3339

log = logging.getLogger("kplane.server.crds")
Object = dict[str, Any]

CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"
POLL = 0.5
"""Seconds between passes while objects remain (terminating, waiting for their finalizers)."""
FIRST_BACKOFF, MAX_BACKOFF = 0.005, 5.0
"""The wait after a first failed pass (upstream's rate limiter starts at 5 ms), and its bound."""
CHECK_TIMEOUT = 60.0
"""Seconds objects may remain after the deletes before ``InstanceDeletionCheck`` (upstream polls a
minute)."""
TERMINATING = "Terminating"
OVERLAPPING_BUILT_INS = frozenset(
    {
        GroupResource("apiregistration.k8s.io", "apiservices"),
        GroupResource("apiextensions.k8s.io", "customresourcedefinitions"),
    }
)
"""Built-in resources stored where a CRD of the same group and plural would store its objects."""


@dataclass(frozen=True, slots=True)
class Report:
    """What the ``Terminating`` condition says: its status, reason and message (upstream's words)."""

    status: str
    reason: str
    message: str


PENDING = Report(
    "True",
    "InstanceDeletionPending",
    "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
)
IN_PROGRESS = Report("True", "InstanceDeletionInProgress", "CustomResource deletion is in progress")
COMPLETED = Report("False", "InstanceDeletionCompleted", "removed all instances")
NEVER_ESTABLISHED = Report("False", "NeverEstablished", "resource was never established")
OVERLAPPING = Report(
    "False", "OverlappingBuiltInResource", "instances overlap with built-in resources in storage"
)
CHECK_TIMED_OUT = Report(
    "True",
    "InstanceDeletionCheck",
    # wait.PollImmediate's timeout error, as upstream formats it into the message
    "could not confirm zero CustomResources remaining: timed out waiting for the condition",
)


def list_failed(reason: str) -> Report:
    return Report("True", "InstanceDeletionFailed", f"could not list instances: {reason}")


def deletes_failed(messages: list[str]) -> Report:
    return Report(
        "True", "InstanceDeletionFailed", f"could not issue all deletes: {errors.aggregate(messages)}"
    )


def reported(crd: Object, report: Report, now: str) -> Object:
    """``crd`` with its ``Terminating`` condition saying ``report`` (a new dict; ``crd`` is kept)."""
    return crdconditions.set_condition(crd, TERMINATING, report.status, report.reason, report.message, now)


def pending(crd: Object, now: str) -> Object:
    """``crd`` as its first delete leaves it: ``Terminating`` True, ``InstanceDeletionPending``."""
    return reported(crd, PENDING, now)


class Outcome(enum.Enum):
    """How a pass ended."""

    DONE = "done"  # the CRD is gone or no longer ours to finish
    WAITING = "waiting"  # objects remain, terminating under their own finalizers
    CONFLICT = "conflict"  # a write lost a race with another writer: retry from a fresh read
    FAILED = "failed"  # another error (logged, and reported on the CRD): retry after a backoff


class _Replaced(Exception):
    """The CRD read at the start of the pass is no longer the one stored (or no longer terminating)."""


class CRDFinalizer:
    """Deletes a terminating CRD's custom objects, then its cleanup finalizer (see the module)."""

    def __init__(
        self,
        registry: store.Registry,
        clock: Clock,
        *,
        crd_record: Callable[[], ResourceRecord],
        storage_record: Callable[[Object], ResourceRecord | None],
    ) -> None:
        self._registry = registry
        self._clock = clock
        self._crd_record = crd_record
        self._storage_record = storage_record
        self._tasks: dict[str, asyncio.Task[None]] = {}

    def finish(self, name: str, gr: GroupResource) -> None:
        """Start finishing CRD ``name`` (serving ``gr``) unless a task already does."""
        task = self._tasks.get(name)
        if task is None or task.done():
            self._tasks[name] = asyncio.get_running_loop().create_task(self._run(name, gr))

    async def close(self) -> None:
        """Cancel every task (a later ``finish`` starts over: each pass begins with a fresh read)."""
        tasks = list(self._tasks.values())
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _run(self, name: str, gr: GroupResource) -> None:
        failures = 0
        waiting_since: float | None = None  # when the passes started finding objects held
        while True:
            try:
                outcome = await self._pass(name, gr)
                if outcome is not Outcome.WAITING:
                    waiting_since = None
                elif waiting_since is None:
                    waiting_since = self._clock.monotonic()
                elif self._clock.monotonic() - waiting_since >= CHECK_TIMEOUT:
                    # upstream's sync gives up its minute of polling and is requeued, rate limited
                    waiting_since = None
                    await self._report_current(name, CHECK_TIMED_OUT)
                    outcome = Outcome.FAILED
            except asyncio.CancelledError:
                raise
            except (errors.Conflict, _Replaced):
                outcome = Outcome.CONFLICT
            except errors.NotFound:
                return
            except Exception:
                log.exception("cleaning up CRD %s failed; retrying", name)
                outcome = Outcome.FAILED
            if outcome is Outcome.DONE:
                return
            failures = 0 if outcome is Outcome.WAITING else failures + 1
            await self._clock.sleep(_delay(outcome, failures))

    async def _pass(self, name: str, gr: GroupResource) -> Outcome:
        """One pass (see the module). Raises ``errors.Conflict`` or ``_Replaced`` when a write lost
        a race, ``errors.NotFound`` when the CRD went meanwhile."""
        try:
            crd = await self._registry.get(self._crd_record(), "", name)
        except errors.NotFound:
            return Outcome.DONE
        meta = crd["metadata"]
        if not meta.get("deletionTimestamp") or CLEANUP_FINALIZER not in (meta.get("finalizers") or []):
            return Outcome.DONE
        uid = str(meta.get("uid") or "")
        # As upstream: this cleanup could take a while, so say so first.
        crd = await self._report(name, uid, IN_PROGRESS)
        if gr in OVERLAPPING_BUILT_INS:
            final = OVERLAPPING
        elif crdconditions.is_true(crd, "Established"):
            # through the storage version's record, served or not (upstream's finalizer uses the
            # storage version's store): no object outlives its CRD
            record = self._storage_record(crd)
            if record is not None:
                outcome, problem = await self._delete_instances(record)
                if problem is not None:
                    await self._report(name, uid, problem)
                if outcome is not None:
                    return outcome
            final = COMPLETED
        else:
            final = NEVER_ESTABLISHED
        await self._report(name, uid, final)
        return await self._remove_finalizer(name, uid)

    async def _delete_instances(self, record: ResourceRecord) -> tuple[Outcome | None, Report | None]:
        """One round of deletes over the objects of ``record``: the outcome (None once none remain)
        and what to report when it failed."""
        try:
            page = await self._registry.storage.list(record.key_prefix)
        except storage.StorageError as err:
            return Outcome.FAILED, list_failed(str(err))
        outcome: Outcome | None = None
        failed: list[str] = []
        for obj in page.items:
            meta = obj["metadata"]
            if meta.get("deletionTimestamp") and meta.get("finalizers"):
                outcome = outcome or Outcome.WAITING
                continue
            try:
                await self._registry.delete(
                    record, meta.get("namespace", ""), meta["name"], deletion.DeleteOptions()
                )
            except errors.NotFound:
                continue
            except errors.Conflict:
                # Not reported: upstream's store retries a conflict itself; the others are still
                # worth deleting in this pass.
                outcome = Outcome.CONFLICT
            except errors.APIError as err:
                log.warning("deleting %s %s failed: %s", record.group_resource, meta["name"], err)
                failed.append(err.message)
        if failed:
            return Outcome.FAILED, deletes_failed(failed)
        if outcome is not None:
            return outcome, None
        if (await self._registry.storage.list(record.key_prefix)).items:
            return Outcome.WAITING, None  # created or finalized meanwhile: look again
        return None, None

    async def _report(self, name: str, uid: str, report: Report) -> Object:
        """Write ``report`` on the ``Terminating`` condition of CRD ``name`` through ``/status``
        (no write when it already says so); raises ``_Replaced`` unless the stored CRD is still
        the terminating one of ``uid``."""
        now = rfc3339(self._clock)

        def report_on(current: Object) -> Object:
            meta = current["metadata"]
            if meta.get("uid") != uid or not meta.get("deletionTimestamp"):
                raise _Replaced
            return reported(current, report, now)

        return await self._registry.update(
            self._crd_record(),
            "",
            name,
            report_on,
            subresource="status",
            opts=WriteOptions(field_manager="kube-apiserver"),
        )

    async def _report_current(self, name: str, report: Report) -> None:
        crd = await self._registry.get(self._crd_record(), "", name)
        await self._report(name, str(crd["metadata"].get("uid") or ""), report)

    async def _remove_finalizer(self, name: str, uid: str) -> Outcome:
        def drop(current: Object) -> Object:
            meta = dict(current["metadata"])
            if meta.get("uid") != uid or not meta.get("deletionTimestamp"):
                raise _Replaced
            meta["finalizers"] = [f for f in meta.get("finalizers") or [] if f != CLEANUP_FINALIZER]
            return {**current, "metadata": meta}

        try:
            await self._registry.update(self._crd_record(), "", name, drop)
        except errors.NotFound:
            return Outcome.DONE
        return Outcome.DONE


def _delay(outcome: Outcome, failures: int) -> float:
    """Seconds to wait before the next pass: the retry policy, in one place (STYLE 7)."""
    match outcome:
        case Outcome.WAITING:
            return POLL
        case Outcome.CONFLICT | Outcome.FAILED:
            return min(MAX_BACKOFF, FIRST_BACKOFF * (1 << min(failures - 1, 32)))
        case Outcome.DONE:
            return 0.0
