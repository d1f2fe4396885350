"""cel-go's ``ext.Strings`` at the version Kubernetes 1.32 pins (v2; apiserver pkg/cel/environment).

Written here rather than taken from the engine because the engine's strings extension owns
``indexOf``/``lastIndexOf`` and would not let the Kubernetes Lists library add its list overloads
to the same names. Indices count code points, as CEL's do. ``format`` supports the verbs of v2:
``%s %d %f %e %b %o %x %X`` with an optional precision (``%.2f``) and ``%%``.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Sequence
from typing import Any

from cel_expr_python import cel

T = cel.Type
_S, _I = T.STRING, T.INT


def _range(s: str, i: int) -> None:
    if i < 0 or i > len(s):
        raise IndexError(f"index out of range: {i}")


def _char_at(s: str, i: int) -> str:
    _range(s, i)
    return s[i : i + 1]


def _index_of(s: str, sub: str, start: int = 0) -> int:
    _range(s, start)
    return s.find(sub, start)


def _last_index_of(s: str, sub: str, start: int | None = None) -> int:
    if start is None:
        return s.rfind(sub)
    _range(s, start)
    return s.rfind(sub, 0, start + len(sub))


def _replace(s: str, old: str, new: str, n: int = -1) -> str:
    return s.replace(old, new, n)


def _split(s: str, sep: str, n: int = -1) -> list[str]:
    if n == 0:
        return []
    if sep == "":
        parts = list(s)
        if n > 0 and len(parts) > n:
            parts = [*parts[: n - 1], "".join(parts[n - 1 :])]
        return parts
    return s.split(sep, n - 1 if n > 0 else -1)


def _substring(s: str, start: int, end: int | None = None) -> str:
    _range(s, start)
    if end is None:
        return s[start:]
    _range(s, end)
    if end < start:
        raise IndexError(f"invalid substring range. start: {start}, end: {end}")
    return s[start:end]


def _join(items: Sequence[str], sep: str = "") -> str:
    return sep.join(items)


def _quote(s: str) -> str:
    out = ['"']
    for ch in s:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif not ch.isprintable():
            out.append(f"\\u{ord(ch):04x}" if ord(ch) < 0x10000 else f"\\U{ord(ch):08x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


_VERB = re.compile(r"%(?:\.(\d+))?([sdfebox%X])")


def _as_string(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, float):
        return repr(v) if v != int(v) or abs(v) >= 1e21 else str(int(v)) if v.is_integer() else repr(v)
    if isinstance(v, list):
        return "[" + ", ".join(_as_string(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{_as_string(k)}:{_as_string(x)}" for k, x in v.items()) + "}"
    if isinstance(v, datetime.timedelta):
        return f"{v.total_seconds():g}s"
    if isinstance(v, datetime.datetime):
        return v.strftime("%Y-%m-%dT%H:%M:%SZ")
    if v is None:
        return "null"
    return str(v)


def _format(fmt: str, args: Sequence[Any]) -> str:
    pos = 0

    def one(m: re.Match[str]) -> str:
        nonlocal pos
        precision, verb = m.group(1), m.group(2)
        if verb == "%":
            return "%"
        if pos >= len(args):
            raise IndexError(f"index {pos} out of range")
        v = args[pos]
        pos += 1
        if verb == "s":
            return _as_string(v)
        if verb in "fe":
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise TypeError(
                    "error during formatting: fixed-point clause can only be used on doubles, "
                    f"was given {type(v).__name__}"
                )
            digits = int(precision) if precision is not None else 6
            return f"{float(v):.{digits}{verb}}"
        if isinstance(v, bool) or not isinstance(v, int):
            if verb in "xX" and isinstance(v, (str, bytes)):
                data = v.encode() if isinstance(v, str) else v
                text = data.hex()
                return text.upper() if verb == "X" else text
            raise TypeError(
                "error during formatting: integer clause can only be used on integers, "
                f"was given {type(v).__name__}"
            )
        return {"d": f"{v:d}", "b": f"{v:b}", "o": f"{v:o}", "x": f"{v:x}", "X": f"{v:X}"}[verb]

    return _VERB.sub(one, fmt)


def string_functions() -> list[Any]:
    """ext.Strings v2 without ``indexOf``/``lastIndexOf``'s list overloads (see ``lists_regex``)."""
    m = True
    ls = T.List(_S)
    return [
        cel.FunctionDecl(
            "charAt", [cel.Overload("string_char_at_int", _S, [_S, _I], is_member=m, impl=_char_at)]
        ),
        cel.FunctionDecl(
            "lowerAscii", [cel.Overload("string_lower_ascii", _S, [_S], is_member=m, impl=_lower)]
        ),
        cel.FunctionDecl(
            "upperAscii", [cel.Overload("string_upper_ascii", _S, [_S], is_member=m, impl=_upper)]
        ),
        cel.FunctionDecl(
            "replace",
            [
                cel.Overload("string_replace_string_string", _S, [_S, _S, _S], is_member=m, impl=_replace),
                cel.Overload(
                    "string_replace_string_string_int", _S, [_S, _S, _S, _I], is_member=m, impl=_replace
                ),
            ],
        ),
        cel.FunctionDecl(
            "split",
            [
                cel.Overload("string_split_string", ls, [_S, _S], is_member=m, impl=_split),
                cel.Overload("string_split_string_int", ls, [_S, _S, _I], is_member=m, impl=_split),
            ],
        ),
        cel.FunctionDecl(
            "substring",
            [
                cel.Overload("string_substring_int", _S, [_S, _I], is_member=m, impl=_substring),
                cel.Overload("string_substring_int_int", _S, [_S, _I, _I], is_member=m, impl=_substring),
            ],
        ),
        cel.FunctionDecl("trim", [cel.Overload("string_trim", _S, [_S], is_member=m, impl=_trim)]),
        cel.FunctionDecl(
            "join",
            [
                cel.Overload("list_join", _S, [ls], is_member=m, impl=_join),
                cel.Overload("list_join_string", _S, [ls, _S], is_member=m, impl=_join),
            ],
        ),
        cel.FunctionDecl(
            "format", [cel.Overload("string_format", _S, [_S, T.List(T.DYN)], is_member=m, impl=_format)]
        ),
        cel.FunctionDecl("strings.quote", [cel.Overload("strings_quote", _S, [_S], impl=_quote)]),
    ]


def string_index_overloads() -> list[tuple[str, str, Any, list[Any], Any]]:
    """``indexOf``/``lastIndexOf`` on strings, for ``lists_regex.list_functions(extra=...)``."""
    return [
        ("indexOf", "string_index_of_string", _I, [_S, _S], _index_of),
        ("indexOf", "string_index_of_string_int", _I, [_S, _S, _I], _index_of),
        ("lastIndexOf", "string_last_index_of_string", _I, [_S, _S], _last_index_of),
        ("lastIndexOf", "string_last_index_of_string_int", _I, [_S, _S, _I], _last_index_of),
    ]


def _lower(s: str) -> str:
    return "".join(c.lower() if c.isascii() else c for c in s)


def _upper(s: str) -> str:
    return "".join(c.upper() if c.isascii() else c for c in s)


def _trim(s: str) -> str:
    return s.strip()
