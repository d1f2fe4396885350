"""Identifier syntax: each check says why a string is not of its kind in upstream's words.

Expected texts are those of k8s.io/apimachinery/pkg/util/validation/validation.go (IsQualifiedName,
IsDNS1123Subdomain, IsDNS1123Label, IsDNS1035Label, IsValidLabelValue and RegexError, whose
examples are joined by ",  or " with two spaces).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from kplane.api import names

_QNAME = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
    "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


@pytest.mark.parametrize(
    ("check", "value"),
    [
        pytest.param(names.qualified_name_errors, "example.com/My_name.1", id="qualified-name"),
        pytest.param(names.qualified_name_errors, "MyName", id="qualified-name-no-prefix"),
        pytest.param(names.dns1123_subdomain_errors, "a.b-c.example", id="subdomain"),
        pytest.param(names.dns1123_label_errors, "web-1", id="dns1123-label"),
        pytest.param(names.dns1035_label_errors, "web-1", id="dns1035-label"),
        pytest.param(names.label_value_errors, "", id="empty-label-value"),
        pytest.param(names.label_value_errors, "v1.2_x", id="label-value"),
    ],
)
def test_valid_values_have_no_errors(check: Callable[[str], list[str]], value: str) -> None:
    """A value of the kind gets an empty list."""
    assert check(value) == []


@pytest.mark.parametrize(
    ("check", "value", "expected"),
    [
        pytest.param(
            names.qualified_name_errors,
            "a/b/c",
            [
                "a qualified name "
                + _QNAME
                + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            ],
            id="two-slashes",
        ),
        pytest.param(names.qualified_name_errors, "/x", ["prefix part must be non-empty"], id="empty-prefix"),
        pytest.param(names.qualified_name_errors, "x/", ["name part must be non-empty"], id="empty-name"),
        pytest.param(names.qualified_name_errors, "-x", ["name part " + _QNAME], id="bad-name"),
        pytest.param(
            names.qualified_name_errors,
            "a" * 64,
            ["name part must be no more than 63 characters"],
            id="long-name",
        ),
        pytest.param(
            names.dns1035_label_errors,
            "1abc",
            [
                "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with "
                "an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
                "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
            ],
            id="dns1035-digit-first",
        ),
        pytest.param(
            names.label_value_errors,
            "x" * 64,
            ["must be no more than 63 characters"],
            id="long-label-value",
        ),
    ],
)
def test_invalid_values_get_upstream_messages(
    check: Callable[[str], list[str]], value: str, expected: list[str]
) -> None:
    """Each failure is reported with upstream's text, in upstream's order."""
    assert check(value) == expected


def test_subdomain_too_long_and_malformed_reports_both() -> None:
    """A subdomain over 253 characters that also breaks the pattern gets both messages, length first."""
    errs = names.dns1123_subdomain_errors("A" * 254)
    assert errs[0] == "must be no more than 253 characters"
    assert errs[1].startswith("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric")
    assert len(errs) == 2
