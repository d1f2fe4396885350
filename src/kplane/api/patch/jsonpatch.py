"""JSON patch (RFC 6902) over JSON pointers (RFC 6901).

The document is copied once and the operations are applied to the copy in order; the first failing
operation aborts the whole patch (atomicity, as the RFC requires), so callers never see a half-applied
result. Values taken from the patch are copied too, so the result shares nothing with either input.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kplane.api.patch import _base

_OPS = frozenset({"add", "remove", "replace", "move", "copy", "test"})


def json_patch(document: Any, operations: Any) -> Any:
    """Apply a JSON patch (a list of operation objects) and return the patched document.

    Raises ``PatchError`` for a malformed patch, a path that does not exist where the operation needs
    it, or a failed ``test``. Neither argument is modified.
    """
    if not isinstance(operations, list):
        raise _base.PatchError("a JSON patch must be a list of operations")
    doc = _base.copy_json(document)
    for index, op in enumerate(operations):
        doc = _apply(doc, op, index)
    return doc


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


def _apply(doc: Any, op: Any, index: int) -> Any:
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
            value = _base.copy_json(_get(doc, parse_pointer(source), source))
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
