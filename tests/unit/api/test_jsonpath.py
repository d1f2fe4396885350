"""Tests for kplane.api.jsonpath: the JSONPath subset used by printer columns."""

from __future__ import annotations

from typing import Any

import pytest

from kplane.api import jsonpath

DOC: dict[str, Any] = {
    "metadata": {"name": "web", "labels": {"app": "web", "app.kubernetes.io/name": "shop"}},
    "spec": {"replicas": 3, "paused": False},
    "status": {
        "conditions": [
            {"type": "Available", "status": "False"},
            {"type": "Ready", "status": "True", "observedGeneration": 4},
        ]
    },
    "items": [{"x": 1, "tags": ["a"]}, {"x": 2, "tags": ["b", "c"]}, {"x": 3}],
}


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        pytest.param(".spec.replicas", [3], id="field"),
        pytest.param("{.spec.replicas}", [3], id="braces"),
        pytest.param("$.spec.replicas", [3], id="dollar"),
        pytest.param("spec.replicas", [3], id="no-leading-dot"),
        pytest.param(".spec.paused", [False], id="false-value-is-a-result"),
        pytest.param('.status.conditions[?(@.type=="Ready")].status', ["True"], id="filter-eq"),
        pytest.param(".status.conditions[?(@.type!='Ready')].type", ["Available"], id="filter-ne"),
        pytest.param(".status.conditions[?(@.observedGeneration>=4)].type", ["Ready"], id="filter-number"),
        pytest.param(".status.conditions[?(@.observedGeneration)].type", ["Ready"], id="filter-exists"),
        pytest.param(".metadata.labels.app", ["web"], id="label"),
        pytest.param(".metadata.labels['app.kubernetes.io/name']", ["shop"], id="quoted-key"),
        pytest.param(".metadata.labels.app\\.kubernetes\\.io/name", ["shop"], id="escaped-dots"),
        pytest.param('.metadata.labels["app","missing"]', ["web"], id="key-union"),
        pytest.param(".items[0].x", [1], id="index"),
        pytest.param(".items[-1].x", [3], id="negative-index"),
        pytest.param(".items[0:2].x", [1, 2], id="slice"),
        pytest.param(".items[::2].x", [1, 3], id="slice-step"),
        pytest.param(".items[*].x", [1, 2, 3], id="wildcard"),
        pytest.param(".items[1].tags[*]", ["b", "c"], id="nested-wildcard"),
        pytest.param("..x", [1, 2, 3], id="recursive"),
        pytest.param(".spec.*", [False, 3], id="map-wildcard-sorted-keys"),
        pytest.param(".spec.missing", [], id="missing-key"),
        pytest.param(".items[7].x", [], id="index-out-of-range"),
        pytest.param(".spec.replicas.deeper", [], id="field-of-scalar"),
    ],
)
def test_find(expression: str, expected: list[Any]) -> None:
    """find returns every selected value, and nothing (not an error) for missing data."""
    assert jsonpath.find(expression, DOC) == expected


def test_first_returns_default_when_nothing_matches() -> None:
    """first returns the first match, or the default when the path selects nothing."""
    assert jsonpath.first(".items[*].x", DOC) == 1
    assert jsonpath.first(".nope", DOC, "dflt") == "dflt"


def test_filter_does_not_equate_true_with_one() -> None:
    """A JSON true never equals the number 1 in a filter (Python bools are ints)."""
    doc = {"l": [{"v": True}, {"v": 1}]}
    assert jsonpath.find(".l[?(@.v==1)]", doc) == [{"v": 1}]
    assert jsonpath.find(".l[?(@.v==true)]", doc) == [{"v": True}]


def test_filter_mismatched_types_do_not_match() -> None:
    """Ordering a string against a number is no match rather than an error."""
    assert jsonpath.find(".l[?(@.v<3)]", {"l": [{"v": "a"}, {"v": 2}]}) == [{"v": 2}]


@pytest.mark.parametrize(
    "expression",
    [".items[", ".items[0:1:0]", ".items[x]", ".l[?(@.v ~ 1)]", ".l[?(@.v==foo)]", "..", ".a..[", ".a b"],
)
def test_unsupported_syntax_fails_at_compile_time(expression: str) -> None:
    """Expressions outside the subset raise JSONPathError when compiled."""
    with pytest.raises(jsonpath.JSONPathError):
        jsonpath.compile_path(expression)


def test_compiled_paths_are_cached() -> None:
    """Compiling the same expression twice returns the same Path."""
    assert jsonpath.compile_path(".spec.replicas") is jsonpath.compile_path(".spec.replicas")
