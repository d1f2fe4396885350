"""JSON patch (RFC 6902) operations, pointers and errors."""

from __future__ import annotations

from typing import Any

import pytest

from kplane.api import patch
from kplane.api.patch import jsonpatch

DOC: dict[str, Any] = {"foo": "bar", "list": [1, 2, 3], "m": {"a/b": 1, "m~n": 2}}


@pytest.mark.parametrize(
    ("ops", "expected"),
    [
        pytest.param([{"op": "add", "path": "/baz", "value": "qux"}], {**DOC, "baz": "qux"}, id="add-key"),
        pytest.param(
            [{"op": "add", "path": "/list/1", "value": 9}], {**DOC, "list": [1, 9, 2, 3]}, id="add-insert"
        ),
        pytest.param(
            [{"op": "add", "path": "/list/-", "value": 4}], {**DOC, "list": [1, 2, 3, 4]}, id="add-append"
        ),
        pytest.param([{"op": "add", "path": "/foo", "value": None}], {**DOC, "foo": None}, id="add-null"),
        pytest.param([{"op": "add", "path": "", "value": [1]}], [1], id="add-whole-document"),
        pytest.param([{"op": "remove", "path": "/list/0"}], {**DOC, "list": [2, 3]}, id="remove-index"),
        pytest.param(
            [{"op": "remove", "path": "/m/a~1b"}], {**DOC, "m": {"m~n": 2}}, id="remove-escaped-slash"
        ),
        pytest.param(
            [{"op": "replace", "path": "/m/m~0n", "value": 5}],
            {**DOC, "m": {"a/b": 1, "m~n": 5}},
            id="replace-escaped-tilde",
        ),
        pytest.param(
            [{"op": "move", "from": "/foo", "path": "/m/foo"}],
            {"list": [1, 2, 3], "m": {"a/b": 1, "m~n": 2, "foo": "bar"}},
            id="move",
        ),
        pytest.param(
            [{"op": "move", "from": "/list/0", "path": "/list/-"}],
            {**DOC, "list": [2, 3, 1]},
            id="move-in-array",
        ),
        pytest.param(
            [{"op": "copy", "from": "/list", "path": "/copy"}], {**DOC, "copy": [1, 2, 3]}, id="copy"
        ),
        pytest.param(
            [{"op": "test", "path": "/list", "value": [1, 2, 3]}, {"op": "remove", "path": "/foo"}],
            {"list": [1, 2, 3], "m": {"a/b": 1, "m~n": 2}},
            id="test-then-remove",
        ),
        pytest.param([{"op": "test", "path": "/list/0", "value": 1.0}], DOC, id="test-int-equals-float"),
        pytest.param([], DOC, id="empty-patch"),
    ],
)
def test_operations(ops: list[dict[str, Any]], expected: Any) -> None:
    """Each RFC 6902 operation produces the expected document."""
    assert patch.json_patch(DOC, ops) == expected


@pytest.mark.parametrize(
    ("ops", "fragment"),
    [
        pytest.param({"op": "add"}, "must be a list", id="not-a-list"),
        pytest.param([{"op": "frob", "path": "/a"}], "unknown op", id="unknown-op"),
        pytest.param([{"op": "add", "path": "/a"}], "missing 'value'", id="add-without-value"),
        pytest.param([{"op": "remove"}], "'path'", id="missing-path"),
        pytest.param([{"op": "remove", "path": "/nope"}], "does not exist", id="remove-missing"),
        pytest.param(
            [{"op": "replace", "path": "/nope", "value": 1}], "does not exist", id="replace-missing"
        ),
        pytest.param([{"op": "add", "path": "/x/y", "value": 1}], "does not exist", id="add-missing-parent"),
        pytest.param(
            [{"op": "add", "path": "/list/7", "value": 1}], "out of bounds", id="index-out-of-bounds"
        ),
        pytest.param(
            [{"op": "add", "path": "/list/01", "value": 1}], "not a valid array index", id="leading-zero"
        ),
        pytest.param([{"op": "remove", "path": "/list/-"}], "not a valid array index", id="remove-dash"),
        pytest.param([{"op": "remove", "path": "foo"}], "must be empty or start with '/'", id="bad-pointer"),
        pytest.param([{"op": "remove", "path": "/m/a~2"}], "invalid escape", id="bad-escape"),
        pytest.param([{"op": "test", "path": "/foo", "value": "baz"}], "test failed", id="test-fails"),
        pytest.param(
            [{"op": "test", "path": "/list/0", "value": True}], "test failed", id="test-bool-not-int"
        ),
        pytest.param([{"op": "move", "from": "/m", "path": "/m/x"}], "into its child", id="move-into-child"),
        pytest.param([{"op": "copy", "from": "/nope", "path": "/x"}], "does not exist", id="copy-missing"),
    ],
)
def test_errors(ops: Any, fragment: str) -> None:
    """Malformed or inapplicable patches raise PatchError (a ValueError) with a clear message."""
    with pytest.raises(patch.PatchError) as info:
        patch.json_patch(DOC, ops)
    assert isinstance(info.value, ValueError)
    assert fragment in str(info.value)


def test_failure_is_atomic_and_input_untouched() -> None:
    """A failing operation leaves the input as it was; values from the patch are copied."""
    doc = {"a": {"b": 1}}
    value = {"deep": [1]}
    with pytest.raises(patch.PatchError):
        patch.json_patch(doc, [{"op": "add", "path": "/a/c", "value": 1}, {"op": "remove", "path": "/zz"}])
    assert doc == {"a": {"b": 1}}
    result = patch.json_patch(doc, [{"op": "add", "path": "/v", "value": value}])
    result["v"]["deep"].append(2)
    assert value == {"deep": [1]}
    assert doc == {"a": {"b": 1}}


def test_parse_pointer_unescapes_in_order() -> None:
    """~01 decodes to ~1 (tilde first escaped, then literal 1), not to /."""
    assert jsonpatch.parse_pointer("/a~01/b~1c") == ["a~1", "b/c"]


def test_copies_are_bounded_by_the_accumulated_size() -> None:
    """evanphx/json-patch AccumulatedCopySizeError, with kube-apiserver's limit (3 MiB)."""
    doc = {"data": {"big": "x" * 100_000}}
    ops = [{"op": "copy", "from": "/data", "path": f"/data/x{i}"} for i in range(60)]
    with pytest.raises(patch.PatchError) as info:
        jsonpatch.json_patch(doc, ops)
    message = str(info.value)
    assert message.startswith("Unable to complete the copy, the accumulated size increase of copy is ")
    assert message.endswith(f", exceeding the limit {jsonpatch.COPY_SIZE_LIMIT}")


def test_copies_are_bounded_by_the_number_of_values() -> None:
    """kplane's own bound: Python values cost far more than their JSON bytes."""
    ops = [{"op": "copy", "from": "/data", "path": f"/data/x{i}"} for i in range(60)]
    with pytest.raises(patch.PatchError, match="the copies would add more than 20000 values"):
        jsonpatch.json_patch({"data": {"a": "b"}}, ops)


def test_too_many_operations() -> None:
    """Upstream's maxJSONPatchOperations (handlers/patch.go)."""
    with pytest.raises(jsonpatch.TooManyOperations) as info:
        jsonpatch.json_patch({}, [{"op": "test", "path": "", "value": {}}] * 10_001)
    assert str(info.value) == "The allowed maximum operations in a JSON patch is 10000, got 10001"
