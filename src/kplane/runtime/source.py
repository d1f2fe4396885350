"""Sources: where a controller's events come from.

``Kind`` is the one every builder watch uses: the shared cache's informer of one resource, its events
filtered by predicates (AND-ed) and mapped to requests by an event handler. ``start`` registers with
the informer and returns at once (the informer may still be syncing); ``has_synced`` turns true once
the informer has synced *and* this source has handed the whole initial list to its handler, so a
controller that waits for it starts its workers with every existing object already queued.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

from kplane.informers import handlers as handlers_mod
from kplane.informers import informer as informer_mod
from kplane.runtime import handler as handler_mod
from kplane.runtime import predicate as predicate_mod
from kplane.runtime import tracing


class Source(Protocol):
    """Feeds requests into a controller's queue."""

    async def start(self, queue: handler_mod.RequestQueue) -> None:
        """Begin delivering; must not wait for the initial sync (that is ``has_synced``)."""
        ...

    def has_synced(self) -> bool:
        """True once everything that existed at start has been delivered."""
        ...


InformerGetter = Callable[[], Awaitable[informer_mod.SharedIndexInformer[Any]]]


@dataclasses.dataclass
class Kind:
    """Events of one resource from the shared cache (``get_informer`` returns its informer)."""

    get_informer: InformerGetter
    handler: handler_mod.EventHandler
    predicates: Sequence[predicate_mod.Predicate] = ()
    description: str = ""
    _registration: handlers_mod.HandlerRegistration | None = dataclasses.field(default=None, init=False)

    async def start(self, queue: handler_mod.RequestQueue) -> None:
        informer = await self.get_informer()
        self._registration = informer.add_event_handler(_Adapter(self.handler, tuple(self.predicates), queue))

    def has_synced(self) -> bool:
        return self._registration is not None and self._registration.has_synced()

    def __str__(self) -> str:
        return f"kind source: {self.description}"


class _Adapter:
    """An informer event handler applying predicates, then the event handler."""

    __slots__ = ("handler", "predicates", "queue")

    def __init__(
        self,
        handler: handler_mod.EventHandler,
        predicates: tuple[predicate_mod.Predicate, ...],
        queue: handler_mod.RequestQueue,
    ) -> None:
        self.handler = handler
        self.predicates = predicates
        self.queue = queue

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        if all(p.create(obj) for p in self.predicates):
            if isinstance(self.queue, tracing.TriggerQueue):
                kind = "InitialList" if is_in_initial_list else "Event"
                self.queue.event("ADDED", obj, self.handler, kind=kind)
            self.handler.create(obj, self.queue)

    def on_update(self, old: Any, new: Any) -> None:
        if all(p.update(old, new) for p in self.predicates):
            if isinstance(self.queue, tracing.TriggerQueue):
                same = tracing.same_version(old, new)  # an informer resync re-delivers the object
                self.queue.event("MODIFIED", new, self.handler, kind="Resync" if same else "Event")
            self.handler.update(old, new, self.queue)

    def on_delete(self, obj: Any) -> None:
        if isinstance(obj, handlers_mod.DeletedFinalStateUnknown):
            obj = obj.obj
        if all(p.delete(obj) for p in self.predicates):
            if isinstance(self.queue, tracing.TriggerQueue):
                self.queue.event("DELETED", obj, self.handler)
            self.handler.delete(obj, self.queue)
