"""Label and field selection of objects for list and watch (400 for selectors we cannot serve)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kplane.api import errors, fields, labels
from kplane.api.builtin import eventversions
from kplane.api.catalog import ResourceRecord

Object = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Selection:
    """A compiled label + field selector for one resource."""

    label: labels.Selector | None
    field: fields.FieldSelector | None
    get_fields: Callable[[Object], Any] | None

    @property
    def empty(self) -> bool:
        return self.label is None and self.field is None

    @classmethod
    def parse(cls, record: ResourceRecord, label_text: str, field_text: str) -> Selection:
        label = field = None
        getter = None
        if label_text:
            try:
                label = labels.parse(label_text)
            except ValueError as err:
                # labels.Parse's own message, unwrapped (meta/v1 Convert_string_To_labels_Selector)
                raise errors.BadRequest(str(err)) from None
            if label.empty:
                label = None
        if field_text:
            # Objects stored in another group's form (events.k8s.io Events) are selected on that
            # form: the selector's labels are converted first, as upstream's field label conversion.
            group = record.group if record.storage_group is None else record.storage_group
            try:
                field = fields.parse(field_text)
                if record.storage_group is not None:
                    field = _stored_labels(field)
                fields.validate(field, group, record.kind, extra=record.field_selectors)
            except ValueError as err:
                raise errors.BadRequest(str(err)) from None
            if field.empty:
                field = None
            else:
                getter = fields.field_getter((group, record.kind), extra=record.field_selectors)
        return cls(label, field, getter)

    def matches(self, obj: Object) -> bool:
        if self.label is not None and not self.label.matches((obj.get("metadata") or {}).get("labels")):
            return False
        if self.field is not None and self.get_fields is not None:
            return bool(self.field.matches(self.get_fields(obj)))
        return True

    def exact_name(self) -> str | None:
        return self.field.exact_name() if self.field is not None else None


def _stored_labels(selector: fields.FieldSelector) -> fields.FieldSelector:
    """An events.k8s.io/v1 Event field selector in terms of the stored core Event."""
    out = []
    for r in selector.requirements:
        label = eventversions.FIELD_LABELS.get(r.field)
        if label is None:
            raise ValueError(f"field label not supported: {r.field}")
        out.append(fields.Requirement(label, r.operator, r.value))
    return fields.FieldSelector(out)
