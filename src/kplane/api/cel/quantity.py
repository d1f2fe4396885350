"""Kubernetes' CEL Quantity library (apiserver pkg/cel/library/quantity.go; 1.28, new rules 1.29).

A ``kubernetes.Quantity`` carries its exact value as a canonical decimal string, so two
quantities of equal value (``1Gi``, ``1024Mi``) compare equal with ``==`` as upstream's do.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from cel_expr_python import cel

from kplane.api import quantity
from kplane.api.cel import types

T = cel.Type
Q = types.QUANTITY
_INT64 = 2**63
PARSE_ERROR = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
parse = quantity.parse


def _make(value: Decimal) -> Any:
    return types.Quantity(value=format(value.normalize(), "f") if value else "0")


def _value(q: Any) -> Decimal:
    return Decimal(q.value)


def _quantity(s: str) -> Any:
    value = parse(s)
    if value is None:
        raise ValueError(PARSE_ERROR)
    return _make(value)


def _is_integer(q: Any) -> bool:
    v = _value(q)
    return v == v.to_integral_value() and -_INT64 <= v < _INT64


def _as_integer(q: Any) -> int:
    if not _is_integer(q):
        raise ValueError("cannot convert value to integer")
    return int(_value(q))


def _cmp(a: Decimal, b: Decimal) -> int:
    return (a > b) - (a < b)


def _arith(sign: int) -> Any:
    def impl(q: Any, other: Any) -> Any:
        rhs = Decimal(other) if isinstance(other, int) else _value(other)
        return _make(_value(q) + sign * rhs)

    return impl


def quantity_functions() -> list[Any]:
    """The Quantity library's declarations."""
    m = True
    return [
        cel.FunctionDecl("quantity", [cel.Overload("string_to_quantity", Q, [T.STRING], impl=_quantity)]),
        cel.FunctionDecl(
            "isQuantity",
            [cel.Overload("is_quantity_string", T.BOOL, [T.STRING], impl=lambda s: parse(s) is not None)],
        ),
        cel.FunctionDecl(
            "sign",
            [
                cel.Overload(
                    "quantity_sign", T.INT, [Q], is_member=m, impl=lambda q: _cmp(_value(q), Decimal(0))
                )
            ],
        ),
        cel.FunctionDecl(
            "isInteger", [cel.Overload("quantity_is_integer", T.BOOL, [Q], is_member=m, impl=_is_integer)]
        ),
        cel.FunctionDecl(
            "asInteger", [cel.Overload("quantity_get_integer", T.INT, [Q], is_member=m, impl=_as_integer)]
        ),
        cel.FunctionDecl(
            "asApproximateFloat",
            [cel.Overload("quantity_get_float", T.DOUBLE, [Q], is_member=m, impl=lambda q: float(_value(q)))],
        ),
        cel.FunctionDecl(
            "isGreaterThan",
            [
                cel.Overload(
                    "quantity_is_greater_than",
                    T.BOOL,
                    [Q, Q],
                    is_member=m,
                    impl=lambda a, b: _value(a) > _value(b),
                )
            ],
        ),
        cel.FunctionDecl(
            "isLessThan",
            [
                cel.Overload(
                    "quantity_is_less_than",
                    T.BOOL,
                    [Q, Q],
                    is_member=m,
                    impl=lambda a, b: _value(a) < _value(b),
                )
            ],
        ),
        cel.FunctionDecl(
            "compareTo",
            [
                cel.Overload(
                    "quantity_compare_to",
                    T.INT,
                    [Q, Q],
                    is_member=m,
                    impl=lambda a, b: _cmp(_value(a), _value(b)),
                )
            ],
        ),
        cel.FunctionDecl(
            "add",
            [
                cel.Overload("quantity_add", Q, [Q, Q], is_member=m, impl=_arith(1)),
                cel.Overload("quantity_add_int", Q, [Q, T.INT], is_member=m, impl=_arith(1)),
            ],
        ),
        cel.FunctionDecl(
            "sub",
            [
                cel.Overload("quantity_sub", Q, [Q, Q], is_member=m, impl=_arith(-1)),
                cel.Overload("quantity_sub_int", Q, [Q, T.INT], is_member=m, impl=_arith(-1)),
            ],
        ),
    ]
