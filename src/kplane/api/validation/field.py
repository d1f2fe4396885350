"""Shared pieces of upstream's hand-written validation: name formats, port numbers and names,
quantities, Go ``%#v`` renderings of values. Regexes are compiled once, at import.

Messages are apimachinery's ``pkg/util/validation`` wording (kubernetes 1.32); paths are rendered
as ``field.Path`` does (``a.b[0][key]``, map keys unquoted).
"""

from __future__ import annotations

import functools
import re
from decimal import Decimal, InvalidOperation
from typing import Any

from kplane.api import errors, names

Errs = list[errors.FieldError]
Object = dict[str, Any]

_PORT_CHARSET = re.compile("[-a-z0-9]+")
_PORT_LETTER = re.compile(".*[a-z].*")
_CONFIG_KEY_FMT = "[-._a-zA-Z0-9]+"
_CONFIG_KEY_RE = re.compile(_CONFIG_KEY_FMT)
_VALID_CONFIG_KEY = re.compile(r"(?!\.\.)(?!\.\Z)[-._a-zA-Z0-9]{1,253}")  # every rule below at once
valid_config_key = _VALID_CONFIG_KEY.fullmatch
"""A match (truthy) when a key passes ``config_key`` without errors."""
_CONFIG_KEY_MSG = (
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or "
    f"'KEY_NAME',  or 'key-name', regex used for validation is '{_CONFIG_KEY_FMT}')"
)
PORT_RANGE = "must be between 1 and 65535, inclusive"


def d(obj: Any) -> Object:
    """``obj`` when it is a JSON object, else an empty one (the schema reports wrong types)."""
    return obj if isinstance(obj, dict) else {}


def dl(obj: Any) -> list[Object]:
    """The objects of a JSON list (anything else is the schema's business)."""
    if type(obj) is not list:
        return []
    for x in obj:
        if type(x) is not dict:
            return [x for x in obj if isinstance(x, dict)]
    return obj


def s(obj: Object, key: str) -> str:
    value = obj.get(key)
    return value if isinstance(value, str) else ""


def dns1123_label(value: str, path: str) -> Errs:
    """``ValidateDNS1123Label``: at most 63 characters of the RFC 1123 label alphabet."""
    return [errors.invalid(path, value, why) for why in names.dns1123_label_errors(value)]


def port_name_errors(name: str) -> list[str]:
    """``IsValidPortName``: an IANA service name."""
    msgs = []
    if len(name) > 15:
        msgs.append("must be no more than 15 characters")
    if not _PORT_CHARSET.fullmatch(name):
        msgs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not _PORT_LETTER.match(name):
        msgs.append("must contain at least one letter (a-z)")
    if "--" in name:
        msgs.append("must not contain consecutive hyphens")
    if name and (name[0] == "-" or name[-1] == "-"):
        msgs.append("must not begin or end with a hyphen")
    return msgs


def valid_port(value: Any) -> bool:
    return type(value) is int and 1 <= value <= 65535


def config_key(key: str, field: str) -> Errs:
    """``IsConfigMapKey`` of a key of the map ``field`` (errors at ``field[key]``): at most 253
    characters of ``[-._a-zA-Z0-9]``, not ``.``/``..``-led."""
    if _VALID_CONFIG_KEY.fullmatch(key):
        return []
    path = f"{field}[{key}]"
    errs: Errs = []
    if len(key) > 253:
        errs.append(errors.invalid(path, key, "must be no more than 253 characters"))
    if not _CONFIG_KEY_RE.fullmatch(key):
        errs.append(errors.invalid(path, key, _CONFIG_KEY_MSG))
    if key in (".", ".."):
        errs.append(errors.invalid(path, key, f"must not be '{key}'"))
    elif key.startswith(".."):
        errs.append(errors.invalid(path, key, "must not start with '..'"))
    return errs


def nonnegative(obj: Object, key: str, path: str) -> Errs:
    """``ValidateNonnegativeField`` of an optional integer field."""
    value = obj.get(key)
    if type(value) is int and value < 0:
        return [errors.invalid(path, value, "must be greater than or equal to 0")]
    return []


_SUFFIXES: dict[str, Decimal | int] = {
    "": 1, "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"),
    "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18,
    "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
}  # fmt: skip
_QUANTITY_RE = re.compile(r"([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(?:([eE][+-]?[0-9]+)|([a-zA-Z]*))")


def quantity(value: Any) -> Decimal | None:
    """The amount of a resource quantity (``500m``, ``1Gi``, ``1e3``, a JSON number); None when it
    does not parse (the schema's ``quantity`` format reports that). Texts are parsed once and
    remembered (a bounded cache: clusters use few distinct quantities)."""
    if type(value) is int or type(value) is float:
        return Decimal(value)
    if not isinstance(value, str):
        return None
    return _parse_quantity(value)


@functools.lru_cache(maxsize=1024)
def _parse_quantity(value: str) -> Decimal | None:
    m = _QUANTITY_RE.fullmatch(value)
    if m is None:
        return None
    number, exponent, suffix = m.groups()
    try:
        amount = Decimal(number + (exponent or ""))
    except InvalidOperation:
        return None
    if exponent:
        return amount
    scale = _SUFFIXES.get(suffix or "")
    return None if scale is None else amount * scale


class GoMap:
    """A ``map[string]string`` as Go's ``%#v`` prints it (keys sorted), ``(nil)`` when absent."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value if isinstance(value, dict) else None

    def __str__(self) -> str:
        if self.value is None:
            return "map[string]string(nil)"
        items = sorted(self.value.items())
        return (
            "map[string]string{"
            + ", ".join(f"{errors.go_quote(k)}:{errors.go_quote(str(v))}" for k, v in items)
            + "}"
        )


class GoSelector:
    """A ``*metav1.LabelSelector`` as ``%#v`` prints it once dereferenced."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = d(value)

    def __str__(self) -> str:
        exprs = dl(self.value.get("matchExpressions"))
        if exprs:
            parts = []
            for e in exprs:
                vals = [str(v) for v in e.get("values") or []]
                parts.append(
                    f"v1.LabelSelectorRequirement{{Key:{errors.go_quote(s(e, 'key'))}, "
                    f"Operator:{errors.go_quote(s(e, 'operator'))}, Values:{errors.go_strings(vals)}}}"
                )
            shown = "[]v1.LabelSelectorRequirement{" + ", ".join(parts) + "}"
        else:
            shown = "[]v1.LabelSelectorRequirement(nil)"
        labels = GoMap(self.value.get("matchLabels") or None)
        return f"v1.LabelSelector{{MatchLabels:{labels}, MatchExpressions:{shown}}}"


_DECIMAL_SUFFIX = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}
_BINARY_SUFFIX = ((60, "Ei"), (50, "Pi"), (40, "Ti"), (30, "Gi"), (20, "Mi"), (10, "Ki"))


def canonical_quantity(raw: Any) -> str:
    """A quantity as upstream's ``Quantity.String()`` prints it once decoded (``0.6`` → ``600m``,
    ``2048Mi`` → ``2Gi``, ``1000`` → ``1k``); the raw text when it does not parse."""
    amount = quantity(raw)
    if amount is None:
        return str(raw)
    text = raw if isinstance(raw, str) else ""
    sign, amount = ("-", -amount) if amount < 0 else ("", amount)
    if text.endswith("i") and amount == amount.to_integral_value() and amount >= 1024:
        whole = int(amount)
        for bits, suffix in _BINARY_SUFFIX:
            if whole % (1 << bits) == 0:
                return f"{sign}{whole >> bits}{suffix}"
    exponent_form = "e" in text.lower() and not text.endswith("i")
    # Upstream keeps nano precision, rounding up; then picks the largest exponent (a multiple of
    # three) that leaves an integer mantissa.
    nanos = int((amount * 10**9).to_integral_value(rounding="ROUND_CEILING"))
    if nanos == 0:
        return "0"
    exp = -9
    while exp < 18 and nanos % 1000 == 0:
        nanos //= 1000
        exp += 3
    if exponent_form:
        return f"{sign}{nanos}" + (f"e{exp}" if exp else "")
    return f"{sign}{nanos}{_DECIMAL_SUFFIX[exp]}"
