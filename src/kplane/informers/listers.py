"""Listers: typed, read-only views of an informer's store (client-go ``listers`` and ``ListAll``).

A ``Lister`` answers ``list`` and ``get`` from the cache, never from the server. ``get`` raises the
API's ``NotFound`` with upstream's message, so callers handle a cache miss exactly like a 404.
Label filtering takes any predicate ``matches(labels) -> bool`` (a compiled label selector's
``matches`` method fits); ``None`` means everything and skips reading labels at all.

Objects are the store's own, not copies: treat them as read-only.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

from kplane.api import errors
from kplane.api import gvk as gvk_mod
from kplane.informers import store as store_mod

O = TypeVar("O")  # noqa: E741 - the object type, as in the store.

LabelPredicate = Callable[[Mapping[str, str]], bool]
"""Decides from an object's labels whether it is selected."""


def _labels(obj: Any) -> Mapping[str, str]:
    labels = store_mod.object_meta(obj, "labels")
    return labels if isinstance(labels, Mapping) else {}


def _select(objs: list[O], selector: LabelPredicate | None) -> list[O]:
    if selector is None:
        return objs
    return [obj for obj in objs if selector(_labels(obj))]


class Lister(Generic[O]):
    """Reads objects of one resource from ``store``; ``resource`` names it in ``NotFound`` errors."""

    def __init__(self, store: store_mod.Store[O], resource: gvk_mod.GroupResource) -> None:
        self.store = store
        self.resource = resource

    def list(self, selector: LabelPredicate | None = None) -> builtins.list[O]:
        """All cached objects (every namespace) whose labels satisfy ``selector``."""
        return _select(self.store.list(), selector)

    def get(self, name: str) -> O:
        """The cluster-scoped object ``name``; raises ``errors.NotFound`` if it is not cached."""
        obj = self.store.get_by_key(name)
        if obj is None:
            raise errors.not_found(self.resource, name)
        return obj

    def namespaced(self, namespace: str) -> NamespaceLister[O]:
        """A lister restricted to ``namespace``."""
        return NamespaceLister(self.store, self.resource, namespace)


class NamespaceLister(Generic[O]):
    """Reads objects of one resource in one namespace, through the store's namespace index."""

    def __init__(self, store: store_mod.Store[O], resource: gvk_mod.GroupResource, namespace: str) -> None:
        self.store = store
        self.resource = resource
        self.namespace = namespace

    def list(self, selector: LabelPredicate | None = None) -> builtins.list[O]:
        """Cached objects in this namespace whose labels satisfy ``selector``.

        The namespace ``""`` means all namespaces (upstream's ``NamespaceAll``).
        """
        if not self.namespace:
            return _select(self.store.list(), selector)
        objs = self.store.by_index(store_mod.NAMESPACE_INDEX, self.namespace)
        return _select(objs, selector)

    def get(self, name: str) -> O:
        """The object ``name`` in this namespace; raises ``errors.NotFound`` if it is not cached."""
        obj = self.store.get_by_key(f"{self.namespace}/{name}")
        if obj is None:
            raise errors.not_found(self.resource, name)
        return obj
