"""The storage contract, modelled on etcd.

One key space, one global revision. Every successful write (create, update, delete) increments the
revision by exactly one and is stamped with it: the stored object's ``metadata.resourceVersion`` is
set by the backend to ``str(revision)`` of its last write. Keys look like
``/registry/<group>/<resource>/<namespace>/<name>`` (``/registry/<group>/<resource>/<name>`` when
cluster-scoped); prefixes used with ``list``/``watch`` end with ``/``.

Objects are JSON-shaped dicts. Ownership: an object passed *into* storage belongs to storage after
the call (the caller must not mutate it again); an object returned *from* storage is shared and must
be treated as read-only (copy before changing it). ``UpdateFunc`` receives a private deep copy that
it may mutate and return.

Durability: a write call returns only after the write is durable for the backend (for SQLite: its
transaction is committed with ``synchronous=FULL``).

Ordering: ``watch`` delivers every event with revision > ``from_revision`` under the prefix, in
revision order, exactly once, until closed. A watcher that cannot keep up is terminated with an
error (its iterator raises ``StorageError``) rather than blocking writers or other watchers.

History (optional, ``History``): a backend that keeps the log of past revisions may answer the
retained writes of a key and the state of a key at a past revision. Each write is recorded with the
wall-clock time of its commit and the ``WRITER`` in effect when it was made (the API server sets it to
the authenticated user of the request).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

Object = dict[str, Any]
EventType = Literal["ADDED", "MODIFIED", "DELETED"]
ADDED: EventType = "ADDED"
MODIFIED: EventType = "MODIFIED"
DELETED: EventType = "DELETED"


class StorageError(Exception):
    """Base of storage failures. The registry maps each subclass to an API error."""


class KeyNotFound(StorageError):
    def __init__(self, key: str) -> None:
        super().__init__(f"key not found: {key}")
        self.key = key


class KeyExists(StorageError):
    def __init__(self, key: str) -> None:
        super().__init__(f"key exists: {key}")
        self.key = key


class PreconditionFailed(StorageError):
    """A precondition (uid or resourceVersion) did not match the stored object."""

    def __init__(self, key: str, what: str, expected: str, actual: str) -> None:
        super().__init__(f"precondition failed for {key}: {what} expected {expected}, is {actual}")
        self.key, self.what, self.expected, self.actual = key, what, expected, actual


class Expired(StorageError):
    """The requested revision is older than the retained history (compacted)."""

    def __init__(self, requested: int, oldest: int) -> None:
        super().__init__(f"too old resource version: {requested} ({oldest})")
        self.requested, self.oldest = requested, oldest


class TooLargeRevision(StorageError):
    """The requested revision is newer than the store's current revision."""

    def __init__(self, requested: int, current: int) -> None:
        super().__init__(f"Too large resource version: {requested}, current: {current}")
        self.requested, self.current = requested, current


class NoSpace(StorageError):
    """The store's disk is full: the write was not made. Reads still work, and deletions and
    compaction are still attempted (they are how space is given back)."""

    def __init__(self, path: str, detail: str) -> None:
        super().__init__(f"no space left for {path}: {detail}")
        self.path, self.detail = path, detail


class Timeout(StorageError):
    """The backend did not answer within its deadline (a remote store: etcd). The write may or
    may not have been applied."""

    def __init__(self, detail: str = "context deadline exceeded") -> None:
        super().__init__(detail)


class Unavailable(StorageError):
    """A remote backend refused or failed the call; the message is the backend's own (etcd's)."""


@dataclass(frozen=True, slots=True)
class Preconditions:
    """Conditions checked atomically with a write; ``None`` means "don't check"."""

    uid: str | None = None
    resource_version: str | None = None

    def check(self, key: str, current: Object) -> None:
        """Raise ``PreconditionFailed`` if ``current`` does not satisfy these conditions."""
        meta = current.get("metadata") or {}
        if self.uid is not None and meta.get("uid") != self.uid:
            raise PreconditionFailed(key, "uid", self.uid, str(meta.get("uid")))
        if self.resource_version is not None and meta.get("resourceVersion") != self.resource_version:
            raise PreconditionFailed(
                key, "resourceVersion", self.resource_version, str(meta.get("resourceVersion"))
            )


@dataclass(slots=True)
class Event:
    """One change. ``object`` is the new state (for DELETED: the last state, stamped with the
    deletion's revision); ``prev_object`` the state before (None for ADDED).

    ``encoded`` is a per-event memo for serialized forms (keyed by the encoder's choice), so that an
    event fanned out to many watchers is encoded once.
    """

    type: EventType
    key: str
    object: Object
    revision: int
    prev_object: Object | None = None
    encoded: dict[Any, bytes] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ListResult:
    """A consistent snapshot of (part of) a prefix, taken at ``revision``.

    ``items`` are in key order. ``more`` is True when ``limit`` cut the result; then ``remaining`` is
    how many further keys exist in the snapshot and ``last_key`` is the key to continue after.
    """

    items: list[Object]
    revision: int
    more: bool = False
    remaining: int = 0
    last_key: str = ""


UpdateFunc = Callable[[Object], Object | Awaitable[Object]]
"""Given a private copy of the current object, return the new object (may mutate and return its
argument). Raise to abort the update; the exception propagates out of ``guaranteed_update``."""

STALE_READ: ContextVar[bool] = ContextVar("kplane_storage_stale_read", default=False)
"""True while an ``UpdateFunc`` runs on a value the backend read in a form it no longer writes
(encrypted with an old key: upstream's "stale" transformer read). An update function that skips
unchanged writes must write anyway then, so rewriting an object moves it to the current form."""


WRITER: ContextVar[str] = ContextVar("kplane_storage_writer", default="")
"""Who makes the writes of the current task (the request's user); a backend that keeps history
records it with each write it accepts, at no other cost."""


@dataclass(frozen=True, slots=True)
class Revision:
    """One retained write of one key.

    ``type`` is ADDED for the write that created the key (a re-creation after a deletion too),
    DELETED for a deletion, MODIFIED otherwise. ``object`` is the state the write left, stamped with
    ``revision`` (for DELETED: the last state). ``timestamp`` is the commit's wall-clock time in
    seconds since the epoch and ``writer`` the ``WRITER`` of the write (0.0 and "" when the store
    recorded none, e.g. rows written before it kept them).
    """

    revision: int
    key: str
    type: EventType
    object: Object
    timestamp: float = 0.0
    writer: str = ""


class HistoryNotKept(StorageError):
    """The backend does not keep a readable history (it does not implement ``History``)."""

    def __init__(self) -> None:
        super().__init__("this storage backend does not keep object history")


class History(Protocol):
    """Reading the retained past of the store (optional: see ``history_of``).

    Retention is the backend's (its compaction); what compaction removed is gone: ``get_at`` below
    the compacted revision raises ``Expired``. Both methods are consistent snapshots of the log.
    """

    async def revisions(
        self, where: str, *, deletions_only: bool = False, limit: int = 1000
    ) -> list[Revision]:
        """The retained writes of the key ``where`` or, when ``where`` ends with ``/``, of every key
        under that prefix; with ``deletions_only``, only deletions. The newest ``limit`` of them
        (``limit`` >= 1), in revision order. A key never written, or compacted away, gives ``[]``."""
        ...

    async def get_at(self, key: str, revision: int) -> Object:
        """The object at ``key`` as of ``revision`` (its resourceVersion is that of the write that
        made it, <= ``revision``). Raises ``KeyNotFound`` when absent then, ``Expired`` when
        ``revision`` is older than the retained history, ``TooLargeRevision`` when in the future."""
        ...


def history_of(store: object) -> History:
    """``store``'s ``History``; raises ``HistoryNotKept`` when it keeps none."""
    if callable(getattr(store, "revisions", None)) and callable(getattr(store, "get_at", None)):
        return store  # type: ignore[return-value]
    raise HistoryNotKept()


class Watch(Protocol):
    """A stream of events; iterate it, and ``close`` it when done (idempotent).

    Iteration raises ``StorageError`` if the watch was terminated (its consumer fell behind, or its
    source failed). ``__anext__`` may be cancelled while it waits without losing an event.
    """

    def __aiter__(self) -> AsyncIterator[Event]: ...

    @property
    def ready(self) -> bool:
        """True when the next step of the iteration completes without waiting."""
        ...

    def on_terminate(self, callback: Callable[[StorageError], None]) -> None:
        """Have ``callback(error)`` called once, synchronously and at once, if the watch is terminated
        with an error (never after ``close`` or a graceful end): lets a consumer busy elsewhere (e.g.
        blocked writing to a slow socket) give up without waiting for its next step."""
        ...

    def wake_when_ready(self, waiter: asyncio.Future[None]) -> None:
        """Resolve ``waiter`` (unless it is done by then) once ``ready`` is true: at once if it is
        now. One waiter at a time (a later call replaces it). Lets a consumer that must also wake on
        a timer wait for the next event with one future, not a task stepping the iteration."""
        ...

    def close(self) -> None: ...


class Storage(Protocol):
    """The contract every backend and the cache implement (see the module docstring)."""

    async def get(self, key: str) -> Object:
        """The current object at ``key``; raises ``KeyNotFound``."""
        ...

    async def list(
        self, prefix: str, *, revision: int = 0, start_after: str = "", limit: int = 0
    ) -> ListResult:
        """Objects whose key starts with ``prefix``, in key order, as of ``revision`` (0 = current),
        starting after key ``start_after``, at most ``limit`` (0 = all). Raises ``Expired`` if
        ``revision`` was compacted and ``TooLargeRevision`` if it is in the future."""
        ...

    async def create(self, key: str, obj: Object) -> Object:
        """Store a new object; raises ``KeyExists``. Returns the stored object (with its RV)."""
        ...

    async def guaranteed_update(
        self,
        key: str,
        fn: UpdateFunc,
        *,
        preconditions: Preconditions | None = None,
        cached: Object | None = None,
    ) -> Object:
        """Read-modify-write: call ``fn`` on a copy of the current object and store what it returns,
        retrying from a fresh read if another write raced in between. Preconditions are checked
        against the object ``fn`` is given. Raises ``KeyNotFound`` / ``PreconditionFailed``.

        ``cached`` (read-only, stamped with its resourceVersion) is what the caller believes the
        current object is (upstream's ``cachedExistingObject``): a backend may start from it
        instead of reading. If it was stale, the outcome is the same as without it: the write
        conflicts and is retried from a fresh read, and a failed precondition or an error from
        ``fn`` is re-checked against a fresh read before it is reported. Backends may ignore it."""
        ...

    async def delete(self, key: str, *, preconditions: Preconditions | None = None) -> Object:
        """Remove ``key``; returns the last state stamped with the deletion's revision."""
        ...

    def watch(self, prefix: str, from_revision: int) -> Watch:
        """Events under ``prefix`` with revision > ``from_revision``. Raises ``Expired`` if
        ``from_revision`` is older than the retained history, ``TooLargeRevision`` if it is ahead."""
        ...

    def current_revision(self) -> int:
        """The revision of the latest durable write (0 for an empty store)."""
        ...

    async def compact(self, revision: int) -> None:
        """Forget history at and before ``revision`` (current objects are always kept)."""
        ...

    async def close(self) -> None:
        """Release resources; pending writes complete first."""
        ...


def set_resource_version(obj: Object, revision: int) -> Object:
    """Stamp ``obj`` (in place) with ``revision`` as its resourceVersion and return it."""
    meta = obj.get("metadata")
    if meta is None:
        meta = obj["metadata"] = {}
    meta["resourceVersion"] = str(revision)
    return obj


def stamped_copy(obj: Object, revision: int) -> Object:
    """A shallow copy of ``obj`` with its own ``metadata`` carrying ``revision`` as resourceVersion
    (for a deletion's last state, so the shared earlier state is not mutated)."""
    out = dict(obj)
    out["metadata"] = {**(obj.get("metadata") or {}), "resourceVersion": str(revision)}
    return out
