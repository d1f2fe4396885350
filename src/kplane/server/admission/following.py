"""Admission configuration kept compiled and current from the cache (upstream's informer-fed
policy and webhook sources).

``Follower(storage, prefix, compile)`` holds ``compile(obj)`` of every object under ``prefix``.
It follows the cache's synchronous event listener, so an object written by one request is in force
for the next; it loads the objects from storage on first use (and on every use when the storage
has no listener). ``compile`` runs once per write of an object, never per request, and must not
raise (a listener must not). ``version`` changes whenever the compiled set does, so derived
indexes can be rebuilt lazily.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

from kplane.server import storage

T = TypeVar("T")
Object = dict[str, Any]


class Follower(Generic[T]):
    """The compiled objects of one key prefix, by key."""

    def __init__(self, store: storage.Storage, prefix: str, compile: Callable[[Object], T]) -> None:
        self._storage = store
        self._prefix = prefix
        self._compile = compile
        self._items: dict[str, T] = {}
        self._loaded = False
        self.version = 0
        listen = getattr(store, "listen", None)
        self._follows = listen is not None
        if listen is not None:
            listen(self._on_event, self._prefix)

    def _on_event(self, event: storage.Event) -> None:
        if not self._loaded or not event.key.startswith(self._prefix):
            return
        if event.type == storage.DELETED:
            self._items.pop(event.key, None)
        else:
            self._items[event.key] = self._compile(event.object)
        self.version += 1

    @property
    def loaded_empty(self) -> bool:
        """True once loaded while nothing exists: what a request with no configuration checks."""
        return self._loaded and self._follows and not self._items

    async def items(self) -> dict[str, T]:
        """Every compiled object, by storage key (shared: do not modify)."""
        if not self._loaded or not self._follows:
            found = (await self._storage.list(self._prefix)).items
            # No await between reading and installing the snapshot: events the listener skipped
            # before it are contained in it.
            self._items = {
                self._prefix + str((obj.get("metadata") or {}).get("name") or ""): self._compile(obj)
                for obj in found
            }
            self._loaded = True
            self.version += 1
        return self._items
