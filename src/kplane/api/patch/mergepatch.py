"""JSON merge patch (RFC 7386): objects merge recursively, ``null`` deletes, anything else replaces."""

from __future__ import annotations

from typing import Any

from kplane.api.patch import _base


def merge_patch(original: Any, patch: Any, *, share: bool = False) -> Any:
    """Apply a merge patch and return the result; neither argument is modified.

    A non-object patch replaces the document; a key whose patch value is ``null`` is removed;
    arrays are replaced whole. The result shares no mutable parts with either input, except with
    ``share``: then every object on a path the patch touches is new, but the subtrees of
    ``original`` it leaves alone are the original's own (for a caller that owns ``original`` and
    will not change those subtrees in place; a small patch of a large object then copies little).
    """
    if not isinstance(patch, dict):
        return _base.copy_json(patch)
    if not isinstance(original, dict):
        result = {}
    elif share:
        result = dict(original)
    else:
        result = _base.copy_json(original)
    _merge_into(result, patch, share)
    return result


def _merge_into(target: dict[str, Any], patch: dict[str, Any], share: bool) -> None:
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        elif isinstance(value, dict):
            current = target.get(key)
            if not isinstance(current, dict):
                current = target[key] = {}
            elif share:
                current = target[key] = dict(current)
            _merge_into(current, value, share)
        else:
            target[key] = _base.copy_json(value)


def create_merge_patch(original: Any, modified: Any) -> Any:
    """The merge patch that turns ``original`` into ``modified`` (``{}`` when they are equal).

    Keys missing from ``modified`` become ``null``; changed arrays and scalars are sent whole, as
    apimachinery's ``jsonpatch.CreateMergePatch``. ``merge_patch(original, result) == modified``
    holds for JSON objects without ``null`` values.
    """
    if not isinstance(original, dict) or not isinstance(modified, dict):
        return _base.copy_json(modified)
    patch: dict[str, Any] = {}
    for key in original.keys() - modified.keys():
        patch[key] = None
    for key, value in modified.items():
        if key not in original:
            patch[key] = _base.copy_json(value)
        elif isinstance(value, dict) and isinstance(original[key], dict):
            sub = create_merge_patch(original[key], value)
            if sub:
                patch[key] = sub
        elif not _base.json_equal(original[key], value):
            patch[key] = _base.copy_json(value)
    return patch
