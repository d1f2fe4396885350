"""JSON merge patch (RFC 7386): objects merge recursively, ``null`` deletes, anything else replaces."""

from __future__ import annotations

from typing import Any

from kplane.api.patch import _base


def merge_patch(original: Any, patch: Any) -> Any:
    """Apply a merge patch and return the result; neither argument is modified.

    A non-object patch replaces the document; a key whose patch value is ``null`` is removed;
    arrays are replaced whole. The result shares no mutable parts with either input.
    """
    if not isinstance(patch, dict):
        return _base.copy_json(patch)
    result = _base.copy_json(original) if isinstance(original, dict) else {}
    _merge_into(result, patch)
    return result


def _merge_into(target: dict[str, Any], patch: dict[str, Any]) -> None:
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        elif isinstance(value, dict):
            current = target.get(key)
            if not isinstance(current, dict):
                current = target[key] = {}
            _merge_into(current, value)
        else:
            target[key] = _base.copy_json(value)
