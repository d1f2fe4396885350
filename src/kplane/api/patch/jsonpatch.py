"""JSON patch (RFC 6902) over JSON pointers (RFC 6901).

The document is copied once and the operations are applied to the copy in order; the first failing
operation aborts the whole patch (atomicity, as the RFC requires), so callers never see a half-applied
result. Values taken from the patch are copied too, so the result shares nothing with either input.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from kplane.api.patch import _base

_OPS = frozenset({"add", "remove", "replace", "move", "copy", "test"})

MAX_OPERATIONS = 10_000
"""Upstream's bound on one patch (apiserver handlers/patch.go ``maxJSONPatchOperations``)."""
COPY_SIZE_LIMIT = 3 * 1024 * 1024
"""Bytes of JSON that ``copy`` operations of one patch may add in all (json-patch's
``AccumulatedCopySizeLimit``, which kube-apiserver sets to its ``JSONPatchMaxCopyBytes``, 3 MiB):
a few dozen copies of a value into itself would otherwise double it each time."""
COPY_VALUE_LIMIT = 20_000
"""Values (objects, arrays, scalars) that copies of one patch may add in all: kplane's own bound,
since a Python value costs tens of times its JSON bytes (3 MiB of ``{"a":"b"}`` is ~50 MB)."""


def json_patch(document: Any, operations: Any) -> Any:
    """Apply a JSON patch (a list of operation objects) and return the patched document.

    Raises ``PatchError`` for a malformed patch, a path that does not exist where the operation needs
    it, or a failed ``test``. Neither argument is modified.
    """
    if not isinstance(operations, list):
        raise _base.PatchError("a JSON patch must be a list of operations")
    if len(operations) > MAX_OPERATIONS:
        raise TooManyOperations(
            f"The allowed maximum operations in a JSON patch is {MAX_OPERATIONS}, got {len(operations)}"
        )
    doc = _base.copy_json(document)
    copied = [0, 0]  # bytes, values
    for index, op in enumerate(operations):
        doc = _apply(doc, op, index, copied)
    return doc


class TooManyOperations(_base.PatchError):
    """More than ``MAX_OPERATIONS`` operations (upstream answers 413)."""


def _copy_measured(value: Any, budget: int) -> tuple[Any, int]:
    """A deep copy of ``value`` and its size as compact JSON. orjson does both in C (a copy made by
    re-reading the encoding is exact for JSON values); a value deeper than orjson nests is measured
    by walking it, only until past ``budget``, and copied only when it fits."""
    try:
        encoded = orjson.dumps(value)
    except TypeError:
        size = _estimate_size(value, budget)
        return (_base.copy_json(value) if size <= budget else None), size
    if len(encoded) > budget:
        return None, len(encoded)
    return orjson.loads(encoded), len(encoded)


def _count_values(value: Any, budget: int) -> int:
    """The number of values in ``value``, counted only until past ``budget``."""
    count = 0
    stack = [value]
    while stack and count <= budget:
        node = stack.pop()
        count += 1
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return count


def _estimate_size(value: Any, budget: int) -> int:
    size = 0
    stack = [value]
    while stack and size <= budget:
        node = stack.pop()
        if isinstance(node, dict):
            size += 1 + len(node) * 2 + sum(len(k) + 2 for k in node)
            stack.extend(node.values())
        elif isinstance(node, list):
            size += 1 + max(len(node), 1)
            stack.extend(node)
        elif isinstance(node, str):
            size += len(node) + 2
        else:
            size += len(str(node)) if node is not None else 4
    return size


def parse_pointer(pointer: str) -> list[str]:
    """Split a JSON pointer into unescaped reference tokens (``~1`` → ``/``, ``~0`` → ``~``)."""
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise _base.PatchError(f"JSON pointer {pointer!r} must be empty or start with '/'")
    tokens = pointer[1:].split("/")
    out = []
    for token in tokens:
        if "~" in token:
            rest = token.replace("~0", "").replace("~1", "")
            if "~" in rest:
                raise _base.PatchError(f"JSON pointer {pointer!r} has an invalid escape")
            token = token.replace("~1", "/").replace("~0", "~")
        out.append(token)
    return out


def _apply(doc: Any, op: Any, index: int, copied: list[int]) -> Any:
    if not isinstance(op, dict):
        raise _base.PatchError(f"operation {index}: must be an object")
    name = op.get("op")
    if not isinstance(name, str) or name not in _OPS:
        raise _base.PatchError(f"operation {index}: unknown op {name!r}")
    path = _string_member(op, "path", index)
    tokens = parse_pointer(path)
    match name:
        case "add":
            return _add(doc, tokens, _base.copy_json(_value(op, index)), path)
        case "remove":
            doc, _ = _remove(doc, tokens, path)
            return doc
        case "replace":
            value = _base.copy_json(_value(op, index))
            doc, _ = _remove(doc, tokens, path)
            return _add(doc, tokens, value, path)
        case "move":
            source = _string_member(op, "from", index)
            from_tokens = parse_pointer(source)
            if from_tokens == tokens:
                _get(doc, from_tokens, source)  # must exist, but moving onto itself changes nothing
                return doc
            if tokens[: len(from_tokens)] == from_tokens:
                raise _base.PatchError(f"operation {index}: cannot move {source!r} into its child {path!r}")
            doc, value = _remove(doc, from_tokens, source)
            return _add(doc, tokens, value, path)
        case "copy":
            source = _string_member(op, "from", index)
            value, size = _copy_measured(
                _get(doc, parse_pointer(source), source), COPY_SIZE_LIMIT - copied[0]
            )
            copied[0] += size
            if value is not None:
                copied[1] += _count_values(value, COPY_VALUE_LIMIT - copied[1])
            if copied[1] > COPY_VALUE_LIMIT:
                raise _base.PatchError(
                    f"Unable to complete the copy, the copies would add more than {COPY_VALUE_LIMIT} values"
                )
            if copied[0] > COPY_SIZE_LIMIT:
                # evanphx/json-patch AccumulatedCopySizeError
                raise _base.PatchError(
                    "Unable to complete the copy, the accumulated size increase of copy is "
                    f"{copied[0]}, exceeding the limit {COPY_SIZE_LIMIT}"
                )
            return _add(doc, tokens, value, path)
        case _:  # test
            expected = _value(op, index)
            actual = _get(doc, tokens, path)
            if not _base.json_equal(actual, expected):
                raise _base.PatchError(f"operation {index}: test failed: {path!r} is not {expected!r}")
            return doc


def _string_member(op: dict[str, Any], member: str, index: int) -> str:
    value = op.get(member)
    if not isinstance(value, str):
        raise _base.PatchError(f"operation {index} ({op.get('op')}): missing or invalid {member!r}")
    return value


def _value(op: dict[str, Any], index: int) -> Any:
    if "value" not in op:
        raise _base.PatchError(f"operation {index} ({op['op']}): missing 'value'")
    return op["value"]


def _array_index(token: str, length: int, path: str, *, allow_end: bool) -> int:
    if token == "-" and allow_end:
        return length
    if not token.isdigit() or (len(token) > 1 and token[0] == "0") or not token.isascii():
        raise _base.PatchError(f"path {path!r}: {token!r} is not a valid array index")
    i = int(token)
    if i > length or (i == length and not allow_end):
        raise _base.PatchError(f"path {path!r}: array index {i} out of bounds (length {length})")
    return i


def _get(doc: Any, tokens: Sequence[str], path: str) -> Any:
    current = doc
    for token in tokens:
        if isinstance(current, dict):
            if token not in current:
                raise _base.PatchError(f"path {path!r} does not exist")
            current = current[token]
        elif isinstance(current, list):
            current = current[_array_index(token, len(current), path, allow_end=False)]
        else:
            raise _base.PatchError(f"path {path!r} does not exist")
    return current


def _add(doc: Any, tokens: Sequence[str], value: Any, path: str) -> Any:
    if not tokens:
        return value
    parent = _get(doc, tokens[:-1], path)
    last = tokens[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_array_index(last, len(parent), path, allow_end=True), value)
    else:
        raise _base.PatchError(f"path {path!r}: parent is not an object or array")
    return doc


def _remove(doc: Any, tokens: Sequence[str], path: str) -> tuple[Any, Any]:
    """Remove the value at ``tokens``; returns (new document, removed value)."""
    if not tokens:
        return None, doc
    parent = _get(doc, tokens[:-1], path)
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise _base.PatchError(f"path {path!r} does not exist")
        return doc, parent.pop(last)
    if isinstance(parent, list):
        return doc, parent.pop(_array_index(last, len(parent), path, allow_end=False))
    raise _base.PatchError(f"path {path!r} does not exist")
