"""The types of ``metadata`` fields, checked before anything on the write path reads them.

Upstream decodes every body into Go structs, so an ``ObjectMeta`` field of the wrong JSON type
fails the decode with a 400 before any strategy runs (``Pod in version "v1" cannot be handled as a
Pod: json: cannot unmarshal string into Go struct field ObjectMeta.metadata.labels of type
map[string]string``, handlers/rest.go ``transformDecodeError`` around encoding/json's
``UnmarshalTypeError``). kplane checks the same shapes up front, so the registry, the strategies
and the field manager may rely on them. ``null`` is accepted everywhere, as Go leaves the zero value.
"""

from __future__ import annotations

from typing import Any

from kplane.api import errors

_STRING = ("name", "generateName", "namespace", "selfLink", "uid", "resourceVersion")
_TIME = ("creationTimestamp", "deletionTimestamp")
_INT = ("generation", "deletionGracePeriodSeconds")
_STRING_MAPS = ("labels", "annotations")
_OBJECT_LISTS = {"ownerReferences": "v1.OwnerReference", "managedFields": "v1.ManagedFieldsEntry"}
INT64 = (-(2**63), 2**63 - 1)


def json_kind(value: Any, *, with_number: bool = False) -> str:
    """How Go's JSON decoder names a value in an ``UnmarshalTypeError``: ``string``, ``number``
    (``number 1.5`` where Go shows the number: a number that does not fit an integer field)."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return f"number {value}" if with_number else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object" if isinstance(value, dict) else "value"


def check_metadata(obj: dict[str, Any], kind: str, version: str) -> None:
    """400 (upstream's decode error) when ``obj["metadata"]`` or one of its fields has the wrong type."""
    meta = obj.get("metadata")
    if meta is None:
        return
    problem = _problem(meta, kind)
    if problem:
        raise errors.BadRequest(
            f'{kind} in version "{version}" cannot be handled as a {kind}: json: cannot unmarshal {problem}'
        )


def _problem(meta: Any, kind: str) -> str:
    if not isinstance(meta, dict):
        return f"{json_kind(meta)} into Go struct field {kind}.metadata of type v1.ObjectMeta"
    where = "into Go struct field ObjectMeta.metadata."
    for name in _STRING + _TIME:
        value = meta.get(name)
        if value is not None and not isinstance(value, str):
            # metav1.Time's UnmarshalJSON decodes a string; the outer decoder gives that inner
            # type error the field's context, so the type shown is string
            return f"{json_kind(value)} {where}{name} of type string"
    for name in _INT:
        value = meta.get(name)
        if value is None:
            continue
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int) or not INT64[0] <= value <= INT64[1]:
            return f"{json_kind(value, with_number=True)} {where}{name} of type int64"
    for name in _STRING_MAPS:
        value = meta.get(name)
        if value is None:
            continue
        if not isinstance(value, dict):
            return f"{json_kind(value)} {where}{name} of type map[string]string"
        for item in value.values():
            if item is not None and not isinstance(item, str):
                return f"{json_kind(item)} {where}{name} of type string"
    finalizers = meta.get("finalizers")
    if finalizers is not None:
        if not isinstance(finalizers, list):
            return f"{json_kind(finalizers)} {where}finalizers of type []string"
        for item in finalizers:
            if item is not None and not isinstance(item, str):
                return f"{json_kind(item)} {where}finalizers of type string"
    for name, go_type in _OBJECT_LISTS.items():
        value = meta.get(name)
        if value is None:
            continue
        if not isinstance(value, list):
            return f"{json_kind(value)} {where}{name} of type []{go_type}"
        for item in value:
            if item is not None and not isinstance(item, dict):
                return f"{json_kind(item)} {where}{name} of type {go_type}"
    return ""
