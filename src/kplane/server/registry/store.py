"""The generic registry: create, get, update (PUT and PATCH), delete for any resource record.

One code path serves every kind, and it is the only one that touches storage: reads, lists and
watches go through it too. Per-kind rules come from ``strategy``; admission comes in as the two
callbacks of ``admitting.Admission`` (called in upstream's order, see there), so this module never
imports the admission plugins. Collaborators (storage, clock, admission, per-kind strategies,
schema step) are given at construction.

Create lives here; update (PUT and PATCH: a read-modify-write over the caller's ``Transform``) is
``updating``'s, delete (and the graceful mark for deletion) ``deletion``'s; both get this registry
and its collaborators.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from typing import Any

from kplane._util.clock import Clock
from kplane.api import errors
from kplane.api.catalog import ResourceRecord
from kplane.server import storage
from kplane.server.registry import (
    admitting,
    deletion,
    listing,
    metatypes,
    objectmeta,
    strategy,
    updating,
    watching,
)
from kplane.server.registry.converting import Conversion
from kplane.server.registry.fieldschema import Requester, SchemaStep, WriteOptions
from kplane.server.registry.objects import rfc3339, storage_error

Object = dict[str, Any]

MAX_GENERATE_ATTEMPTS = 8
_SERVER_SET_ON_CREATE = frozenset(
    {"deletionTimestamp", "deletionGracePeriodSeconds", "selfLink", "uid", "creationTimestamp"}
)
"""Metadata a create ignores from the client (rest.BeforeCreate / FillObjectMetaSystemFields)."""


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
        for key in _SERVER_SET_ON_CREATE.intersection(meta):  # usually none: no loop at all
            del meta[key]
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
        now = rfc3339(self.clock)
        if not schema_errs:
            obj = self.schema.managed(record, None, obj, opts, now)
        attrs = admitting.of_write(
            "CREATE", record, namespace, str(obj["metadata"].get("name") or ""), obj, None, opts
        )
        admitted = self.admission.mutate(attrs)
        if admitted is not None:
            await admitted
            now = ""  # time passed (webhooks): the creation time is read again below
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
        meta["creationTimestamp"] = now or rfc3339(self.clock)
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

    # The update flow lives in ``updating``; bound here as a method, so a PUT or PATCH costs no
    # extra call.
    update = updating.update

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
