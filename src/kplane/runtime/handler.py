"""Event handlers: turn an informer event on some object into reconcile ``Request``s.

A handler maps an event to the requests it implies and adds them to the controller's queue, which
deduplicates them: many events about one object before a worker gets to it become one reconcile.

* ``EnqueueRequestForObject`` — the object itself (what ``Builder.for_`` uses);
* ``EnqueueRequestForOwner`` — the owner named in the object's ``ownerReferences`` (``Builder.owns``):
  matched on API group and kind (the version is ignored), only the ``controller: true`` reference
  unless ``only_controller=False``; on update the owners of both the old and the new object;
* ``EnqueueRequestsFromMapFunc`` — whatever a function of the object returns (a plain function
  given to ``Builder.watches`` becomes one).

Handlers receive the cache's own objects and must not modify them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import Any, Protocol, runtime_checkable

from kplane.informers import store as store_mod
from kplane.runtime import reconcile


class RequestQueue(Protocol):
    """Where handlers put requests (a controller's work queue)."""

    def add(self, item: reconcile.Request) -> None: ...


@runtime_checkable
class EventHandler(Protocol):
    """Maps each kind of event to requests on ``queue``; must not block or modify objects."""

    def create(self, obj: Any, queue: RequestQueue) -> None: ...

    def update(self, old: Any, new: Any, queue: RequestQueue) -> None: ...

    def delete(self, obj: Any, queue: RequestQueue) -> None: ...

    def generic(self, obj: Any, queue: RequestQueue) -> None: ...


MapFunc = Callable[[Any], Iterable[reconcile.Request]]
"""A function from an object to the requests it should trigger."""


def request_for(obj: Any) -> reconcile.Request:
    """The request naming ``obj`` itself."""
    return reconcile.Request(
        str(store_mod.object_meta(obj, "namespace") or ""), str(store_mod.object_meta(obj, "name") or "")
    )


class _Mapping:
    """A handler that adds ``requests(obj)`` for every event (old and new objects on update)."""

    def requests(self, obj: Any) -> Iterable[reconcile.Request]:
        raise NotImplementedError

    def create(self, obj: Any, queue: RequestQueue) -> None:
        for req in self.requests(obj):
            queue.add(req)

    def update(self, old: Any, new: Any, queue: RequestQueue) -> None:
        seen = set(self.requests(new))
        if old is not None:
            seen.update(self.requests(old))
        for req in seen:
            queue.add(req)

    def delete(self, obj: Any, queue: RequestQueue) -> None:
        self.create(obj, queue)

    def generic(self, obj: Any, queue: RequestQueue) -> None:
        self.create(obj, queue)


class EnqueueRequestForObject(_Mapping):
    """Enqueues the object the event is about (the new one on update)."""

    def requests(self, obj: Any) -> Iterable[reconcile.Request]:
        return (request_for(obj),)

    def update(self, old: Any, new: Any, queue: RequestQueue) -> None:
        queue.add(request_for(new if new is not None else old))


@dataclasses.dataclass(frozen=True)
class EnqueueRequestForOwner(_Mapping):
    """Enqueues the owner (``group``/``kind``) referenced by the object's ``ownerReferences``.

    The request takes the object's namespace, or none when the owner kind is cluster-scoped
    (``owner_namespaced=False``).
    """

    group: str
    kind: str
    owner_namespaced: bool = True
    only_controller: bool = True

    def requests(self, obj: Any) -> Iterable[reconcile.Request]:
        refs = store_mod.object_meta(obj, "ownerReferences") or ()
        namespace = str(store_mod.object_meta(obj, "namespace") or "") if self.owner_namespaced else ""
        out = []
        for ref in refs:
            if self.only_controller and not _field(ref, "controller"):
                continue
            group = str(_field(ref, "apiVersion") or "").rpartition("/")[0]
            if _field(ref, "kind") == self.kind and group == self.group:
                out.append(reconcile.Request(namespace, str(_field(ref, "name") or "")))
        return out


def _field(ref: Any, key: str) -> Any:
    """A field of an owner reference, given as a dict or as a typed model."""
    if isinstance(ref, dict):
        return ref.get(key)
    return getattr(ref, "api_version" if key == "apiVersion" else key, None)


@dataclasses.dataclass(frozen=True)
class EnqueueRequestsFromMapFunc(_Mapping):
    """Enqueues whatever ``fn(obj)`` returns, for the old and the new object of an update."""

    fn: MapFunc

    def requests(self, obj: Any) -> Iterable[reconcile.Request]:
        return self.fn(obj)


def as_handler(handler: EventHandler | MapFunc) -> EventHandler:
    """``handler`` itself if it is an ``EventHandler``, else the map-function handler of it."""
    if isinstance(handler, EventHandler):
        return handler
    return EnqueueRequestsFromMapFunc(handler)
