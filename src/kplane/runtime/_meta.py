"""A JSON-shaped view of an object's metadata, for helpers that accept dicts and typed models alike.

The finalizer and owner-reference helpers are written once, on the JSON shape (``metadata.finalizers``,
``metadata.ownerReferences``). ``view(obj)`` gives them that shape: a dict is its own view; a model
instance (a generated model or a ``markers.kind`` CRD type) is converted, and ``write_back`` stores
the view's ``metadata`` into the model again, so the caller's object changes in place either way.
"""

from __future__ import annotations

from typing import Any

import msgspec

from kplane.runtime import client as client_mod

Object = dict[str, Any]
Obj = Object | msgspec.Struct
"""An object: a JSON-shaped dict or a model instance with a ``metadata`` field."""


def view(obj: Obj) -> Object:
    """``obj`` as a JSON-shaped dict (itself when it is one; a copy of a model, kind filled in)."""
    return client_mod.to_dict(obj)


def write_back(obj: Obj, viewed: Object) -> None:
    """Store ``viewed['metadata']`` into ``obj`` when ``obj`` is a model (a dict view is ``obj``)."""
    if isinstance(obj, dict):
        return
    field = next((f for f in msgspec.structs.fields(type(obj)) if f.name == "metadata"), None)
    if field is None:
        raise TypeError(f"{type(obj).__qualname__} has no metadata field")
    obj.metadata = msgspec.convert(viewed.get("metadata") or {}, field.type)  # type: ignore[attr-defined]
