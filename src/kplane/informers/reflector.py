"""The Reflector: keeps a store equal to the server's state of one resource, forever.

Design note. The problem is client-go's: list once, then watch from the list's resourceVersion, and
never let the cache drift, whatever the server or the network does. The approach follows client-go's
``Reflector.ListAndWatch`` and its numbers (reference/controllers.md §1.1):

* The initial sync is a WatchList stream (``sendInitialEvents=true``) when the server supports it:
  events are collected until the BOOKMARK annotated ``k8s.io/initial-events-end`` and handed to the
  store in one ``replace``, and the same stream then carries the changes. A server that rejects the
  parameters, or ends the stream before that bookmark, turns WatchList off for this reflector and the
  reflector LISTs instead.
* The first LIST asks for ``resourceVersion="0"`` (any version, served whole from the watch cache);
  a relist asks for "not older than" the last synced resourceVersion, so the cache never goes back in
  time; if that is 410 Gone, the next LIST is a consistent read (``resourceVersion=""``), in pages of
  500. Every LIST ends in one atomic ``replace``: objects missing from it are deletions, including
  deletions that happened while the reflector could not watch.
* The watch is a ``kplane.client.watch.RetryWatcher``: ordinary ends and transient errors reopen it
  from the last event or bookmark (random 5-10 min server timeouts, backoff 0.8 s → 30 s with jitter
  1.0, reset after 2 min), so those never cost a relist. Only 410 Gone does (the events in the gap
  are lost for good, so only a fresh list can restore the truth); a terminal error also relists.
  Between ListAndWatch rounds the reflector waits a backoff step, as client-go does.

Trade-off: client-go relists after any watch error; resuming from the last resourceVersion is exact
too and much cheaper, so kplane relists only when resuming is impossible.

The store is any ``ReflectorStore``: ``kplane.informers.SharedIndexInformer`` (which feeds its
handlers) or a plain ``Store`` through ``StoreWriter``. ``transform`` runs once per object, before
the store sees it (for example ``strip_managed_fields``, to cut memory).
"""

from __future__ import annotations

import asyncio
import builtins
import dataclasses
import logging
import random
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any, Protocol

from kplane._util import backoff as backoff_mod
from kplane._util import clock as clock_mod
from kplane.api import errors
from kplane.client import options as options_mod
from kplane.client import watch as watch_mod
from kplane.informers import store as store_mod

log = logging.getLogger(__name__)

Object = dict[str, Any]
Transform = Callable[[Any], Any]
"""Maps a decoded object to what the cache keeps; must not raise, may return a new object."""

LIST_PAGE_SIZE = 500
"""Page size of consistent (``resourceVersion=""``) relists, as client-go's pager."""


class ReflectorStore(Protocol):
    """Where a reflector puts what it learns. Called from the reflector's task, never concurrently."""

    def replace(self, items: builtins.list[Any], resource_version: str) -> None:
        """Make ``items`` the whole content, atomically; ``resource_version`` is the list's."""
        ...

    def apply(self, event_type: watch_mod.EventType, obj: Any) -> None:
        """Apply one ADDED, MODIFIED or DELETED event, or note a BOOKMARK's resourceVersion."""
        ...


class StoreWriter:
    """A ``ReflectorStore`` that writes into a plain ``Store`` (no handlers, no tombstones)."""

    def __init__(self, store: store_mod.Store[Any]) -> None:
        self.store = store
        self.resource_version = ""

    def replace(self, items: builtins.list[Any], resource_version: str) -> None:
        self.store.replace(items, resource_version)
        self.resource_version = resource_version

    def apply(self, event_type: watch_mod.EventType, obj: Any) -> None:
        if event_type is watch_mod.EventType.DELETED:
            self.store.delete(obj)
        elif event_type is not watch_mod.EventType.BOOKMARK:
            self.store.add(obj)
        rv = store_mod.object_meta(obj, "resourceVersion")
        if rv:
            self.resource_version = str(rv)


def strip_managed_fields(obj: Any) -> Any:
    """A transform that drops ``metadata.managedFields`` (often a third of an object's size)."""
    if isinstance(obj, dict):
        meta = obj.get("metadata")
        if isinstance(meta, dict):
            meta.pop("managedFields", None)
    return obj


@dataclasses.dataclass(frozen=True)
class ReflectorOptions:
    """Tuning of a ``Reflector``; the defaults are client-go's.

    ``use_watch_list``: ``None`` tries WatchList and falls back to LIST for good if the server does
    not support it; ``False`` always LISTs. ``name`` labels log lines.
    """

    name: str = ""
    transform: Transform | None = None
    use_watch_list: bool | None = None
    page_size: int = LIST_PAGE_SIZE


class Reflector:
    """Runs list-then-watch for one resource into ``store`` until cancelled.

    ``run()`` never returns on its own; cancel it to stop. ``has_synced()`` is true once the first
    ``replace`` reached the store. ``last_sync_resource_version`` is the resourceVersion the store
    is known to reflect. ``failing_since`` is the clock's monotonic time since which lists and
    watches have kept failing (``None`` while the store is being kept current).
    """

    def __init__(
        self,
        lw: watch_mod.ListerWatcher,
        store: ReflectorStore,
        options: ReflectorOptions | None = None,
        *,
        clock: clock_mod.Clock | None = None,
        _rand: backoff_mod.Rand = random.random,
    ) -> None:
        self._lw = lw
        self._store = store
        self._opts = options or ReflectorOptions()
        self._clock: clock_mod.Clock = clock or clock_mod.RealClock()
        self._rand = _rand
        self._backoff = backoff_mod.reflector_backoff(self._clock, rand=_rand)
        self._watch_list = self._opts.use_watch_list is not False
        self._last_rv = ""
        self._rv_unavailable = False
        self._synced = False
        self._synced_event = asyncio.Event()
        self._failing_since: float | None = None
        self._watcher: watch_mod.RetryWatcher | None = None
        self.relists = 0
        """How many times the store was replaced (the first sync included)."""

    @property
    def last_sync_resource_version(self) -> str:
        return self._last_rv

    def has_synced(self) -> bool:
        return self._synced

    @property
    def failing_since(self) -> float | None:
        """When the current run of failed lists and watches began (``None``: not failing)."""
        if self._failing_since is not None:
            return self._failing_since
        return self._watcher.failing_since if self._watcher is not None else None

    async def wait_for_sync(self) -> None:
        """Return once the first ``replace`` has reached the store."""
        await self._synced_event.wait()

    async def run(self) -> None:
        """ListAndWatch forever, waiting a backoff step between rounds; cancel to stop."""
        while True:
            try:
                await self._list_and_watch()
            except asyncio.CancelledError:
                raise
            except errors.Gone as err:
                log.info("%s: %s; relisting", self._opts.name, err)
            except Exception as err:
                log.warning("%s: list and watch failed: %s", self._opts.name, err, exc_info=True)
                if self._failing_since is None:
                    since = self.failing_since
                    self._failing_since = self._clock.monotonic() if since is None else since
            self._watcher = None
            await self._clock.sleep(self._backoff.step())

    # One round.

    async def _list_and_watch(self) -> None:
        stream: AsyncIterator[watch_mod.WatchEvent[Object]] | None = None
        if self._watch_list:
            try:
                stream = await self._watch_list_sync()
            except Exception as err:
                if self._opts.use_watch_list:
                    raise
                # client-go's ListAndWatch falls back to a LIST for this round when a WatchList sync
                # fails for any reason: a server that keeps cutting streams must not keep the
                # cache from ever syncing. WatchList is tried again next round.
                log.info("%s: WatchList sync failed (%s); listing instead", self._opts.name, err)
        if stream is None:
            await self._list_sync()
        watcher = self._watcher = watch_mod.RetryWatcher(
            self._lw,
            self._last_rv,
            bookmarks=True,
            clock=self._clock,
            backoff=self._backoff,
            stream=stream,
            _rand=self._rand,
        )
        transform = self._opts.transform
        async for event in watcher:
            obj = event.object
            if transform is not None and event.type is not watch_mod.EventType.BOOKMARK:
                obj = transform(obj)
            self._store.apply(event.type, obj)
            rv = event.resource_version
            if rv:
                self._last_rv = rv

    async def _list_sync(self) -> None:
        if self._rv_unavailable:
            items, rv = await self._consistent_list()
        else:
            rv_wanted = self._last_rv or "0"
            try:
                page = await self._lw.list(options_mod.ListOptions(resource_version=rv_wanted))
            except errors.Gone:
                self._rv_unavailable = True
                items, rv = await self._consistent_list()
            else:
                items, rv = _items(page), _list_rv(page)
                token = (page.get("metadata") or {}).get("continue")
                if token:  # A server that pages even at RV "0": follow it, as client-go's pager does.
                    more, rv = await self._pages(token, rv)
                    items.extend(more)
        self._rv_unavailable = False
        self._replace(items, rv)

    async def _consistent_list(self) -> tuple[builtins.list[Object], str]:
        page = await self._lw.list(options_mod.ListOptions(resource_version="", limit=self._opts.page_size))
        items, rv = _items(page), _list_rv(page)
        token = (page.get("metadata") or {}).get("continue")
        if token:
            try:
                more, rv = await self._pages(token, rv)
            except errors.Gone:  # the continue token expired: one unpaged consistent read instead
                page = await self._lw.list(options_mod.ListOptions(resource_version=""))
                return _items(page), _list_rv(page)
            items.extend(more)
        return items, rv

    async def _pages(self, token: str, rv: str) -> tuple[builtins.list[Object], str]:
        items: builtins.list[Object] = []
        while token:
            page = await self._lw.list(
                options_mod.ListOptions(limit=self._opts.page_size, continue_token=token)
            )
            items.extend(_items(page))
            rv = _list_rv(page) or rv
            token = (page.get("metadata") or {}).get("continue") or ""
        return items, rv

    async def _watch_list_sync(self) -> AsyncIterator[watch_mod.WatchEvent[Object]] | None:
        """Sync through a WatchList stream; return it for further events, or None to LIST instead."""
        rv = "" if self._rv_unavailable else self._last_rv
        stream = self._lw.watch(
            options_mod.ListOptions(
                resource_version=rv,
                timeout_seconds=watch_mod.random_watch_timeout(self._rand),
                send_initial_events=True,
                resource_version_match="NotOlderThan",
            )
        )
        items: dict[str, Any] = {}
        try:
            async for event in stream:
                if event.is_initial_events_end:
                    self._rv_unavailable = False
                    self._replace(builtins.list(items.values()), event.resource_version)
                    return stream
                if event.type is watch_mod.EventType.BOOKMARK:
                    continue
                key = store_mod.meta_namespace_key(event.object)
                if event.type is watch_mod.EventType.DELETED:
                    items.pop(key, None)
                else:
                    items[key] = event.object
        except errors.Gone:
            self._rv_unavailable = True
            await watch_mod._aclose(stream)
            raise
        except (errors.TerminalError, errors.NotAcceptable) as err:
            await watch_mod._aclose(stream)
            if self._opts.use_watch_list:
                raise
            log.info("%s: the server refused WatchList (%s); using LIST from now on", self._opts.name, err)
            self._watch_list = False
            return None
        except BaseException:
            await watch_mod._aclose(stream)
            raise
        # The stream ended without the initial-events-end bookmark: the server ignores WatchList.
        await watch_mod._aclose(stream)
        if self._opts.use_watch_list:
            raise errors.InternalError("the WatchList stream ended before its initial-events-end bookmark")
        log.info("%s: the server does not send initial events; using LIST from now on", self._opts.name)
        self._watch_list = False
        return None

    def _replace(self, items: Iterable[Object], rv: str) -> None:
        transform = self._opts.transform
        listed = [transform(obj) for obj in items] if transform is not None else builtins.list(items)
        self._store.replace(listed, rv)
        self._last_rv = rv
        self._failing_since = None
        self.relists += 1
        if not self._synced:
            self._synced = True
            self._synced_event.set()


def _items(page: Object) -> builtins.list[Object]:
    """A page's items, with the ``kind`` and ``apiVersion`` that List items omit filled in."""
    items = page.get("items")
    if not isinstance(items, builtins.list):
        return []
    list_kind = str(page.get("kind") or "")
    kind = list_kind.removesuffix("List") if list_kind.endswith("List") else ""
    api_version = page.get("apiVersion")
    if kind and api_version:
        for item in items:
            if "kind" not in item:
                item["kind"] = kind
            if "apiVersion" not in item:
                item["apiVersion"] = api_version
    return items


def _list_rv(page: Object) -> str:
    return str((page.get("metadata") or {}).get("resourceVersion") or "")
