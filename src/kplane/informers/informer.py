"""SharedIndexInformer: one reflector, one indexed cache, any number of event handlers.

Design note. client-go puts a FIFO between the reflector and the cache because its reflector and
its handlers run on different goroutines. Here everything runs on one asyncio event loop, so the
reflector writes straight into the informer (a ``ReflectorStore``), and the informer updates the
cache and queues notifications to each handler's own buffer in the same synchronous step. That gives
the semantics client-go's default ``RealFIFO`` aims for: every change is delivered in order with no
coalescing, and a relist is atomic (the cache is replaced first; then handlers get deletions, as
tombstones, for objects missing from the list, then adds and updates in list order). An update whose
old and new resourceVersion are equal is a resync, not a change: it goes only to handlers whose
resync is due, which is also what a relist of unchanged objects produces (nothing).

Guarantees: the sequence of states each handler sees for an object is a subsequence of the states
the server had; the cache is equal to the server's state as of ``last_sync_resource_version``.
Handlers receive the cache's own objects and must treat them as read-only (``handlers`` module).

Resync (client-go's numbers): a handler's resync period of 0 means none; below 1 s it is raised to
1 s; below the informer's check period it lowers the check period if the informer has not started,
and is raised to it otherwise. Resync never talks to the server: it re-delivers cached objects as
``on_update(obj, obj)``.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import dataclasses
import logging
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

from kplane._util import clock as clock_mod
from kplane.api import gvk as gvk_mod
from kplane.client import watch as watch_mod
from kplane.informers import handlers as handlers_mod
from kplane.informers import listers as listers_mod
from kplane.informers import reflector as reflector_mod
from kplane.informers import store as store_mod

log = logging.getLogger(__name__)

O = TypeVar("O")  # noqa: E741 - the cached object type (dicts unless a transform says otherwise).

MINIMUM_RESYNC_PERIOD = 1.0
SYNCED_POLL_PERIOD = 0.1
_NO_RESOURCE = gvk_mod.GroupResource("", "")


class InformerStateError(Exception):
    """An operation that is only allowed before start (or before stop) came too late."""


@dataclasses.dataclass(frozen=True)
class InformerOptions:
    """How an informer lists, caches and resyncs; the defaults are client-go's.

    ``resync_period`` is the default handler resync period and the initial check period (0: none).
    ``transform`` runs once per object before it is cached (see ``strip_managed_fields``).
    ``resource`` names the resource in listers' ``NotFound`` errors.
    """

    resync_period: float = 0.0
    indexers: Mapping[str, store_mod.IndexFunc] | None = None
    transform: reflector_mod.Transform | None = None
    use_watch_list: bool | None = None
    resource: gvk_mod.GroupResource = _NO_RESOURCE
    name: str = ""


class SharedIndexInformer(Generic[O]):
    """Keeps ``store`` equal to the server's objects of one resource and tells handlers of changes.

    ``run()`` blocks until cancelled (``start()`` runs it as a task). Handlers may be added before or
    after start; one added after start first receives ``on_add(obj, True)`` for every cached object.
    """

    def __init__(
        self,
        lw: watch_mod.ListerWatcher,
        options: InformerOptions | None = None,
        *,
        clock: clock_mod.Clock | None = None,
    ) -> None:
        self._opts = options or InformerOptions()
        self._lw = lw
        self._clock: clock_mod.Clock = clock or clock_mod.RealClock()
        self.store: store_mod.Store[O] = store_mod.Store(indexers=self._opts.indexers)
        self._transform = self._opts.transform
        self._listeners: builtins.list[handlers_mod.Listener] = []
        self._check_period = self._opts.resync_period
        self._started = False
        self._stopped = False
        self._synced = False
        self._synced_event = asyncio.Event()
        self._reflector: reflector_mod.Reflector | None = None
        self._task: asyncio.Task[None] | None = None
        self._last_rv = ""

    # Configuration.

    def set_transform(self, transform: reflector_mod.Transform) -> None:
        """Set the transform; raises ``InformerStateError`` once the informer has started."""
        if self._started:
            raise InformerStateError("informer has already started")
        self._transform = transform

    def add_indexers(self, indexers: Mapping[str, store_mod.IndexFunc]) -> None:
        """Add indexes (allowed while running; the cache is indexed at once)."""
        if self._stopped:
            raise InformerStateError("informer has already stopped")
        self.store.add_indexers(indexers)

    def add_event_handler(
        self, handler: handlers_mod.ResourceEventHandler, *, resync_period: float | None = None
    ) -> handlers_mod.HandlerRegistration:
        """Register ``handler``; ``resync_period`` defaults to the informer's (rules: module doc)."""
        if self._stopped:
            raise InformerStateError("handler added after the informer stopped")
        period = self._opts.resync_period if resync_period is None else resync_period
        if period > 0:
            period = max(period, MINIMUM_RESYNC_PERIOD)
            if period < self._check_period:
                if self._started:
                    log.warning("resync period %.1fs below the informer's %.1fs", period, self._check_period)
                    period = self._check_period
                else:
                    self._check_period = period
        listener = handlers_mod.Listener(handler, _effective_period(period, self._check_period))
        listener.next_resync = self._clock.monotonic() + listener.resync_period
        self._listeners.append(listener)
        if not self._started:
            for other in self._listeners:
                other.resync_period = _effective_period(other.resync_period, self._check_period)
        else:
            for obj in self.store.list():
                listener.add(handlers_mod.ADD, obj, True)
            if self._synced:
                listener.mark_synced()
            listener.start()
        return handlers_mod.HandlerRegistration(listener, self.has_synced)

    async def remove_event_handler(self, registration: handlers_mod.HandlerRegistration) -> None:
        """Stop notifying a handler; notifications still queued for it are dropped."""
        if registration.listener in self._listeners:
            self._listeners.remove(registration.listener)
        await registration.listener.stop()

    # Reading.

    def has_synced(self) -> bool:
        """True once the cache holds a complete list (the first replace happened)."""
        return self._synced

    def is_running(self) -> bool:
        """True between ``start`` and the end of the informer's task (list/watch keeps retrying)."""
        return self._task is not None and not self._task.done()

    @property
    def last_sync_resource_version(self) -> str:
        return self._last_rv

    def lister(self) -> listers_mod.Lister[O]:
        """A lister reading this informer's cache."""
        return listers_mod.Lister(self.store, self._opts.resource)

    @property
    def reflector(self) -> reflector_mod.Reflector | None:
        """The running reflector (None before start)."""
        return self._reflector

    # Running.

    def start(self) -> asyncio.Task[None]:
        """Run the informer in a new task of the running loop and return it (cancel it to stop)."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self.run())
        return self._task

    async def stop(self) -> None:
        """Cancel the task ``start`` created and wait for it to finish."""
        task = self._task
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def run(self) -> None:
        """List, watch and notify until cancelled; afterwards no handler may be added."""
        if self._started:
            raise InformerStateError("informer is already running")
        self._started = True
        self._reflector = reflector_mod.Reflector(
            self._lw,
            self,
            reflector_mod.ReflectorOptions(
                name=self._opts.name,
                transform=self._transform,
                use_watch_list=self._opts.use_watch_list,
            ),
            clock=self._clock,
        )
        for listener in self._listeners:
            listener.start()
        try:
            async with asyncio.TaskGroup() as tg:
                tg.create_task(self._reflector.run())
                if self._check_period > 0:
                    tg.create_task(self._resync_loop())
        finally:
            self._stopped = True
            await asyncio.gather(*(listener.stop() for listener in self._listeners))

    async def wait_for_sync(self) -> None:
        """Return once ``has_synced`` (no polling); bound it with ``asyncio.timeout`` if need be."""
        await self._synced_event.wait()

    # ReflectorStore, called by the reflector.

    def replace(self, items: builtins.list[Any], resource_version: str) -> None:
        old: dict[str, Any] = {}
        if self._listeners:
            for obj in self.store.list():
                old[self.store.key(obj)] = obj
        self.store.replace(items, resource_version)
        self._last_rv = resource_version
        initial = not self._synced
        if self._listeners:
            new_keys = {self.store.key(obj) for obj in items} if old else set()
            for key, obj in old.items():
                if key not in new_keys:
                    self._notify(handlers_mod.DELETE, handlers_mod.DeletedFinalStateUnknown(key, obj))
            for obj in items:
                before = old.get(self.store.key(obj)) if old else None
                if before is None:
                    self._notify(handlers_mod.ADD, obj, initial)
                else:
                    self._update(before, obj)
        if initial:
            self._synced = True
            self._synced_event.set()
            for listener in self._listeners:
                listener.mark_synced()

    def apply(self, event_type: watch_mod.EventType, obj: Any) -> None:
        rv = store_mod.object_meta(obj, "resourceVersion")
        if rv:
            self._last_rv = str(rv)
        if event_type is watch_mod.EventType.BOOKMARK:
            return
        if event_type is watch_mod.EventType.DELETED:
            key = self.store.key(obj)
            if self.store.get_by_key(key) is not None:
                self.store.delete_key(key)
                self._notify(handlers_mod.DELETE, obj)
            return
        before = self.store.put(obj)
        if before is None:
            self._notify(handlers_mod.ADD, obj, False)
        else:
            self._update(before, obj)

    # Internals.

    def _update(self, old: Any, new: Any) -> None:
        old_rv = store_mod.object_meta(old, "resourceVersion")
        if old_rv and old_rv == store_mod.object_meta(new, "resourceVersion"):
            return  # unchanged: a resync, and none is due outside the resync loop
        self._notify(handlers_mod.UPDATE, old, new)

    def _notify(self, kind: int, a: Any, b: Any = None) -> None:
        for listener in self._listeners:
            listener.add(kind, a, b)

    async def _resync_loop(self) -> None:
        while True:
            await self._clock.sleep(self._check_period)
            now = self._clock.monotonic()
            due = [ln for ln in self._listeners if ln.resync_period > 0 and now >= ln.next_resync]
            if not due or not self._synced:
                continue
            objs = self.store.list()
            for listener in due:
                listener.next_resync = now + listener.resync_period
                for obj in objs:
                    listener.add(handlers_mod.UPDATE, obj, obj)


def _effective_period(desired: float, check: float) -> float:
    if desired <= 0 or check <= 0:
        return 0.0
    return max(desired, check)


async def wait_for_cache_sync(*synced: Callable[[], bool], clock: clock_mod.Clock | None = None) -> None:
    """Poll every 100 ms (on ``clock``) until every ``synced()`` is true.

    Pass ``informer.has_synced`` or a registration's ``has_synced``. Where client-go returns false
    on stop, this is cancelled: bound it with ``asyncio.timeout(...)`` to give up after a while.
    """
    clk: clock_mod.Clock = clock or clock_mod.RealClock()
    while not all(fn() for fn in synced):
        await clk.sleep(SYNCED_POLL_PERIOD)
