"""What the text of a CRD validation rule says, read without compiling it.

``uses_old_self`` finds transition rules (``oldSelf`` outside string literals);
``optional_old_self`` rewrites ``oldSelf`` into an optional for ``optionalOldSelf: true`` (the
engine takes no optional-typed variables); ``valid_field_path`` checks ``fieldPath``'s syntax;
``go_rule`` renders a rule as Go's ``%#v`` of ``apiextensions.ValidationRule``, the value
upstream's CRD write errors show. All pure functions of their arguments.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from kplane.api import errors
from kplane.api.cel import ruletree


class GoValue:
    """A value rendered verbatim in a field error (a Go ``%#v`` struct)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text


def go_rule(rule: Mapping[str, Any]) -> GoValue:
    """``rule`` as Go's ``%#v`` of ``apiextensions.ValidationRule`` (pointers as fixed addresses)."""

    def q(key: str) -> str:
        return errors.go_quote(str(rule.get(key) or ""))

    reason = "(*apiextensions.FieldValueErrorReason)(nil)"
    if rule.get("reason") is not None:
        reason = "(*apiextensions.FieldValueErrorReason)(0xc000a1b2c0)"
    oos = "(*bool)(nil)" if rule.get("optionalOldSelf") is None else "(*bool)(0xc000a1b2c8)"
    return GoValue(
        f"apiextensions.ValidationRule{{Rule:{q('rule')}, Message:{q('message')}, "
        f"MessageExpression:{q('messageExpression')}, Reason:{reason}, FieldPath:{q('fieldPath')}, "
        f"OptionalOldSelf:{oos}}}"
    )


_TOKENS = re.compile(r"""'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|\boldSelf\b""")


def uses_old_self(source: str) -> bool:
    """Whether ``source`` names ``oldSelf`` outside string literals (a transition rule)."""
    return any(m.group(0) == "oldSelf" for m in _TOKENS.finditer(source))


def optional_old_self(source: str) -> str:
    """``source`` with ``oldSelf`` made an optional (``optionalOldSelf: true``): the engine takes
    no optional-typed variables, so each reference becomes an expression that builds one."""

    def one(m: re.Match[str]) -> str:
        if m.group(0) != "oldSelf":
            return m.group(0)
        return f"({ruletree.HAS_OLD} ? optional.of(oldSelf) : optional.none())"

    return _TOKENS.sub(one, source)


_FIELD_PATH = re.compile(r"^(?:\.[A-Za-z_$][A-Za-z0-9_$-]*|\['[^']*'\])+$")


def valid_field_path(text: str) -> bool:
    """Whether ``text`` is a ``fieldPath``: ``.name`` and ``['key']`` steps, at least one."""
    return bool(_FIELD_PATH.match(text))
