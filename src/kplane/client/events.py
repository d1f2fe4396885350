"""The event recorder: ``core/v1`` Events about objects, with client-go's aggregation of repeats.

``recorder.event(obj, "Warning", "FailedSync", "...")`` never blocks and never raises: the event is
queued (up to 1000; beyond that events are dropped, as client-go's broadcaster does) and a
background task writes it. Before writing, the ``EventCorrelator`` decides what to write, with
client-go's defaults (``tools/record/events_cache.go``):

* spam filter: per source and involved object, a token bucket of 25 events refilled at one per
  5 minutes; events beyond it are dropped;
* aggregation: when 10 events with the same source, object, type and reason but *different*
  messages arrive within 10 minutes, further ones are folded into one event whose message starts
  with ``"(combined from similar events): "``;
* deduplication: an event identical to an earlier one (same key, message included) is not created
  again: the earlier Event's ``count`` is incremented and its ``lastTimestamp`` (and message)
  PATCHed.

Event names are ``<object name>.<hex nanoseconds>``; the Event lives in the object's namespace
(``default`` for cluster-scoped objects).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import datetime
import logging
from collections.abc import Mapping
from typing import Any, Literal, Protocol

import msgspec

from kplane._util import clock as clock_mod
from kplane.api import errors
from kplane.client import typed

log = logging.getLogger(__name__)

Object = dict[str, Any]
EventType = Literal["Normal", "Warning"]

QUEUE_LENGTH = 1000
SPAM_BURST = 25
SPAM_QPS = 1.0 / 300.0
AGGREGATE_MAX_EVENTS = 10
AGGREGATE_INTERVAL = 600.0
CACHE_SIZE = 4096
COMBINED_PREFIX = "(combined from similar events): "


class EventClient(Protocol):
    """The verbs the recorder needs on ``core/v1`` events (a ``DynamicClient`` resource client fits)."""

    async def create(self, obj: Object, *, namespace: str | None = None) -> Object: ...

    async def patch(
        self, name: str, patch: Any, *, patch_type: Literal["merge"] = "merge", namespace: str | None = None
    ) -> Object: ...


@dataclasses.dataclass(frozen=True)
class EventSource:
    """Who reports: a component name (e.g. ``"deployment-controller"``) and optionally a host."""

    component: str
    host: str = ""


class _LRU(collections.OrderedDict[str, Any]):
    def __init__(self, size: int) -> None:
        super().__init__()
        self._size = size

    def lookup(self, key: str) -> Any:
        value = self.get(key)
        if value is not None:
            self.move_to_end(key)
        return value

    def put(self, key: str, value: Any) -> None:
        self[key] = value
        self.move_to_end(key)
        while len(self) > self._size:
            self.popitem(last=False)


@dataclasses.dataclass
class _Bucket:
    tokens: float
    last: float


@dataclasses.dataclass
class _Aggregate:
    messages: set[str]
    last: float


@dataclasses.dataclass
class _Seen:
    name: str
    namespace: str
    count: int
    first_timestamp: str


class EventCorrelator:
    """Decides, per event, whether to drop it, create it, or bump an existing Event's count."""

    def __init__(self, clock: clock_mod.Clock) -> None:
        self._clock = clock
        self._spam: _LRU = _LRU(CACHE_SIZE)
        self._aggregates: _LRU = _LRU(CACHE_SIZE)
        self._seen: _LRU = _LRU(CACHE_SIZE)

    def allow(self, event: Object) -> bool:
        """The spam filter: False when this source+object has spent its token bucket."""
        key = _join(_source_key(event), _object_key(event))
        now = self._clock.monotonic()
        bucket: _Bucket | None = self._spam.lookup(key)
        if bucket is None:
            bucket = _Bucket(float(SPAM_BURST), now)
        bucket.tokens = min(float(SPAM_BURST), bucket.tokens + (now - bucket.last) * SPAM_QPS)
        bucket.last = now
        self._spam.put(key, bucket)
        if bucket.tokens < 1.0:
            return False
        bucket.tokens -= 1.0
        return True

    def aggregate(self, event: Object) -> tuple[Object, str]:
        """The event to record (maybe with a combined message) and its deduplication key."""
        agg_key = _join(_source_key(event), _object_key(event), event["type"], event["reason"])
        now = self._clock.monotonic()
        agg: _Aggregate | None = self._aggregates.lookup(agg_key)
        if agg is None or now - agg.last > AGGREGATE_INTERVAL:
            agg = _Aggregate(set(), now)
        agg.messages.add(event["message"])
        agg.last = now
        self._aggregates.put(agg_key, agg)
        if len(agg.messages) < AGGREGATE_MAX_EVENTS:
            return event, _join(agg_key, event["message"])
        return {**event, "message": COMBINED_PREFIX + event["message"]}, agg_key

    def seen(self, key: str) -> _Seen | None:
        return self._seen.lookup(key)  # type: ignore[no-any-return]

    def record(self, key: str, seen: _Seen) -> None:
        self._seen.put(key, seen)


class EventRecorder:
    """Records Events about objects through ``client``, as ``source`` (see the module docstring).

    Call ``event`` from the event loop's thread. ``flush()`` waits until everything queued so far
    is written; ``aclose()`` flushes and stops the writer task.
    """

    def __init__(
        self, client: EventClient, source: EventSource, *, clock: clock_mod.Clock | None = None
    ) -> None:
        self.client = client
        self.source = source
        self._clock: clock_mod.Clock = clock or clock_mod.RealClock()
        self.correlator = EventCorrelator(self._clock)
        self._queue: collections.deque[Object] = collections.deque()
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._task: asyncio.Task[None] | None = None
        self._last_nanos = 0

    def event(self, obj: Any, type: EventType, reason: str, message: str) -> None:
        """Queue an Event about ``obj`` (a JSON object or an ``ObjectReference`` dict); never blocks."""
        if type not in ("Normal", "Warning"):
            log.error("unsupported event type %r; event dropped", type)
            return
        if len(self._queue) >= QUEUE_LENGTH:
            log.warning("event queue full; dropping event %s %s", reason, message)
            return
        self._queue.append(self._make_event(obj, type, reason, message))
        self._idle.clear()
        self._wake.set()
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    def eventf(self, obj: Any, type: EventType, reason: str, fmt: str, *args: Any) -> None:
        """``event`` with a ``%``-formatted message."""
        self.event(obj, type, reason, fmt % args if args else fmt)

    async def flush(self) -> None:
        """Wait until every event queued so far has been written (or dropped)."""
        await self._idle.wait()

    async def aclose(self) -> None:
        """Flush, then stop the writer task."""
        if self._task is not None:
            await self.flush()
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _run(self) -> None:
        while True:
            if not self._queue:
                self._idle.set()
                self._wake.clear()
                await self._wake.wait()
                continue
            event = self._queue.popleft()
            try:
                await self._write(event)
            except asyncio.CancelledError:
                raise
            except Exception as err:
                # As client-go's recordEvent: an event that already exists, or whose namespace is
                # being deleted, is expected (a burst's events trail its objects); others are errors.
                level = logging.DEBUG if _expected_refusal(err) else logging.WARNING
                log.log(level, "could not write event %s/%s: %s", event["reason"], event["message"], err)

    async def _write(self, event: Object) -> None:
        if not self.correlator.allow(event):
            log.debug("event %s about %s dropped by the spam filter", event["reason"], _object_key(event))
            return
        event, key = self.correlator.aggregate(event)
        namespace = event["metadata"]["namespace"]
        seen = self.correlator.seen(key)
        if seen is not None:
            seen.count += 1
            patch = {
                "count": seen.count,
                "lastTimestamp": event["lastTimestamp"],
                "message": event["message"],
            }
            try:
                await self.client.patch(seen.name, patch, patch_type="merge", namespace=seen.namespace)
                return
            except errors.NotFound:
                # Deleted (or expired) meanwhile: create it again, keeping the running count.
                event = {
                    **event,
                    "metadata": {"name": seen.name, "namespace": seen.namespace},
                    "count": seen.count,
                    "firstTimestamp": seen.first_timestamp,
                }
        created = await self.client.create(event, namespace=namespace)
        meta = created.get("metadata") or {}
        self.correlator.record(
            key,
            _Seen(
                name=str(meta.get("name") or event["metadata"]["name"]),
                namespace=namespace,
                count=int(created.get("count") or event.get("count") or 1),
                first_timestamp=str(created.get("firstTimestamp") or event["firstTimestamp"]),
            ),
        )

    def _make_event(self, obj: Any, type: EventType, reason: str, message: str) -> Object:
        ref = object_reference(obj)
        now = self._clock.now()
        stamp = now.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        # Names must be unique even for events recorded within one clock tick.
        nanos = max(int(now.timestamp() * 1e9), self._last_nanos + 1)
        self._last_nanos = nanos
        return {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "name": f"{ref.get('name', '')}.{nanos:x}",
                "namespace": ref.get("namespace") or "default",
            },
            "involvedObject": ref,
            "reason": reason,
            "message": message,
            "type": type,
            "source": {
                "component": self.source.component,
                **({"host": self.source.host} if self.source.host else {}),
            },
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
            "reportingComponent": self.source.component,
            "reportingInstance": self.source.host,
        }


def object_reference(obj: Any) -> Object:
    """An ``ObjectReference`` to ``obj`` (a JSON object or a typed model): kind, apiVersion,
    namespace, name, uid, resourceVersion."""
    if isinstance(obj, msgspec.Struct):
        obj = typed.to_json(obj)
    if not isinstance(obj, Mapping):
        raise TypeError(f"cannot build an object reference to {type(obj).__name__}")
    if "metadata" not in obj:  # already a reference
        return {k: v for k, v in obj.items() if v}
    meta = obj.get("metadata") or {}
    ref = {
        "kind": obj.get("kind"),
        "apiVersion": obj.get("apiVersion"),
        "namespace": meta.get("namespace"),
        "name": meta.get("name"),
        "uid": meta.get("uid"),
        "resourceVersion": meta.get("resourceVersion"),
    }
    return {k: v for k, v in ref.items() if v}


def _expected_refusal(err: Exception) -> bool:
    """AlreadyExists, or Forbidden because the namespace is terminating (client-go logs both at V(5))."""
    if isinstance(err, errors.AlreadyExists):
        return True
    return isinstance(err, errors.APIError) and any(c.reason == "NamespaceTerminating" for c in err.causes)


def _source_key(event: Object) -> str:
    source = event.get("source") or {}
    return _join(source.get("component", ""), source.get("host", ""))


def _object_key(event: Object) -> str:
    ref = event.get("involvedObject") or {}
    return _join(*(str(ref.get(f, "")) for f in ("kind", "namespace", "name", "uid", "apiVersion")))


def _join(*parts: str) -> str:
    return "\x00".join(parts)
