"""Event handlers of a shared informer, and the per-handler delivery queue behind each one.

A handler receives ``on_add``, ``on_update`` and ``on_delete`` notifications (client-go's
``ResourceEventHandler``). Handler methods may be plain functions or coroutine functions: a result
that is awaitable is awaited before the next notification goes to that handler.

Contract:

* Objects handed to a handler are the cache's own: **treat them as read-only**. Mutating one would
  corrupt the cache's indexes and every other handler's view; copy first if you must change it.
* Notifications to one handler arrive one at a time, in the order the informer saw the changes
  (per object, and across objects). Handlers are not coordinated with each other: each has its own
  unbounded buffer and its own task, so a slow handler delays only itself (and grows its buffer).
* ``on_delete`` may receive a ``DeletedFinalStateUnknown`` tombstone instead of the object, when a
  deletion was discovered by a relist rather than seen as an event; its ``obj`` is the last state the
  cache knew.
* An exception raised by a handler is logged with its traceback and that notification is skipped;
  the informer and the other handlers carry on.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Generic, Protocol, TypeVar

log = logging.getLogger(__name__)

O = TypeVar("O")  # noqa: E741 - the object type, as in the store.
O_co = TypeVar("O_co", covariant=True)

MaybeAwaitable = Awaitable[None] | None


@dataclasses.dataclass(frozen=True, slots=True)
class DeletedFinalStateUnknown(Generic[O_co]):
    """A deletion found by a relist: ``obj`` is the last state the cache held under ``key``."""

    key: str
    obj: O_co


class ResourceEventHandler(Protocol):
    """Receives an informer's notifications. See the module docstring for the contract."""

    def on_add(self, obj: Any, is_in_initial_list: bool) -> MaybeAwaitable:
        """``obj`` appeared; ``is_in_initial_list`` is true for the initial sync's objects."""
        ...

    def on_update(self, old: Any, new: Any) -> MaybeAwaitable:
        """``old`` became ``new``; on a periodic resync both are the same object."""
        ...

    def on_delete(self, obj: Any) -> MaybeAwaitable:
        """``obj`` (or a ``DeletedFinalStateUnknown``) is gone."""
        ...


@dataclasses.dataclass(frozen=True)
class HandlerFuncs:
    """A ``ResourceEventHandler`` from up to three plain (or async) functions; missing ones ignore.

    ``add`` takes just the object (use a full handler class to see ``is_in_initial_list``).
    """

    add: Callable[[Any], MaybeAwaitable] | None = None
    update: Callable[[Any, Any], MaybeAwaitable] | None = None
    delete: Callable[[Any], MaybeAwaitable] | None = None

    def on_add(self, obj: Any, is_in_initial_list: bool) -> MaybeAwaitable:
        return self.add(obj) if self.add is not None else None

    def on_update(self, old: Any, new: Any) -> MaybeAwaitable:
        return self.update(old, new) if self.update is not None else None

    def on_delete(self, obj: Any) -> MaybeAwaitable:
        return self.delete(obj) if self.delete is not None else None


ADD, UPDATE, DELETE = 0, 1, 2
Notification = tuple[int, Any, Any]


class Listener:
    """One handler's unbounded notification buffer and the task that drains it in order.

    ``resync_period`` of 0 means the handler wants no resyncs; ``next_resync`` is the monotonic time
    its next one is due. ``has_synced`` is true once every notification enqueued up to the
    informer's initial sync (``mark_synced``) has been handled.
    """

    def __init__(self, handler: ResourceEventHandler, resync_period: float) -> None:
        self.handler = handler
        self.resync_period = resync_period
        self.next_resync = 0.0
        self._buffer: collections.deque[Notification] = collections.deque()
        self._wake = asyncio.Event()
        self._enqueued = 0
        self._handled = 0
        self._sync_mark: int | None = None
        self._task: asyncio.Task[None] | None = None

    def add(self, kind: int, a: Any, b: Any = None) -> None:
        """Queue one notification; never blocks."""
        self._buffer.append((kind, a, b))
        self._enqueued += 1
        self._wake.set()

    def mark_synced(self) -> None:
        """The initial notifications are all queued: ``has_synced`` once they are handled."""
        if self._sync_mark is None:
            self._sync_mark = self._enqueued

    def has_synced(self) -> bool:
        return self._sync_mark is not None and self._handled >= self._sync_mark

    def pending(self) -> int:
        """Notifications queued and not yet handled."""
        return self._enqueued - self._handled

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        """Stop delivering; notifications still queued are dropped."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def _run(self) -> None:
        while True:
            if not self._buffer:
                self._wake.clear()
                await self._wake.wait()
                continue
            kind, a, b = self._buffer.popleft()
            try:
                if kind == ADD:
                    result = self.handler.on_add(a, b)
                elif kind == UPDATE:
                    result = self.handler.on_update(a, b)
                else:
                    result = self.handler.on_delete(a)
                if result is not None and inspect.isawaitable(result):  # skips its ABC check
                    await result
            except Exception:
                log.exception("informer event handler %r failed", self.handler)
            finally:
                self._handled += 1


class HandlerRegistration:
    """The handle ``add_event_handler`` returns; pass it to ``remove_event_handler``."""

    def __init__(self, listener: Listener, informer_synced: Callable[[], bool]) -> None:
        self.listener = listener
        self._informer_synced = informer_synced

    def has_synced(self) -> bool:
        """True once the informer has synced and this handler has handled the whole initial list."""
        return self._informer_synced() and self.listener.has_synced()
