"""Kubernetes' CEL Format library (apiserver pkg/cel/library/format.go; 1.31, new rules 1.32).

``format.named(name)`` is an optional ``kubernetes.NamedFormat`` (none for an unknown name);
``format.dns1123Label()`` and the other names are the formats themselves; ``<format>.validate(s)``
is ``optional.none()`` when ``s`` is valid, else ``optional.of(<the validator's messages>)``, the
messages of apimachinery's validators (the name formats) or strfmt's (``uuid``, ``byte``,
``date``, ``datetime``; ``uri`` is Go's ``url.ParseRequestURI``).

cel-expr-python cannot return optionals from Python functions, so the two optional-returning
calls are written as map lookups, which CEL's optional syntax turns into optionals: ``rewrite``
appends ``[?'v']`` to each ``format.named(...)`` and ``.validate(...)`` call of a source text
(string literals and comments skipped), whose functions return ``{}`` or ``{'v': value}``. The
rewritten text is what runs; compile errors are reported against the original (``Environment``).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable
from typing import Any

from cel_expr_python import cel

from kplane.api import names
from kplane.api.cel import network, types
from kplane.api.duration import parse_timestamp

T = cel.Type
F = types.NAMED_FORMAT_T
KEY = "v"
_UUID = re.compile(r"^(?i:[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12})$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def _mask_dash(s: str, prefix: bool) -> str:
    """apimachinery's ``maskTrailingDash`` for the ``*Prefix`` formats (generateName values)."""
    return s[:-1] + "a" if prefix and len(s) > 1 and s.endswith("-") else s


def _uri(s: str) -> list[str]:
    return [] if network.parse_request_uri(s) is not None else [f'parse "{s}": invalid URI for request']


def _byte(s: str) -> list[str]:
    try:
        base64.b64decode(s, validate=True)
    except (binascii.Error, ValueError):
        return ["invalid base64"]
    return []


def _date(s: str) -> list[str]:
    return [] if _DATE.match(s) and parse_timestamp(s + "T00:00:00Z") is not None else ["invalid date"]


def _datetime(s: str) -> list[str]:
    return [] if parse_timestamp(s) is not None else ["invalid datetime"]


VALIDATORS: dict[str, Callable[[str], list[str]]] = {
    "dns1123Label": names.dns1123_label_errors,
    "dns1123Subdomain": names.dns1123_subdomain_errors,
    "dns1035Label": names.dns1035_label_errors,
    "qualifiedName": names.qualified_name_errors,
    "dns1123LabelPrefix": lambda s: names.dns1123_label_errors(_mask_dash(s, True)),
    "dns1123SubdomainPrefix": lambda s: names.dns1123_subdomain_errors(_mask_dash(s, True)),
    "dns1035LabelPrefix": lambda s: names.dns1035_label_errors(_mask_dash(s, True)),
    "labelValue": names.label_value_errors,
    "uri": _uri,
    "uuid": lambda s: [] if _UUID.match(s) else ["does not match the UUID format"],
    "byte": _byte,
    "date": _date,
    "datetime": _datetime,
}


def _named(name: str) -> dict[str, Any]:
    return {KEY: types.NamedFormat(value=name)} if name in VALIDATORS else {}


def _validate(fmt: Any, s: str) -> dict[str, list[str]]:
    errs = VALIDATORS[fmt.value](s)
    return {KEY: errs} if errs else {}


def format_functions() -> list[Any]:
    """The Format library's declarations (the optional-returning ones as maps, see ``rewrite``)."""
    out = [
        cel.FunctionDecl(
            "format.named", [cel.Overload("format-named", T.Map(T.STRING, F), [T.STRING], impl=_named)]
        ),
        cel.FunctionDecl(
            "validate",
            [
                cel.Overload(
                    "format-validate",
                    T.Map(T.STRING, T.List(T.STRING)),
                    [F, T.STRING],
                    is_member=True,
                    impl=_validate,
                )
            ],
        ),
    ]
    for name in VALIDATORS:
        value = types.NamedFormat(value=name)
        out.append(
            cel.FunctionDecl(
                f"format.{name}", [cel.Overload(f"format.{name}", F, [], impl=lambda value=value: value)]
            )
        )
    return out


_CALLS = re.compile(r"format\s*\.\s*named\s*\(|\.\s*validate\s*\(")


def rewrite(source: str) -> str:
    """``source`` with ``[?'v']`` after each ``format.named(...)`` and ``.validate(...)`` call
    (the source unchanged when it has none)."""
    if "format" not in source and "validate" not in source:
        return source
    code = _code_mask(source)
    inserts: list[int] = []
    for m in _CALLS.finditer(code):
        if (
            m.start() > 0
            and m.group(0).startswith("f")
            and (code[m.start() - 1].isalnum() or code[m.start() - 1] in "_.")
        ):
            continue  # part of a longer name (``myformat.named(``)
        end = _closing(code, m.end())
        if end is not None:
            inserts.append(end + 1)
    for at in sorted(inserts, reverse=True):
        source = f"{source[:at]}[?'{KEY}']{source[at:]}"
    return source


def _closing(code: str, start: int) -> int | None:
    depth = 1
    for i in range(start, len(code)):
        if code[i] == "(":
            depth += 1
        elif code[i] == ")":
            depth -= 1
            if depth == 0:
                return i
    return None


_LITERAL = re.compile(
    r"""[rR]?(?:'''(?:\\.|[^\\])*?'''|\"\"\"(?:\\.|[^\\])*?\"\"\"|'(?:\\.|[^'\\\n])*'|"(?:\\.|[^"\\\n])*")|//[^\n]*"""
)


def _code_mask(source: str) -> str:
    """``source`` with string literals and comments blanked (same length), so only code matches."""
    return _LITERAL.sub(lambda m: " " * len(m.group(0)), source)
