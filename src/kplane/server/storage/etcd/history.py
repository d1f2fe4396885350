"""Object history on etcd: the storage contract's optional ``History``, from etcd's own MVCC log.

etcd keeps every revision until it is compacted, so ``get_at`` is one range read at a revision, and
``revisions`` replays the watch history of a key (or prefix) from the oldest retained revision up
to the current one. etcd records neither the time of a write nor who made it: every ``Revision``
has ``timestamp`` 0.0 and ``writer`` "".

Knowing that a replay is complete: etcd answers a progress request once the watch has sent all
history up to that revision, except before 3.4.24 / 3.5.8 (etcd issue 15220), which may answer it
first. With those versions the replay is taken as complete when a response up to the target
revision arrived or the stream stayed quiet for ``_QUIET`` seconds (etcd sends the history of a
new watch every 100 ms, in batches of up to 1,000 revisions).
"""

from __future__ import annotations

import asyncio
import re
from typing import TYPE_CHECKING

from kplane.server.storage import interface
from kplane.server.storage.etcd import grpc_stream, wire

if TYPE_CHECKING:
    from kplane.server.storage.etcd.backend import EtcdStorage

_QUIET = 0.3


def progress_is_ordered(version: str) -> bool:
    """Whether an etcd of ``version`` answers a progress request only after the history before it."""
    m = re.match(r"(\d+)\.(\d+)\.(\d+)", version)
    if m is None:
        return False
    major, minor, patch = (int(g) for g in m.groups())
    return (major, minor, patch) >= (3, 6, 0) or (
        ((major, minor) == (3, 5) and patch >= 8) or ((major, minor) == (3, 4) and patch >= 24)
    )


class EtcdHistory:
    """``History`` of one ``EtcdStorage`` (see the module docstring)."""

    def __init__(self, store: EtcdStorage) -> None:
        self._store = store
        self._ordered: bool | None = None

    async def get_at(self, key: str, revision: int) -> interface.Object:
        store = self._store
        current = await store.fresh_revision()
        if revision > current:
            raise interface.TooLargeRevision(revision, current)
        kvs = await store.range_at(key, revision)
        if not kvs:
            raise interface.KeyNotFound(key)
        return store.decode(kvs[0])

    async def revisions(
        self, where: str, *, deletions_only: bool = False, limit: int = 1000
    ) -> list[interface.Revision]:
        store = self._store
        target = await store.fresh_revision()
        k = store.etcd_key(where)
        end = wire.prefix_end(k) if where.endswith("/") else b""
        out: list[interface.Revision] = []
        for raw in await self._replay(k, end, target):
            event = store.decode_event(raw)
            if event is None or (deletions_only and event.type != interface.DELETED):
                continue
            out.append(interface.Revision(event.revision, event.key, event.type, event.object))
        return out[-max(1, limit) :]

    async def _replay(self, key: bytes, end: bytes, target: int) -> list[wire.WatchEvent]:
        """Every retained event of ``[key, end)`` up to ``target``, in revision order."""
        store = self._store
        if self._ordered is None:
            status = wire.status_response(await store.client.call("Maintenance/Status", b""))
            self._ordered = progress_is_ordered(status.version)
        start = 1
        async with asyncio.timeout(store.client.timeout):
            while True:
                call = await store.client.stream("Watch/Watch")
                try:
                    events, compacted = await self._read(call, key, end, start, target)
                finally:
                    call.cancel()
                if not compacted:
                    return events
                store.observe_compacted(compacted - 1)
                start = compacted  # the oldest revision etcd still has

    async def _read(
        self, call: grpc_stream.Stream, key: bytes, end: bytes, start: int, target: int
    ) -> tuple[list[wire.WatchEvent], int]:
        """``(events, 0)``, or ``([], compact revision)`` when ``start`` was compacted."""
        await call.write(wire.watch_create_request(key, end, start, progress_notify=False))
        events: list[wire.WatchEvent] = []
        while True:
            try:
                raw = await (call.read() if self._ordered else asyncio.wait_for(call.read(), _QUIET))
            except TimeoutError:
                return events, 0  # quiet: a pre-3.4.24 etcd sent its history
            if raw is None:
                raise interface.Unavailable("etcd ended the watch stream")
            response = wire.watch_response(raw)
            if response.compact_revision:
                return [], response.compact_revision
            if response.created:
                if self._ordered:
                    await call.write(wire.watch_progress_request())
                elif target < start:
                    return events, 0
                continue
            if not response.events:
                if self._ordered and response.header.revision >= target:
                    return events, 0
                continue
            events.extend(e for e in response.events if e.kv.mod_revision <= target)
            if response.events[-1].kv.mod_revision >= target:
                return events, 0
