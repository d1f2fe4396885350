"""Finalizers on an object's metadata (controller-runtime's ``controllerutil`` finalizer helpers).

The functions change the object in place and return whether they changed it; writing it back
(``client.update`` or a patch) is the caller's step. A controller that owns external state adds
its finalizer before creating that state, and removes it only after cleaning it up, so a deleted
object lingers (with ``deletionTimestamp`` set) until the cleanup is done.
"""

from __future__ import annotations

from typing import Any

Object = dict[str, Any]


def contains_finalizer(obj: Object, finalizer: str) -> bool:
    """Whether ``metadata.finalizers`` lists ``finalizer``."""
    return finalizer in ((obj.get("metadata") or {}).get("finalizers") or ())


def add_finalizer(obj: Object, finalizer: str) -> bool:
    """Append ``finalizer`` unless present; True if the object changed."""
    meta = obj.setdefault("metadata", {})
    current = meta.get("finalizers") or []
    if finalizer in current:
        return False
    meta["finalizers"] = [*current, finalizer]
    return True


def remove_finalizer(obj: Object, finalizer: str) -> bool:
    """Remove every occurrence of ``finalizer``; True if the object changed."""
    meta = obj.get("metadata") or {}
    current = meta.get("finalizers") or []
    kept = [f for f in current if f != finalizer]
    if len(kept) == len(current):
        return False
    meta["finalizers"] = kept
    return True


def is_being_deleted(obj: Object) -> bool:
    """Whether ``metadata.deletionTimestamp`` is set (the object waits for its finalizers)."""
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))
