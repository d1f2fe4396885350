"""Bounded JSON bodies: one parse, upstream's depth message, duplicates without a second parse."""

from __future__ import annotations

import json
from typing import Any
from unittest import mock

import pytest

from kplane.api import jsonbody


def _nest(depth: int, opener: str = "{") -> bytes:
    if opener == "{":
        return ('{"a":' * depth + "1" + "}" * depth).encode()
    return ("[" * depth + "1" + "]" * depth).encode()


@pytest.mark.parametrize("opener", ["{", "["])
@pytest.mark.parametrize("depth", [jsonbody.MAX_DEPTH + 1, 500, 1000, 1025, 5000])
def test_too_deep_is_refused_with_gos_scanner_message(depth: int, opener: str) -> None:
    """Past the limit: Go's encoding/json scanner text (scanner.go pushParseState:
    ``invalid character '{' exceeded max depth``), naming the bracket that went too deep."""
    with pytest.raises(jsonbody.TooDeep) as info:
        jsonbody.loads(_nest(depth, opener))
    assert str(info.value) == f"invalid character '{opener}' exceeded max depth"


def test_the_limit_itself_is_accepted() -> None:
    """Exactly MAX_DEPTH levels decode."""
    value = jsonbody.loads(_nest(jsonbody.MAX_DEPTH))
    assert jsonbody.too_deep(value) == ""
    assert jsonbody.too_deep(value, jsonbody.MAX_DEPTH - 1) == "{"


def test_the_shortest_too_deep_body_is_refused() -> None:
    """The shortest body past the limit (``[]`` nested MAX_DEPTH + 1 deep, no whitespace) is
    still scanned: shorter bodies skip the depth check."""
    body = b"[" * (jsonbody.MAX_DEPTH + 1) + b"]" * (jsonbody.MAX_DEPTH + 1)
    with pytest.raises(jsonbody.TooDeep):
        jsonbody.loads(body)
    assert jsonbody.loads(body[1:-1]) is not None


def test_brackets_inside_strings_do_not_count() -> None:
    """A string full of brackets is not nesting."""
    body = json.dumps({"a": "{[" * 5000}).encode()
    assert jsonbody.loads(body) == {"a": "{[" * 5000}


def test_malformed_is_not_too_deep() -> None:
    with pytest.raises(jsonbody.Malformed):
        jsonbody.loads(b'{"a": ')


def test_duplicates_named_in_text_order_with_go_quoting() -> None:
    """``duplicate field "name"`` (sigs.k8s.io/json strict errors quote with strconv.Quote)."""
    body = b'{"a": 1, "b": {"c": 1, "c": 2}, "a": 3, "x\\u0000y": 1, "x\\u0000y": 2}'
    value = jsonbody.loads(body)
    assert jsonbody.duplicate_fields(body, value) == [
        'duplicate field "c"',
        'duplicate field "a"',
        'duplicate field "x\\x00y"',
    ]


def test_no_duplicates_needs_no_second_parse() -> None:
    """A body without duplicates (colons in strings included) is never parsed again."""
    body = b'{"a": "x:y", "b": [{"c": "1:2:3"}], "d": {}}'
    value = jsonbody.loads(body)
    with mock.patch.object(json, "loads", side_effect=AssertionError("parsed twice")):
        assert jsonbody.duplicate_fields(body, value) == []


@pytest.mark.parametrize(
    ("body", "found"),
    [
        # the dropped first value holds colons of its own, the kept one none
        (b'{"image": "nginx:1.27", "image": "nginx", "n": 1}', ['duplicate field "image"']),
        # an escaped colon (\u003a) is one colon more once encoded again: the slow count decides
        (b'{"a": "x\\u003ay", "b": 1, "b": 2}', ['duplicate field "b"']),
        (b'{"a": "x\\u003ay", "b": {"c:d": "e:f"}}', []),
        # nested, with a value orjson re-encodes differently (floats, unicode)
        (
            b'{"m": {"t": "2024-01-01T00:00:00Z", "f": 1.50, "u": "\xc3\xa9:"}, "m": {}}',
            ['duplicate field "m"'],
        ),
    ],
)
def test_duplicates_with_colons_in_strings(body: bytes, found: list[str]) -> None:
    assert jsonbody.duplicate_fields(body, jsonbody.loads(body)) == found


def test_duplicate_scan_is_safe_at_the_depth_limit() -> None:
    body = _nest(jsonbody.MAX_DEPTH)[:-1] + b', "a": 2}'
    value: Any = jsonbody.loads(body)
    assert jsonbody.duplicate_fields(body, value) == ['duplicate field "a"']
