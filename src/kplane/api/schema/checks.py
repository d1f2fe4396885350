"""Leaf checks of the schema compiler: one closure per schema keyword, built once per schema node.

Every check has the signature ``check(value, path, old, ctx) -> None`` and runs only on a value of
the JSON type it was built for (the node dispatches on type first), so a check never re-tests the
type. Failures go through ``Ctx.fail``, which implements ratcheting: an error on a value equal to
its correlated old value is dropped.

Messages reproduce kube-openapi's validator (``<path> in body should be ...``) mapped to field
errors the way the apiextensions-apiserver maps them: ``maxLength`` → ``FieldValueTooLong``,
``maxItems``/``maxProperties`` → ``FieldValueTooMany``, ``enum`` → ``FieldValueNotSupported``, type
and format failures → ``FieldValueTypeInvalid``, everything else → ``FieldValueInvalid`` with the
offending value.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import orjson

from kplane.api import errors
from kplane.api.schema import formats

Check = Callable[[Any, str, Any, "Ctx"], None]
# A compiled schema node: ``fn(value, path, old, ctx) -> value`` returns the pruned/defaulted value.
Fn = Callable[[Any, str, Any, "Ctx"], Any]


class Ctx:
    """What one ``process`` call accumulates: field errors and (unless ignored) unknown-field paths."""

    __slots__ = ("errors", "unknown")

    def __init__(self, collect_unknown: bool) -> None:
        self.errors: list[errors.FieldError] = []
        self.unknown: list[str] | None = [] if collect_unknown else None

    def fail(self, err: errors.FieldError, value: Any, old: Any) -> None:
        """Record ``err`` unless ratcheting applies (``value`` is unchanged from ``old``)."""
        if old is not None and old == value:
            return
        self.errors.append(err)


def body(path: str) -> str:
    """The ``<name> in body`` prefix kube-openapi puts in front of its messages."""
    return f"{path} in body"


def type_error(path: str, value: Any, expected: str) -> errors.FieldError:
    """``Invalid value: "string": spec.n in body must be of type integer: "string"``."""
    actual = formats.json_type(value)
    detail = f'{body(path)} must be of type {expected}: "{actual}"'
    return errors.FieldError("FieldValueTypeInvalid", path, detail, actual)


def canonical(value: Any) -> Any:
    """A hashable key under which JSON-equal values (and only those) collide; bools stay apart from 0/1."""
    t = type(value)
    if t is str:
        return value
    if t is bool:
        return ("b", value)
    if t is int or t is float:
        return ("n", value)
    if value is None:
        return ("z",)
    return ("j", orjson.dumps(value, option=orjson.OPT_SORT_KEYS))


def _limit_text(limit: float, value: Any) -> str:
    # kube-openapi picks an int64 variant of the message when both sides are integers.
    if type(value) is int and float(limit).is_integer():
        return str(int(limit))
    return formats.go_number(limit)


# --- strings -----------------------------------------------------------------------------------


def max_length(limit: int) -> Check:
    detail = f"may not be more than {limit} {'byte' if limit == 1 else 'bytes'}"

    def check(v: str, path: str, old: Any, ctx: Ctx) -> None:
        if len(v) > limit:
            ctx.fail(errors.FieldError("FieldValueTooLong", path, detail, v), v, old)

    return check


def min_length(limit: int) -> Check:
    def check(v: str, path: str, old: Any, ctx: Ctx) -> None:
        if len(v) < limit:
            ctx.fail(errors.invalid(path, v, f"{body(path)} should be at least {limit} chars long"), v, old)

    return check


def pattern(source: str) -> Check:
    rx = formats.compile_pattern(source)
    search = rx.search

    def check(v: str, path: str, old: Any, ctx: Ctx) -> None:
        if search(v) is None:
            ctx.fail(errors.invalid(path, v, f"{body(path)} should match '{source}'"), v, old)

    return check


def string_format(name: str) -> Check | None:
    valid = formats.STRING_FORMATS.get(name)
    if valid is None:
        return None

    def check(v: str, path: str, old: Any, ctx: Ctx) -> None:
        if not valid(v):
            detail = f'{body(path)} must be of type {name}: "{v}"'
            ctx.fail(errors.FieldError("FieldValueTypeInvalid", path, detail, v), v, old)

    return check


def quantity(v: str, path: str, old: Any, ctx: Ctx) -> None:
    """A ``resource.Quantity`` given as a string must parse."""
    if not formats.is_quantity(v):
        ctx.fail(errors.invalid(path, v, formats.QUANTITY_MESSAGE), v, old)


# --- numbers -----------------------------------------------------------------------------------


def maximum(limit: float, exclusive: bool) -> Check:
    word = "less than" if exclusive else "less than or equal to"

    def check(v: float, path: str, old: Any, ctx: Ctx) -> None:
        if v > limit or (exclusive and v == limit):
            detail = f"{body(path)} should be {word} {_limit_text(limit, v)}"
            ctx.fail(errors.invalid(path, v, detail), v, old)

    return check


def minimum(limit: float, exclusive: bool) -> Check:
    word = "greater than" if exclusive else "greater than or equal to"

    def check(v: float, path: str, old: Any, ctx: Ctx) -> None:
        if v < limit or (exclusive and v == limit):
            detail = f"{body(path)} should be {word} {_limit_text(limit, v)}"
            ctx.fail(errors.invalid(path, v, detail), v, old)

    return check


def multiple_of(factor: float) -> Check:
    def check(v: float, path: str, old: Any, ctx: Ctx) -> None:
        if type(v) is int and type(factor) is int:
            ok = v % factor == 0
        else:
            q = v / factor
            ok = abs(q - round(q)) < 1e-9
        if not ok:
            detail = f"{body(path)} should be a multiple of {_limit_text(factor, v)}"
            ctx.fail(errors.invalid(path, v, detail), v, old)

    return check


def int_format(name: str) -> Check | None:
    bounds = formats.INT_FORMATS.get(name)
    if bounds is None:
        return None
    low, high = bounds

    def check(v: float, path: str, old: Any, ctx: Ctx) -> None:
        if not low <= v <= high:
            detail = f"{body(path)} must be of type {name}"
            ctx.fail(errors.FieldError("FieldValueTypeInvalid", path, detail, v), v, old)

    return check


# --- any type ----------------------------------------------------------------------------------


def enum(values: list[Any]) -> Check:
    allowed = frozenset(canonical(v) for v in values)
    # Upstream lists strings as they are and other values as JSON, each then quoted.
    shown = [v if isinstance(v, str) else orjson.dumps(v).decode() for v in values]

    def check(v: Any, path: str, old: Any, ctx: Ctx) -> None:
        if canonical(v) not in allowed:
            ctx.fail(errors.not_supported(path, formats.go_value(v), shown), v, old)

    return check


def string_enum(values: list[str]) -> Check:
    """``enum`` specialised for a value already known to be a string and an all-string enum."""
    allowed = frozenset(values)

    def check(v: str, path: str, old: Any, ctx: Ctx) -> None:
        if v not in allowed:
            ctx.fail(errors.not_supported(path, v, values), v, old)

    return check


# --- arrays and objects ------------------------------------------------------------------------


def max_items(limit: int) -> Check:
    detail = f"must have at most {limit} {'item' if limit == 1 else 'items'}"

    def check(v: list[Any], path: str, old: Any, ctx: Ctx) -> None:
        if len(v) > limit:
            ctx.fail(errors.FieldError("FieldValueTooMany", path, detail, len(v)), v, old)

    return check


def min_items(limit: int) -> Check:
    def check(v: list[Any], path: str, old: Any, ctx: Ctx) -> None:
        if len(v) < limit:
            detail = f"{body(path)} should have at least {limit} items"
            ctx.fail(errors.invalid(path, len(v), detail), v, old)

    return check


def max_properties(limit: int) -> Check:
    detail = f"must have at most {limit} {'item' if limit == 1 else 'items'}"

    def check(v: dict[str, Any], path: str, old: Any, ctx: Ctx) -> None:
        if len(v) > limit:
            ctx.fail(errors.FieldError("FieldValueTooMany", path, detail, len(v)), v, old)

    return check


def min_properties(limit: int) -> Check:
    def check(v: dict[str, Any], path: str, old: Any, ctx: Ctx) -> None:
        if len(v) < limit:
            # kube-openapi puts the limit (not the count) in the error's value.
            detail = f"{body(path)} should have at least {limit} properties"
            ctx.fail(errors.invalid(path, limit, detail), v, old)

    return check


_MISSING = object()


def list_set(index: Callable[[str, int], str]) -> Check:
    """``x-kubernetes-list-type: set``: a repeated element is ``Duplicate value`` at its index."""

    def check(v: list[Any], path: str, old: Any, ctx: Ctx) -> None:
        seen: set[Any] = set()
        for i, item in enumerate(v):
            key = canonical(item)
            if key in seen:
                err = errors.FieldError("FieldValueDuplicate", index(path, i), "", formats.go_value(item))
                ctx.fail(err, v, old)
            seen.add(key)

    return check


def list_map(keys: tuple[str, ...], index: Callable[[str, int], str]) -> Check:
    """``x-kubernetes-list-type: map``: two elements with equal key fields are ``Duplicate value``."""

    def check(v: list[Any], path: str, old: Any, ctx: Ctx) -> None:
        seen: set[Any] = set()
        for i, item in enumerate(v):
            if type(item) is not dict:
                if item is not None:
                    detail = "must be an object for an array of list-type map"
                    ctx.fail(errors.invalid(index(path, i), formats.go_value(item), detail), v, old)
                continue
            key = tuple(canonical(item[k]) if k in item else _MISSING for k in keys)
            if key in seen:
                shown = formats.GoMap({k: item[k] for k in keys if k in item})
                ctx.fail(errors.FieldError("FieldValueDuplicate", index(path, i), "", shown), v, old)
            seen.add(key)

    return check


def embedded_resource(path_child: Callable[[str, str], str]) -> Check:
    """``x-kubernetes-embedded-resource``: ``apiVersion`` and ``kind`` present, strings, non-empty."""

    def check(v: Mapping[str, Any], path: str, old: Any, ctx: Ctx) -> None:
        for field in ("apiVersion", "kind"):
            p = path_child(path, field)
            if field not in v:
                ctx.fail(errors.required(p, "must not be empty"), v, old)
                continue
            x = v[field]
            if not isinstance(x, str):
                ctx.fail(errors.invalid(p, formats.go_value(x), "must be a string"), v, old)
            elif not x:
                ctx.fail(errors.invalid(p, x, "must not be empty"), v, old)
            elif field == "apiVersion" and x.count("/") > 1:
                ctx.fail(errors.invalid(p, x, f"unexpected GroupVersion string: {x}"), v, old)

    return check
