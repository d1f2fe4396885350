"""JSON merge patch (RFC 7386), including the RFC's own examples."""

from __future__ import annotations

from typing import Any

import pytest

from kplane.api import patch


@pytest.mark.parametrize(
    ("original", "merge", "expected"),
    [
        pytest.param({"a": "b"}, {"a": "c"}, {"a": "c"}, id="replace-value"),
        pytest.param({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}, id="add-key"),
        pytest.param({"a": "b"}, {"a": None}, {}, id="null-deletes"),
        pytest.param({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}, id="null-deletes-one"),
        pytest.param({"a": ["b"]}, {"a": "c"}, {"a": "c"}, id="array-to-scalar"),
        pytest.param({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}, id="scalar-to-array"),
        pytest.param({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}, id="nested"),
        pytest.param({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}, id="arrays-replaced"),
        pytest.param(["a", "b"], ["c", "d"], ["c", "d"], id="array-document"),
        pytest.param({"a": "b"}, ["c"], ["c"], id="array-patch-replaces"),
        pytest.param({"a": "foo"}, None, None, id="null-patch"),
        pytest.param({"e": None}, {"a": 1}, {"e": None, "a": 1}, id="existing-null-kept"),
        pytest.param([1, 2], {"a": "b", "c": None}, {"a": "b"}, id="object-patch-on-array"),
        pytest.param({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}, id="deep-new-with-null"),
        pytest.param(
            {"metadata": {"labels": {"app": "web"}}},
            {"metadata": {"labels": {"tier": "fe"}}},
            {"metadata": {"labels": {"app": "web", "tier": "fe"}}},
            id="kubectl-label",
        ),
    ],
)
def test_merge_patch(original: Any, merge: Any, expected: Any) -> None:
    """merge_patch follows RFC 7386 (examples from its appendix), sharing or not."""
    assert patch.merge_patch(original, merge) == expected
    assert patch.merge_patch(original, merge, share=True) == expected


def test_inputs_not_mutated_and_not_shared() -> None:
    """Neither input is modified and the result shares no containers with them."""
    original: dict[str, Any] = {"spec": {"template": {"x": [1]}}, "keep": {"k": 1}}
    merge: dict[str, Any] = {"spec": {"template": {"y": {"z": 1}}}}
    result = patch.merge_patch(original, merge)
    assert original == {"spec": {"template": {"x": [1]}}, "keep": {"k": 1}}
    assert merge == {"spec": {"template": {"y": {"z": 1}}}}
    result["keep"]["k"] = 2
    result["spec"]["template"]["y"]["z"] = 2
    assert original["keep"]["k"] == 1
    assert merge["spec"]["template"]["y"]["z"] == 1


def test_share_copies_only_the_patched_paths() -> None:
    """With ``share``, untouched subtrees are the original's own; every object on a patched path is
    new, patch values are copies, and neither input is modified."""
    original: dict[str, Any] = {
        "metadata": {"name": "a", "managedFields": [{"manager": "m"}]},
        "spec": {"value": 1, "deep": {"x": [1]}},
        "status": {"observed": 0, "conditions": [{"type": "Ready"}]},
    }
    merge: dict[str, Any] = {"status": {"observed": 1, "extra": {"k": [2]}}}
    result = patch.merge_patch(original, merge, share=True)
    assert result == {
        "metadata": {"name": "a", "managedFields": [{"manager": "m"}]},
        "spec": {"value": 1, "deep": {"x": [1]}},
        "status": {"observed": 1, "conditions": [{"type": "Ready"}], "extra": {"k": [2]}},
    }
    assert result is not original
    assert result["metadata"] is original["metadata"] and result["spec"] is original["spec"]
    assert result["status"] is not original["status"]
    assert result["status"]["conditions"] is original["status"]["conditions"]
    assert result["status"]["extra"] is not merge["status"]["extra"]
    assert result["status"]["extra"]["k"] is not merge["status"]["extra"]["k"]
    assert original["status"] == {"observed": 0, "conditions": [{"type": "Ready"}]}
    assert merge == {"status": {"observed": 1, "extra": {"k": [2]}}}
