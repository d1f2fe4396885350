"""Bounded JSON request bodies: one parse, a nesting limit, and duplicate fields found without a
second parse in the common case.

Design note. Upstream decodes bodies with Go's ``encoding/json`` (through ``sigs.k8s.io/json``),
whose scanner refuses documents nested more than 10000 levels (``invalid character '{' exceeded max
depth``, scanner.go ``pushParseState``). kplane cannot hold that much: orjson serializes at most
254 levels and the schema, patch and field-ownership walks recurse once or more per level. So
kplane refuses bodies nested deeper than ``MAX_DEPTH`` with upstream's message, and everything
downstream may then rely on the bound: a stored object plus the envelopes it is served in (list,
watch event, Table row, ``managedFields``) stays well inside orjson's limit and Python's stack.

orjson keeps the last of two equal keys silently. Finding ``duplicate field "name"`` for
``fieldValidation`` therefore compares the colons of the body with those of the parsed value
encoded again (equal without ``\\u`` escapes proves that no key was dropped), else the number of
keys in the text (every ``:`` outside a string separates one) with the number orjson kept: equal
counts prove there is no duplicate, and only a body that really has one is parsed again (by the
standard library, which can see every pair).
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

from kplane.api.errors import go_quote

MAX_DEPTH = 200
"""Deepest nesting of objects and arrays accepted in a request body (upstream: 10000)."""

_SHALLOW_BYTES = 2 * (MAX_DEPTH + 1) - 1  # no longer body can nest past MAX_DEPTH
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')


class TooDeep(ValueError):
    """The body nests deeper than ``MAX_DEPTH``; ``opener`` is the ``{`` or ``[`` that went too far."""

    def __init__(self, opener: str) -> None:
        self.opener = opener
        super().__init__(f"invalid character '{opener}' exceeded max depth")


class Malformed(ValueError):
    """Not JSON at all (orjson's message)."""


def loads(body: bytes) -> Any:
    """``body`` parsed; raises ``TooDeep`` past ``MAX_DEPTH`` levels and ``Malformed`` otherwise."""
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError as err:
        if str(err).startswith("depth limit exceeded"):
            raise TooDeep(_deep_opener(body)) from None
        raise Malformed(str(err)) from None
    # More than MAX_DEPTH openers need as many closers (orjson accepted the body): a shorter body
    # cannot be too deep, and most are shorter, so they skip the two scans.
    if len(body) > _SHALLOW_BYTES and body.count(b"{") + body.count(b"[") > MAX_DEPTH:
        opener = too_deep(value)
        if opener:
            raise TooDeep(opener)
    return value


def too_deep(value: Any, limit: int = MAX_DEPTH) -> str:
    """``"{"`` or ``"["`` when ``value`` nests objects/arrays more than ``limit`` deep, else ``""``.
    Iterative: safe on any depth."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            if depth > limit:
                return "{"
            stack.extend((v, depth + 1) for v in node.values() if isinstance(v, dict | list))
        elif isinstance(node, list):
            if depth > limit:
                return "["
            stack.extend((v, depth + 1) for v in node if isinstance(v, dict | list))
    return ""


def _deep_opener(body: bytes) -> str:
    """The bracket that opens level ``MAX_DEPTH + 1`` of a body orjson refused as too deep."""
    depth = 0
    for m in re.finditer(rb'[{}\[\]"]', _STRING.sub(b"", body)):
        c = m.group()
        if c in b"{[":
            depth += 1
            if depth > MAX_DEPTH:
                return c.decode()
        else:
            depth -= 1
    return "{"


def duplicate_fields(body: bytes, value: Any) -> list[str]:
    """``duplicate field "k"`` for every key repeated within one object of ``body`` (already parsed
    into ``value``, at most ``MAX_DEPTH`` deep), in text order."""
    if body.find(b"\\u") < 0:  # find, not in: bytes.__contains__ raises and drops a TypeError
        # Without \u escapes every string (keys too) is written back with the same colons, so the
        # re-encoded value has exactly as many colons as the body unless a repeated key (at least
        # its separator) was dropped. One C encode instead of a walk in Python.
        try:
            if body.count(b":") == orjson.dumps(value).count(b":"):
                return []
        except TypeError:
            pass  # a value orjson cannot encode (an integer beyond 64 bits): count keys instead
    kept = _key_count(value)
    if body.count(b":") == kept:
        return []  # every colon is a key separator, and each key survived: none repeats
    if _STRING.sub(b'""', body).count(b":") == kept:
        return []
    found: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: set[str] = set()
        for key, _ in items:
            if key in seen:
                found.append(f"duplicate field {go_quote(key)}")
            seen.add(key)
        return dict(items)

    try:
        json.loads(body, object_pairs_hook=pairs)
    except (ValueError, RecursionError):
        return []
    return found


def _key_count(value: Any) -> int:
    count = 0
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            count += len(node)
            stack.extend(v for v in node.values() if isinstance(v, dict | list))
        elif isinstance(node, list):
            stack.extend(v for v in node if isinstance(v, dict | list))
    return count
