"""The schema step of a write: prune, default and validate against the kind's structural schema,
report unknown fields per ``fieldValidation``, and keep ``managedFields``.

Built-in kinds use the compiled Kubernetes 1.32 definitions; custom resources compile their CRD's
schema once per record, and its ``x-kubernetes-validations`` (CEL, ``kplane.api.cel``) once per
schema, evaluated after the OpenAPI checks as upstream's strategy does. ``fieldValidation=Strict``
turns unknown fields into upstream's 400 strict decoding error, ``Warn`` (the default) into
``Warning`` headers, ``Ignore`` into silence; unknown fields are pruned before storage in every mode.
"""

from __future__ import annotations

import itertools
import operator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from kplane._util.lazy import lazy_module
from kplane.api import errors
from kplane.api.catalog import ResourceRecord

if TYPE_CHECKING:
    from kplane.api import apply as ssa
    from kplane.api import cel, schema
    from kplane.api.schema import godecode
else:
    ssa = lazy_module("kplane.api.apply")  # loaded with the first write, not at start-up
    schema = lazy_module("kplane.api.schema")
    cel = lazy_module("kplane.api.cel")  # the CEL engine loads with the first custom resource write
    godecode = lazy_module("kplane.api.schema.godecode")

Object = dict[str, Any]
FieldValidation = Literal["Strict", "Warn", "Ignore"]


@dataclass(frozen=True)
class Requester:
    """The authenticated user behind a write, for kinds that record it (CertificateSigningRequest)."""

    username: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: dict[str, list[str]] = field(default_factory=dict)


@dataclass
class WriteOptions:
    """What one write request asked for, and what it reports back (``warnings``, and
    ``audit_annotations`` for the request's audit event)."""

    dry_run: bool = False
    field_manager: str = ""
    field_validation: FieldValidation = "Warn"
    warnings: list[str] = field(default_factory=list)
    audit_annotations: dict[str, str] = field(default_factory=dict)
    manage_fields: bool = True
    requester: Requester | None = None
    typed_body: bool = False
    """The object is a request body (create, update) that upstream decodes into the kind's Go type
    first: a built-in kind's type errors are that decode's 400, not schema errors."""


def _refuse_undecodable(node: schema.SchemaNode | None, record: ResourceRecord, obj: Object) -> None:
    """400 as handlers/rest.go transformDecodeError words a failed decode of a body, when ``obj``
    would not decode into the Go type (checked only once the schema has found errors)."""
    if node is None:
        return
    found = godecode.decode_error(node, record.kind, obj)
    if found is not None:
        kind, version = record.kind, record.version
        raise errors.BadRequest(f'{kind} in version "{version}" cannot be handled as a {kind}: {found}')


class SchemaStep:
    """Compiled schemas and schema navigators per record, cached."""

    def __init__(self, *, enabled: bool = True) -> None:
        self.enabled = enabled
        self._created: dict[tuple[Any, ...], tuple[object, list[Object]]] = {}
        self._custom: dict[int, tuple[object, schema.CompiledSchema | None, schema.SchemaNode | None]] = {}
        self._rules: dict[int, tuple[object, cel.RuleTree | None]] = {}

    def _custom_entry(
        self, record: ResourceRecord
    ) -> tuple[schema.CompiledSchema | None, schema.SchemaNode | None]:
        raw = record.schema
        if raw is None:
            return None, None
        hit = self._custom.get(id(raw))
        if hit is None or hit[0] is not raw:
            try:
                compiled: schema.CompiledSchema | None = schema.compile_schema(raw)
            except schema.SchemaError:
                compiled = None
            hit = (raw, compiled, schema.SchemaNode(raw))
            self._custom[id(raw)] = hit
        return hit[1], hit[2]

    def rules(self, record: ResourceRecord) -> cel.RuleTree | None:
        """The compiled ``x-kubernetes-validations`` of a custom resource's schema (None if none)."""
        raw = record.schema
        if raw is None or not record.custom:
            return None
        hit = self._rules.get(id(raw))
        if hit is None or hit[0] is not raw:
            _, tree = cel.compile_rules(raw, "", stored=True)  # accepted when the CRD was written
            hit = (raw, tree)
            self._rules[id(raw)] = hit
        return hit[1]

    def compiled(self, record: ResourceRecord) -> schema.CompiledSchema | None:
        if record.custom:
            return self._custom_entry(record)[0]
        return schema.compiled_for_gvk(record.group, record.version, record.kind)

    def node(self, record: ResourceRecord) -> schema.SchemaNode | None:
        if record.custom:
            return self._custom_entry(record)[1]
        return schema.node_for_gvk(record.group, record.version, record.kind)

    def process(
        self, record: ResourceRecord, obj: Object, old: Object | None, opts: WriteOptions
    ) -> tuple[Object, list[errors.FieldError]]:
        """(pruned and defaulted object, field errors). Raises 400 for unknown fields under Strict."""
        if not self.enabled:
            return obj, []
        compiled = self.compiled(record)
        if compiled is None:
            return obj, []
        kept = _carried_managed_fields(obj, old)
        if kept is not None:
            obj = {**obj, "metadata": {**obj["metadata"], "managedFields": []}}
        result = compiled.process(obj, old=old, mode=opts.field_validation)
        if kept is not None and isinstance(result.obj, dict):
            meta = result.obj.get("metadata")
            if isinstance(meta, dict) and "managedFields" in meta:
                meta["managedFields"] = kept  # the same key, so the same place in metadata
        found = list(result.errors)
        rules = self.rules(record) if record.custom else None
        if rules is not None:
            found.extend(_cel_errors(rules, result.obj, old, found))
        if opts.typed_body and not record.custom and result.errors:
            _refuse_undecodable(self.node(record), record, obj)
        if result.unknown_fields:
            if opts.field_validation == "Strict":
                raise errors.BadRequest(
                    schema.strict_decoding_message(record.kind, record.version, result.unknown_fields)
                )
            if opts.field_validation == "Warn":
                opts.warnings.extend(result.unknown_fields)
        return result.obj, found

    def managed(
        self,
        record: ResourceRecord,
        old: Object | None,
        new: Object,
        opts: WriteOptions,
        now: str,
        subresource: str = "",
    ) -> Object:
        """``new`` with managedFields updated for an ordinary (non-apply) write."""
        if not opts.manage_fields or not opts.field_manager:
            return new
        memo_key = _create_memo_key(record, old, new, opts.field_manager, subresource)
        if memo_key is not None:
            hit = self._created.get(memo_key)
            if hit is not None and hit[0] is record.schema:  # the very schema it was computed with
                return _with_entries(new, [{**e, "time": now} for e in hit[1]])
        body, old_body = new, old
        if record.has_status and not subresource:
            # Upstream's reset fields: a main-endpoint write never owns status (the strategy
            # resets it), so it is left out of both sides of the comparison.
            body = _without_status(new)
            old_body = _without_status(old) if old is not None else None
        result = ssa.update_managed_fields(
            old_body,
            body,
            manager=opts.field_manager,
            api_version=record.api_version,
            schema=self.node(record),
            now=now,
            subresource=subresource,
            zero=None if record.custom else schema.zero_object_for_gvk(*record.gvk),
        )
        entries = (result.get("metadata") or {}).get("managedFields") or []
        if memo_key is not None:
            if len(self._created) >= _CREATE_MEMO_SIZE:
                self._created.clear()
            self._created[memo_key] = (record.schema, entries)
        # ``result`` is ``body`` with the entries: ``new`` itself unless status was left out.
        return result if body is new else _with_entries(new, entries)


# Upstream's custom resource strategy skips CEL when the OpenAPI errors include one of these types
# (apiextensions-apiserver pkg/registry/customresource/strategy.go) and says so with one more error.
_CEL_BLOCKERS = frozenset(
    {
        "FieldValueRequired",
        "FieldValueNotSupported",
        "FieldValueTooLong",
        "FieldValueTooMany",
        "FieldValueTypeInvalid",
    }
)
_CEL_SKIPPED = (
    "some validation rules were not checked because the object was invalid; "
    "correct the existing errors to complete validation"
)


def _cel_errors(
    rules: cel.RuleTree, obj: Object, old: Object | None, found: list[errors.FieldError]
) -> list[errors.FieldError]:
    if any(e.type in _CEL_BLOCKERS for e in found):
        return [errors.invalid("<nil>", "null", _CEL_SKIPPED)]
    return rules.validate(obj, old)


# The field set a create records depends only on the object's shape (which keys hold what kind of
# value), not on the values, as long as the object has no lists (list entries are identified by
# their key fields' values). Creates of such objects (ConfigMaps, Secrets, Leases, Namespaces...)
# reuse the entry computed for the first object of the same shape and only stamp the time; the
# stored fieldsV1 structure is shared, which is safe because stored objects are read-only.
_CREATE_MEMO_SIZE = 512


class _HasList(Exception):
    pass


def _shape(value: dict[str, Any]) -> tuple[Any, ...]:
    """``value``'s keys, its values' types and its nested objects' shapes; one call per object and
    no Python step per value (the type is finer than the null-or-not that field ownership depends
    on, which only makes the key more specific). Raises ``_HasList`` at the first list."""
    values = value.values()
    types = tuple(map(type, values))
    if list in types:
        raise _HasList
    if dict not in types:
        return (tuple(value), types)
    nested = itertools.compress(values, map(operator.is_, types, itertools.repeat(dict)))
    return (tuple(value), types, tuple(map(_shape, nested)))


def _create_memo_key(
    record: ResourceRecord, old: Object | None, new: Object, manager: str, subresource: str
) -> tuple[Any, ...] | None:
    meta = new.get("metadata")
    if old is not None or subresource or not isinstance(meta, dict) or "managedFields" in meta:
        return None
    try:
        shape = _shape(new)
    except _HasList:
        return None
    return (record.group, record.version, record.kind, id(record.schema), manager, shape)


def _carried_managed_fields(obj: Object, old: Object | None) -> list[Any] | None:
    """``obj``'s managedFields when they are the stored object's own list, carried over unchanged
    (every subresource write: its metadata is the stored one; a patch that leaves them alone).

    The schema walk then skips them (``process`` walks an empty list in their place and puts them
    back): they were checked and normalized when stored, an error on a value equal to the stored
    one would be ratcheted away, and CEL rules see no managedFields. The field manager computes the
    entries to store from them next."""
    if old is None:
        return None
    meta, old_meta = obj.get("metadata"), old.get("metadata")
    if not isinstance(meta, dict) or not isinstance(old_meta, dict):
        return None
    kept = meta.get("managedFields")
    if type(kept) is not list or not kept or kept is not old_meta.get("managedFields"):
        return None
    return kept


def _with_entries(obj: Object, entries: list[Object]) -> Object:
    meta = dict(obj["metadata"])
    if entries:
        meta["managedFields"] = entries
    else:
        meta.pop("managedFields", None)
    return {**obj, "metadata": meta}


def _without_status(obj: Object) -> Object:
    return {k: v for k, v in obj.items() if k != "status"} if "status" in obj else obj
