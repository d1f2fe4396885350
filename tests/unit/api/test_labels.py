"""Label selector grammar, validation, matching and the structured LabelSelector form."""

from __future__ import annotations

from typing import Any

import pytest

from kplane.api import labels

WEB = {"app": "web", "tier": "fe", "n": "7"}


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        pytest.param("app=web", "app=web", id="equals"),
        pytest.param("app==web", "app==web", id="double-equals"),
        pytest.param("app!=web", "app!=web", id="not-equals"),
        pytest.param("tier in (fe, be)", "tier in (be,fe)", id="in-sorted"),
        pytest.param("tier notin (x)", "tier notin (x)", id="notin"),
        pytest.param("app", "app", id="exists"),
        pytest.param("!app", "!app", id="not-exists"),
        pytest.param("  b = 1 ,a ", "a,b=1", id="whitespace-and-key-order"),
        pytest.param("k=", "k=", id="empty-value"),
        pytest.param("k in ()", "k in ()", id="in-empty-set"),
        pytest.param("example.com/role=db", "example.com/role=db", id="prefixed-key"),
        pytest.param("n>5,n<9", "n>5,n<9", id="gt-lt-same-key-keeps-order"),
        pytest.param("", "", id="empty"),
    ],
)
def test_parse_prints_canonical_form(text: str, canonical: str) -> None:
    """A valid selector parses and prints sorted by key with sorted value sets."""
    assert str(labels.parse(text)) == canonical


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("app=web", True, id="equals-hit"),
        pytest.param("app=db", False, id="equals-miss"),
        pytest.param("app!=db", True, id="not-equals-hit"),
        pytest.param("zone!=a", True, id="not-equals-absent-key"),
        pytest.param("tier in (fe,be)", True, id="in-hit"),
        pytest.param("tier in (be)", False, id="in-miss"),
        pytest.param("zone in (a)", False, id="in-absent-key"),
        pytest.param("tier notin (fe)", False, id="notin-miss"),
        pytest.param("zone notin (a)", True, id="notin-absent-key"),
        pytest.param("app", True, id="exists"),
        pytest.param("!app", False, id="not-exists"),
        pytest.param("app=web,tier=be", False, id="and"),
        pytest.param("n>5", True, id="gt"),
        pytest.param("n<5", False, id="lt"),
        pytest.param("app>1", False, id="gt-non-numeric-label"),
        pytest.param("", True, id="everything"),
    ],
)
def test_matches(text: str, expected: bool) -> None:
    """Each operator matches per upstream semantics, including absent keys."""
    assert labels.parse(text).matches(WEB) is expected


def test_matches_none_labels() -> None:
    """None labels behave as an empty label map."""
    assert labels.parse("!app").matches(None)
    assert not labels.parse("app").matches(None)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        pytest.param("a b", "unable to parse requirement: found 'b', expected: in, notin", id="missing-op"),
        pytest.param("a=b c", "found 'c', expected: ',' or 'end of string'", id="trailing-token"),
        pytest.param("a=b,", "expected: identifier after ','", id="trailing-comma"),
        # upstream's parseValues has no comma after found 'x' (apimachinery labels/selector.go)
        pytest.param("a in b", "unable to parse requirement: found 'b' expected: '('", id="in-without-paren"),
        pytest.param("a in (b c)", "expected: ',' or ')'", id="in-missing-comma"),
        pytest.param(",a", "expected: !, identifier, or 'end of string'", id="leading-comma"),
        pytest.param("a=-b", 'values[0][a]: Invalid value: "-b": a valid label must be', id="bad-value"),
        pytest.param("a=" + "x" * 64, "must be no more than 63 characters", id="long-value"),
        pytest.param("Bad_/k=v", "prefix part a lowercase RFC 1123 subdomain", id="bad-prefix"),
        pytest.param("a/b/c=v", "a qualified name must consist of", id="two-slashes"),
        # the parser checks the key against a nil field path, printed "<nil>" (labels/selector.go)
        pytest.param("-k=v", '<nil>: Invalid value: "-k": name part must consist of', id="bad-name"),
        pytest.param("k>x", "the value must be an integer", id="gt-non-integer"),
    ],
)
def test_parse_errors(text: str, fragment: str) -> None:
    """Bad syntax or names raise ValueError with upstream-like wording."""
    with pytest.raises(ValueError) as info:
        labels.parse(text)
    assert fragment in str(info.value)


def test_selector_equality_and_empty() -> None:
    """Selectors compare by requirements; only a requirement-free selector is empty."""
    assert labels.parse("b=1,a=2") == labels.parse("a=2, b=1")
    assert hash(labels.parse("a")) == hash(labels.parse(" a "))
    assert labels.parse("").empty
    assert not labels.parse("a").empty
    assert not labels.Selector.nothing().empty


@pytest.mark.parametrize(
    ("selector", "canonical"),
    [
        pytest.param({}, "", id="empty-selects-everything"),
        pytest.param({"matchLabels": {"b": "2", "a": "1"}}, "a=1,b=2", id="match-labels"),
        pytest.param(
            {
                "matchLabels": {"app": "web"},
                "matchExpressions": [
                    {"key": "tier", "operator": "In", "values": ["fe", "be"]},
                    {"key": "env", "operator": "NotIn", "values": ["prod"]},
                    {"key": "gpu", "operator": "Exists"},
                    {"key": "old", "operator": "DoesNotExist"},
                ],
            },
            "app=web,env notin (prod),gpu,!old,tier in (be,fe)",
            id="all-operators",
        ),
    ],
)
def test_format_label_selector(selector: dict[str, Any], canonical: str) -> None:
    """A structured LabelSelector prints as the equivalent selector string."""
    assert labels.format(selector) == canonical
    assert labels.parse(canonical) == labels.from_label_selector(selector)


def test_nil_label_selector_selects_nothing() -> None:
    """A None LabelSelector matches no object, an empty one every object."""
    assert not labels.from_label_selector(None).matches({"a": "b"})
    assert labels.from_label_selector({}).matches({"a": "b"})


@pytest.mark.parametrize(
    ("selector", "fragment"),
    [
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]},
            '"Gt" is not a valid label selector operator',
            id="unknown-operator",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "In", "values": []}]},
            "values set can't be empty",
            id="in-without-values",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]},
            "values set must be empty",
            id="exists-with-values",
        ),
        pytest.param({"matchLabels": {"a": "b c"}}, "a valid label must be", id="bad-match-label"),
    ],
)
def test_label_selector_errors(selector: dict[str, Any], fragment: str) -> None:
    """Invalid structured selectors raise ValueError naming the problem."""
    with pytest.raises(ValueError) as info:
        labels.from_label_selector(selector)
    assert fragment in str(info.value)
