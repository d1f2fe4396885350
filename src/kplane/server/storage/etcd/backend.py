"""``EtcdStorage``: the storage contract over an etcd v3 cluster.

Layout: an object lives at etcd key ``<key_prefix><storage key>`` (``key_prefix`` is empty by
default: kplane's keys already start with ``/registry/``), its value the object's JSON. etcd's
revision is the resourceVersion: an object read is stamped with its ``mod_revision``, a write with
the revision of its transaction. History, historical lists and watches from a past revision are
etcd's own, until etcd is compacted.

Writes are single transactions, so several kplane servers may share one etcd:

* create: ``if mod_revision(key) == 0 then put``; else ``KeyExists``;
* update and delete: read, check preconditions, run the update function, then ``if
  mod_revision(key) == <read> then put/delete else range(key)``: a lost race retries from the value
  the failed transaction returned, without a second read.

Events (``/registry/core/events/``) are written with a lease of ``event_ttl`` seconds, so etcd
deletes them (upstream's ``--event-ttl``); one lease is reused for a minute of writes, as upstream's
lease manager does, so an Event lives between ``event_ttl`` and ``event_ttl + 60`` seconds.

``current_revision`` is the newest revision this process has seen in any etcd response (its own
writes, reads and watches); ``fresh_revision`` asks etcd for the cluster's revision (a linearizable
read), which is what the cache waits for before a consistent read.
"""

from __future__ import annotations

import asyncio
import builtins
import inspect
import logging

import orjson

from kplane._util import clock as clock_
from kplane.server.storage import interface
from kplane.server.storage.etcd import wire
from kplane.server.storage.etcd.client import EtcdClient
from kplane.server.storage.etcd.history import EtcdHistory
from kplane.server.storage.etcd.watch import EtcdWatch

_log = logging.getLogger(__name__)
EVENTS_PREFIX = "/registry/core/events/"
LEASE_REUSE = 60  # seconds one lease serves new Events (upstream's leaseReuseDurationSeconds)
_PAGE = 1_000  # objects per range while loading a whole prefix (bounds one response)
_MINE = 4_096  # objects written here kept for their watch events (normally a few, for a moment)


class EtcdStorage:
    """``Storage`` on etcd (see the module docstring). Owns ``client`` (closed with it)."""

    def __init__(
        self,
        client: EtcdClient,
        *,
        key_prefix: str = "",
        watcher_capacity: int = 10_000,
        event_ttl: int = 3600,
        compaction_interval: float = 300.0,
        clock: clock_.Clock | None = None,
    ) -> None:
        self.client = client
        self._prefix = key_prefix
        self._bprefix = key_prefix.encode()
        self._watcher_capacity = watcher_capacity
        self._event_ttl = event_ttl
        self._clock: clock_.Clock = clock or clock_.RealClock()
        self._compaction_interval = compaction_interval
        self._compactor: asyncio.Task[None] | None = None
        self._rev = 0
        self._compacted = 0
        self._lease = (0, 0.0)  # (id, monotonic time until which it may be given to new Events)
        self._lease_lock = asyncio.Lock()
        self._watches: set[EtcdWatch] = set()
        self._writes = 0
        self._mine: dict[int, tuple[str, interface.Object]] = {}  # see ``_wrote``
        self._idle = asyncio.Event()
        self._idle.set()
        self._closed = False
        self._history = EtcdHistory(self)

    async def start(self) -> None:
        """Learn etcd's current revision (fails with ``StorageError`` if etcd cannot be reached),
        and start compacting history every ``compaction_interval`` seconds (0: never)."""
        try:
            await self.fresh_revision()
        except interface.Timeout:
            endpoints = ",".join(self.client.endpoints)
            why = f" (last error {self.client.last_error})" if self.client.last_error else ""
            raise interface.StorageError(
                f"etcd at {endpoints} did not answer within {self.client.timeout:g}s{why}"
            ) from None
        if self._compaction_interval > 0 and self._compactor is None:
            self._compactor = asyncio.get_running_loop().create_task(
                self._compact_periodically(), name="kplane-etcd-compactor"
            )

    async def _compact_periodically(self) -> None:
        """Upstream's compactor (storage/etcd3/compact.go), so several servers compact once per
        interval between them: each tick, a transaction bumps ``compact_rev_key`` only if its
        version is the one this server last saw; the server whose transaction succeeds compacts
        up to the revision of the previous tick, keeping one interval of history."""
        key = self._bprefix + b"compact_rev_key"
        seen, previous = 0, 0
        while not self._closed:
            await self._clock.sleep(self._compaction_interval)
            try:
                request = wire.txn_request(
                    [wire.compare_version(key, seen)],
                    [wire.op_put(wire.put_request(key, str(previous).encode()))],
                    [wire.op_range(wire.range_request(key))],
                )
                response = await self._txn(request)
                if not response.succeeded:
                    kvs = response.ranges[0].kvs if response.ranges else []
                    seen = kvs[0].version if kvs else 0
                else:
                    seen += 1
                    if previous:
                        await self.compact(previous)
                previous = response.header.revision
            except interface.StorageError as e:
                _log.warning("etcd compaction failed: %s", e)

    # -- encoding --------------------------------------------------------------------------------

    def etcd_key(self, key: str) -> bytes:
        return self._bprefix + key.encode()

    def _storage_key(self, raw: bytes) -> str:
        return raw[len(self._bprefix) :].decode()

    @staticmethod
    def _decode(kv: wire.KeyValue, revision: int = 0) -> interface.Object:
        try:
            obj: interface.Object = orjson.loads(kv.value)
        except orjson.JSONDecodeError:
            raise interface.StorageError(f"undecodable value at {kv.key.decode(errors='replace')}") from None
        if not isinstance(obj, dict):
            raise interface.StorageError(f"undecodable value at {kv.key.decode(errors='replace')}")
        return interface.set_resource_version(obj, revision or kv.mod_revision)

    def decode_event(self, raw: wire.WatchEvent) -> interface.Event | None:
        """The storage event of an etcd watch event (None if it cannot be represented: a value that
        is not a kplane object, or a deletion whose previous state was compacted away)."""
        try:
            return self._event(raw)
        except (interface.StorageError, UnicodeDecodeError) as e:
            _log.warning("etcd watch: skipping an event: %s", e)
            return None

    def _event(self, raw: wire.WatchEvent) -> interface.Event | None:
        key = self._storage_key(raw.kv.key)
        prev = self._decode(raw.prev_kv) if raw.prev_kv is not None and raw.prev_kv.value else None
        if raw.type == wire.DELETE:
            if prev is None:
                return None  # the previous state was compacted away: nothing to report it with
            last = interface.stamped_copy(prev, raw.kv.mod_revision)
            return interface.Event(interface.DELETED, key, last, raw.kv.mod_revision, prev)
        mine = self._mine.pop(raw.kv.mod_revision, None)
        obj = mine[1] if mine is not None and mine[0] == key else self._decode(raw.kv)
        kind = interface.ADDED if raw.kv.version == 1 else interface.MODIFIED
        return interface.Event(
            kind, key, obj, raw.kv.mod_revision, prev if kind == interface.MODIFIED else None
        )

    def observe(self, revision: int) -> None:
        if revision > self._rev:
            self._rev = revision

    def observe_compacted(self, revision: int) -> None:
        if revision > self._compacted:
            self._compacted = revision

    # -- reads -----------------------------------------------------------------------------------

    def current_revision(self) -> int:
        return self._rev

    async def check_health(self, timeout: float = 2.0) -> None:  # noqa: ASYNC109
        """Raise unless etcd answers a linearizable read within ``timeout`` seconds (upstream's
        ``--etcd-healthcheck-timeout``, 2 s)."""
        self._check_open()
        raw = await self.client.call("KV/Range", wire.range_request(b"\0", count_only=True), timeout=timeout)
        self.observe(wire.header_of(raw).revision)

    async def fresh_revision(self) -> int:
        """etcd's current revision, read linearizably."""
        self._check_open()
        raw = await self.client.call("KV/Range", wire.range_request(b"\0", count_only=True))
        revision = wire.header_of(raw).revision
        self.observe(revision)
        return revision

    async def _range(self, request: bytes, revision: int) -> wire.RangeResponse:
        try:
            response = wire.range_response(await self.client.call("KV/Range", request))
        except interface.Expired:
            raise interface.Expired(revision, self._compacted) from None
        except interface.TooLargeRevision:
            raise interface.TooLargeRevision(revision, self._rev) from None
        self.observe(response.header.revision)
        return response

    async def range_at(self, key: str, revision: int) -> builtins.list[wire.KeyValue]:
        """The value of ``key`` as of ``revision`` (none or one); ``Expired`` once compacted."""
        self._check_open()
        if revision < self._compacted:
            raise interface.Expired(revision, self._compacted)
        return (await self._range(wire.range_request(self.etcd_key(key), revision=revision), revision)).kvs

    def decode(self, kv: wire.KeyValue) -> interface.Object:
        """The object stored in ``kv``, stamped with its revision (``StorageError`` if unreadable)."""
        return self._decode(kv)

    # -- history (the contract's optional History; see ``history``) -----------------------------

    async def revisions(
        self, where: str, *, deletions_only: bool = False, limit: int = 1000
    ) -> builtins.list[interface.Revision]:
        self._check_open()
        return await self._history.revisions(where, deletions_only=deletions_only, limit=limit)

    async def get_at(self, key: str, revision: int) -> interface.Object:
        self._check_open()
        return await self._history.get_at(key, revision)

    async def _read_kv(self, key: str) -> wire.KeyValue | None:
        response = await self._range(wire.range_request(self.etcd_key(key)), 0)
        return response.kvs[0] if response.kvs else None

    async def get(self, key: str) -> interface.Object:
        self._check_open()
        kv = await self._read_kv(key)
        if kv is None:
            raise interface.KeyNotFound(key)
        return self._decode(kv)

    async def list(
        self, prefix: str, *, revision: int = 0, start_after: str = "", limit: int = 0
    ) -> interface.ListResult:
        self._check_open()
        if revision and revision < self._compacted:
            raise interface.Expired(revision, self._compacted)
        start = self.etcd_key(start_after) + b"\0" if start_after >= prefix else self.etcd_key(prefix)
        end = wire.prefix_end(self.etcd_key(prefix))
        response = await self._range(wire.range_request(start, end, limit=limit, revision=revision), revision)
        items = [self._decode(kv) for kv in response.kvs]
        more = response.more and bool(items)
        return interface.ListResult(
            items=items,
            revision=revision or response.header.revision,
            more=more,
            remaining=response.count - len(items) if more else 0,
            last_key=self._storage_key(response.kvs[-1].key) if more else "",
        )

    async def list_keyed(self, prefix: str) -> tuple[builtins.list[tuple[str, interface.Object]], int]:
        """Every live ``(key, object)`` under ``prefix`` at one revision, read in pages."""
        self._check_open()
        out: list[tuple[str, interface.Object]] = []
        end = wire.prefix_end(self.etcd_key(prefix))
        start, revision = self.etcd_key(prefix), 0
        while True:
            response = await self._range(
                wire.range_request(start, end, limit=_PAGE, revision=revision), revision
            )
            revision = revision or response.header.revision
            out.extend((self._storage_key(kv.key), self._decode(kv)) for kv in response.kvs)
            if not response.more or not response.kvs:
                return out, revision
            start = response.kvs[-1].key + b"\0"

    # -- writes ----------------------------------------------------------------------------------

    async def _txn(self, request: bytes) -> wire.TxnResponse:
        self._writes += 1
        self._idle.clear()
        try:
            response = wire.txn_response(await self.client.call("KV/Txn", request, write=True))
        finally:
            self._writes -= 1
            if not self._writes:
                self._idle.set()
        self.observe(response.header.revision)
        return response

    async def _lease_for(self, key: str) -> int:
        if not key.startswith(EVENTS_PREFIX) or self._event_ttl <= 0:
            return 0
        async with self._lease_lock:
            lease, until = self._lease
            now = self._clock.monotonic()
            if lease and now < until:
                return lease
            raw = await self.client.call(
                "Lease/LeaseGrant", wire.lease_grant_request(self._event_ttl + LEASE_REUSE), write=True
            )
            grant = wire.lease_grant_response(raw)
            if grant.error:
                raise interface.StorageError(grant.error)
            self._lease = (grant.id, now + LEASE_REUSE)
            return grant.id

    async def create(self, key: str, obj: interface.Object) -> interface.Object:
        self._check_open()
        k = self.etcd_key(key)
        lease = await self._lease_for(key)
        put = wire.op_put(wire.put_request(k, orjson.dumps(obj), lease=lease))
        response = await self._txn(wire.txn_request([wire.compare_mod_revision(k, 0)], [put]))
        if not response.succeeded:
            raise interface.KeyExists(key)
        obj = interface.set_resource_version(obj, response.header.revision)
        self._wrote(key, response.header.revision, obj)
        return obj

    async def guaranteed_update(
        self,
        key: str,
        fn: interface.UpdateFunc,
        *,
        preconditions: interface.Preconditions | None = None,
        cached: interface.Object | None = None,
    ) -> interface.Object:
        # ``cached`` is not used: the cluster is shared, so a cache here is often behind it.
        self._check_open()
        k = self.etcd_key(key)
        kv = await self._read_kv(key)
        while True:
            if kv is None:
                raise interface.KeyNotFound(key)
            current = self._decode(kv)
            copy = self._decode(kv)
            if preconditions is not None:
                preconditions.check(key, copy)
            result = fn(copy)
            new = await result if inspect.isawaitable(result) else result
            self._check_open()
            if new == current:
                return current  # nothing changed: no new revision, as upstream does
            lease = await self._lease_for(key)
            put = wire.op_put(wire.put_request(k, orjson.dumps(new), lease=lease))
            revision, kv = await self._if_unchanged(k, kv, put)
            if revision:
                new = interface.set_resource_version(new, revision)
                self._wrote(key, revision, new)
                return new

    async def delete(
        self, key: str, *, preconditions: interface.Preconditions | None = None
    ) -> interface.Object:
        self._check_open()
        k = self.etcd_key(key)
        kv = await self._read_kv(key)
        while True:
            if kv is None:
                raise interface.KeyNotFound(key)
            current = self._decode(kv)
            if preconditions is not None:
                preconditions.check(key, current)
            revision, kv = await self._if_unchanged(k, kv, wire.op_delete(wire.delete_request(k)))
            if revision:
                self._wrote(key, revision)
                return interface.stamped_copy(current, revision)

    def _wrote(self, key: str, revision: int, obj: interface.Object | None = None) -> None:
        """Tell the watches whose prefix holds ``key`` (``close`` waits for their events), and keep
        the object written (``obj``, as returned to the writer) for the first of them to hand on
        instead of decoding its own write back from etcd: the event then shares it with the
        writer, as the SQLite backend's events do. Kept until that event comes; a bounded number
        of them if it never does."""
        watched = False
        for w in self._watches:
            if key.startswith(w.prefix):
                w.note_write(revision)
                watched = True
        if watched and obj is not None:
            mine = self._mine
            if len(mine) >= _MINE:
                for stale in list(mine)[: _MINE // 2]:
                    del mine[stale]
            mine[revision] = (key, obj)

    async def _if_unchanged(self, k: bytes, kv: wire.KeyValue, op: bytes) -> tuple[int, wire.KeyValue | None]:
        """Apply ``op`` if ``k`` is still at ``kv``'s revision: ``(revision of the write, kv)``;
        else ``(0, the value now at k or None)``, read in the same transaction, to go again from."""
        reread = wire.op_range(wire.range_request(k))
        response = await self._txn(
            wire.txn_request([wire.compare_mod_revision(k, kv.mod_revision)], [op], [reread])
        )
        if response.succeeded:
            return response.header.revision, kv
        kvs = response.ranges[0].kvs if response.ranges else []
        return 0, kvs[0] if kvs else None

    async def compact(self, revision: int) -> None:
        revision = min(revision, self._rev)
        if revision <= self._compacted:
            return
        try:
            raw = await self.client.call("KV/Compact", wire.compaction_request(revision), write=True)
            self.observe(wire.header_of(raw).revision)
        except interface.Expired:
            pass  # another server compacted further already
        self.observe_compacted(revision)

    async def close(self) -> None:
        """Let pending writes finish, end every watch once it has delivered them, close the client."""
        if self._closed:
            return
        self._closed = True
        if self._compactor is not None:
            self._compactor.cancel()
        await self._idle.wait()
        watches = list(self._watches)
        if watches:
            await asyncio.gather(*(w.delivered(2.0) for w in watches))
        for w in watches:
            w.end()
        await self.client.close()

    # -- watch -----------------------------------------------------------------------------------

    def watch(self, prefix: str, from_revision: int) -> interface.Watch:
        self._check_open()
        if from_revision > self._rev:
            raise interface.TooLargeRevision(from_revision, self._rev)
        if from_revision < self._compacted:
            raise interface.Expired(from_revision, self._compacted)
        w = EtcdWatch(self, prefix, from_revision, capacity=self._watcher_capacity)
        self._watches.add(w)
        return w

    def forget(self, watch: EtcdWatch) -> None:
        """``watch`` is over: stop tracking it."""
        self._watches.discard(watch)

    def _check_open(self) -> None:
        if self._closed:
            raise interface.StorageError("storage is closed")
