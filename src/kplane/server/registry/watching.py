"""Watch: initial events, resume from a resourceVersion, selector transitions, bookmarks.

``watch_batches`` yields ``WatchItem``s until the deadline passes or the client goes away. A filtered
watch follows upstream's cacher: an object that stops matching the selector is reported as DELETED,
one that starts matching as ADDED, so a client's view stays equal to the filtered state.

Batches: ``watch_batches`` yields lists of items: whatever the storage watch already holds when
the first of them arrives (at most ``MAX_BATCH``), so a consumer can write a burst of events (a
group commit's, the initial list's) to its socket at once instead of one write per event.

Buffering: the storage watch's own bounded queue is the only one between the cache and the
socket; this generator takes at most one batch at a time from it, so a consumer that stops reading
makes that queue overflow and the watch is terminated (then ``on_terminated`` lets the consumer
drop the connection), never an unbounded pile-up. Bookmarks are sent every ``bookmark_interval``
and two seconds before the deadline, as upstream's cacher does; time is the injected ``Clock``'s.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from typing import Any

from kplane._util.clock import Clock
from kplane.api import errors
from kplane.api.catalog import ResourceRecord
from kplane.server import storage
from kplane.server.registry import selection
from kplane.server.registry.listing import ListOptions, sync, validate_list_options, wait_for_revision
from kplane.server.registry.objects import storage_error

_log = logging.getLogger(__name__)
_PRE_TIMEOUT = 2.0  # seconds before the deadline of the last bookmark (upstream cache_watcher.go)

Object = dict[str, Any]
INITIAL_EVENTS_END = "k8s.io/initial-events-end"
MAX_BATCH = 100  # items of one batch: bounds what a consumer holds beyond the storage queue


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


def next_bookmark(now: float, interval: float, deadline: float) -> float | None:
    """When the next periodic bookmark is due: ``interval`` from ``now``, but no later than two
    seconds before the watch's deadline, and none once that moment has passed (upstream's
    ``cacheWatcher.nextBookmarkTime``)."""
    due = now + interval
    if deadline - _PRE_TIMEOUT < due:
        due = deadline - _PRE_TIMEOUT
    return None if due < now else due


async def watch_batches(
    store: storage.Storage,
    record: ResourceRecord,
    namespace: str,
    opts: WatchOptions,
    clock: Clock,
    *,
    on_terminated: Callable[[], None] | None = None,
) -> AsyncGenerator[list[WatchItem], None]:
    """The watch stream (see the module docstring), in non-empty batches of at most
    ``MAX_BATCH`` items, in order. ``on_terminated`` is called synchronously if the storage watch
    is terminated (the consumer fell behind) while this generator is suspended, so a consumer
    blocked elsewhere can give up at once; the stream then ends without an event."""
    validate_watch(opts)
    sel = selection.Selection.parse(record, opts.label_selector, opts.field_selector)
    prefix = record.namespace_prefix(namespace)
    rv = opts.resource_version
    initial = rv in (None, "", "0") if opts.send_initial_events is None else opts.send_initial_events
    try:
        if initial:
            if rv not in (None, "", "0"):
                await wait_for_revision(store, int(rv))
            elif not rv:
                await sync(store)
            snapshot = await store.list(prefix)
            start = snapshot.revision
        else:
            start = int(rv or 0)
            snapshot = None
        source = store.watch(prefix, start)
    except storage.Expired as err:
        yield [
            WatchItem(
                "ERROR", errors.Gone(f"too old resource version: {err.requested} ({err.oldest})").to_status()
            )
        ]
        return
    except storage.StorageError as err:
        yield [WatchItem("ERROR", storage_error(record, "", err).to_status())]
        return

    def terminated(err: storage.StorageError) -> None:
        _log.info("watch of %s terminated: %s", record.group_resource, err)
        if on_terminated is not None:
            on_terminated()

    source.on_terminate(terminated)
    events = aiter(source)
    loop = asyncio.get_running_loop()
    # Waiting for the next event: one future, resolved by the source when an event is queued or by
    # the sleeper (the deadline, the next bookmark) when it fires; no task steps the iteration.
    waiter: asyncio.Future[None] | None = None

    def wake(_: object) -> None:
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    sleeper: asyncio.Future[None] | None = None
    sleeper_until = 0.0
    try:
        last = start
        if snapshot is not None:
            batch: list[WatchItem] = []
            for obj in snapshot.items:
                if sel.matches(obj):
                    batch.append(WatchItem("ADDED", obj))
                    if len(batch) == MAX_BATCH:
                        yield batch
                        batch = []
            if opts.send_initial_events and opts.allow_bookmarks:
                batch.append(WatchItem("BOOKMARK", bookmark(record, start, initial_end=True)))
            if batch:
                yield batch
        bookmark_at = (
            next_bookmark(clock.monotonic(), opts.bookmark_interval, opts.deadline)
            if opts.allow_bookmarks
            else None
        )
        while True:
            now = clock.monotonic()
            if now >= opts.deadline:
                return
            if bookmark_at is not None and now >= bookmark_at:
                if not source.ready:
                    # Nothing is queued for this watcher, so every event up to the store's
                    # revision has been sent: the bookmark may carry it (upstream: the cacher's
                    # last processed resourceVersion).
                    last = max(last, store.current_revision())
                yield [WatchItem("BOOKMARK", bookmark(record, last))]
                sent = now
                now = clock.monotonic()
                bookmark_at = next_bookmark(now, opts.bookmark_interval, opts.deadline)
                if bookmark_at is not None and bookmark_at <= sent:
                    bookmark_at = None  # the pre-timeout bookmark was this one
                continue
            if not source.ready:
                wake_at = opts.deadline if bookmark_at is None else min(opts.deadline, bookmark_at)
                if sleeper is None or sleeper_until != wake_at:
                    if sleeper is not None:
                        sleeper.cancel()
                    sleeper, sleeper_until = asyncio.ensure_future(clock.sleep(wake_at - now)), wake_at
                    sleeper.add_done_callback(wake)
                waiter = loop.create_future()
                source.wake_when_ready(waiter)
                await waiter
                waiter = None
                if sleeper.done():
                    sleeper = None
                if not source.ready:
                    continue  # the sleeper's time (or a replaced sleeper's end): check the clock
            try:
                got = await anext(events)
            except (StopAsyncIteration, storage.StorageError):
                return  # the source ended, or terminated this watcher: the stream ends (upstream)
            except Exception as err:  # a source that failed otherwise (its history unreadable) ends too
                _log.warning("watch of %s ended: %s", record.group_resource, err)
                return
            last = got.revision
            item = _filter(got, sel)
            batch = [item] if item is not None else []
            ended = False
            # What is already queued joins the batch (no wait): a burst goes out in one write.
            while len(batch) < MAX_BATCH and source.ready:
                try:
                    got = await anext(events)
                except (StopAsyncIteration, storage.StorageError):
                    ended = True
                    break
                last = got.revision
                item = _filter(got, sel)
                if item is not None:
                    batch.append(item)
            if batch:
                yield batch
            if ended:
                return
    finally:
        source.close()
        if sleeper is not None:
            sleeper.cancel()
            with contextlib.suppress(BaseException):
                await sleeper


def _filter(ev: storage.Event, sel: selection.Selection) -> WatchItem | None:
    """The event as this watcher sees it. An object that stops matching is DELETED with the last
    state that matched, stamped with the event's revision; one that starts matching is ADDED
    (upstream ``cacheWatcher.convertToWatchEvent``)."""
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
            assert ev.prev_object is not None
            return WatchItem("DELETED", storage.stamped_copy(ev.prev_object, ev.revision))
        return None
    return WatchItem(ev.type, ev.object, ev) if now_match else None
