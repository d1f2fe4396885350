"""The namespace controller: empties a Terminating namespace and finalizes it, as upstream's
``pkg/controller/namespace`` (reference/cluster.md §2).

The API server does only what the API does: a DELETE sets ``deletionTimestamp`` and phase
``Terminating``, refuses new content (NamespaceLifecycle admission), and ``PUT …/finalize`` without
``kubernetes`` in ``spec.finalizers`` lets the namespace go. This controller, from a namespace's
deletion plus upstream's 5 s grace period (so other controllers' caches see the deletion first):

1. re-reads the namespace uncached; sets phase ``Terminating`` if needed; stops if ``kubernetes`` is
   no longer in ``spec.finalizers``;
2. discovers the preferred version of every group and, for every namespaced resource that can be
   deleted (custom resources too), deletes the collection with ``propagationPolicy: Background``
   (or lists and deletes each object when ``deletecollection`` is not served), then lists again;
3. estimates how long the leftovers may take: pods still within their grace period (the largest
   ``terminationGracePeriodSeconds`` of non-terminal pods, counted from the namespace's deletion),
   otherwise 15 s when leftovers carry finalizers; leftovers without either are an error;
4. writes the five deletion conditions (``nsconditions``); on errors the request is retried
   through the rate limiter; with an estimate it comes back after ``estimate/2 + 1`` seconds;
   otherwise it removes ``kubernetes`` through ``/finalize``.

Resources are deleted in discovery order: 1.32's ``OrderedNamespaceDeletion`` (pods first) is off
by default. Writes of its own (status) do not wake the controller: it is enqueued when a namespace
starts deleting or its ``spec.finalizers`` change.
"""

from __future__ import annotations

import logging
from typing import Any

from kplane import runtime
from kplane.api import errors
from kplane.client import dynamic
from kplane.client.discovery import APIResource
from kplane.controllers import nsconditions, workload
from kplane.controllers.workload import Object, meta

log = logging.getLogger(__name__)

NAMESPACES = dynamic.Resource("", "v1", "namespaces", "Namespace", namespaced=False)
FINALIZER = "kubernetes"
DELETION_GRACE = 5.0
"""Seconds between a namespace's deletion and its first sync (upstream's ``namespaceDeletionGracePeriod``)."""
FINALIZER_ESTIMATE = 15
"""Seconds to wait for objects held by finalizers (upstream's ``finalizerEstimateSeconds``)."""
_WRITE_ATTEMPTS = 5


class ContentRemaining(Exception):
    """A pass failed for some resources: the request is retried through the rate limiter."""


def _deleting(obj: Any) -> bool:
    return isinstance(obj, dict) and bool(meta(obj).get("deletionTimestamp"))


def _finalizers(obj: Any) -> list[str]:
    return list((obj.get("spec") or {}).get("finalizers") or []) if isinstance(obj, dict) else []


def _wake(old: Any, new: Any) -> bool:
    return _deleting(new) and (not _deleting(old) or _finalizers(old) != _finalizers(new))


class NamespaceController:
    """Reconciles deleted namespaces; ``setup`` wires it to the manager."""

    def __init__(self, manager: runtime.Manager, *, grace: float = DELETION_GRACE, workers: int = 10) -> None:
        self.manager = manager
        self.api = manager.api
        self.namespaces = manager.api.dynamic.resource(NAMESPACES)
        self.clock = manager.clock
        self.grace = grace
        self._workers = workers

    async def setup(self) -> runtime.Controller:
        """Build the controller (added to the manager by the builder)."""
        wake = runtime.predicate.Funcs(on_create=_deleting, on_update=_wake, on_delete=lambda _o: False)
        return await (
            runtime.Builder(self.manager)
            .for_(NAMESPACES, predicates=[wake])
            .named("namespace")
            .with_options(runtime.ControllerOptions(max_concurrent_reconciles=self._workers))
            .complete(self)
        )

    async def reconcile(self, request: runtime.Request) -> runtime.Result | None:
        try:
            cached = await self.manager.client.get(NAMESPACES, request.name)
        except errors.NotFound:
            return None
        deleted_at = workload.parse_time(meta(cached).get("deletionTimestamp"))
        if deleted_at is None:
            return None
        since = (self.clock.now() - deleted_at).total_seconds()
        if since < self.grace:
            return runtime.Result(requeue_after=self.grace - since)
        try:
            ns = await self.namespaces.get(request.name)
        except errors.NotFound:
            return None
        if not _deleting(ns):
            return None
        if (ns.get("status") or {}).get("phase") != "Terminating":
            ns = await self._write_status(request.name, None)
        if FINALIZER not in _finalizers(ns):
            return None
        tally = nsconditions.Tally()
        estimate = await self._delete_content(request.name, deleted_at, tally)
        await self._write_status(request.name, tally)
        problems = tally.discovery_errors + tally.parsing_errors + tally.delete_errors
        if problems:
            raise ContentRemaining(f"namespace {request.name}: {'; '.join(problems)}")
        if estimate > 0:
            return runtime.Result(requeue_after=estimate // 2 + 1)
        await self._finalize(request.name)
        return None

    # Content.

    async def _deletable(self, tally: nsconditions.Tally) -> list[APIResource]:
        """Every namespaced resource with verb ``delete``, in each group's preferred version."""
        self.api.discovery.invalidate()
        try:
            snap = await self.api.discovery.snapshot()
        except (errors.APIError, OSError) as err:
            tally.discovery_errors.append(str(err))
            return []
        found: list[APIResource] = []
        for group in snap.groups:
            version = group.preferred_version
            if not version:
                tally.parsing_errors.append(f"no version for group {group.name!r}")
                continue
            for res in snap.resources.get((group.name, version), ()):
                if res.namespaced and "/" not in res.plural and "delete" in res.verbs:
                    found.append(res)
        return found

    async def _delete_content(self, namespace: str, deleted_at: Any, tally: nsconditions.Tally) -> int:
        """Delete everything in ``namespace``; the longest estimate of any resource's leftovers."""
        estimate = 0
        for res in await self._deletable(tally):
            try:
                estimate = max(estimate, await self._delete_resource(res, namespace, deleted_at, tally))
            except errors.NotFound:
                continue  # the resource itself went away (a CRD deleted meanwhile)
            except errors.APIError as err:
                tally.delete_errors.append(err.message or str(err))
        return estimate

    async def _delete_resource(
        self, res: APIResource, namespace: str, deleted_at: Any, tally: nsconditions.Tally
    ) -> int:
        client = self.api.dynamic.resource(res.to_resource())
        estimate = 0
        if (res.group, res.plural) == ("", "pods"):
            estimate = await self._pods_estimate(client, namespace, deleted_at)
        if "deletecollection" in res.verbs:
            await client.delete_collection(namespace=namespace, propagation_policy="Background")
        else:
            items, _ = await client.list_all(namespace=namespace)
            for item in items:
                try:
                    await client.delete(
                        meta(item)["name"], namespace=namespace, propagation_policy="Background"
                    )
                except errors.NotFound:
                    pass
        items, _ = await client.list_all(namespace=namespace)
        if not items:
            return 0
        tally.remaining[(res.group, res.plural)] = len(items)
        held = False
        for item in items:
            for fin in meta(item).get("finalizers") or ():
                held = True
                tally.finalizers[fin] = tally.finalizers.get(fin, 0) + 1
        if estimate > 0:
            return estimate
        if held:
            return FINALIZER_ESTIMATE
        tally.delete_errors.append(
            f"unexpected items still remain in namespace: {namespace} for gvr: "
            f"{res.group}/{res.version}, Resource={res.plural}"
        )
        return 0

    async def _pods_estimate(
        self, client: dynamic.DynamicResourceClient, namespace: str, deleted_at: Any
    ) -> int:
        """The largest grace period of the namespace's non-terminal pods, or 0 once that long has
        passed since the namespace was deleted (upstream's ``estimateGracefulTerminationForPods``)."""
        pods, _ = await client.list_all(namespace=namespace)
        longest = 0
        for pod in pods:
            if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                continue
            grace = (pod.get("spec") or {}).get("terminationGracePeriodSeconds")
            if isinstance(grace, int) and grace > longest:
                longest = grace
        if (self.clock.now() - deleted_at).total_seconds() >= longest:
            return 0
        return longest

    # Writes.

    async def _write_status(self, name: str, tally: nsconditions.Tally | None) -> Object:
        """Phase ``Terminating`` and (with ``tally``) the deletion conditions, through ``/status``;
        re-read and retried on conflicts. Returns the namespace as written (or unchanged)."""
        for attempt in range(_WRITE_ATTEMPTS):
            ns = await self.namespaces.get(name)
            status = dict(ns.get("status") or {})
            old = list(status.get("conditions") or [])
            status["phase"] = "Terminating"
            if tally is not None:
                status["conditions"] = nsconditions.conditions(
                    old, tally, workload.format_time(self.clock.now())
                )
            if status == (ns.get("status") or {}):
                return ns
            try:
                out: Object = await self.namespaces.update({**ns, "status": status}, subresource="status")
                return out
            except errors.Conflict:
                if attempt == _WRITE_ATTEMPTS - 1:
                    raise
        raise AssertionError("unreachable")

    async def _finalize(self, name: str) -> None:
        """Remove ``kubernetes`` from ``spec.finalizers`` through ``/finalize`` (re-read on conflicts)."""
        for attempt in range(_WRITE_ATTEMPTS):
            try:
                ns = await self.namespaces.get(name)
            except errors.NotFound:
                return
            kept = [f for f in _finalizers(ns) if f != FINALIZER]
            if kept == _finalizers(ns):
                return
            try:
                await self.namespaces.update(
                    {**ns, "spec": {**(ns.get("spec") or {}), "finalizers": kept}}, subresource="finalize"
                )
                return
            except errors.NotFound:
                return
            except errors.Conflict:
                if attempt == _WRITE_ATTEMPTS - 1:
                    raise
