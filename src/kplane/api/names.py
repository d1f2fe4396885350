"""Syntax of identifiers: qualified names, RFC 1123/1035 DNS names and label values.

Each ``*_errors`` function says why a string is not of its kind, in the words of upstream's
``k8s.io/apimachinery/pkg/util/validation`` (``IsQualifiedName``, ``IsDNS1123Subdomain``,
``IsDNS1123Label``, ``IsDNS1035Label``, ``IsValidLabelValue``), and returns an empty list when it
is. Callers wrap the messages in field errors at their own paths. Pure functions; the patterns are
compiled once at import.
"""

from __future__ import annotations

import re

_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_NAME_RE = re.compile(_NAME_FMT)
_VALUE_FMT = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?"
_VALUE_RE = re.compile(_VALUE_FMT)
_DNS1123_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_FMT = rf"{_DNS1123_LABEL}(\.{_DNS1123_LABEL})*"
_DNS1123_RE = re.compile(_DNS1123_FMT)
_DNS1123_LABEL_RE = re.compile(_DNS1123_LABEL)
_NAME_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)


def _regex_error(msg: str, fmt: str, *examples: str) -> str:
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


_KNOWN_QUALIFIED: set[str] = set()
_KNOWN_BOUND = 4096  # keys are client-chosen: remember at most this many


def valid_qualified_name(key: str) -> bool:
    """Whether ``key`` is a valid qualified name; answered from a bounded memo of valid keys, since
    label and annotation keys repeat across objects and every write checks them."""
    if key in _KNOWN_QUALIFIED:
        return True
    if qualified_name_errors(key):
        return False
    if len(_KNOWN_QUALIFIED) < _KNOWN_BOUND:
        _KNOWN_QUALIFIED.add(key)
    return True


def valid_label_value(value: str) -> bool:
    """Whether ``value`` is a valid label value (``label_value_errors`` would be empty)."""
    return len(value) <= 63 and _VALUE_RE.fullmatch(value) is not None


def qualified_name_errors(key: str) -> list[str]:
    """Why ``key`` is not a valid qualified name (label key, annotation key); empty when it is."""
    errs: list[str] = []
    parts = key.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend("prefix part " + e for e in dns1123_subdomain_errors(prefix))
    else:
        return [
            "a qualified name "
            + _regex_error(_NAME_MSG, _NAME_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append("name part must be no more than 63 characters")
    if name and not _NAME_RE.fullmatch(name):
        errs.append("name part " + _regex_error(_NAME_MSG, _NAME_FMT, "MyName", "my.name", "123-abc"))
    return errs


def dns1123_subdomain_errors(value: str) -> list[str]:
    """Why ``value`` is not a lowercase RFC 1123 subdomain; empty when it is."""
    errs = []
    if len(value) > 253:
        errs.append("must be no more than 253 characters")
    if not _DNS1123_RE.fullmatch(value):
        errs.append(
            _regex_error(
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
                "'.', and must start and end with an alphanumeric character",
                _DNS1123_FMT,
                "example.com",
            )
        )
    return errs


def dns1123_label_errors(value: str) -> list[str]:
    """Why ``value`` is not a lowercase RFC 1123 label (container, volume, port names); empty when it is."""
    errs = []
    if len(value) > 63:
        errs.append("must be no more than 63 characters")
    if not _DNS1123_LABEL_RE.fullmatch(value):
        errs.append(
            _regex_error(
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
                "must start and end with an alphanumeric character",
                _DNS1123_LABEL,
                "my-name",
                "123-abc",
            )
        )
    return errs


_DNS1035_LABEL = "[a-z]([-a-z0-9]*[a-z0-9])?"
_DNS1035_LABEL_RE = re.compile(_DNS1035_LABEL)


def dns1035_label_errors(value: str) -> list[str]:
    """Why ``value`` is not an RFC 1035 label (API versions, kinds in lower case); empty when it is."""
    errs = []
    if len(value) > 63:
        errs.append("must be no more than 63 characters")
    if not _DNS1035_LABEL_RE.fullmatch(value):
        errs.append(
            _regex_error(
                "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
                "alphabetic character, and end with an alphanumeric character",
                _DNS1035_LABEL,
                "my-name",
                "abc-123",
            )
        )
    return errs


def label_value_errors(value: str) -> list[str]:
    """Why ``value`` is not a valid label value; empty when it is."""
    errs = []
    if len(value) > 63:
        errs.append("must be no more than 63 characters")
    if not _VALUE_RE.fullmatch(value):
        errs.append(
            _regex_error(
                "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
                "'.', and must start and end with an alphanumeric character",
                _VALUE_FMT,
                "MyValue",
                "my_value",
                "12345",
            )
        )
    return errs
