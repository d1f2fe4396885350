"""``EtcdWatch``: one etcd watch stream turned into a ``Watch`` of storage events.

A reader task opens a gRPC ``Watch`` stream, asks for events under a key range from a revision
(with ``prev_kv``: the previous state becomes ``prev_object`` and a deletion's last state), and
queues the converted events. The queue holds at most ``capacity`` events: a consumer that falls
further behind is terminated with ``StorageError``, never slowing the reader's stream.

The stream survives a member's failure: when it breaks, the reader fails over to the client's next
endpoint and resumes from the last revision it queued, so nothing is lost or repeated. Only a
compaction past that revision ends the watch (``Expired``), as etcd reports it.

Progress: ``request_progress`` asks etcd for a progress notification (its current revision, sent
once every event before it was sent). The consumer learns it through ``on_progress``: the callback
runs when the iteration reaches that point, so every earlier event has been taken by then. A
notification is ignored while the event of a write this process made under the prefix
(``note_write``) has not arrived: etcd before 3.4.24 may send one ahead of queued events (etcd
issue 15220), and a read after that write would then miss it.
"""

from __future__ import annotations

import asyncio
import collections
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from kplane.server.storage import interface
from kplane.server.storage.etcd import grpc_status, grpc_stream, wire

if TYPE_CHECKING:
    from kplane.server.storage.etcd.backend import EtcdStorage

_log = logging.getLogger(__name__)
_END = object()
# etcd cancels a watch on a member that lost its leader only when asked to (clientv3.WithRequireLeader).
_REQUIRE_LEADER = (("hasleader", "true"),)


class EtcdWatch:
    """Events under ``prefix`` with revision > ``after`` (see the module docstring)."""

    def __init__(self, storage: EtcdStorage, prefix: str, after: int, *, capacity: int) -> None:
        self._storage = storage
        self.prefix = prefix
        self._next = after + 1  # the first revision not yet queued
        self._capacity = capacity
        self._queue: collections.deque[interface.Event | int | object] = collections.deque()
        self._live = 0  # events in the queue
        self._waiter: asyncio.Future[None] | None = None
        self._error: interface.StorageError | None = None
        self._done = False
        self._on_terminate: list[Callable[[interface.StorageError], None]] = []
        self._on_progress: Callable[[int], None] | None = None
        self._sink: Callable[[interface.Event], None] | None = None
        self._call: grpc_stream.Stream | None = None
        self._sends: set[asyncio.Future[None]] = set()
        self._written = after  # the newest write of this process under the prefix (``note_write``)
        self._delivery_waiters: list[tuple[int, asyncio.Future[None]]] = []
        self._task = asyncio.get_running_loop().create_task(self._read(), name="kplane-etcd-watch")

    # -- Watch protocol ------------------------------------------------------------------------

    def __aiter__(self) -> EtcdWatch:
        return self

    async def __anext__(self) -> interface.Event:
        while True:
            while not self._queue:
                if self._error is not None:
                    raise self._error
                if self._done:
                    raise StopAsyncIteration
                fut = self._waiter = asyncio.get_running_loop().create_future()
                try:
                    await fut
                finally:
                    self._waiter = None
            item = self._queue.popleft()
            if item is _END:
                self._done = True
                self._queue.clear()
                raise StopAsyncIteration
            if isinstance(item, int):
                if self._on_progress is not None:
                    self._on_progress(item)
                continue
            self._live -= 1
            assert isinstance(item, interface.Event)
            return item

    @property
    def ready(self) -> bool:
        return bool(self._queue) or self._done or self._error is not None

    def on_terminate(self, callback: Callable[[interface.StorageError], None]) -> None:
        self._on_terminate.append(callback)

    def wake_when_ready(self, waiter: asyncio.Future[None]) -> None:
        if self.ready:
            if not waiter.done():
                waiter.set_result(None)
        else:
            self._waiter = waiter

    def on_progress(self, callback: Callable[[int], None]) -> None:
        """Have ``callback(revision)`` called when the iteration passes a progress notification:
        every event up to ``revision`` under the prefix has been taken from this watch."""
        self._on_progress = callback

    def deliver_to(self, sink: Callable[[interface.Event], None]) -> None:
        """From now on hand each event to ``sink(event)`` (in order, synchronously, as it is read
        from etcd) instead of queueing it; progress goes to ``on_progress`` at the same point. The
        iteration then only ends or raises as the watch does. For the cache: one event costs no
        queue, future or task switch. An exception from ``sink`` terminates the watch."""
        queued = [item for item in self._queue if item is not _END]
        self._queue = collections.deque(item for item in self._queue if item is _END)
        self._live = 0
        self._sink = sink
        for item in queued:
            self._hand(item)

    def _hand(self, item: interface.Event | int | object) -> None:
        if isinstance(item, interface.Event):
            assert self._sink is not None
            self._sink(item)
        elif isinstance(item, int) and self._on_progress is not None:
            self._on_progress(item)

    def close(self) -> None:
        if self._done and self._task.done():
            return
        self._done = True
        self._queue.clear()
        self._task.cancel()
        self._storage.forget(self)
        self._wake()

    # -- producer side ---------------------------------------------------------------------------

    def request_progress(self) -> None:
        """Ask etcd for a progress notification (ignored while the stream is being re-established)."""
        call = self._call
        if call is not None and not self._done:
            task = asyncio.ensure_future(self._send(call, wire.watch_progress_request()))
            self._sends.add(task)
            task.add_done_callback(self._sends.discard)

    def note_write(self, revision: int) -> None:
        """This process wrote a key under the prefix at ``revision`` (``delivered`` waits for it)."""
        if revision > self._written:
            self._written = revision

    async def delivered(self, timeout: float) -> None:  # noqa: ASYNC109
        """Wait (at most ``timeout`` s) until the event of every write ``note_write`` was told of
        is queued. Only events count, not progress notifications: etcd before 3.4.24 may send one
        ahead of events still queued for the watch (etcd issue 15220), which made ``close`` end a
        watch before it had delivered the last writes."""
        revision = self._written
        if self._next > revision:
            return
        fut = asyncio.get_running_loop().create_future()
        self._delivery_waiters.append((revision, fut))
        try:
            await asyncio.wait((fut, self._task), timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            fut.cancel()

    def end(self) -> None:
        """End the iteration after what is queued (the store is closing)."""
        self._task.cancel()
        self._queue.append(_END)
        self._storage.forget(self)
        self._wake()

    async def _send(self, call: grpc_stream.Stream, request: bytes) -> None:
        try:
            await call.write(request)
        except grpc_status.RpcError:
            pass  # the reader sees the broken stream and reconnects

    def _fail(self, error: interface.StorageError) -> None:
        if self._error is not None or self._done:
            return
        self._error = error
        self._queue.clear()
        self._storage.forget(self)
        self._wake()
        for callback in self._on_terminate:
            callback(error)

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def _reached(self, revision: int) -> None:
        keep = []
        for wanted, fut in self._delivery_waiters:
            if wanted <= revision:
                if not fut.done():
                    fut.set_result(None)
            else:
                keep.append((wanted, fut))
        self._delivery_waiters = keep

    async def _read(self) -> None:
        client = self._storage.client
        key = self._storage.etcd_key(self.prefix)
        end = wire.prefix_end(key)
        pause = 0.05
        while not self._done:
            endpoint = client.endpoint
            call: grpc_stream.Stream | None = None
            try:
                call = await client.stream("Watch/Watch", metadata=_REQUIRE_LEADER)
                await call.write(wire.watch_create_request(key, end, self._next))
                self._call = call
                while True:
                    raw = await call.read()
                    if raw is None:
                        raise ConnectionError("watch stream ended")
                    if self._consume(wire.watch_response(raw)):
                        return
                    pause = 0.05
            except asyncio.CancelledError:
                raise
            except (grpc_status.RpcError, ConnectionError, interface.StorageError, wire.DecodeError) as e:
                if self._done:
                    return
                _log.info("etcd watch on %s broke (%s); resuming at %d", endpoint, _why(e), self._next)
                client.fail_over(endpoint)
                await asyncio.sleep(pause)
                pause = min(pause * 2, 1.0)
            finally:
                self._call = None
                if call is not None:
                    call.cancel()  # ends the stream at etcd too

    def _consume(self, response: wire.WatchResponse) -> bool:
        """Queue a response's events; True when the watch is over (canceled by etcd)."""
        self._storage.observe(response.header.revision)
        if response.compact_revision:
            self._storage.observe_compacted(response.compact_revision - 1)
            self._fail(interface.Expired(self._next - 1, response.compact_revision - 1))
            return True
        if response.canceled:
            # e.g. the member lost its leader: start again elsewhere from where we are.
            raise ConnectionError(response.cancel_reason or "watch canceled by etcd")
        if response.created:
            return False
        if not response.events:
            if response.header.revision >= self._next - 1 and self._next > self._written:
                # A progress notification: nothing up to this revision is still to come. Not
                # believed while a write of this process under the prefix has not arrived yet: etcd
                # before 3.4.24 may send one ahead of events still queued (etcd issue 15220).
                if self._sink is not None:
                    return self._handed(response.header.revision)
                self._queue.append(response.header.revision)
                self._wake()
            return False
        decode = self._storage.decode_event
        for raw in response.events:
            event = decode(raw)
            if event is None or event.revision < self._next:
                if event is None and raw.kv.mod_revision >= self._next:
                    self._next = raw.kv.mod_revision + 1  # seen, though it cannot be represented
                continue
            self._next = event.revision + 1
            if self._sink is not None:
                if self._handed(event):
                    return True
                continue
            self._queue.append(event)
            self._live += 1
        self._reached(self._next - 1)
        if self._live > self._capacity:
            self._fail(interface.StorageError("etcd watch consumer fell behind: watch terminated"))
            return True
        self._wake()
        return False

    def _handed(self, item: interface.Event | int) -> bool:
        """Give ``item`` to the sink; True (the watch is over) if the sink raised."""
        try:
            self._hand(item)
        except Exception as e:
            _log.exception("etcd watch: the event consumer failed")
            self._fail(interface.StorageError(f"etcd watch consumer failed: {e}"))
            return True
        return False


def _why(e: BaseException) -> str:
    return str(e) or type(e).__name__
