"""A JSON patch (RFC 6902) that turns one JSON document into another: what webhooks send back.

``create_patch(original, current)`` compares the two trees: a key only in ``current`` is an
``add``, a key only in ``original`` a ``remove``, a scalar or type change a ``replace``; objects are
compared key by key (keys in sorted order, so the patch is deterministic) and arrays element by
element over their common length, then the longer side's tail is added (in order) or removed (from
the end, so earlier indices stay valid). Applying the result to ``original`` with
``jsonpatch.json_patch`` gives ``current``. Paths escape ``~`` and ``/`` as RFC 6901 requires.
"""

from __future__ import annotations

from typing import Any

Operation = dict[str, Any]


def escape(token: str) -> str:
    """One RFC 6901 reference token."""
    return token.replace("~", "~0").replace("/", "~1")


def create_patch(original: Any, current: Any) -> list[Operation]:
    """The operations turning ``original`` into ``current`` (empty when they are equal)."""
    ops: list[Operation] = []
    _diff(original, current, "", ops)
    return ops


def _same(a: Any, b: Any) -> bool:
    # JSON equality: 1 and 1.0 are one number, but True is not 1.
    return (type(a) is type(b) and a == b) or (_number(a) and _number(b) and a == b)


def _number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _diff(a: Any, b: Any, path: str, ops: list[Operation]) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(a.keys() | b.keys()):
            child = f"{path}/{escape(key)}"
            if key not in b:
                ops.append({"op": "remove", "path": child})
            elif key not in a:
                ops.append({"op": "add", "path": child, "value": b[key]})
            else:
                _diff(a[key], b[key], child, ops)
        return
    if isinstance(a, list) and isinstance(b, list):
        common = min(len(a), len(b))
        for i in range(common):
            _diff(a[i], b[i], f"{path}/{i}", ops)
        for i in range(common, len(b)):
            ops.append({"op": "add", "path": f"{path}/{i}", "value": b[i]})
        for i in range(len(a) - 1, common - 1, -1):
            ops.append({"op": "remove", "path": f"{path}/{i}"})
        return
    if not _same(a, b):
        ops.append({"op": "replace", "path": path, "value": b})
