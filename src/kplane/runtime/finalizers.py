"""Finalizers on an object's metadata (controller-runtime's ``controllerutil`` finalizer helpers).

The functions change the object in place and return whether they changed it; writing it back
(``client.update`` or a patch) is the caller's step. A controller that owns external state adds
its finalizer before creating that state, and removes it only after cleaning it up, so a deleted
object lingers (with ``deletionTimestamp`` set) until the cleanup is done. Objects are
JSON-shaped dicts or typed models (generated ones, ``markers.kind`` CRD types), changed in place.
"""

from __future__ import annotations

from kplane.runtime import _meta

Obj = _meta.Obj


def contains_finalizer(obj: Obj, finalizer: str) -> bool:
    """Whether ``metadata.finalizers`` lists ``finalizer``."""
    return finalizer in ((_meta.view(obj).get("metadata") or {}).get("finalizers") or ())


def add_finalizer(obj: Obj, finalizer: str) -> bool:
    """Append ``finalizer`` unless present; True if the object changed."""
    viewed = _meta.view(obj)
    meta = viewed.setdefault("metadata", {})
    current = meta.get("finalizers") or []
    if finalizer in current:
        return False
    meta["finalizers"] = [*current, finalizer]
    _meta.write_back(obj, viewed)
    return True


def remove_finalizer(obj: Obj, finalizer: str) -> bool:
    """Remove every occurrence of ``finalizer``; True if the object changed."""
    viewed = _meta.view(obj)
    meta = viewed.get("metadata") or {}
    current = meta.get("finalizers") or []
    kept = [f for f in current if f != finalizer]
    if len(kept) == len(current):
        return False
    meta["finalizers"] = kept
    _meta.write_back(obj, viewed)
    return True


def is_being_deleted(obj: Obj) -> bool:
    """Whether ``metadata.deletionTimestamp`` is set (the object waits for its finalizers)."""
    return bool((_meta.view(obj).get("metadata") or {}).get("deletionTimestamp"))
