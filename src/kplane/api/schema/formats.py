"""Value-level helpers of the schema compiler: ``format`` checks, Go-style rendering, patterns.

Formats follow the registry the apiextensions-apiserver validates custom resources with
(kube-openapi ``strfmt``): an unknown ``format`` is ignored, a known one that does not match is a
``must be of type <format>`` error. ``int32``/``int64`` are range checks (a Go struct field of that
width could not hold the value). ``quantity`` is the ``resource.Quantity`` syntax.

Go renders numbers in messages with ``%v``: integers bare; floats with the shortest digits, in
exponent form below 1e-4 and from 1e6 (``strconv.FormatFloat(f, 'g', -1)``: ``1e+06``,
``1.5e-05``), which ``go_number`` reproduces; Python's ``repr`` switches at 1e16.

Patterns are Go RE2 syntax and Python compiles them with ``re``. The differences that change a
match, and how ``compile_pattern`` handles them:

* ``$`` in Go (without ``(?m)``) matches only at the very end; Python's also before a final newline.
  Unescaped ``$`` outside a character class is rewritten to ``\\Z``; RE2's ``\\z`` becomes ``\\Z``.
* RE2 rejects backreferences and lookaround; Python accepts them. Upstream refuses such a CRD, so a
  schema using them is rejected here too (``SchemaError``).
* ``\\pL``/``\\p{Greek}`` Unicode classes and ``[[:alpha:]]`` POSIX classes exist only in RE2:
  ``re`` fails to compile them, which also surfaces as ``SchemaError``.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import decimal
import ipaddress
import re
from collections.abc import Callable
from typing import Any

Check = Callable[[str], bool]


class SchemaError(ValueError):
    """A schema that cannot be compiled (for example a pattern that is not RE2 syntax)."""


# --- Go-style rendering ------------------------------------------------------------------------


def go_number(value: float | int) -> str:
    """``fmt.Sprintf("%v", value)`` for a JSON number (ints bare, floats in Go's shortest form)."""
    if isinstance(value, int):
        return str(value)
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "0"
    digits_tuple = decimal.Decimal(repr(value)).normalize().as_tuple()
    digits = "".join(str(d) for d in digits_tuple.digits)
    exponent = int(digits_tuple.exponent)
    sign = "-" if digits_tuple.sign else ""
    point = len(digits) + exponent  # position of the decimal point relative to the digits
    exp10 = point - 1
    if exp10 < -4 or exp10 >= 6:
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{mantissa}e{'-' if exp10 < 0 else '+'}{abs(exp10):02d}"
    if point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return sign + digits + "0" * (point - len(digits))
    return f"{sign}{digits[:point]}.{digits[point:]}"


def _go_sharp(value: Any) -> str:
    """Go's ``%#v`` of an unstructured JSON value (what field errors print for composite values)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if value is None:
        return "interface {}(nil)"
    if isinstance(value, int | float):
        return go_number(value)
    if isinstance(value, dict):
        inner = ", ".join(f"{_go_sharp(k)}:{_go_sharp(value[k])}" for k in sorted(value))
        return "map[string]interface {}{" + inner + "}"
    if isinstance(value, list):
        return "[]interface {}{" + ", ".join(_go_sharp(v) for v in value) + "}"
    return repr(value)


class GoMap(dict[str, Any]):
    """A dict that prints as Go's ``%#v`` of ``map[string]interface{}`` inside field errors."""

    def __str__(self) -> str:
        return _go_sharp(dict(self))


class GoList(list[Any]):
    """A list that prints as Go's ``%#v`` of ``[]interface{}`` inside field errors."""

    def __str__(self) -> str:
        return _go_sharp(list(self))


def go_value(value: Any) -> Any:
    """Wrap a composite value so ``FieldError`` renders it as upstream does; scalars unchanged."""
    if isinstance(value, dict):
        return GoMap(value)
    if isinstance(value, list):
        return GoList(value)
    return value


def json_type(value: Any) -> str:
    """The JSON type name kube-openapi reports for a decoded value (``must be of type x: "<this>"``)."""
    t = type(value)
    if t is str:
        return "string"
    if t is bool:
        return "boolean"
    if t is int:
        return "integer"
    if t is float:
        return "number"
    if t is dict:
        return "object"
    if t is list:
        return "array"
    if value is None:
        return "null"
    return t.__name__


# --- formats -----------------------------------------------------------------------------------

_DATE_TIME = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:?\d{2})?\Z"
)
_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})\Z")
_UUID = re.compile(r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}\Z")
_UUID_V = {
    v: re.compile(
        rf"^[0-9a-fA-F]{{8}}-?[0-9a-fA-F]{{4}}-?{v}[0-9a-fA-F]{{3}}-?[89abAB][0-9a-fA-F]{{3}}-?[0-9a-fA-F]{{12}}\Z"
    )
    for v in "345"
}
_HOSTNAME = re.compile(
    r"^(?=.{1,253}\Z)[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*\.?\Z"
)
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\Z")
_URI = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:[^\s]*\Z")
_MAC = re.compile(r"^(?:[0-9a-fA-F]{2}[:-]){5,19}[0-9a-fA-F]{2}\Z|^(?:[0-9a-fA-F]{4}\.){2,9}[0-9a-fA-F]{4}\Z")
_DURATION = re.compile(r"^(?:[-+]?(?:\d+(?:\.\d*)?|\.\d+)\s*(?:ns|us|µs|ms|s|m|h|d|w)\s*)+\Z|^0\Z")
_HEXCOLOR = re.compile(r"^#?(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})\Z")
_RGBCOLOR = re.compile(r"^rgb\(\s*\d{1,3}%?\s*,\s*\d{1,3}%?\s*,\s*\d{1,3}%?\s*\)\Z")
_BSON = re.compile(r"^[0-9a-fA-F]{24}\Z")
# resource.Quantity's accepted text (apimachinery pkg/api/resource): a signed decimal number and an
# optional suffix (binary Ki..Ei, decimal n,u,m,"",k,M,G,T,P,E, or a decimal exponent e/E<int>).
QUANTITY_RE = re.compile(r"^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+|Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?\Z")
QUANTITY_MESSAGE = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)


def _date_time(s: str) -> bool:
    m = _DATE_TIME.match(s)
    if m is None:
        return False
    try:
        year, month, day, hour, minute, second = (int(m.group(i)) for i in range(1, 7))
        datetime.datetime(year, month, day, hour, minute, second)
    except ValueError:
        return False
    return True


def _date(s: str) -> bool:
    m = _DATE.match(s)
    if m is None:
        return False
    try:
        datetime.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    except ValueError:
        return False
    return True


def _byte(s: str) -> bool:
    try:
        base64.b64decode(s, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def _ip(version: int) -> Check:
    def check(s: str) -> bool:
        try:
            return ipaddress.ip_address(s).version == version
        except ValueError:
            return False

    return check


def _cidr(s: str) -> bool:
    try:
        ipaddress.ip_network(s, strict=False)
    except ValueError:
        return False
    return "/" in s


def _match(rx: re.Pattern[str]) -> Check:
    return lambda s: rx.match(s) is not None


# Formats whose check applies to strings; everything else (including an unknown name) passes.
STRING_FORMATS: dict[str, Check] = {
    "date-time": _date_time,
    "datetime": _date_time,
    "date": _date,
    "byte": _byte,
    "uuid": _match(_UUID),
    "uuid3": _match(_UUID_V["3"]),
    "uuid4": _match(_UUID_V["4"]),
    "uuid5": _match(_UUID_V["5"]),
    "ipv4": _ip(4),
    "ipv6": _ip(6),
    "cidr": _cidr,
    "mac": _match(_MAC),
    "hostname": _match(_HOSTNAME),
    "email": _match(_EMAIL),
    "uri": _match(_URI),
    "duration": _match(_DURATION),
    "hexcolor": _match(_HEXCOLOR),
    "rgbcolor": _match(_RGBCOLOR),
    "bsonobjectid": _match(_BSON),
}

# Inclusive ranges of the integer formats.
INT_FORMATS: dict[str, tuple[int, int]] = {
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
}


def is_quantity(s: str) -> bool:
    """Whether ``s`` parses as a ``resource.Quantity``."""
    return QUANTITY_RE.match(s) is not None


# --- patterns ----------------------------------------------------------------------------------

_LOOKAROUND = re.compile(r"\(\?(?:=|!|<=|<!)")
_BACKREF = re.compile(r"\\[1-9]|\(\?P=")


def compile_pattern(pattern: str) -> re.Pattern[str]:
    """Compile an RE2 ``pattern`` for ``search`` with Go's matching semantics (see module notes)."""
    if _LOOKAROUND.search(pattern) or _BACKREF.search(pattern):
        raise SchemaError(f"pattern {pattern!r} is not RE2 syntax (lookaround or backreference)")
    out: list[str] = []
    i, in_class = 0, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            out.append("\\Z" if nxt == "z" and not in_class else c + nxt)
            i += 2
            continue
        if in_class:
            if c == "]":
                in_class = False
        elif c == "[":
            in_class = True
            if pattern[i + 1 : i + 2] == "^":
                out.append("[^")
                i += 2
                if pattern[i : i + 1] == "]":
                    out.append("]")
                    i += 1
                continue
            if pattern[i + 1 : i + 2] == "]":
                out.append("[]")
                i += 2
                continue
        elif c == "$":
            out.append("\\Z")
            i += 1
            continue
        out.append(c)
        i += 1
    try:
        return re.compile("".join(out))
    except re.error as exc:
        raise SchemaError(f"pattern {pattern!r} does not compile: {exc}") from None
