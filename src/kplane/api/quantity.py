"""Resource quantities (apimachinery ``resource.Quantity``): exact parsing and canonical text.

Values are ``Decimal`` (exact). ``canonical`` writes a value as upstream's ``Quantity.String()``
does for its format: binary suffixes (``Ki`` .. ``Ei``) when the value came in binary and is a
whole multiple of 1024, else decimal suffixes (``n`` .. ``E``) choosing the largest suffix that
keeps the number whole, so ``1500m`` stays ``1500m`` and ``2000`` becomes ``2k``.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation, localcontext

_SYNTAX = re.compile(r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$")
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}


def parse(s: str) -> Decimal | None:
    """The exact value of a quantity string, or None if it is not one."""
    m = _SYNTAX.match(s)
    if not m or m.group(1) in ("", ".", "+", "-") or m.group(1).count(".") > 1:
        return None
    try:
        number = Decimal(m.group(1))
    except InvalidOperation:
        return None
    suffix = m.group(2)
    with localcontext() as ctx:
        ctx.prec = 80
        if suffix in _BINARY:
            return number * _BINARY[suffix]
        if suffix in _DECIMAL:
            return number.scaleb(_DECIMAL[suffix])
        if suffix[:1] in ("e", "E") and re.fullmatch(r"[eE][-+]?[0-9]+", suffix):
            return number.scaleb(int(suffix[1:]))
    return None


def is_binary(s: str) -> bool:
    """Whether a quantity string uses a binary suffix (so sums of it print in binary)."""
    m = _SYNTAX.match(s)
    return bool(m) and m.group(2) in _BINARY if m else False


def canonical(value: Decimal, *, binary: bool = False) -> str:
    """``value`` as upstream prints a quantity of that format."""
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    value = abs(value)
    with localcontext() as ctx:
        ctx.prec = 80
        if binary and value == value.to_integral_value():
            for suffix, factor in sorted(_BINARY.items(), key=lambda kv: -kv[1]):
                if value % factor == 0 and value >= factor:
                    return f"{sign}{int(value // factor)}{suffix}"
            return f"{sign}{int(value)}"
        for suffix, exp in sorted(_DECIMAL.items(), key=lambda kv: -kv[1]):
            scaled = value.scaleb(-exp)
            if scaled == scaled.to_integral_value() and scaled >= 1:
                return f"{sign}{int(scaled)}{suffix}"
    return f"{sign}{int(value.scaleb(9).to_integral_value())}n"
