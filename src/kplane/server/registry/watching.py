"""Watch: initial events, resume from a resourceVersion, selector transitions, bookmarks.

``watch_objects`` yields ``WatchItem``s until the deadline passes or the client goes away. A filtered
watch follows upstream's cacher: an object that stops matching the selector is reported as DELETED,
one that starts matching as ADDED, so a client's view stays equal to the filtered state.

The storage watch is drained by a small pump task into a queue so that waiting for "the next event
or the next bookmark, whichever first" is a cancellation-safe ``Queue.get`` with a timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Any

from kplane._util.clock import Clock
from kplane.api import errors
from kplane.api.catalog import ResourceRecord
from kplane.server import storage
from kplane.server.registry import selection
from kplane.server.registry.listing import ListOptions, validate_list_options, wait_for_revision
from kplane.server.registry.objects import storage_error

Object = dict[str, Any]
INITIAL_EVENTS_END = "k8s.io/initial-events-end"


@dataclass(frozen=True, slots=True)
class WatchOptions:
    resource_version: str | None = None
    resource_version_match: str = ""
    label_selector: str = ""
    field_selector: str = ""
    allow_bookmarks: bool = False
    send_initial_events: bool | None = None
    deadline: float = 0.0  # monotonic time at which the watch ends
    bookmark_interval: float = 60.0


@dataclass(slots=True)
class WatchItem:
    """One line of the watch stream. ``event`` is the storage event behind it, when there is one
    and its type is unchanged, so its encoded form can be shared with other watchers."""

    type: str
    object: Object
    event: storage.Event | None = None


def validate_watch(opts: WatchOptions) -> None:
    validate_list_options(
        ListOptions(
            resource_version=opts.resource_version, resource_version_match=opts.resource_version_match
        ),
        watch=True,
        send_initial_events=bool(opts.send_initial_events),
    )


def bookmark(record: ResourceRecord, revision: int, *, initial_end: bool = False) -> Object:
    meta: Object = {"resourceVersion": str(revision)}
    if initial_end:
        meta["annotations"] = {INITIAL_EVENTS_END: "true"}
    return {"kind": record.kind, "apiVersion": record.api_version, "metadata": meta}


async def watch_objects(
    store: storage.Storage, record: ResourceRecord, namespace: str, opts: WatchOptions, clock: Clock
) -> AsyncGenerator[WatchItem, None]:
    validate_watch(opts)
    sel = selection.Selection.parse(record, opts.label_selector, opts.field_selector)
    prefix = record.namespace_prefix(namespace)
    rv = opts.resource_version
    initial = rv in (None, "", "0") if opts.send_initial_events is None else opts.send_initial_events
    try:
        if initial:
            if rv not in (None, "", "0"):
                await wait_for_revision(store, int(rv))
            snapshot = await store.list(prefix)
            start = snapshot.revision
        else:
            start = int(rv or 0)
            snapshot = None
        source = store.watch(prefix, start)
    except storage.Expired as err:
        yield WatchItem(
            "ERROR", errors.Gone(f"too old resource version: {err.requested} ({err.oldest})").to_status()
        )
        return
    except storage.StorageError as err:
        yield WatchItem("ERROR", storage_error(record, "", err).to_status())
        return

    queue: asyncio.Queue[storage.Event | BaseException] = asyncio.Queue()

    async def pump() -> None:
        try:
            async for ev in source:
                queue.put_nowait(ev)
        except asyncio.CancelledError:
            raise
        except BaseException as err:  # a terminated (slow) watcher or a storage failure
            queue.put_nowait(err)

    task = asyncio.get_running_loop().create_task(pump())
    try:
        last = start
        if snapshot is not None:
            for obj in snapshot.items:
                if sel.matches(obj):
                    yield WatchItem("ADDED", obj)
            if opts.send_initial_events and opts.allow_bookmarks:
                yield WatchItem("BOOKMARK", bookmark(record, start, initial_end=True))
        next_bookmark = clock.monotonic() + opts.bookmark_interval
        while True:
            now = clock.monotonic()
            wait = opts.deadline - now
            if opts.allow_bookmarks:
                wait = min(wait, next_bookmark - now)
            if wait <= 0:
                if opts.deadline - now <= 0:
                    return
                yield WatchItem("BOOKMARK", bookmark(record, last))
                next_bookmark = clock.monotonic() + opts.bookmark_interval
                continue
            try:
                got = queue.get_nowait()
            except asyncio.QueueEmpty:
                try:
                    got = await asyncio.wait_for(queue.get(), wait)
                except TimeoutError:
                    continue
            if isinstance(got, BaseException):
                yield WatchItem(
                    "ERROR",
                    errors.InternalError(f"watch terminated: {got}", reason="InternalError").to_status(),
                )
                return
            last = got.revision
            item = _filter(got, sel)
            if item is not None:
                yield item
    finally:
        task.cancel()
        source.close()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def _filter(ev: storage.Event, sel: selection.Selection) -> WatchItem | None:
    if sel.empty:
        return WatchItem(ev.type, ev.object, ev)
    now_match = sel.matches(ev.object)
    if ev.type == storage.MODIFIED:
        was = ev.prev_object is not None and sel.matches(ev.prev_object)
        if now_match and was:
            return WatchItem(ev.type, ev.object, ev)
        if now_match:
            return WatchItem("ADDED", ev.object)
        if was:
            return WatchItem("DELETED", ev.object)
        return None
    return WatchItem(ev.type, ev.object, ev) if now_match else None
