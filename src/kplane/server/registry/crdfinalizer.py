"""Finishing a CRD deletion: every custom object goes, then the cleanup finalizer, then the CRD.

Upstream's CRD finalizer (apiextensions-apiserver ``pkg/controller/finalizer/crd_finalizer.go``)
keeps ``customresourcecleanup.apiextensions.k8s.io`` on a CRD marked for deletion until it has
deleted every instance, and requeues (rate limited) until none remain; each delete goes through
the store, whose ``GuaranteedUpdate`` re-reads and re-applies on every conflict. kplane's registry
gives up after a bounded number of conflicts (409 "too many retries"), so this controller owns the
"until done" part: a lost race is a reason to try again from a fresh read, never to stop.

Contract of ``CRDFinalizer.finish(name, gr)``: it starts at most one task per CRD name, which ends
only once the CRD is gone, no longer terminating, or free of the cleanup finalizer (or on
``close``). Each pass:

1. reads the CRD; gone, not terminating or without the finalizer → done;
2. lists the resource's objects and deletes each through the registry (admission and finalizers
   apply); objects already terminating with finalizers are left to those finalizers;
3. once the list is empty, removes the finalizer (the registry then deletes the CRD, whose
   after-write hook drops the resource from the catalog and so from discovery).

Between passes it waits on the injected clock (``_delay``): ``POLL`` while objects remain, a
backoff from ``FIRST_BACKOFF`` doubling up to ``MAX_BACKOFF`` after a conflict or an error.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from collections.abc import Callable
from typing import Any

from kplane._util.clock import Clock
from kplane.api import errors
from kplane.api.catalog import Catalog, ResourceRecord
from kplane.api.gvk import GroupResource
from kplane.server.registry import deletion, store

log = logging.getLogger("kplane.server.crds")
Object = dict[str, Any]

CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"
POLL = 0.5
"""Seconds between passes while objects remain (terminating, waiting for their finalizers)."""
FIRST_BACKOFF, MAX_BACKOFF = 0.005, 5.0
"""The wait after a first failed pass (upstream's rate limiter starts at 5 ms), and its bound."""


class Outcome(enum.Enum):
    """How a pass ended."""

    DONE = "done"  # the CRD is gone or no longer ours to finish
    WAITING = "waiting"  # objects remain, terminating under their own finalizers
    CONFLICT = "conflict"  # a write lost a race with another writer: retry from a fresh read
    FAILED = "failed"  # another error (logged): retry after a backoff


class CRDFinalizer:
    """Deletes a terminating CRD's custom objects, then its cleanup finalizer (see the module)."""

    def __init__(
        self,
        registry: store.Registry,
        catalog: Catalog,
        clock: Clock,
        *,
        crd_record: Callable[[], ResourceRecord],
    ) -> None:
        self._registry = registry
        self._catalog = catalog
        self._clock = clock
        self._crd_record = crd_record
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
        while True:
            try:
                outcome = await self._pass(name, gr)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("cleaning up CRD %s failed; retrying", name)
                outcome = Outcome.FAILED
            if outcome is Outcome.DONE:
                return
            failures = 0 if outcome is Outcome.WAITING else failures + 1
            await self._clock.sleep(_delay(outcome, failures))

    async def _pass(self, name: str, gr: GroupResource) -> Outcome:
        try:
            crd = await self._registry.get(self._crd_record(), "", name)
        except errors.NotFound:
            return Outcome.DONE
        meta = crd["metadata"]
        if not meta.get("deletionTimestamp") or CLEANUP_FINALIZER not in (meta.get("finalizers") or []):
            return Outcome.DONE
        records = [r for r in self._catalog if r.group_resource == gr]
        if records:
            outcome = await self._delete_instances(records[0])
            if outcome is not None:
                return outcome
        return await self._remove_finalizer(name)

    async def _delete_instances(self, record: ResourceRecord) -> Outcome | None:
        """One round of deletes over the objects of ``record``; None once none remain."""
        page = await self._registry.storage.list(record.key_prefix)
        outcome: Outcome | None = None
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
                outcome = Outcome.CONFLICT  # the others are still worth deleting in this pass
            except errors.APIError as err:
                log.warning("deleting %s %s failed: %s", record.group_resource, meta["name"], err)
                if outcome is not Outcome.CONFLICT:
                    outcome = Outcome.FAILED
        if outcome is not None:
            return outcome
        if (await self._registry.storage.list(record.key_prefix)).items:
            return Outcome.WAITING  # created or finalized meanwhile: look again
        return None

    async def _remove_finalizer(self, name: str) -> Outcome:
        def drop(current: Object) -> Object:
            meta = dict(current["metadata"])
            if not meta.get("deletionTimestamp"):
                return current  # a new CRD of the same name: not ours
            meta["finalizers"] = [f for f in meta.get("finalizers") or [] if f != CLEANUP_FINALIZER]
            return {**current, "metadata": meta}

        try:
            await self._registry.update(self._crd_record(), "", name, drop)
        except errors.NotFound:
            return Outcome.DONE
        except errors.Conflict:
            return Outcome.CONFLICT
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
