"""Updating: PUT and PATCH as one read-modify-write over a ``Transform``.

``update`` is ``Registry.update`` (bound there as a method; the registry's collaborators and
after-write hooks come with it). Inside ``storage.guaranteed_update`` it runs the caller's
``Transform`` (a PUT body replacing the object, or a patch applied to it) on the current object,
checks the result (name, namespace, uid, resourceVersion, nesting), runs mutating admission on it,
lets the strategy prepare it, then validates it (metadata, schema, strategy, write guards,
validating admission) and records its managedFields. Storage re-runs all of it on a fresh copy
whenever another write races in, so a PATCH never loses a concurrent change and a PUT with a stale
``resourceVersion`` always gets 409 Conflict. An update that changes nothing stores nothing (no new
resourceVersion, no event); one that empties the finalizers of an object being deleted deletes it.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kplane.api import errors, jsonbody
from kplane.api.catalog import ResourceRecord
from kplane.server import storage
from kplane.server.registry import admitting, deletion, metatypes, objectmeta, strategy
from kplane.server.registry.fieldschema import WriteOptions
from kplane.server.registry.objects import check_type, rfc3339, storage_error

if TYPE_CHECKING:
    from kplane.server.registry.store import Registry

Object = dict[str, Any]
Transform = Callable[[Object], Object]
"""Given the current object (read-only), return the desired new object (a new dict)."""

_FINALIZER_MSG = "no new finalizers can be added if the object is being deleted, found new finalizers {}"


class _NoChange(Exception):
    def __init__(self, obj: Object) -> None:
        self.obj = obj


class _DeleteNow(Exception):
    def __init__(self, obj: Object) -> None:
        self.obj = obj


class _DryRun(Exception):
    def __init__(self, obj: Object) -> None:
        self.obj = obj


async def update(
    reg: Registry,
    record: ResourceRecord,
    namespace: str,
    name: str,
    transform: Transform,
    *,
    subresource: str = "",
    opts: WriteOptions | None = None,
    uid: str | None = None,
) -> Object:
    """Apply ``transform`` to the current object and store the result (PUT and PATCH).

    ``uid`` (a PUT body's ``metadata.uid``) is a precondition checked atomically with the write.
    Returns the stored object; when nothing changed, the current object unchanged (no new
    resourceVersion, no watch event). If the write empties the finalizers of an object being
    deleted, the object is deleted and its last state returned.
    """
    key = record.key(namespace, name)
    strat = reg.strategy_for(record)

    wopts = opts or WriteOptions()
    kept_warnings = len(wopts.warnings)  # from before this update (e.g. duplicate fields)
    preconditions = storage.Preconditions(uid=uid) if uid else None

    async def step(stored: Object) -> Object:
        current = await reg.conversion.served(record, stored)
        del wopts.warnings[kept_warnings:]  # a retried attempt reports its own warnings only
        new = await _prepare(
            reg,
            record,
            strat,
            namespace,
            name,
            transform,
            current,
            subresource,
            admitting.of_write("UPDATE", record, namespace, name, None, current, wopts, subresource),
        )
        objectmeta.drop_empty(new["metadata"])
        new, schema_errs = reg.schema.process(record, new, current, wopts)
        for guard in reg.write_guards:
            guarded = guard(record, new, current, wopts.requester)
            if guarded is not None:
                await guarded
        errs = objectmeta.validate_metadata(new["metadata"], name_rule=strat.name_rule)
        errs += schema_errs or strat.validate_object(record, new, current, subresource)
        if errs:
            raise errors.invalid_object(record.kind, record.group, name, errs)
        admitted = reg.admission.validate(
            admitting.of_write("UPDATE", record, namespace, name, new, current, wopts, subresource)
        )
        if admitted is not None:
            await admitted
        new = reg.schema.managed(record, current, new, wopts, rfc3339(reg.clock), subresource)
        if new == current and not storage.STALE_READ.get():
            raise _NoChange(current)
        meta = new["metadata"]
        if meta.get("deletionTimestamp") and not meta.get("finalizers") and not strat.holds_deletion(new):
            raise _DeleteNow(new)
        if wopts.dry_run:
            raise _DryRun(new)
        return await reg.conversion.stored(record, new)

    for _ in range(deletion.MAX_RACE_ATTEMPTS):
        try:
            stored = await reg.storage.guaranteed_update(key, step, preconditions=preconditions)
            reg.written(record, stored, False)
            return await reg.conversion.served(record, stored)
        except _NoChange as done:
            return await reg.conversion.served(record, done.obj)
        except _DryRun as done:
            return done.obj
        except _DeleteNow as done:
            rv = done.obj["metadata"].get("resourceVersion")
            at_rv = storage.Preconditions(resource_version=rv)  # the state the update decided on
            last = await deletion.delete_stored(reg, record, key, name, at_rv)
            if last is not None:
                return last
        except storage.StorageError as err:
            raise storage_error(record, name, err) from None
    raise deletion.too_many_retries(record, name)


async def _prepare(
    reg: Registry,
    record: ResourceRecord,
    strat: strategy.Strategy,
    namespace: str,
    name: str,
    transform: Transform,
    current: Object,
    subresource: str,
    attrs: admitting.Attributes,
) -> Object:
    """The object to store: ``transform``'s result, checked, passed through mutating admission
    (on the patched object, as upstream), then the strategy's ``prepare_for_*``."""
    produced = transform(current)
    if not isinstance(produced, dict):
        raise errors.BadRequest("the object must be a JSON object")
    new = dict(produced)
    if _nests_too_deep(new, current):
        # a patch can build what no body may hold (a JSON patch adding a deep value at a deep
        # path); kplane's nesting limit (README) holds for stored objects too
        raise errors.BadRequest(
            f"the patched object nests deeper than {jsonbody.MAX_DEPTH} levels, the most this server stores"
        )
    check_type(record, new)
    metatypes.check_metadata(new, record.kind, record.version)
    meta = new.get("metadata")
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        raise errors.BadRequest("metadata must be an object")
    meta = new["metadata"] = dict(meta)
    old_meta = current["metadata"]
    if meta.get("name", name) != name:
        raise errors.BadRequest(
            f"the name of the object ({meta.get('name')}) does not match the name on the URL ({name})"
        )
    if record.namespaced and meta.get("namespace", namespace) not in (namespace, ""):
        raise errors.BadRequest(
            "the namespace of the provided object does not match the namespace sent on the request"
        )
    uid = meta.get("uid")
    if uid and uid != old_meta.get("uid"):
        # a PUT's uid was a precondition; here it is a patch that changes it (BeforeUpdate)
        raise errors.invalid_object(
            record.kind, record.group, name, [errors.invalid("metadata.uid", uid, "field is immutable")]
        )
    rv = meta.get("resourceVersion")
    if rv and rv != old_meta.get("resourceVersion"):
        raise errors.modified_conflict(record.group_resource, name)
    if reg.admission.mutating(record.group, record.plural):
        # the transform may share subtrees with the stored object; admission may change any
        new = copy.deepcopy(new)
        meta = new["metadata"]
    attrs.obj = new
    admitted = reg.admission.mutate(attrs)
    if admitted is not None:
        await admitted
    if subresource in ("status", "approval", "ephemeralcontainers", "binding", "finalize"):
        new = strat.prepare_for_subresource_update(record, subresource, new, current)
        new["metadata"] = dict(old_meta)
        return new
    meta["name"] = name
    if record.namespaced:
        meta["namespace"] = namespace
    else:
        meta.pop("namespace", None)
    for field in (
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generation",
    ):
        if field in old_meta:
            meta[field] = old_meta[field]
        else:
            meta.pop(field, None)
    meta["resourceVersion"] = old_meta.get("resourceVersion")
    strat.prepare_for_update(record, new, current)
    if old_meta.get("deletionTimestamp"):
        old_f = set(old_meta.get("finalizers") or [])
        added = [f for f in meta.get("finalizers") or [] if f not in old_f]
        if added:
            raise errors.invalid_object(
                record.kind,
                record.group,
                name,
                [errors.forbidden("metadata.finalizers", _FINALIZER_MSG.format(errors.go_strings(added)))],
            )
    if record.tracks_generation and strat.spec_changed(record, new, current):
        meta["generation"] = int(old_meta.get("generation") or 0) + 1
    return new


def _nests_too_deep(new: Object, current: Object) -> bool:
    """Whether ``new`` nests deeper than a body may, ``metadata.managedFields`` aside (their field
    sets mirror the object's own depth a few levels down: a body's limit is the object's limit).

    Values that are the stored object's own (a patch shares what it leaves alone) were checked
    when stored at the same place, so only the others are walked."""
    limit = jsonbody.MAX_DEPTH
    for key, value in new.items():
        if value is current.get(key) or not isinstance(value, dict | list):
            continue
        if key != "metadata" or not isinstance(value, dict):
            if jsonbody.too_deep(value, limit - 1):
                return True
            continue
        old_meta = current.get("metadata")
        old_meta = old_meta if isinstance(old_meta, dict) else {}
        for name, field in value.items():
            if name == "managedFields" or field is old_meta.get(name):
                continue
            if isinstance(field, dict | list) and jsonbody.too_deep(field, limit - 2):
                return True
    return False
