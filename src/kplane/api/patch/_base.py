"""What every patch flavour shares: its error type and JSON-value copying and comparison."""

from __future__ import annotations

from typing import Any


class PatchError(ValueError):
    """A patch that cannot be applied: malformed, or not applicable to this document.

    The server answers it with 422 Unprocessable Entity / 400 Bad Request as upstream does; the
    message is meant for the user.
    """


def copy_json(value: Any) -> Any:
    """A deep copy of a JSON-shaped value (dicts, lists, scalars); much faster than ``copy.deepcopy``."""
    if isinstance(value, dict):
        return {k: copy_json(v) if isinstance(v, dict | list) else v for k, v in value.items()}
    if isinstance(value, list):
        return [copy_json(v) if isinstance(v, dict | list) else v for v in value]
    return value


def json_equal(a: Any, b: Any) -> bool:
    """Equality of JSON values: ``true`` is not ``1``, but ``1`` equals ``1.0``; key order is ignored."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a is b
    if isinstance(a, dict):
        if not isinstance(b, dict) or a.keys() != b.keys():
            return False
        return all(json_equal(v, b[k]) for k, v in a.items())
    if isinstance(a, list):
        if not isinstance(b, list) or len(a) != len(b):
            return False
        return all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    return type(a) is type(b) and a == b
