"""Watching that resumes: typed watch events and a watcher that reopens its stream where it stopped.

Design note. A single watch request ends for ordinary reasons (the server's ``timeoutSeconds``, a
dropped connection, a slow-watcher termination) and one extraordinary one: the resourceVersion to
resume from has left the server's history window (410 Gone, reason ``Expired``). ``RetryWatcher``
hides the ordinary ends: it remembers the resourceVersion of the last event or BOOKMARK it saw and
reopens the watch from there, so no event is lost or repeated across reconnections. Errors wait a
bounded, jittered exponential backoff first (client-go's reflector numbers: 0.8 s doubling to 30 s,
jitter 1.0, reset after 2 min quiet). A stream that ends in under a second with no event counts as an
error, so a misbehaving server cannot drive a hot reconnect loop. Each request asks the server to
end it after a random 5-10 minutes, which spreads reconnections of many clients over time.

Gone is not hidden: no watch can recover the events that were compacted away, so ``RetryWatcher``
raises ``errors.Gone`` and its caller must list again. The component that does that, and so keeps
a cache equal to the server's state across 410s (deletions in the gap included), is
``kplane.informers.Reflector``; use ``RetryWatcher`` directly only when you already hold a
resourceVersion and can handle Gone yourself (as client-go's ``watchtools.RetryWatcher``).

``ListerWatcher`` is the seam both use: a ``ResourceClient`` of ``kplane.client.dynamic`` satisfies
it, and ``ListWatch`` pins one to a namespace and selectors.
"""

from __future__ import annotations

import dataclasses
import enum
import logging
import random
from collections.abc import AsyncIterator, Mapping
from typing import Any, Generic, Protocol, TypeVar

from kplane._util import backoff as backoff_mod
from kplane._util import clock as clock_mod
from kplane.api import errors
from kplane.client import options as options_mod

log = logging.getLogger(__name__)

Object = dict[str, Any]

INITIAL_EVENTS_END = "k8s.io/initial-events-end"
"""Annotation on the BOOKMARK that ends the initial events of a ``sendInitialEvents`` watch."""

MIN_WATCH_TIMEOUT = 300
"""Lower bound of the random per-request watch timeout, seconds (client-go: 5 min; max is twice it)."""

VERY_SHORT_WATCH = 1.0
"""A watch that ends normally in less than this many seconds with no event is treated as an error."""


class EventType(enum.StrEnum):
    """The ``type`` of a watch event."""

    ADDED = "ADDED"
    MODIFIED = "MODIFIED"
    DELETED = "DELETED"
    BOOKMARK = "BOOKMARK"
    ERROR = "ERROR"


T = TypeVar("T")


@dataclasses.dataclass(frozen=True, slots=True)
class WatchEvent(Generic[T]):
    """One event of a watch stream, from the dynamic client (``object`` a dict) or the typed one (a model).

    ``type`` is ADDED, MODIFIED, DELETED or BOOKMARK: an ERROR event is never yielded, the stream
    raises its typed error instead (``errors.Gone`` for 410 Expired). Treat ``object`` as read-only.
    """

    type: EventType
    object: T

    @property
    def resource_version(self) -> str:
        """The object's ``metadata.resourceVersion`` (``""`` if absent)."""
        return str(_meta(self.object, "resourceVersion", "resource_version") or "")

    @property
    def is_initial_events_end(self) -> bool:
        """True for the BOOKMARK that closes the initial events of a WatchList stream."""
        if self.type is not EventType.BOOKMARK:
            return False
        annotations = _meta(self.object, "annotations", "annotations") or {}
        return bool(annotations.get(INITIAL_EVENTS_END) == "true")


def _meta(obj: Any, key: str, attr: str) -> Any:
    """``metadata[key]`` of a dict, ``metadata.<attr>`` of a model; ``None`` when absent."""
    if type(obj) is dict or isinstance(obj, Mapping):  # exact dicts skip the ABC check
        meta = obj.get("metadata")
        return meta.get(key) if type(meta) is dict or isinstance(meta, Mapping) else None
    return getattr(getattr(obj, "metadata", None), attr, None)


class VeryShortWatchError(Exception):
    """The server ended a watch immediately and without events; something is wrong with it."""


def event_type(value: object) -> EventType:
    """The ``EventType`` of a raw event's ``type``; an unknown one is a server error."""
    try:
        return EventType(str(value))
    except ValueError:
        raise errors.InternalError(f"unknown watch event type {value!r}") from None


def decode(raw: Mapping[str, Any]) -> WatchEvent[Object]:
    """The event of a raw ``{"type", "object"}`` dict; an ERROR event raises its typed error.

    This is the one place where an ERROR event becomes an exception, for dicts; the typed codec
    applies the same rule through ``raise_error``.
    """
    kind = event_type(raw.get("type"))
    obj = raw.get("object")
    if not isinstance(obj, dict):
        raise errors.InternalError(f"watch event {kind} carries no object")
    raise_error(kind, obj)
    return WatchEvent(kind, obj)


def raise_error(kind: EventType, status: Any) -> None:
    """Raise the typed error an ERROR event carries (its object is a ``Status``); other kinds pass."""
    if kind is EventType.ERROR:
        raise errors.from_status(status if isinstance(status, dict) else {})


def random_watch_timeout(rand: backoff_mod.Rand = random.random) -> int:
    """A per-request ``timeoutSeconds`` drawn uniformly from [5 min, 10 min]."""
    return int(MIN_WATCH_TIMEOUT * (1.0 + rand()))


def is_retriable(err: BaseException) -> bool:
    """Whether a failed watch may simply be reopened from the same resourceVersion after a backoff.

    Gone needs a relist and terminal errors (bad request, invalid options) need a code change;
    everything else (connection failures, 429, 5xx, slow-watcher terminations, timeouts, and 401/403
    that may be fixed by credential or RBAC changes) is retried.
    """
    if isinstance(err, errors.Gone | errors.TerminalError):
        return False
    return isinstance(err, Exception)


class ListerWatcher(Protocol):
    """Lists and watches one resource (client-go ``cache.ListerWatcher``).

    ``list`` returns ONE page of the raw List JSON; ``watch`` yields ``WatchEvent``s (BOOKMARKs
    included) and ends when the server ends the stream. Non-2xx answers and ERROR events raise
    ``kplane.api.errors`` exceptions. Selectors are the
    ListerWatcher's own: callers set only versions, paging and watch parameters in ``options``.
    """

    async def list(self, options: options_mod.ListOptions) -> Object:
        """One page of the List."""
        ...

    def watch(self, options: options_mod.ListOptions) -> AsyncIterator[WatchEvent[Object]]:
        """The event stream of one watch request."""
        ...


class ResourceListWatch(Protocol):
    """The list and watch verbs of a ``kplane.client.dynamic.ResourceClient``."""

    async def list(
        self, options: options_mod.ListOptions | None = None, *, namespace: options_mod.Namespace = None
    ) -> Object: ...

    def watch(
        self, options: options_mod.ListOptions | None = None, *, namespace: options_mod.Namespace = None
    ) -> AsyncIterator[WatchEvent[Object]]: ...


_NO_SELECTOR = options_mod.ListOptions()


@dataclasses.dataclass(frozen=True)
class ListWatch:
    """A ``ListerWatcher`` over a resource client, restricted to a namespace and selectors.

    ``namespace=None`` means the client's default (its bound namespace, else the kubeconfig
    context's); ``ALL`` spans every namespace. ``selector`` supplies the label and field selectors
    of every request.
    """

    client: ResourceListWatch
    namespace: options_mod.Namespace = None
    selector: options_mod.ListOptions = _NO_SELECTOR

    async def list(self, options: options_mod.ListOptions) -> Object:
        return await self.client.list(options.selecting(self.selector), namespace=self.namespace)

    def watch(self, options: options_mod.ListOptions) -> AsyncIterator[WatchEvent[Object]]:
        return self.client.watch(options.selecting(self.selector), namespace=self.namespace)


class RetryWatcher:
    """Events of one resource from ``resource_version`` on, across any number of watch requests.

    Iterating yields ADDED, MODIFIED and DELETED events (and BOOKMARKs if ``bookmarks``) in server
    order, each exactly once. The watcher resumes from the resourceVersion of the last event or
    bookmark; a failed request is reopened after ``backoff.step()`` seconds (default: the reflector
    backoff on ``clock``). Iteration raises ``errors.Gone`` when the server can no longer resume
    (the caller must relist) and terminal API errors as they are; it never ends on its own.

    ``stream``, if given, is an already open raw stream consumed first (the reflector hands over
    its WatchList stream this way). ``resource_version`` must not be ``""`` or ``"0"``: those ask
    for a fresh snapshot, not a resumption.

    ``failing_since`` is the clock's monotonic time of the first of the failed watch requests in a
    row (``None`` while watches work: an event arrived or a stream ended normally since).
    """

    def __init__(
        self,
        lw: ListerWatcher,
        resource_version: str,
        *,
        bookmarks: bool = False,
        clock: clock_mod.Clock | None = None,
        backoff: backoff_mod.BackoffManager | None = None,
        stream: AsyncIterator[WatchEvent[Object]] | None = None,
        _rand: backoff_mod.Rand = random.random,
    ) -> None:
        if resource_version in ("", "0"):
            raise ValueError(f"RetryWatcher needs a concrete resourceVersion, got {resource_version!r}")
        self._lw = lw
        self._rv = resource_version
        self._bookmarks = bookmarks
        self._clock: clock_mod.Clock = clock or clock_mod.RealClock()
        self._backoff = backoff or backoff_mod.reflector_backoff(self._clock, rand=_rand)
        self._stream = stream
        self._rand = _rand
        self.failing_since: float | None = None

    @property
    def resource_version(self) -> str:
        """The resourceVersion the next watch request would resume from."""
        return self._rv

    def __aiter__(self) -> AsyncIterator[WatchEvent[Object]]:
        return self._events()

    async def _events(self) -> AsyncIterator[WatchEvent[Object]]:
        while True:
            stream, self._stream = self._stream, None
            started = self._clock.monotonic()
            seen = 0
            try:
                if stream is None:
                    stream = self._lw.watch(
                        options_mod.ListOptions(
                            resource_version=self._rv, timeout_seconds=random_watch_timeout(self._rand)
                        )
                    )
                async for event in stream:
                    seen += 1
                    self.failing_since = None
                    rv = event.resource_version
                    if rv:
                        self._rv = rv
                    if event.type is EventType.BOOKMARK and not self._bookmarks:
                        continue
                    yield event
                if seen == 0 and self._clock.monotonic() - started < VERY_SHORT_WATCH:
                    raise VeryShortWatchError("very short watch: the server closed it at once, with no event")
                self.failing_since = None
                continue  # an ordinary end: reopen at once from the last resourceVersion
            except Exception as err:
                if not is_retriable(err):
                    raise
                if self.failing_since is None:
                    self.failing_since = self._clock.monotonic()
                delay = self._backoff.step()
                log.info("watch from resourceVersion %s failed (%s); retrying in %.1fs", self._rv, err, delay)
            finally:
                if stream is not None:
                    await _aclose(stream)
            await self._clock.sleep(delay)


async def _aclose(stream: AsyncIterator[Any]) -> None:
    """Close an async generator stream so its HTTP response is released promptly."""
    close = getattr(stream, "aclose", None)
    if close is not None:
        await close()
