"""The replica fields of a custom resource with a ``scale`` subresource, validated on every write.

Upstream (apiextensions-apiserver registry/customresource/validator.go ``ValidateScaleSpec`` and
``ValidateScaleStatus``) reads ``specReplicasPath`` and ``statusReplicasPath`` with
``unstructured.NestedInt64`` and ``labelSelectorPath`` with ``NestedString``; a value of another
type is a 422 (``.spec.replicas: Invalid value: 0: .spec.replicas accessor error: s is of the type
string, expected int64``), and replicas must lie in 0..2147483647. So ``/scale`` never meets a
value it cannot read, however free-form the schema is.
"""

from __future__ import annotations

from typing import Any

from kplane.api import errors
from kplane.api.catalog import ResourceRecord
from kplane.api.yamlbody import go_format_float

MAX_INT32 = 2**31 - 1


def validate(record: ResourceRecord, obj: dict[str, Any]) -> list[errors.FieldError]:
    scale = record.scale
    if scale is None:
        return []
    errs: list[errors.FieldError] = []
    for path in (scale.spec_replicas_path, scale.status_replicas_path):
        value, problem = _nested(obj, path, "int64")
        if problem:
            errs.append(errors.invalid(path, 0, problem))
        elif value is not None and value < 0:
            errs.append(errors.invalid(path, value, "should be a non-negative integer"))
        elif value is not None and value > MAX_INT32:
            errs.append(errors.invalid(path, value, f"should be less than or equal to {MAX_INT32}"))
    if scale.label_selector_path:
        _, problem = _nested(obj, scale.label_selector_path, "string")
        if problem:
            errs.append(errors.invalid(scale.label_selector_path, "", problem))
    return errs


def _nested(obj: dict[str, Any], path: str, want: str) -> tuple[Any, str]:
    """The value at ``path`` (None when absent) and the accessor error upstream would report."""
    fields = path.strip(".").split(".")
    current: Any = obj
    for i, name in enumerate(fields):
        if current is None:
            return None, ""
        if not isinstance(current, dict):
            where = "." + ".".join(fields[: i + 1])  # as NestedFieldNoCopy names it
            return None, _accessor_error(where, current, "map[string]interface{}")
        if name not in current:
            return None, ""
        current = current[name]
    ok = isinstance(current, str) if want == "string" else type(current) is int
    if current is None or ok:
        return current, ""
    return None, _accessor_error(path, current, want)


def _accessor_error(path: str, value: Any, want: str) -> str:
    """unstructured's error for a field of the wrong type (apimachinery unstructured/helpers.go)."""
    return f"{path} accessor error: {_go_v(value)} is of the type {_go_type(value)}, expected {want}"


def _go_type(value: Any) -> str:
    """Go's ``%T`` of a decoded JSON value."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "[]interface {}"
    return "map[string]interface {}"


def _go_v(value: Any) -> str:
    """Go's ``%v`` of a decoded JSON value."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return go_format_float(value)
    if isinstance(value, list):
        return "[" + " ".join(_go_v(v) for v in value) + "]"
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{_go_v(v)}" for k, v in sorted(value.items())) + "]"
    if value is None:
        return "<nil>"
    return str(value)
