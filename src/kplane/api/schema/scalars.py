"""Scalar nodes of the schema compiler: strings, booleans, numbers, int-or-string, times, quantities.

Each builder returns a node closure (``checks.Fn``) that tests the value's exact Python type first
and then runs the keyword checks chosen at compile time, so a node without constraints costs one
type test. A node that would return a value of one plain type unchanged and unchecked is entered
in the caller's ``leaf`` table, which lets object nodes store such fields without a call. Integral
floats are stored as ints (JSON has one number type; Go decodes ``2.0`` into an int field);
``metav1.Time``/``MicroTime`` strings are normalized as Go re-encodes them. Values are never
mutated.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kplane.api import errors
from kplane.api.schema import checks, formats, timestamps

Fn = checks.Fn


def type_mismatch(expected: str, nullable: bool) -> Fn:
    """The node of a value of the wrong JSON type: a type error, or ``None`` kept where nullable."""

    def mismatch(v: Any, path: str, old: Any, ctx: checks.Ctx) -> Any:
        if v is None and nullable:
            return None
        ctx.fail(checks.type_error(path, v, expected), v, old)
        return v

    return mismatch


def string_checks(schema: Mapping[str, Any]) -> list[checks.Check]:
    """The checks a string value gets from ``schema``'s keywords."""
    out: list[checks.Check] = []
    if "maxLength" in schema:
        out.append(checks.max_length(int(schema["maxLength"])))
    if "minLength" in schema:
        out.append(checks.min_length(int(schema["minLength"])))
    if isinstance(schema.get("pattern"), str):
        out.append(checks.pattern(schema["pattern"]))
    fmt = schema.get("format")
    if isinstance(fmt, str):
        check = checks.string_format(fmt)
        if check is not None:
            out.append(check)
    enum = schema.get("enum")
    if isinstance(enum, list):
        strings = [v for v in enum if isinstance(v, str)]
        out.append(checks.string_enum(strings) if len(strings) == len(enum) else checks.enum(enum))
    return out


def number_checks(schema: Mapping[str, Any]) -> list[checks.Check]:
    """The checks a number (or integer) value gets from ``schema``'s keywords."""
    out: list[checks.Check] = []
    if isinstance(schema.get("maximum"), int | float):
        out.append(checks.maximum(schema["maximum"], schema.get("exclusiveMaximum") is True))
    if isinstance(schema.get("minimum"), int | float):
        out.append(checks.minimum(schema["minimum"], schema.get("exclusiveMinimum") is True))
    if isinstance(schema.get("multipleOf"), int | float) and schema["multipleOf"] > 0:
        out.append(checks.multiple_of(schema["multipleOf"]))
    fmt = schema.get("format")
    if isinstance(fmt, str):
        check = checks.int_format(fmt)
        if check is not None:
            out.append(check)
    if isinstance(schema.get("enum"), list):
        out.append(checks.enum(schema["enum"]))
    return out


def scalar(
    kind: str,
    schema: Mapping[str, Any],
    nullable: bool,
    composite: list[checks.Check],
    leaf: dict[Fn, type],
) -> Fn:
    """A string, boolean, integer or number node; one without checks is entered in ``leaf``."""
    mismatch = type_mismatch(kind, nullable)
    if kind == "string":
        tests = tuple(string_checks(schema) + composite)
        if not tests:

            def plain_string(v: Any, path: str, old: Any, ctx: checks.Ctx) -> Any:
                return v if type(v) is str else mismatch(v, path, old, ctx)

            leaf[plain_string] = str
            return plain_string

        def string(v: Any, path: str, old: Any, ctx: checks.Ctx) -> Any:
            if type(v) is not str:
                return mismatch(v, path, old, ctx)
            for check in tests:
                check(v, path, old, ctx)
            return v

        return string
    if kind == "boolean":
        enum = schema.get("enum")
        tests = tuple(([checks.enum(enum)] if isinstance(enum, list) else []) + composite)

        def boolean(v: Any, path: str, old: Any, ctx: checks.Ctx) -> Any:
            if type(v) is not bool:
                return mismatch(v, path, old, ctx)
            for check in tests:
                check(v, path, old, ctx)
            return v

        if not tests:
            leaf[boolean] = bool
        return boolean
    tests = tuple(number_checks(schema) + composite)
    if kind == "integer":

        def integer(v: Any, path: str, old: Any, ctx: checks.Ctx) -> Any:
            t = type(v)
            if t is not int:
                # JSON has one number type: 2.0 is an integer (Go decodes it so too).
                if t is not float or not v.is_integer():
                    return mismatch(v, path, old, ctx)
                v = int(v)
            for check in tests:
                check(v, path, old, ctx)
            return v

        if not tests:
            leaf[integer] = int
        return integer

    def number(v: Any, path: str, old: Any, ctx: checks.Ctx) -> Any:
        t = type(v)
        if t is not int and t is not float:
            return mismatch(v, path, old, ctx)
        for check in tests:
            check(v, path, old, ctx)
        return v

    return number


def int_or_string(schema: Mapping[str, Any], nullable: bool, composite: list[checks.Check]) -> Fn:
    """An ``x-kubernetes-int-or-string`` node (or the ``oneOf`` spelling of it)."""
    for_str = tuple(string_checks(schema) + composite)
    for_int = tuple(number_checks(schema) + composite)

    def int_or_string(v: Any, path: str, old: Any, ctx: checks.Ctx) -> Any:
        t = type(v)
        if t is str:
            tests = for_str
        elif t is int or (t is float and v.is_integer()):
            v, tests = int(v), for_int
        elif v is None and nullable:
            return None
        else:
            # What the anyOf [integer, string] upstream derives from the extension reports.
            detail = f'"{path}" must validate at least one schema (anyOf)'
            ctx.fail(errors.invalid(path, "", detail), v, old)
            ctx.fail(checks.type_error(path, v, "integer"), v, old)
            return v
        for check in tests:
            check(v, path, old, ctx)
        return v

    return int_or_string


def time(checked: Fn, *, micro: bool) -> Fn:
    """A ``metav1.Time``/``MicroTime``: stored normalized to UTC, as Go re-encodes it; ``checked``
    (the definition's own node) handles values that are not strings."""

    def time(v: Any, path: str, old: Any, ctx: checks.Ctx) -> Any:
        if type(v) is not str:
            return checked(v, path, old, ctx)
        normal = timestamps.normalize(v, micro=micro)
        if normal is not None:
            return normal
        # Upstream's decode refuses it (a 400, see godecode); as a field error it is Go's text.
        why = timestamps.parse_error(v, micro=micro) or "not an RFC 3339 timestamp"
        ctx.fail(errors.invalid(path, v, why), v, old)
        return v

    return time


def quantity() -> Fn:
    """A ``resource.Quantity``: a string in Kubernetes' quantity syntax, or a JSON number."""

    def quantity(v: Any, path: str, old: Any, ctx: checks.Ctx) -> Any:
        t = type(v)
        if t is str:
            checks.quantity(v, path, old, ctx)
        elif t is not int and t is not float:
            ctx.fail(errors.invalid(path, formats.go_value(v), formats.QUANTITY_MESSAGE), v, old)
        return v

    return quantity
