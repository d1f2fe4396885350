"""Owner references (controller-runtime's ``SetControllerReference`` and ``SetOwnerReference``).

An object has any number of owners and at most one *controller* (the ownerReference with
``controller: true``); ``Builder.owns`` maps events on owned objects to that controller. Rules, as
upstream: references are the same when API group, kind and name match (version and uid are not
compared) and an existing one is replaced, not duplicated; a namespaced owner must be in the
object's namespace and cannot own a cluster-scoped object; an object controlled by someone else
raises ``AlreadyOwnedError`` instead of gaining a second controller.
"""

from __future__ import annotations

from typing import Any

Object = dict[str, Any]


class AlreadyOwnedError(Exception):
    """The object already has a different controller: ``owner`` is that ownerReference."""

    def __init__(self, obj: Object, owner: Object) -> None:
        meta = obj.get("metadata") or {}
        self.object = obj
        self.owner = owner
        super().__init__(
            f"Object {meta.get('namespace', '')}/{meta.get('name', '')} is already owned by another "
            f"{owner.get('kind', '')} controller {owner.get('name', '')}"
        )


def owner_reference(owner: Object, *, controller: bool = False) -> Object:
    """An ownerReference to ``owner`` (which needs apiVersion, kind, name and uid)."""
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


def set_controller_reference(owner: Object, obj: Object) -> None:
    """Make ``owner`` the controller of ``obj`` (in place); see the module docstring for the rules."""
    _validate(owner, obj)
    ref = owner_reference(owner, controller=True)
    existing = controller_of(obj)
    if existing is not None and not _same(existing, ref):
        raise AlreadyOwnedError(obj, existing)
    _upsert(obj, ref)


def set_owner_reference(owner: Object, obj: Object) -> None:
    """Add (or refresh) a non-controller reference to ``owner`` on ``obj`` (in place)."""
    _validate(owner, obj)
    _upsert(obj, owner_reference(owner))


def controller_of(obj: Object) -> Object | None:
    """The ownerReference with ``controller: true``, if any."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or ():
        if ref.get("controller"):
            return dict(ref)
    return None


def has_controller_reference(obj: Object) -> bool:
    return controller_of(obj) is not None


def is_controlled_by(obj: Object, owner: Object) -> bool:
    """Whether ``obj``'s controller is ``owner`` (same uid)."""
    ref = controller_of(obj)
    return ref is not None and ref.get("uid") == (owner.get("metadata") or {}).get("uid")


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
