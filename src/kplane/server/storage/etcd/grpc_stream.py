"""One gRPC call on an HTTP/2 ``Connection``: its messages out and in, and how it ends.

Contract. The caller's side is ``write``, ``read`` (a streaming call) or ``response`` (a unary
call) and ``cancel``; every one of them raises the call's ``RpcError`` once it has one, and the
call ends exactly once: ``finish`` (status OK) or ``fail`` (the first error wins; later ones are
dropped), after which the connection forgets the stream. The connection's side (``feed``,
``headers``, ``fail``, ``expire``, ``arrived``) runs in ``Connection.data_received`` and never
blocks.

Flow control: inbound messages queue here until read, and the stream's receive window is only
returned (``Connection.credit``) as they are read, so a reader that stops holds the server back,
not our memory; a unary call, read whole at its end, returns credit as data arrives instead.
Outbound, ``write`` sends at once when the windows allow the whole message, else frames it as
they open, one writer at a time so messages do not interleave.
"""

from __future__ import annotations

import asyncio
import collections
import typing
import urllib.parse

from kplane.server.storage.etcd import frames, grpc_status

if typing.TYPE_CHECKING:
    from kplane.server.storage.etcd import http2

_CANCEL = 8  # HTTP/2 error code CANCEL (RFC 9113 §7), what a stream we give up on is reset with


class Stream:
    """One gRPC call on a ``Connection``: messages out (``write``), messages in (``read`` or, for
    a unary call, ``response``). The inbound queue is bounded by the flow-control window."""

    __slots__ = (
        "_conn",
        "_ended",
        "_headers_seen",
        "_lock",
        "_messages",
        "_partial",
        "_unacked",
        "_waiter",
        "error",
        "id",
        "send_window",
        "sent",
        "timer",
        "unary",
    )

    def __init__(self, conn: http2.Connection, sid: int, send_window: int) -> None:
        self._conn = conn
        self.id = sid
        self.send_window = send_window
        self._messages: collections.deque[bytes] = collections.deque()
        self._partial = bytearray()
        self._ended = False
        self.error: grpc_status.RpcError | None = None  # the call's failure, once it has one
        self._headers_seen = False
        self._waiter: asyncio.Future[None] | None = None
        self.timer: asyncio.TimerHandle | None = None  # the call's deadline, set by the connection
        self._unacked = 0
        self._lock: asyncio.Lock | None = None
        self.sent = False  # the request went out with the headers (a unary call)
        self.unary = False  # window credit is returned as data arrives, not as it is read

    # -- caller side -------------------------------------------------------------------------

    async def write(self, message: bytes, *, end: bool = False) -> None:
        """Send one message (``end``: and close our side of the stream)."""
        if self.error is not None:
            raise self.error
        data = frames.grpc_message(message)
        conn = self._conn
        if (self._lock is None or not self._lock.locked()) and conn.fits(self, len(data)):
            conn.send_data(self, data, end)
            return
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            await conn.send_data_slowly(self, data, end)

    async def read(self) -> bytes | None:
        """The next message; None once the server ended the stream with status OK. Cancelling a
        waiting ``read`` loses nothing."""
        while not self._messages:
            if self.error is not None:
                raise self.error
            if self._ended:
                return None
            await self._wait()
        message = self._messages.popleft()
        self._unacked += len(message) + frames.MESSAGE_PREFIX
        if self._unacked >= frames.WINDOW // 2 and not self._ended and self.error is None:
            self._conn.credit(self, self._unacked)
            self._unacked = 0
        return message

    async def response(self) -> bytes:
        """The single message of a unary call, once its status is known."""
        while not self._ended:
            if self.error is not None:
                raise self.error
            await self._wait()
        if not self._messages:
            raise grpc_status.RpcError(grpc_status.INTERNAL, "no response message")
        return self._messages[0]

    def cancel(self) -> None:
        """Abandon the call (resets the stream at the server)."""
        if not self._ended and self.error is None:
            self._conn.reset(self, _CANCEL)
            self.fail(grpc_status.RpcError(grpc_status.CANCELLED, "cancelled"))

    async def _wait(self) -> None:
        fut = self._waiter = self._conn.loop.create_future()
        try:
            await fut
        finally:
            self._waiter = None

    # -- connection side ---------------------------------------------------------------------

    def _wake(self) -> None:
        w = self._waiter
        if w is not None and not w.done():
            w.set_result(None)

    def feed(self, payload: bytes, max_message: int) -> None:
        """A DATA frame's payload: queue the messages it completes (at most ``max_message`` bytes
        each; a larger or compressed one resets the stream)."""
        buf = self._partial
        prefix = frames.MESSAGE_PREFIX
        if (
            not buf
            and len(payload) >= prefix
            and len(payload) == prefix + frames.U32.unpack_from(payload, 1)[0]
        ):
            if payload[0]:
                self._conn.reset(self, _CANCEL)
                self.fail(
                    grpc_status.RpcError(
                        grpc_status.INTERNAL, "compressed message without negotiated compression"
                    )
                )
                return
            self._messages.append(payload[prefix:])
            self._wake()
            return
        buf += payload
        while len(buf) >= prefix:
            size = frames.U32.unpack_from(buf, 1)[0]
            if size > max_message or buf[0]:
                why = "compressed message" if buf[0] else f"message larger than {max_message} bytes"
                self._conn.reset(self, _CANCEL)
                self.fail(
                    grpc_status.RpcError(
                        grpc_status.RESOURCE_EXHAUSTED if not buf[0] else grpc_status.INTERNAL, why
                    )
                )
                return
            if len(buf) < prefix + size:
                break
            self._messages.append(bytes(buf[prefix : prefix + size]))
            del buf[: prefix + size]
            self._wake()

    def arrived(self, size: int) -> None:
        """``size`` bytes of DATA arrived: a unary call returns them to its window at once (its
        message is read whole at the end, so credit cannot wait for reads)."""
        if not self.unary:
            return
        self._unacked += size
        if self._unacked >= frames.WINDOW // 2 and not self._ended and self.error is None:
            self._conn.credit(self, self._unacked)
            self._unacked = 0

    def headers(self, fields: dict[bytes, bytes], end: bool) -> None:
        """A header block: the response's headers, then its trailers (or trailers only)."""
        if not self._headers_seen:
            self._headers_seen = True
            if b"grpc-status" not in fields:
                status = fields.get(b":status", b"")
                if status != b"200":
                    why = f"HTTP status {status.decode(errors='replace')}"
                    self.fail(grpc_status.RpcError(grpc_status.from_http_status(status), why))
                    return
                if not end:
                    return
        try:
            code = int(fields.get(b"grpc-status", b"2"))
        except ValueError:
            code = grpc_status.UNKNOWN
        if code != grpc_status.OK:
            details = urllib.parse.unquote(fields.get(b"grpc-message", b"").decode("utf-8", "replace"))
            self.fail(grpc_status.RpcError(code, details))
        elif self._partial:
            self.fail(grpc_status.RpcError(grpc_status.INTERNAL, "stream ended inside a message"))
        else:
            self.finish()

    def finish(self) -> None:
        """The call ended with status OK."""
        self._ended = True
        self._conn.forget(self)
        self._wake()

    def fail(self, error: grpc_status.RpcError) -> None:
        """The call ended with ``error`` (ignored if it has already ended)."""
        if self.error is None and not self._ended:
            self.error = error
            self._conn.forget(self)
            self._wake()

    def expire(self) -> None:
        """The call's deadline passed: reset the stream and fail it with DEADLINE_EXCEEDED."""
        if not self._ended and self.error is None:
            self._conn.reset(self, _CANCEL)
            self.fail(grpc_status.RpcError(grpc_status.DEADLINE_EXCEEDED, "deadline exceeded"))
