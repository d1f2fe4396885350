"""Predicates: which informer events reach a controller's event handler.

A ``Predicate`` answers, per event kind, "should this event be handled?"; any predicate saying no
drops the event (several predicates on one watch are AND-ed). The change predicates filter only
updates: create, delete and generic events always pass, as upstream's do (``pkg/predicate``):

* ``GenerationChanged`` — ``metadata.generation`` changed: spec edits pass, status-only writes
  (which do not bump generation where the status subresource exists) do not;
* ``ResourceVersionChanged`` — drops resync re-deliveries;
* ``LabelsChanged`` / ``AnnotationsChanged`` — the maps differ.

``and_``, ``or_`` and ``not_`` combine them. A plain function ``f(obj) -> bool`` is a predicate
applied to every event (the new object for updates), as upstream's ``NewPredicateFuncs``.
Predicates receive the cache's own objects: they must not modify them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from kplane.informers import store as store_mod


@runtime_checkable
class Predicate(Protocol):
    """Filters events by kind; each method returns True to let the event through."""

    def create(self, obj: Any) -> bool: ...

    def update(self, old: Any, new: Any) -> bool: ...

    def delete(self, obj: Any) -> bool: ...

    def generic(self, obj: Any) -> bool: ...


ObjectFilter = Callable[[Any], bool]
"""A plain function of one object, applied to every kind of event."""


@dataclasses.dataclass(frozen=True)
class Funcs:
    """A predicate from optional functions; a missing one lets its events through."""

    on_create: Callable[[Any], bool] | None = None
    on_update: Callable[[Any, Any], bool] | None = None
    on_delete: Callable[[Any], bool] | None = None
    on_generic: Callable[[Any], bool] | None = None

    def create(self, obj: Any) -> bool:
        return self.on_create is None or self.on_create(obj)

    def update(self, old: Any, new: Any) -> bool:
        return self.on_update is None or self.on_update(old, new)

    def delete(self, obj: Any) -> bool:
        return self.on_delete is None or self.on_delete(obj)

    def generic(self, obj: Any) -> bool:
        return self.on_generic is None or self.on_generic(obj)


def from_function(fn: ObjectFilter) -> Funcs:
    """The predicate applying ``fn`` to every event (the new object of an update)."""
    return Funcs(fn, lambda _old, new: fn(new), fn, fn)


def as_predicate(p: Predicate | ObjectFilter) -> Predicate:
    """``p`` itself if it is a ``Predicate``, else the predicate of a plain function."""
    if isinstance(p, Predicate):
        return p
    return from_function(p)


class _UpdateOnly:
    """Base of the change predicates: every event but an update passes."""

    def create(self, obj: Any) -> bool:
        return True

    def delete(self, obj: Any) -> bool:
        return True

    def generic(self, obj: Any) -> bool:
        return True


class _MetaChanged(_UpdateOnly):
    field = ""

    def update(self, old: Any, new: Any) -> bool:
        if old is None or new is None:
            return False
        return bool(store_mod.object_meta(old, self.field) != store_mod.object_meta(new, self.field))


class GenerationChanged(_MetaChanged):
    """Updates pass only when ``metadata.generation`` changed."""

    field = "generation"


class ResourceVersionChanged(_MetaChanged):
    """Updates pass only when ``metadata.resourceVersion`` changed (drops resyncs)."""

    field = "resourceVersion"


class _MapChanged(_UpdateOnly):
    field = ""

    def update(self, old: Any, new: Any) -> bool:
        if old is None or new is None:
            return False
        before = store_mod.object_meta(old, self.field) or {}
        after = store_mod.object_meta(new, self.field) or {}
        return bool(before != after)


class LabelsChanged(_MapChanged):
    """Updates pass only when the labels differ."""

    field = "labels"


class AnnotationsChanged(_MapChanged):
    """Updates pass only when the annotations differ."""

    field = "annotations"


@dataclasses.dataclass(frozen=True)
class _All:
    parts: tuple[Predicate, ...]

    def create(self, obj: Any) -> bool:
        return all(p.create(obj) for p in self.parts)

    def update(self, old: Any, new: Any) -> bool:
        return all(p.update(old, new) for p in self.parts)

    def delete(self, obj: Any) -> bool:
        return all(p.delete(obj) for p in self.parts)

    def generic(self, obj: Any) -> bool:
        return all(p.generic(obj) for p in self.parts)


@dataclasses.dataclass(frozen=True)
class _Any:
    parts: tuple[Predicate, ...]

    def create(self, obj: Any) -> bool:
        return any(p.create(obj) for p in self.parts)

    def update(self, old: Any, new: Any) -> bool:
        return any(p.update(old, new) for p in self.parts)

    def delete(self, obj: Any) -> bool:
        return any(p.delete(obj) for p in self.parts)

    def generic(self, obj: Any) -> bool:
        return any(p.generic(obj) for p in self.parts)


@dataclasses.dataclass(frozen=True)
class _Not:
    part: Predicate

    def create(self, obj: Any) -> bool:
        return not self.part.create(obj)

    def update(self, old: Any, new: Any) -> bool:
        return not self.part.update(old, new)

    def delete(self, obj: Any) -> bool:
        return not self.part.delete(obj)

    def generic(self, obj: Any) -> bool:
        return not self.part.generic(obj)


def and_(*predicates: Predicate | ObjectFilter) -> Predicate:
    """Passes an event when every predicate does (none: everything passes)."""
    return _All(tuple(as_predicate(p) for p in predicates))


def or_(*predicates: Predicate | ObjectFilter) -> Predicate:
    """Passes an event when at least one predicate does (none: nothing passes)."""
    return _Any(tuple(as_predicate(p) for p in predicates))


def not_(predicate: Predicate | ObjectFilter) -> Predicate:
    """Passes exactly the events ``predicate`` drops."""
    return _Not(as_predicate(predicate))
