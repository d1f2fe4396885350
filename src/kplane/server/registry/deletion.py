"""Deleting: a delete or a graceful mark for deletion, with finalizers and preconditions.

``delete`` is ``Registry.delete``'s implementation (the registry's collaborators and after-write
hooks come with it): it reads the object, runs admission (DELETE), checks the preconditions, then
deletes it, or marks it for deletion (``deletionTimestamp``, finalizers) when a grace period,
finalizers or the strategy hold it, as upstream's generic store and ``BeforeDelete`` do. A write
that races in restarts it (``MAX_RACE_ATTEMPTS``). ``gc_finalizers`` is upstream's choice of the
garbage-collection finalizers a delete's options ask for.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kplane.api import errors
from kplane.api.catalog import ResourceRecord
from kplane.api.gvk import GroupResource
from kplane.server import storage
from kplane.server.registry import admitting
from kplane.server.registry.fieldschema import Requester
from kplane.server.registry.objects import rfc3339, storage_error

if TYPE_CHECKING:
    from kplane.server.registry.store import Registry

Object = dict[str, Any]

MAX_RACE_ATTEMPTS = 1000
"""How often a delete (or an update that ends in one) starts over after a write raced in."""


@dataclass(frozen=True, slots=True)
class DeleteOptions:
    """What a DELETE asked for (body ``DeleteOptions`` or query parameters)."""

    grace_period_seconds: int | None = None
    propagation_policy: str | None = None
    orphan_dependents: bool | None = None
    uid: str | None = None
    resource_version: str | None = None
    dry_run: bool = False
    requester: Requester | None = None
    warnings: list[str] = dataclasses.field(default_factory=list)
    """Reported back (the reply's ``Warning`` header), as a write's ``WriteOptions.warnings``."""
    audit_annotations: dict[str, str] = dataclasses.field(default_factory=dict)


class _Changed(Exception):
    def __init__(self, obj: Object) -> None:
        self.obj = obj


async def delete(
    reg: Registry, record: ResourceRecord, namespace: str, name: str, opts: DeleteOptions
) -> tuple[Object, bool]:
    """Delete, or mark for deletion when finalizers remain. Returns (object, deleted_now)."""
    key = record.key(namespace, name)
    strat = reg.strategy_for(record)
    added = strat.finalizers_on_delete(record)
    # Each retry follows a write that raced in (upstream's etcd3 Delete and GuaranteedUpdate
    # retry without a bound); the bound only stops a livelock, not busy writers.
    for _ in range(MAX_RACE_ATTEMPTS):
        try:
            current = await reg.storage.get(key)
        except storage.StorageError as err:
            raise storage_error(record, name, err) from None
        meta = current["metadata"]
        served = await reg.conversion.served(record, current)
        attrs = admitting.of_write("DELETE", record, namespace, name, None, served, opts)
        admitted = reg.admission.mutate(attrs)
        if admitted is not None:
            await admitted
        admitted = reg.admission.validate(attrs)
        if admitted is not None:
            await admitted
        _check_preconditions(record, meta, opts)
        finalizers = list(meta.get("finalizers") or [])
        if reg.gc_finalizers:
            finalizers = gc_finalizers(record, finalizers, opts)
        grace = strat.grace_period(current, opts.grace_period_seconds)
        if grace > 0 and not _shortens(meta, grace):
            return await reg.conversion.served(record, current), False  # already terminating at least as soon
        if grace > 0:
            if opts.dry_run:
                return await reg.conversion.served(record, current), False
            obj = await _mark_deleting(reg, record, key, name, current, added, finalizers, grace=grace)
            if obj is None:
                continue
            return await reg.conversion.served(record, obj), False
        graceful = (
            bool(finalizers)
            or strat.holds_deletion(current)
            or (bool(added) and not meta.get("deletionTimestamp"))
        )
        if graceful:
            if opts.dry_run:
                marked = copy.deepcopy(current)
                if not marked["metadata"].get("deletionTimestamp"):
                    # what the first delete would store (upstream's dry run runs the same update)
                    marked["metadata"]["deletionTimestamp"] = rfc3339(reg.clock)
                    strat.mark_deleting(marked)
                if finalizers:
                    marked["metadata"]["finalizers"] = finalizers
                _add_finalizers(marked["metadata"], added)
                return await reg.conversion.served(record, marked), False
            obj = await _mark_deleting(reg, record, key, name, current, added, finalizers)
            if obj is None:
                continue
            return await reg.conversion.served(record, obj), False
        if opts.dry_run:
            return await reg.conversion.served(record, current), True
        rv = meta.get("resourceVersion")
        last = await delete_stored(
            reg, record, key, name, storage.Preconditions(uid=opts.uid, resource_version=rv)
        )
        if last is not None:
            return last, True
    raise too_many_retries(record, name)


async def delete_stored(
    reg: Registry, record: ResourceRecord, key: str, name: str, preconditions: storage.Preconditions
) -> Object | None:
    """Remove ``key`` if ``preconditions`` still hold: its last state as served, or None when
    another write came first (read again and retry)."""
    try:
        last = await reg.storage.delete(key, preconditions=preconditions)
        reg.written(record, last, True)
        return await reg.conversion.served(record, last)
    except storage.PreconditionFailed:
        return None
    except storage.StorageError as err:
        raise storage_error(record, name, err) from None


def too_many_retries(record: ResourceRecord, name: str) -> errors.Conflict:
    """Upstream's 409 when a read-modify-write lost ``MAX_RACE_ATTEMPTS`` races in a row."""
    return errors.Conflict(
        f'Operation cannot be fulfilled on {record.group_resource} "{name}": too many retries'
    )


async def _mark_deleting(
    reg: Registry,
    record: ResourceRecord,
    key: str,
    name: str,
    seen: Object,
    added: tuple[str, ...] = (),
    finalizers: list[str] | None = None,
    *,
    grace: int = 0,
) -> Object | None:
    """Set deletionTimestamp to now + ``grace`` (once; a graceful delete may move it earlier:
    upstream's ``BeforeDelete``) and ``finalizers`` (when given: the garbage-collection
    finalizers a later delete may change). None when the object changed under us: start over."""
    seen_meta = seen["metadata"]
    refinalize = finalizers is not None and finalizers != list(seen_meta.get("finalizers") or [])
    if seen_meta.get("deletionTimestamp") and not refinalize and not grace:
        return seen
    now = rfc3339(reg.clock, grace)

    def mark(current: Object) -> Object:
        meta = current["metadata"]
        if meta.get("resourceVersion") != seen["metadata"].get("resourceVersion"):
            raise _Changed(current)
        if finalizers is not None:
            if finalizers:
                meta["finalizers"] = list(finalizers)
            else:
                meta.pop("finalizers", None)
        already = bool(meta.get("deletionTimestamp"))
        if already and not grace:
            return current
        meta["deletionTimestamp"] = now
        meta["deletionGracePeriodSeconds"] = grace
        if already:
            return current  # a shorter grace period: the deletion had started already
        _add_finalizers(meta, added)
        # Upstream's markAsDeleting (apiserver registry/generic/registry/store.go) bumps a tracked
        # generation, so controllers filtering on generation changes see the deletion start.
        if isinstance(meta.get("generation"), int) and meta["generation"] > 0:
            meta["generation"] += 1
        reg.strategy_for(record).mark_deleting(current)
        return current

    try:
        marked = await reg.storage.guaranteed_update(key, mark)
    except _Changed:
        return None
    except storage.StorageError as err:
        raise storage_error(record, name, err) from None
    reg.written(record, marked, False)
    return marked


ORPHAN_FINALIZER = "orphan"
FOREGROUND_FINALIZER = "foregroundDeletion"
_ORPHAN_BY_DEFAULT = {("batch", "jobs"), ("", "replicationcontrollers")}


def gc_finalizers(record: ResourceRecord, finalizers: list[str], opts: DeleteOptions) -> list[str]:
    """The finalizers after a delete with ``opts``, as upstream's ``deletionFinalizersForGarbageCollection``
    (apiserver registry/generic/registry/store.go): ``orphanDependents``, else ``propagationPolicy``,
    else a GC finalizer already present, else the type's default (Orphan for batch/v1 Jobs and
    ReplicationControllers) decide between ``orphan``, ``foregroundDeletion`` and neither."""
    orphan: bool
    foreground: bool
    if opts.orphan_dependents is not None:
        orphan, foreground = opts.orphan_dependents, False
    elif opts.propagation_policy in ("Orphan", "Background", "Foreground"):
        orphan = opts.propagation_policy == "Orphan"
        foreground = opts.propagation_policy == "Foreground"
    elif ORPHAN_FINALIZER in finalizers or FOREGROUND_FINALIZER in finalizers:
        orphan = ORPHAN_FINALIZER in finalizers
        foreground = not orphan and FOREGROUND_FINALIZER in finalizers
    else:
        orphan, foreground = (record.group, record.plural) in _ORPHAN_BY_DEFAULT, False
    out = [f for f in finalizers if f not in (ORPHAN_FINALIZER, FOREGROUND_FINALIZER)]
    kept = [
        f
        for f in finalizers
        if (f == ORPHAN_FINALIZER and orphan) or (f == FOREGROUND_FINALIZER and foreground)
    ]
    out = [f for f in finalizers if f in out or f in kept]
    if orphan and ORPHAN_FINALIZER not in out:
        out.append(ORPHAN_FINALIZER)
    if foreground and FOREGROUND_FINALIZER not in out:
        out.append(FOREGROUND_FINALIZER)
    return out


def _shortens(meta: Object, grace: int) -> bool:
    """True when a graceful delete of ``grace`` seconds changes ``meta``: it is not being deleted
    yet, or only with a longer period (upstream's ``BeforeDelete`` keeps the shorter one)."""
    if not meta.get("deletionTimestamp"):
        return True
    current = meta.get("deletionGracePeriodSeconds")
    return isinstance(current, int) and 0 < grace < current


def _add_finalizers(meta: Object, added: tuple[str, ...]) -> None:
    present = list(meta.get("finalizers") or [])
    missing = [f for f in added if f not in present]
    if missing:
        meta["finalizers"] = present + missing


def _check_preconditions(record: ResourceRecord, meta: Object, opts: DeleteOptions) -> None:
    """409 before deleting when DeleteOptions.preconditions do not hold (registry/rest/delete.go
    ``BeforeDelete``: the object is named by its kind there, not its resource). The same conditions
    are checked again atomically with the delete itself."""
    gk = GroupResource(record.group, record.kind)
    if opts.uid is not None and opts.uid != meta.get("uid"):
        raise errors.conflict(
            gk,
            meta.get("name", ""),
            f"the UID in the precondition ({opts.uid}) does not match the UID in record ({meta.get('uid')}). "
            "The object might have been deleted and then recreated",
        )
    rv = opts.resource_version
    if rv is not None and rv != meta.get("resourceVersion"):
        raise errors.conflict(
            gk,
            meta.get("name", ""),
            f"the ResourceVersion in the precondition ({rv}) does not match the ResourceVersion in record "
            f"({meta.get('resourceVersion')}). The object might have been modified",
        )
