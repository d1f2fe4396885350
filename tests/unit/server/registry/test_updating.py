"""The nesting check of an update's result (kplane's limit on stored objects)."""

from __future__ import annotations

from typing import Any

from kplane.api import jsonbody
from kplane.server.registry import updating


def _deep(levels: int) -> dict[str, Any]:
    node: dict[str, Any] = {}
    for _ in range(levels - 1):
        node = {"a": node}
    return node


def test_only_what_the_update_changed_is_walked() -> None:
    """A subtree shared with the stored object passes as it was stored; a new one at the same
    depth is refused; managedFields never count; metadata fields count from their own depth."""
    limit = jsonbody.MAX_DEPTH
    at_limit = _deep(limit - 1)  # root + spec + ... : exactly the limit
    current: dict[str, Any] = {"metadata": {"name": "x", "managedFields": [_deep(limit)]}, "spec": at_limit}
    shared = {**current, "status": {"ok": True}}
    assert not updating._nests_too_deep(shared, current)
    copied = {**current, "spec": _deep(limit - 1)}
    assert not updating._nests_too_deep(copied, current)
    deeper = {**current, "spec": _deep(limit)}
    assert updating._nests_too_deep(deeper, current)
    labels = {**current, "metadata": {**current["metadata"], "labels": _deep(limit - 1)}}
    assert updating._nests_too_deep(labels, current)
    fine = {**current, "metadata": {**current["metadata"], "labels": _deep(limit - 2)}}
    assert not updating._nests_too_deep(fine, current)
    # the same answers as a walk of the whole object, managedFields aside
    for obj in (shared, copied, deeper, labels, fine):
        meta = {k: v for k, v in obj["metadata"].items() if k != "managedFields"}
        assert updating._nests_too_deep(obj, {}) == bool(jsonbody.too_deep({**obj, "metadata": meta}))
