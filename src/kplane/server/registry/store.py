"""The generic registry: create, get, update (PUT and PATCH), delete for any resource record.

One code path serves every kind, and it is the only one that touches storage: reads, lists and
watches go through it too. Per-kind rules come from ``strategy``; admission comes in as the two
callbacks of ``admitting.Admission`` (called in upstream's order, see there), so this module never
imports the admission plugins. Collaborators (storage, clock, admission, per-kind strategies,
schema step) are given at construction.

Update is read-modify-write inside ``storage.guaranteed_update``: the caller supplies a
``Transform`` (a PUT body replacing the object, or a patch applied to it) that is re-run on a fresh
copy whenever another write races in, so a PATCH never loses a concurrent change and a PUT with a
stale ``resourceVersion`` always gets 409 Conflict.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from typing import Any

from kplane._util.clock import Clock
from kplane.api import errors, jsonbody
from kplane.api.catalog import ResourceRecord
from kplane.server import storage
from kplane.server.registry import admitting, deletion, listing, metatypes, objectmeta, strategy, watching
from kplane.server.registry.converting import Conversion
from kplane.server.registry.fieldschema import Requester, SchemaStep, WriteOptions
from kplane.server.registry.objects import check_type, rfc3339, storage_error

Object = dict[str, Any]
Transform = Callable[[Object], Object]
"""Given the current object (read-only), return the desired new object (a new dict)."""

MAX_GENERATE_ATTEMPTS = 8
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


WriteGuard = Callable[[ResourceRecord, Object, Object | None, Requester | None], Awaitable[None] | None]
"""Refuses a write by raising an ``APIError`` (RBAC escalation checks): record, new object, old
object (None on create), requester (None for the server's own writes). Runs before validation.
Returns None when it decided at once, else an awaitable that decides."""

AfterWrite = Callable[[ResourceRecord, Object, bool], None]
"""Called after a successful (non-dry-run) write with the stored object and whether it was deleted."""


class Registry:
    """Serves the verbs of every catalog record over one ``Storage``."""

    def __init__(
        self,
        store: storage.Storage,
        clock: Clock,
        *,
        admission: admitting.Admission = admitting.NONE,
        strategies: Mapping[tuple[str, str], strategy.Strategy] | None = None,
        schema: SchemaStep | None = None,
        conversion: Conversion | None = None,
    ) -> None:
        """``strategies``: per (group, kind) overrides of ``strategy.for_record``; ``conversion``:
        how objects change version on the way in and out (pure unless given a webhook converter)."""
        self.storage = store
        self.clock = clock
        self.admission = admission
        self.strategies: dict[tuple[str, str], strategy.Strategy] = dict(strategies or {})
        self.schema = schema or SchemaStep()
        self.conversion = conversion or Conversion()
        self._after_any: list[AfterWrite] = []
        self._after: dict[tuple[str, str], list[AfterWrite]] = {}
        self.write_guards: list[WriteGuard] = []
        self.gc_finalizers = False
        """Add the ``orphan``/``foregroundDeletion`` finalizers that propagationPolicy asks for; set
        by whoever runs a garbage collector for this server (without one they would pin objects)."""

    def strategy_for(self, record: ResourceRecord) -> strategy.Strategy:
        """This server's strategy for ``record`` (instance overrides first, then the built-in table)."""
        return self.strategies.get((record.group, record.kind)) or strategy.for_record(record)

    def after_write(self, hook: AfterWrite, *, resource: tuple[str, str] | None = None) -> None:
        """Call ``hook(record, obj, deleted)`` after every write this registry stores (synchronously,
        once it is stored), or only after writes of ``resource`` (``(group, plural)``)."""
        if resource is None:
            self._after_any.append(hook)
        else:
            self._after.setdefault(resource, []).append(hook)

    def written(self, record: ResourceRecord, obj: Object, deleted: bool) -> None:
        """Call the after-write hooks (``after_write``) for a write just stored."""
        for hook in self._after_any:
            hook(record, obj, deleted)
        hooks = self._after.get((record.group, record.plural))
        if hooks:
            for hook in hooks:
                hook(record, obj, deleted)

    # -- reads -------------------------------------------------------------------------------

    async def get(self, record: ResourceRecord, namespace: str, name: str) -> Object:
        try:
            await listing.sync(self.storage)
            return await self.conversion.served(record, await self.storage.get(record.key(namespace, name)))
        except storage.StorageError as err:
            raise storage_error(record, name, err) from None

    async def get_at(self, record: ResourceRecord, namespace: str, name: str, revision: int) -> Object:
        """The object as of ``revision`` from the store's history: 410 (upstream's answer to a read
        at a compacted etcd revision) once compaction removed it, 404 when absent then, 405 when
        the store keeps no history."""
        try:
            found = await storage.history_of(self.storage).get_at(record.key(namespace, name), revision)
        except storage.Expired:
            raise errors.Gone(listing.EXPIRED) from None
        except storage.HistoryNotKept as err:
            raise errors.MethodNotAllowed(str(err)) from None
        except storage.StorageError as err:
            raise storage_error(record, name, err) from None
        return await self.conversion.served(record, found)

    async def list_current(self, record: ResourceRecord) -> list[Object]:
        """Every object of ``record`` now (all namespaces), as stored."""
        return (await self.storage.list(record.key_prefix)).items

    async def list_page(
        self, record: ResourceRecord, namespace: str, opts: listing.ListOptions
    ) -> listing.ListPage:
        """A page of ``record``'s objects (stored form) under ``opts`` (``listing.list_objects``)."""
        return await listing.list_objects(self.storage, record, namespace, opts)

    def watch(
        self,
        record: ResourceRecord,
        namespace: str,
        opts: watching.WatchOptions,
        *,
        on_terminated: Callable[[], None] | None = None,
    ) -> AsyncGenerator[list[watching.WatchItem], None]:
        """The events of ``record`` under ``opts``, in batches (``watching.watch_batches``)."""
        return watching.watch_batches(
            self.storage, record, namespace, opts, self.clock, on_terminated=on_terminated
        )

    def revision(self) -> int:
        """The storage's current revision (a list's ``resourceVersion``)."""
        return self.storage.current_revision()

    async def ping(self) -> None:
        """Raise ``storage.StorageError`` unless storage answers a read."""
        try:
            await self.storage.get("/registry/core/namespaces/default")
        except storage.KeyNotFound:
            pass

    # -- create ------------------------------------------------------------------------------

    async def create(
        self, record: ResourceRecord, namespace: str, obj: Object, opts: WriteOptions | None = None
    ) -> Object:
        """Store a new object; 201 semantics. ``obj`` becomes the registry's (it is mutated)."""
        strat = self.strategy_for(record)
        metatypes.check_metadata(obj, record.kind, record.version)
        meta = obj["metadata"]
        rv = meta.get("resourceVersion")
        rv_set = bool(rv) and _positive_uint64(rv)
        if record.namespaced:
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        generate = not meta.get("name") and bool(meta.get("generateName"))
        if generate:
            meta["name"] = objectmeta.generate_name(str(meta["generateName"]))
        for key in (
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "selfLink",
            "uid",
            "creationTimestamp",
        ):
            meta.pop(key, None)
        objectmeta.drop_empty(meta)
        opts = opts or WriteOptions()
        # As upstream's create handler: decode and default (the schema step), record the
        # creator's managedFields, then let the strategy set what the server owns (status, cluster
        # IPs...), which the creator therefore does not own. Fields the server sets are trusted
        # and need no schema validation.
        obj, schema_errs = self.schema.process(record, obj, None, opts)
        # the strategy resets status before upstream validates anything, so a client's status
        # (a protobuf body's dropped zero scalars: kubectl autoscale's HPA) never fails a create
        drop_status = record.has_status and not strat.keep_status_on_create
        if drop_status:
            schema_errs = [e for e in schema_errs if e.field.split(".", 1)[0] != "status"]
        if not schema_errs:
            obj = self.schema.managed(record, None, obj, opts, rfc3339(self.clock))
        attrs = admitting.Attributes(
            "CREATE",
            record,
            namespace,
            str(obj["metadata"].get("name") or ""),
            obj,
            user=opts.requester,
            dry_run=opts.dry_run,
            warnings=opts.warnings,
            audit_annotations=opts.audit_annotations,
        )
        admitted = self.admission.mutate(attrs)
        if admitted is not None:
            await admitted
        if attrs.reinvocation is not None and attrs.reinvocation.requested:
            # A webhook changed the object: pruned, defaulted and checked again, as upstream decodes
            # and validates after admission (its output is not held to fieldValidation).
            metatypes.check_metadata(obj, record.kind, record.version)
            changed_ns = obj["metadata"].get("namespace")
            if record.namespaced and changed_ns not in (None, "", namespace):
                # rest.BeforeCreate's check, which upstream runs after admission
                raise errors.BadRequest(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            if record.namespaced:
                obj["metadata"]["namespace"] = namespace
            quiet = dataclasses.replace(opts, field_validation="Ignore", warnings=[])
            obj, schema_errs = self.schema.process(record, obj, None, quiet)
            if drop_status:
                schema_errs = [e for e in schema_errs if e.field.split(".", 1)[0] != "status"]
            attrs.obj = obj
        meta = obj["metadata"]
        meta["uid"] = objectmeta.new_uid()  # before the strategy, which may use it (Job selectors)
        meta["creationTimestamp"] = rfc3339(self.clock)
        if record.tracks_generation:
            meta["generation"] = 1
        else:
            meta.pop("generation", None)
        prepared = strat.prepare_for_create(record, obj, self.list_current)
        if prepared is not None:
            await prepared
        strat.record_requester(obj, opts.requester)
        for guard in self.write_guards:
            guarded = guard(record, obj, None, opts.requester)
            if guarded is not None:
                await guarded
        errs = objectmeta.validate_metadata(meta, name_rule=strat.name_rule)
        errs += schema_errs or strat.validate_object(record, obj, None)
        if errs:
            raise errors.invalid_object(record.kind, record.group, str(meta.get("name") or ""), errs)
        admitted = self.admission.validate(attrs)
        if admitted is not None:
            await admitted
        if opts.dry_run:
            return obj
        if rv_set:
            # storage/etcd3 store.go Create refuses it with a plain error, which the handler
            # answers as a 500 without a reason (ErrorToAPIStatus); a dry run never gets there
            raise errors.APIError(
                "resourceVersion should not be set on objects to be created", code=500, reason=""
            )
        for attempt in range(MAX_GENERATE_ATTEMPTS if generate else 1):
            if attempt:
                meta["name"] = objectmeta.generate_name(str(meta["generateName"]))
            try:
                data = self.conversion.stored_now(record, obj)  # no coroutine unless a webhook converts
                if data is None:
                    data = await self.conversion.stored(record, obj)
                stored = await self.storage.create(record.key(namespace, meta["name"]), data)
                self.written(record, stored, False)
                served = self.conversion.served_now(record, stored)
                return served if served is not None else await self.conversion.served(record, stored)
            except storage.KeyExists as err:
                if not generate or attempt == MAX_GENERATE_ATTEMPTS - 1:
                    exc = storage_error(record, meta["name"], err)
                    if generate:
                        exc = errors.AlreadyExists(
                            exc.message
                            + ", the server was not able to generate a unique name for the object",
                            details=exc.details,
                            retry_after=1,
                        )
                    raise exc from None
            except storage.StorageError as err:
                raise storage_error(record, meta["name"], err) from None
        raise AssertionError("unreachable")

    # -- update ------------------------------------------------------------------------------

    async def update(
        self,
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
        strat = self.strategy_for(record)

        wopts = opts or WriteOptions()
        kept_warnings = len(wopts.warnings)  # from before this update (e.g. duplicate fields)
        preconditions = storage.Preconditions(uid=uid) if uid else None

        def attrs_for(current: Object) -> admitting.Attributes:
            return admitting.Attributes(
                "UPDATE",
                record,
                namespace,
                name,
                None,
                current,
                subresource,
                user=wopts.requester,
                dry_run=wopts.dry_run,
                warnings=wopts.warnings,
                audit_annotations=wopts.audit_annotations,
            )

        async def step(stored: Object) -> Object:
            current = await self.conversion.served(record, stored)
            del wopts.warnings[kept_warnings:]  # a retried attempt reports its own warnings only
            new = await self._prepare_update(
                record, strat, namespace, name, transform, current, subresource, attrs_for(current)
            )
            objectmeta.drop_empty(new["metadata"])
            new, schema_errs = self.schema.process(record, new, current, wopts)
            for guard in self.write_guards:
                guarded = guard(record, new, current, wopts.requester)
                if guarded is not None:
                    await guarded
            errs = objectmeta.validate_metadata(new["metadata"], name_rule=strat.name_rule)
            errs += schema_errs or strat.validate_object(record, new, current, subresource)
            if errs:
                raise errors.invalid_object(record.kind, record.group, name, errs)
            admitted = self.admission.validate(
                admitting.Attributes(
                    "UPDATE",
                    record,
                    namespace,
                    name,
                    new,
                    current,
                    subresource,
                    user=wopts.requester,
                    dry_run=wopts.dry_run,
                    warnings=wopts.warnings,
                    audit_annotations=wopts.audit_annotations,
                )
            )
            if admitted is not None:
                await admitted
            new = self.schema.managed(record, current, new, wopts, rfc3339(self.clock), subresource)
            if new == current and not storage.STALE_READ.get():
                raise _NoChange(current)
            meta = new["metadata"]
            if meta.get("deletionTimestamp") and not meta.get("finalizers") and not strat.holds_deletion(new):
                raise _DeleteNow(new)
            if wopts.dry_run:
                raise _DryRun(new)
            return await self.conversion.stored(record, new)

        for _ in range(deletion.MAX_RACE_ATTEMPTS):
            try:
                stored = await self.storage.guaranteed_update(key, step, preconditions=preconditions)
                self.written(record, stored, False)
                return await self.conversion.served(record, stored)
            except _NoChange as done:
                return await self.conversion.served(record, done.obj)
            except _DryRun as done:
                return done.obj
            except _DeleteNow as done:
                rv = done.obj["metadata"].get("resourceVersion")
                try:
                    last = await self.storage.delete(
                        key, preconditions=storage.Preconditions(resource_version=rv)
                    )
                except storage.PreconditionFailed:
                    continue
                except storage.StorageError as err:
                    raise storage_error(record, name, err) from None
                self.written(record, last, True)
                return await self.conversion.served(record, last)
            except storage.StorageError as err:
                raise storage_error(record, name, err) from None
        raise errors.Conflict(
            f'Operation cannot be fulfilled on {record.group_resource} "{name}": too many retries'
        )

    async def _prepare_update(
        self,
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
                f"the patched object nests deeper than {jsonbody.MAX_DEPTH} levels, "
                "the most this server stores"
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
        if self.admission.mutating(record.group, record.plural):
            # the transform may share subtrees with the stored object; admission may change any
            new = copy.deepcopy(new)
            meta = new["metadata"]
        attrs.obj = new
        admitted = self.admission.mutate(attrs)
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
                    [
                        errors.forbidden(
                            "metadata.finalizers", _FINALIZER_MSG.format(errors.go_strings(added))
                        )
                    ],
                )
        if record.tracks_generation and strat.spec_changed(record, new, current):
            meta["generation"] = int(old_meta.get("generation") or 0) + 1
        return new

    # -- delete ------------------------------------------------------------------------------

    async def delete(
        self, record: ResourceRecord, namespace: str, name: str, opts: deletion.DeleteOptions
    ) -> tuple[Object, bool]:
        """Delete, or mark for deletion when finalizers remain (``deletion.delete``). Returns
        (object, deleted_now)."""
        return await deletion.delete(self, record, namespace, name, opts)


def _positive_uint64(value: object) -> bool:
    """Whether ``value`` is a resourceVersion upstream's versioner parses as non-zero (other strings,
    "0" and "-1" included, are ignored on create and replaced by the store's)."""
    return isinstance(value, str) and value.isascii() and value.isdigit() and 0 < int(value) < 2**64


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
