"""gRPC over HTTP/2 on the event loop: the transport of the etcd client.

Design note. etcd speaks gRPC, i.e. HTTP/2 streams carrying length-prefixed messages and ending with
``grpc-status`` trailers. grpcio's asyncio API costs a storage write a task, a call object and a
hop through gRPC's own poller thread per call (~100 µs of process CPU per unary call under load,
about a fifth of a create's cost through kplane). This module speaks the protocol itself as an
``asyncio.Protocol``: a unary call is one ``write`` of a HEADERS and a DATA frame and one future
resolved from ``data_received``; a stream's messages are parsed from the same buffer, with no thread.
The trade-off is owning the subset of HTTP/2 (RFC 9113) and HPACK (RFC 7541) a client needs:

* frames: DATA, HEADERS (+ CONTINUATION), RST_STREAM, SETTINGS, PING, GOAWAY, WINDOW_UPDATE;
  PRIORITY is ignored, PUSH_PROMISE refused (push is disabled in our SETTINGS);
* flow control both ways: our receive windows are large (``WINDOW``) and replenished as data
  arrives; our sends respect the peer's connection and stream windows and frame size, waiting for
  its WINDOW_UPDATEs; the peer's ``MAX_CONCURRENT_STREAMS`` holds new streams back;
* header blocks we send use literal fields without indexing (no state at the peer); blocks we
  receive are decoded by ``hpack`` (dynamic table, Huffman), and blocks made only of indexed
  fields (the steady state of a gRPC server's headers and trailers) are memoised while the table
  does not change;
* keepalive: while streams are open, a PING after ``KEEPALIVE`` seconds without a frame from the
  peer, and the connection is dropped if nothing arrives within ``KEEPALIVE_TIMEOUT`` after it.

Errors are ``RpcError(code, details)`` with gRPC's status codes: the server's ``grpc-status`` and
``grpc-message``; ``UNAVAILABLE`` when the connection cannot be made or is lost, or a stream is
refused (``GOAWAY`` past it, ``REFUSED_STREAM``); ``DEADLINE_EXCEEDED`` when a call's deadline
passes (it is also sent as ``grpc-timeout``, and the stream is reset); ``CANCELLED``.
Messages are bounded by ``max_message`` (``RESOURCE_EXHAUSTED`` past it).
"""

from __future__ import annotations

import asyncio
import collections
import ssl
import struct
import typing
import urllib.parse
from collections.abc import Sequence
from typing import Final

import hpack

OK, CANCELLED, UNKNOWN, DEADLINE_EXCEEDED = 0, 1, 2, 4
RESOURCE_EXHAUSTED, PERMISSION_DENIED, UNIMPLEMENTED, INTERNAL, UNAVAILABLE = 8, 7, 12, 13, 14
UNAUTHENTICATED = 16
CODE_NAMES: Final = {
    OK: "OK",
    CANCELLED: "CANCELLED",
    UNKNOWN: "UNKNOWN",
    DEADLINE_EXCEEDED: "DEADLINE_EXCEEDED",
    PERMISSION_DENIED: "PERMISSION_DENIED",
    RESOURCE_EXHAUSTED: "RESOURCE_EXHAUSTED",
    UNIMPLEMENTED: "UNIMPLEMENTED",
    INTERNAL: "INTERNAL",
    UNAVAILABLE: "UNAVAILABLE",
    UNAUTHENTICATED: "UNAUTHENTICATED",
}

# Frame types and flags (RFC 9113 §6).
_DATA, _HEADERS, _RST, _SETTINGS, _PUSH, _PING, _GOAWAY, _WINDOW, _CONT = 0, 1, 3, 4, 5, 6, 7, 8, 9
_END_STREAM, _ACK, _END_HEADERS, _PADDED, _PRIORITY = 0x1, 0x1, 0x4, 0x8, 0x20
_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
_DEFAULT_WINDOW = 65_535
WINDOW = 1 << 24
"""Our receive window, per stream and for the connection."""
KEEPALIVE, KEEPALIVE_TIMEOUT = 10.0, 5.0
_FRAME = struct.Struct(">BHBBI")  # length (24 bits as 8 + 16), type, flags, stream id
_U32 = struct.Struct(">I")
_RST_CODES = {7: UNAVAILABLE, 8: CANCELLED, 11: RESOURCE_EXHAUSTED, 12: PERMISSION_DENIED}
_HTTP_CODES = {400: INTERNAL, 401: UNAUTHENTICATED, 403: PERMISSION_DENIED, 404: UNIMPLEMENTED}


class RpcError(Exception):
    """A gRPC call's failure: ``code`` (gRPC status code) and ``details`` (its message)."""

    def __init__(self, code: int, details: str = "") -> None:
        super().__init__(f"{CODE_NAMES.get(code, code)}: {details}")
        self.code = code
        self.details = details


def _frame(kind: int, flags: int, sid: int, payload: bytes = b"") -> bytes:
    n = len(payload)
    return _FRAME.pack(n >> 16, n & 0xFFFF, kind, flags, sid) + payload


def _hpack_int(value: int, prefix_bits: int, first: int) -> bytes:
    """RFC 7541 §5.1 integer with ``first`` holding the representation's pattern bits."""
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes((first | value,))
    out = bytearray((first | limit,))
    value -= limit
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _literal(name: bytes | int, value: bytes) -> bytes:
    """A literal header field without indexing (RFC 7541 §6.2.2): a static-table name index or a
    new name, and a plain (not Huffman) value."""
    head = _hpack_int(name, 4, 0) if isinstance(name, int) else b"\0" + _hpack_int(len(name), 7, 0) + name
    return head + _hpack_int(len(value), 7, 0) + value


def request_headers(
    path: str, authority: str, *, tls: bool, metadata: Sequence[tuple[str, str]] = ()
) -> bytes:
    """The header block of a gRPC request, without ``grpc-timeout`` (see ``timeout_header``)."""
    block = bytes((0x83, 0x87 if tls else 0x86))  # :method POST, :scheme https|http (static)
    block += _literal(4, path.encode()) + _literal(1, authority.encode())  # :path, :authority
    block += _literal(31, b"application/grpc") + _literal(b"te", b"trailers")  # content-type
    for name, value in metadata:
        block += _literal(name.lower().encode(), value.encode())
    return block


def timeout_header(seconds: float) -> bytes:
    ms = max(1, int(seconds * 1000))
    value = f"{ms}m" if ms < 100_000_000 else f"{min(int(seconds), 99_999_999)}S"
    return _literal(b"grpc-timeout", value.encode())


def _http_code(status: bytes) -> int:
    """gRPC's status code for a response that is not HTTP 200 (gRPC's HTTP-to-gRPC mapping)."""
    if status in (b"429", b"502", b"503", b"504"):
        return UNAVAILABLE
    return _HTTP_CODES.get(int(status) if status.isdigit() else 0, UNKNOWN)


def _indexed_only(block: bytes) -> bool:
    """True if every field of ``block`` is an indexed field (which leaves the table unchanged)."""
    i, n = 0, len(block)
    while i < n:
        b = block[i]
        if not b & 0x80:
            return False
        i += 1
        if b & 0x7F == 0x7F:
            while i < n and block[i] & 0x80:
                i += 1
            i += 1
    return True


class Stream:
    """One gRPC call on a ``Connection``: messages out (``write``), messages in (``read`` or, for
    a unary call, ``response``). The inbound queue is bounded by the flow-control window."""

    __slots__ = (
        "_conn",
        "_ended",
        "_error",
        "_headers_seen",
        "_lock",
        "_messages",
        "_partial",
        "_timer",
        "_unacked",
        "_waiter",
        "id",
        "send_window",
        "sent",
        "unary",
    )

    def __init__(self, conn: Connection, sid: int, send_window: int) -> None:
        self._conn = conn
        self.id = sid
        self.send_window = send_window
        self._messages: collections.deque[bytes] = collections.deque()
        self._partial = bytearray()
        self._ended = False
        self._error: RpcError | None = None
        self._headers_seen = False
        self._waiter: asyncio.Future[None] | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._unacked = 0
        self._lock: asyncio.Lock | None = None
        self.sent = False  # the request went out with the headers (a unary call)
        self.unary = False  # window credit is returned as data arrives, not as it is read

    # -- caller side -------------------------------------------------------------------------

    async def write(self, message: bytes, *, end: bool = False) -> None:
        """Send one message (``end``: and close our side of the stream)."""
        if self._error is not None:
            raise self._error
        data = b"\0" + _U32.pack(len(message)) + message
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
            if self._error is not None:
                raise self._error
            if self._ended:
                return None
            await self._wait()
        message = self._messages.popleft()
        self._unacked += len(message) + 5
        if self._unacked >= WINDOW // 2 and not self._ended and self._error is None:
            self._conn.credit(self, self._unacked)
            self._unacked = 0
        return message

    async def response(self) -> bytes:
        """The single message of a unary call, once its status is known."""
        while not self._ended:
            if self._error is not None:
                raise self._error
            await self._wait()
        if not self._messages:
            raise RpcError(INTERNAL, "no response message")
        return self._messages[0]

    def cancel(self) -> None:
        """Abandon the call (resets the stream at the server)."""
        if not self._ended and self._error is None:
            self._conn.reset(self, 8)
            self.fail(RpcError(CANCELLED, "cancelled"))

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
        buf = self._partial
        if not buf and len(payload) >= 5 and len(payload) == 5 + _U32.unpack_from(payload, 1)[0]:
            if payload[0]:
                self._conn.reset(self, 8)
                self.fail(RpcError(INTERNAL, "compressed message without negotiated compression"))
                return
            self._messages.append(payload[5:])
            self._wake()
            return
        buf += payload
        while len(buf) >= 5:
            size = _U32.unpack_from(buf, 1)[0]
            if size > max_message or buf[0]:
                why = "compressed message" if buf[0] else f"message larger than {max_message} bytes"
                self._conn.reset(self, 8)
                self.fail(RpcError(RESOURCE_EXHAUSTED if not buf[0] else INTERNAL, why))
                return
            if len(buf) < 5 + size:
                break
            self._messages.append(bytes(buf[5 : 5 + size]))
            del buf[: 5 + size]
            self._wake()

    def headers(self, fields: dict[bytes, bytes], end: bool) -> None:
        """A header block: the response's headers, then its trailers (or trailers only)."""
        if not self._headers_seen:
            self._headers_seen = True
            if b"grpc-status" not in fields:
                status = fields.get(b":status", b"")
                if status != b"200":
                    self.fail(RpcError(_http_code(status), f"HTTP status {status.decode(errors='replace')}"))
                    return
                if not end:
                    return
        try:
            code = int(fields.get(b"grpc-status", b"2"))
        except ValueError:
            code = UNKNOWN
        if code != OK:
            details = urllib.parse.unquote(fields.get(b"grpc-message", b"").decode("utf-8", "replace"))
            self.fail(RpcError(code, details))
        elif self._partial:
            self.fail(RpcError(INTERNAL, "stream ended inside a message"))
        else:
            self.finish()

    def finish(self) -> None:
        self._ended = True
        self._conn.forget(self)
        self._wake()

    def fail(self, error: RpcError) -> None:
        if self._error is None and not self._ended:
            self._error = error
            self._conn.forget(self)
            self._wake()

    def expire(self) -> None:
        if not self._ended and self._error is None:
            self._conn.reset(self, 8)
            self.fail(RpcError(DEADLINE_EXCEEDED, "deadline exceeded"))


class Connection(asyncio.Protocol):
    """One HTTP/2 connection to a gRPC server (see the module docstring). Use from one loop."""

    def __init__(self, authority: str, *, tls: bool, max_message: int) -> None:
        self.authority = authority
        self.tls = tls
        self.loop = asyncio.get_running_loop()
        self._max_message = max_message
        self._transport: asyncio.Transport | None = None
        self._buf = bytearray()
        self._streams: dict[int, Stream] = {}
        self._next_id = 1
        self._decoder = hpack.Decoder()
        self._decoded: dict[bytes, dict[bytes, bytes]] = {}
        self._block: tuple[int, int, bytearray] | None = None  # HEADERS awaiting CONTINUATION
        self._send_window = _DEFAULT_WINDOW
        self._peer_window = _DEFAULT_WINDOW  # the peer's initial stream window
        self._max_frame = 16_384
        self._max_streams = 1 << 31
        self._unacked = 0
        self._windows: asyncio.Event | None = None  # set when the peer opens a window
        self._slots: collections.deque[asyncio.Future[None]] = collections.deque()
        self._headers: dict[str, bytes] = {}
        self.error: RpcError | None = None  # set once the connection is lost
        self.draining = False  # GOAWAY received: no new streams
        self._heard = self.loop.time()
        self._keepalive: asyncio.TimerHandle | None = None
        self._pinged = 0.0
        self._out: list[bytes] | None = None  # frames queued for the next flush

    @property
    def usable(self) -> bool:
        return self.error is None and not self.draining and self._transport is not None

    # -- asyncio.Protocol --------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport = typing.cast(asyncio.Transport, transport)  # uvloop's are not subclasses
        self._transport = transport
        settings = struct.pack(">HIHI", 0x2, 0, 0x4, WINDOW)  # ENABLE_PUSH 0, INITIAL_WINDOW_SIZE
        transport.write(
            _PREFACE
            + _frame(_SETTINGS, 0, 0, settings)
            + _frame(_WINDOW, 0, 0, _U32.pack(WINDOW - _DEFAULT_WINDOW))
        )
        self._keepalive = self.loop.call_later(KEEPALIVE, self._tick)

    def connection_lost(self, exc: Exception | None) -> None:
        why = f": {exc}" if exc else ""
        self._lose(RpcError(UNAVAILABLE, f"connection to {self.authority} lost{why}"))

    def data_received(self, data: bytes) -> None:
        self._heard = self.loop.time()
        buf = self._buf
        if buf:
            buf += data
            data = bytes(buf)
            buf.clear()
        pos, n = 0, len(data)
        while n - pos >= 9:
            hi, lo, kind, flags, sid = _FRAME.unpack_from(data, pos)
            end = pos + 9 + ((hi << 16) | lo)
            if end > n:
                break
            payload = data[pos + 9 : end]
            pos = end
            sid &= 0x7FFFFFFF
            try:
                self._frame(kind, flags, sid, payload)
            except (hpack.HPACKError, ValueError, IndexError, struct.error) as e:
                self._abort(f"protocol error: {e}")
                return
            if self.error is not None:
                return
        if pos < n:
            buf += data[pos:]
            if len(buf) > self._max_message + (1 << 16):
                self._abort("frame too large")

    # -- frames in ---------------------------------------------------------------------------

    def _frame(self, kind: int, flags: int, sid: int, payload: bytes) -> None:
        if self._block is not None and kind != _CONT:
            raise ValueError("header block interrupted")
        if kind == _DATA:
            self._data(flags, sid, payload)
        elif kind == _HEADERS:
            if flags & _PADDED:
                payload = payload[1 : len(payload) - payload[0]]
            if flags & _PRIORITY:
                payload = payload[5:]
            if flags & _END_HEADERS:
                self._header_block(sid, flags, payload)
            else:
                self._block = (sid, flags, bytearray(payload))
        elif kind == _CONT:
            if self._block is None or self._block[0] != sid:
                raise ValueError("unexpected CONTINUATION")
            self._block[2].extend(payload)
            if len(self._block[2]) > 1 << 20:
                raise ValueError("header block too large")
            if flags & _END_HEADERS:
                sid, first, block = self._block
                self._block = None
                self._header_block(sid, first, bytes(block))
        elif kind == _WINDOW:
            increment = _U32.unpack(payload)[0] & 0x7FFFFFFF
            if sid == 0:
                self._send_window += increment
            elif (stream := self._streams.get(sid)) is not None:
                stream.send_window += increment
            if self._windows is not None:
                self._windows.set()
        elif kind == _SETTINGS:
            if not flags & _ACK:
                self._settings(payload)
        elif kind == _PING:
            if not flags & _ACK:
                self._write(_frame(_PING, _ACK, 0, payload))
        elif kind == _RST:
            stream = self._streams.get(sid)
            if stream is not None:
                code = _U32.unpack(payload)[0]
                why = f"stream reset by the server (HTTP/2 error {code})"
                stream.fail(RpcError(_RST_CODES.get(code, INTERNAL), why))
        elif kind == _GOAWAY:
            last = _U32.unpack_from(payload)[0] & 0x7FFFFFFF
            self.draining = True
            for stream in [s for i, s in self._streams.items() if i > last]:
                stream.fail(RpcError(UNAVAILABLE, f"{self.authority} is closing the connection"))
        elif kind == _PUSH:
            raise ValueError("PUSH_PROMISE with push disabled")

    def _data(self, flags: int, sid: int, payload: bytes) -> None:
        size = len(payload)
        self._unacked += size
        if self._unacked >= WINDOW // 2:
            self._write(_frame(_WINDOW, 0, 0, _U32.pack(self._unacked)))
            self._unacked = 0
        stream = self._streams.get(sid)
        if stream is None:
            return  # a stream we reset or gave up on: counted for the connection only
        if flags & _PADDED:
            payload = payload[1 : len(payload) - payload[0]]
        stream.feed(payload, self._max_message)
        if flags & _END_STREAM:
            stream.fail(RpcError(INTERNAL, "stream ended without a status"))
            return
        if stream.unary:
            stream._unacked += size
            if stream._unacked >= WINDOW // 2 and sid in self._streams:
                self.credit(stream, stream._unacked)
                stream._unacked = 0

    def credit(self, stream: Stream, size: int) -> None:
        """Open ``stream``'s receive window by ``size`` bytes (a stream's window is returned as
        its messages are read, so a reader that stops holds the server back, not our memory)."""
        self._write(_frame(_WINDOW, 0, stream.id, _U32.pack(size)))

    def _header_block(self, sid: int, flags: int, block: bytes) -> None:
        fields = self._decoded.get(block)
        if fields is None:
            fields = dict(self._decoder.decode(block, raw=True))
            if _indexed_only(block):
                if len(self._decoded) > 64:
                    self._decoded.clear()
                self._decoded[block] = fields
            else:
                self._decoded.clear()  # the table may have changed
        stream = self._streams.get(sid)
        if stream is not None:
            stream.headers(fields, bool(flags & _END_STREAM))

    def _settings(self, payload: bytes) -> None:
        for i in range(0, len(payload) - 5, 6):
            key, value = struct.unpack_from(">HI", payload, i)
            if key == 0x3:
                self._max_streams = value
                self._release_slots()
            elif key == 0x4:
                delta = value - self._peer_window
                self._peer_window = value
                for stream in self._streams.values():
                    stream.send_window += delta
                if self._windows is not None:
                    self._windows.set()
            elif key == 0x5:
                self._max_frame = value
        self._write(_frame(_SETTINGS, _ACK, 0))

    # -- streams out -------------------------------------------------------------------------

    async def open(
        self,
        path: str,
        *,
        timeout: float | None,  # noqa: ASYNC109
        metadata: Sequence[tuple[str, str]] = (),
    ) -> Stream:
        """A new stream with its request headers sent (``timeout``: the call's deadline)."""
        deadline = None if timeout is None else self.loop.time() + timeout
        while len(self._streams) >= self._max_streams and self.usable:
            slot = self.loop.create_future()
            self._slots.append(slot)
            try:
                async with asyncio.timeout_at(deadline):
                    await slot
            except TimeoutError:
                raise RpcError(DEADLINE_EXCEEDED, "deadline exceeded waiting for a stream") from None
        stream = self._start(path, timeout, metadata)
        return stream

    def _start(
        self, path: str, timeout: float | None, metadata: Sequence[tuple[str, str]], body: bytes | None = None
    ) -> Stream:
        """Open a stream: send its headers (and ``body`` as its only message, if given and the
        windows allow it at once; else the caller writes it)."""
        if not self.usable:
            raise self.error or RpcError(UNAVAILABLE, f"connection to {self.authority} is closing")
        key = path if not metadata else path + repr(tuple(metadata))
        block = self._headers.get(key)
        if block is None:
            block = request_headers(path, self.authority, tls=self.tls, metadata=metadata)
            self._headers[key] = block
        sid = self._next_id
        self._next_id += 2
        if self._next_id > 0x7FFFFFFF:
            self.draining = True  # stream ids exhausted: the client opens a new connection
        stream = Stream(self, sid, self._peer_window)
        self._streams[sid] = stream
        if timeout is not None:
            block += timeout_header(timeout)
            stream._timer = self.loop.call_later(timeout, stream.expire)
        out = _frame(_HEADERS, _END_HEADERS, sid, block)
        if body is not None:
            data = b"\0" + _U32.pack(len(body)) + body
            if self.fits(stream, len(data)):
                self._send_window -= len(data)
                stream.send_window -= len(data)
                out += _frame(_DATA, _END_STREAM, sid, data)
                stream.sent = True
        self._write(out)
        return stream

    async def unary(self, path: str, request: bytes, timeout: float) -> bytes:  # noqa: ASYNC109
        """One unary call: ``request`` out, the response message back (``RpcError`` otherwise)."""
        if len(self._streams) < self._max_streams:
            stream = self._start(path, timeout, (), request)
        else:
            stream = await self.open(path, timeout=timeout)
        stream.unary = True
        try:
            if not stream.sent:
                await stream.write(request, end=True)
            return await stream.response()
        except asyncio.CancelledError:
            stream.cancel()
            raise

    def fits(self, stream: Stream, size: int) -> bool:
        return size <= self._max_frame and size <= self._send_window and size <= stream.send_window

    def send_data(self, stream: Stream, data: bytes, end: bool) -> None:
        self._send_window -= len(data)
        stream.send_window -= len(data)
        self._write(_frame(_DATA, _END_STREAM if end else 0, stream.id, data))

    async def send_data_slowly(self, stream: Stream, data: bytes, end: bool) -> None:
        """Send ``data`` in frames as the peer's windows allow."""
        view = memoryview(data)
        while True:
            if stream._error is not None:
                raise stream._error
            if self.error is not None:
                raise self.error
            size = min(len(view), self._max_frame, self._send_window, stream.send_window)
            if size <= 0 and view:
                if self._windows is None:
                    self._windows = asyncio.Event()
                self._windows.clear()
                await self._windows.wait()
                continue
            last = size == len(view)
            self._send_window -= size
            stream.send_window -= size
            self._write(_frame(_DATA, _END_STREAM if end and last else 0, stream.id, bytes(view[:size])))
            view = view[size:]
            if last:
                return

    def reset(self, stream: Stream, code: int) -> None:
        if stream.id in self._streams:
            self._write(_frame(_RST, 0, stream.id, _U32.pack(code)))

    def forget(self, stream: Stream) -> None:
        if self._streams.pop(stream.id, None) is not None:
            if stream._timer is not None:
                stream._timer.cancel()
            if self._slots:
                self._release_slots()

    def _release_slots(self) -> None:
        free = self._max_streams - len(self._streams)
        while self._slots and (free > 0 or not self.usable):
            slot = self._slots.popleft()
            if not slot.done():
                slot.set_result(None)
                free -= 1

    # -- connection ----------------------------------------------------------------------------

    def _write(self, data: bytes) -> None:
        """Queue ``data``; what is queued during one pass of the event loop goes out in one
        ``send`` (a loopback send costs far more than the frames: writes are coalesced)."""
        if self._transport is None or self.error is not None:
            return
        if self._out is None:
            self._out = [data]
            self.loop.call_soon(self._flush)
        else:
            self._out.append(data)

    def _flush(self) -> None:
        out, self._out = self._out, None
        if out and self._transport is not None and self.error is None:
            self._transport.write(out[0] if len(out) == 1 else b"".join(out))

    def _tick(self) -> None:
        """Keepalive: ping while streams are open and the peer is quiet; drop an unanswered link."""
        if self.error is not None:
            return
        now = self.loop.time()
        if self._pinged:
            if self._heard >= self._pinged:
                self._pinged = 0.0  # any frame since the ping answers it
            elif now - self._pinged >= KEEPALIVE_TIMEOUT:
                self._abort("keepalive ping not answered")
                return
            else:
                self._keepalive = self.loop.call_at(self._pinged + KEEPALIVE_TIMEOUT, self._tick)
                return
        quiet = now - self._heard
        if self._streams and quiet >= KEEPALIVE:
            self._pinged = now
            self._write(_frame(_PING, 0, 0, b"kplane\0\0"))
            self._keepalive = self.loop.call_later(KEEPALIVE_TIMEOUT, self._tick)
        else:
            self._keepalive = self.loop.call_later(max(0.1, KEEPALIVE - quiet), self._tick)

    def _abort(self, why: str) -> None:
        transport = self._transport
        self._lose(RpcError(UNAVAILABLE, f"connection to {self.authority}: {why}"))
        if transport is not None:
            transport.abort()

    def _lose(self, error: RpcError) -> None:
        if self.error is not None:
            return
        self.error = error
        if self._keepalive is not None:
            self._keepalive.cancel()
        for stream in list(self._streams.values()):
            stream.fail(error)
        self._streams.clear()
        self._release_slots()
        if self._windows is not None:
            self._windows.set()

    def close(self) -> None:
        """Drop the connection; open streams fail with ``UNAVAILABLE``."""
        transport = self._transport
        self._lose(RpcError(UNAVAILABLE, "connection closed"))
        if transport is not None:
            transport.close()


async def connect(
    endpoint: str,
    *,
    ssl_context: ssl.SSLContext | None,
    timeout: float,  # noqa: ASYNC109
    max_message: int,
) -> Connection:
    """An HTTP/2 connection to ``endpoint`` (``host:port``); ``RpcError(UNAVAILABLE)`` if it cannot
    be made within ``timeout`` seconds."""
    host, _, port = endpoint.rpartition(":")
    host = host.strip("[]")
    loop = asyncio.get_running_loop()
    conn = Connection(endpoint, tls=ssl_context is not None, max_message=max_message)
    try:
        async with asyncio.timeout(timeout):
            await loop.create_connection(
                lambda: conn,
                host,
                int(port),
                ssl=ssl_context,
                server_hostname=host if ssl_context is not None else None,
            )
    except (OSError, TimeoutError, ssl.SSLError, ValueError) as e:
        raise RpcError(UNAVAILABLE, f"connection to {endpoint} failed: {e or type(e).__name__}") from None
    return conn
