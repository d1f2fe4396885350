"""The schema step of a write: prune, default and validate against the kind's structural schema,
report unknown fields per ``fieldValidation``, and keep ``managedFields``.

Built-in kinds use the compiled Kubernetes 1.32 definitions; custom resources compile their CRD's
schema once per record. ``fieldValidation=Strict`` turns unknown fields into upstream's 400 strict
decoding error, ``Warn`` (the default) into ``Warning`` headers, ``Ignore`` into silence; unknown
fields are pruned before storage in every mode.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from kplane._util.lazy import lazy_module
from kplane.api import errors
from kplane.api.catalog import ResourceRecord

if TYPE_CHECKING:
    from kplane.api import apply as ssa
    from kplane.api import schema
else:
    ssa = lazy_module("kplane.api.apply")  # loaded with the first write, not at start-up
    schema = lazy_module("kplane.api.schema")

Object = dict[str, Any]
FieldValidation = Literal["Strict", "Warn", "Ignore"]


@dataclass
class WriteOptions:
    """What one write request asked for, and what it reports back (``warnings``)."""

    dry_run: bool = False
    field_manager: str = ""
    field_validation: FieldValidation = "Warn"
    warnings: list[str] = field(default_factory=list)
    manage_fields: bool = True


class SchemaStep:
    """Compiled schemas and schema navigators per record, cached."""

    def __init__(self) -> None:
        self._custom: dict[int, tuple[object, schema.CompiledSchema | None, schema.SchemaNode | None]] = {}

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
        compiled = self.compiled(record)
        if compiled is None:
            return obj, []
        result = compiled.process(obj, old=old, mode=opts.field_validation)
        if result.unknown_fields:
            if opts.field_validation == "Strict":
                raise errors.BadRequest(
                    schema.strict_decoding_message(record.kind, record.version, result.unknown_fields)
                )
            if opts.field_validation == "Warn":
                opts.warnings.extend(result.unknown_fields)
        return result.obj, list(result.errors)

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
        return ssa.update_managed_fields(
            old,
            new,
            manager=opts.field_manager,
            api_version=record.api_version,
            schema=self.node(record),
            now=now,
            subresource=subresource,
        )
