"""Owner references (controller-runtime's ``SetControllerReference`` and ``SetOwnerReference``).

An object has any number of owners and at most one *controller* (the ownerReference with
``controller: true``); ``Builder.owns`` maps events on owned objects to that controller. Rules, as
upstream: references are the same when API group, kind and name match (version and uid are not
compared) and an existing one is replaced, not duplicated; a namespaced owner must be in the
object's namespace and cannot own a cluster-scoped object; an object controlled by someone else
raises ``AlreadyOwnedError`` instead of gaining a second controller. Owners and objects are
JSON-shaped dicts or typed models (a model's class gives its apiVersion and kind when unset).
"""

from __future__ import annotations

from typing import Any

from kplane.runtime import _meta

Object = dict[str, Any]
Obj = _meta.Obj


class AlreadyOwnedError(Exception):
    """The object already has a different controller: ``owner`` is that ownerReference."""

    def __init__(self, obj: Obj, owner: Object) -> None:
        meta = _meta.view(obj).get("metadata") or {}
        self.object = obj
        self.owner = owner
        super().__init__(
            f"Object {meta.get('namespace', '')}/{meta.get('name', '')} is already owned by another "
            f"{owner.get('kind', '')} controller {owner.get('name', '')}"
        )


def owner_reference(owner: Obj, *, controller: bool = False) -> Object:
    """An ownerReference to ``owner`` (which needs apiVersion, kind, name and uid)."""
    owner = _meta.view(owner)
    meta = owner.get("metadata") or {}
    for field, value in (("apiVersion", owner.get("apiVersion")), ("kind", owner.get("kind")),
                         ("metadata.name", meta.get("name")), ("metadata.uid", meta.get("uid"))):  # fmt: skip
        if not value:
            raise ValueError(f"owner has no {field}")
    ref: Object = {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": meta["name"],
        "uid": meta["uid"],
    }
    if controller:
        ref["controller"] = True
        ref["blockOwnerDeletion"] = True
    return ref


def set_controller_reference(owner: Obj, obj: Obj) -> None:
    """Make ``owner`` the controller of ``obj`` (in place); see the module docstring for the rules."""
    owner_view, viewed = _meta.view(owner), _meta.view(obj)
    _validate(owner_view, viewed)
    ref = owner_reference(owner_view, controller=True)
    existing = controller_of(viewed)
    if existing is not None and not _same(existing, ref):
        raise AlreadyOwnedError(obj, existing)
    _upsert(viewed, ref)
    _meta.write_back(obj, viewed)


def set_owner_reference(owner: Obj, obj: Obj) -> None:
    """Add (or refresh) a non-controller reference to ``owner`` on ``obj`` (in place)."""
    owner_view, viewed = _meta.view(owner), _meta.view(obj)
    _validate(owner_view, viewed)
    _upsert(viewed, owner_reference(owner_view))
    _meta.write_back(obj, viewed)


def controller_of(obj: Obj) -> Object | None:
    """The ownerReference with ``controller: true``, if any (as a dict)."""
    for ref in (_meta.view(obj).get("metadata") or {}).get("ownerReferences") or ():
        if ref.get("controller"):
            return dict(ref)
    return None


def has_controller_reference(obj: Obj) -> bool:
    return controller_of(obj) is not None


def is_controlled_by(obj: Obj, owner: Obj) -> bool:
    """Whether ``obj``'s controller is ``owner`` (same uid)."""
    ref = controller_of(obj)
    return ref is not None and ref.get("uid") == (_meta.view(owner).get("metadata") or {}).get("uid")


def _validate(owner: Object, obj: Object) -> None:
    owner_ns = (owner.get("metadata") or {}).get("namespace") or ""
    if not owner_ns:
        return
    obj_ns = (obj.get("metadata") or {}).get("namespace") or ""
    if not obj_ns:
        raise ValueError(
            f"cluster-scoped resource must not have a namespace-scoped owner, owner's namespace {owner_ns}"
        )
    if owner_ns != obj_ns:
        raise ValueError(
            "cross-namespace owner references are disallowed, "
            f"owner's namespace {owner_ns}, obj's namespace {obj_ns}"
        )


def _group(api_version: str) -> str:
    return api_version.rpartition("/")[0]


def _same(a: Object, b: Object) -> bool:
    return (
        _group(str(a.get("apiVersion", ""))) == _group(str(b.get("apiVersion", "")))
        and a.get("kind") == b.get("kind")
        and a.get("name") == b.get("name")
    )


def _upsert(obj: Object, ref: Object) -> None:
    meta = obj.setdefault("metadata", {})
    refs = list(meta.get("ownerReferences") or [])
    for i, existing in enumerate(refs):
        if _same(existing, ref):
            refs[i] = ref
            break
    else:
        refs.append(ref)
    meta["ownerReferences"] = refs
