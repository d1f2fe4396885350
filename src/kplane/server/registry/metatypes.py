"""The types of ``metadata`` fields, checked before anything on the write path reads them.

Upstream decodes every body into Go structs, so an ``ObjectMeta`` field of the wrong JSON type
fails the decode with a 400 before any strategy runs (``Pod in version "v1" cannot be handled as a
Pod: json: cannot unmarshal string into Go struct field ObjectMeta.metadata.labels of type
map[string]string``, handlers/rest.go ``transformDecodeError`` around encoding/json's
``UnmarshalTypeError``). kplane checks the same shapes up front, so the registry, the strategies
and the field manager may rely on them. ``null`` is accepted everywhere, as Go leaves the zero value.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kplane.api import errors

_STRING = ("name", "generateName", "namespace", "selfLink", "uid", "resourceVersion")
_TIME = ("creationTimestamp", "deletionTimestamp")
_INT = ("generation", "deletionGracePeriodSeconds")
_STRING_MAPS = ("labels", "annotations")
_STRINGS = frozenset(_STRING + _TIME)
_OBJECT_LISTS = {"ownerReferences": "v1.OwnerReference", "managedFields": "v1.ManagedFieldsEntry"}
INT64 = (-(2**63), 2**63 - 1)
_STRING_OR_NULL = frozenset({str, type(None)})


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


_WHERE = "into Go struct field ObjectMeta.metadata."


def _string(name: str, value: Any) -> str:
    # metav1.Time's UnmarshalJSON decodes a string; the outer decoder gives that inner type error
    # the field's context, so the type shown for the times is string too
    if isinstance(value, str):
        return ""
    return f"{json_kind(value)} {_WHERE}{name} of type string"


def _int64(name: str, value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not INT64[0] <= value <= INT64[1]:
        return f"{json_kind(value, with_number=True)} {_WHERE}{name} of type int64"
    return ""


def _string_map(name: str, value: Any) -> str:
    if not isinstance(value, dict):
        return f"{json_kind(value)} {_WHERE}{name} of type map[string]string"
    if _STRING_OR_NULL.issuperset(map(type, value.values())):  # the common case, in C
        return ""
    for item in value.values():
        if item is not None and not isinstance(item, str):
            return f"{json_kind(item)} {_WHERE}{name} of type string"
    return ""


def _list_of(go_type: str, item_type: type) -> Callable[[str, Any], str]:
    """The check of a list field whose items Go decodes into ``go_type`` (JSON ``item_type``)."""

    def check(name: str, value: Any) -> str:
        if not isinstance(value, list):
            return f"{json_kind(value)} {_WHERE}{name} of type []{go_type}"
        for item in value:
            if item is not None and not isinstance(item, item_type):
                return f"{json_kind(item)} {_WHERE}{name} of type {go_type}"
        return ""

    return check


_CHECKS: dict[str, Callable[[str, Any], str]] = {
    **dict.fromkeys(_STRING + _TIME, _string),
    **dict.fromkeys(_INT, _int64),
    **dict.fromkeys(_STRING_MAPS, _string_map),
    "finalizers": _list_of("string", str),
    **{name: _list_of(go_type, dict) for name, go_type in _OBJECT_LISTS.items()},
}


def _problem(meta: Any, kind: str) -> str:
    """The first field of ``meta``, in the body's order (Go's decoder keeps the first type error
    it meets), whose value has the wrong type, described as Go does; "" when none has."""
    if not isinstance(meta, dict):
        return f"{json_kind(meta)} into Go struct field {kind}.metadata of type v1.ObjectMeta"
    checks = _CHECKS
    for name, value in meta.items():
        if value is None or (type(value) is str and name in _STRINGS):
            continue
        check = checks.get(name)
        if check is not None:
            problem = check(name, value)
            if problem:
                return problem
    return ""
