"""gRPC over HTTP/2 on the event loop: the connection of the etcd client's transport.

Design note. etcd speaks gRPC, i.e. HTTP/2 streams carrying length-prefixed messages and ending with
``grpc-status`` trailers. grpcio's asyncio API costs a storage write a task, a call object and a
hop through gRPC's own poller thread per call (~100 µs of process CPU per unary call under load,
about a fifth of a create's cost through kplane). This module speaks the protocol itself as an
``asyncio.Protocol``: a unary call is one ``write`` of a HEADERS and a DATA frame and one future
resolved from ``data_received``; a stream's messages are parsed from the same buffer, with no thread.
The trade-off is owning the subset of HTTP/2 (RFC 9113) and HPACK (RFC 7541) a client needs. The
transport is four modules: ``frames`` (bytes: frames, header blocks, message prefixes),
``grpc_status`` (status codes and ``RpcError``, the one error every call ends with),
``grpc_stream`` (one call's messages and its end) and this one, the connection's state:

* frames: DATA, HEADERS (+ CONTINUATION), RST_STREAM, SETTINGS, PING, GOAWAY, WINDOW_UPDATE;
  PRIORITY is ignored, PUSH_PROMISE refused (push is disabled in our SETTINGS);
* flow control both ways: our receive windows are large (``frames.WINDOW``) and replenished as
  data arrives; our sends respect the peer's connection and stream windows and frame size, waiting
  for its WINDOW_UPDATEs; the peer's ``MAX_CONCURRENT_STREAMS`` holds new streams back;
* header blocks we receive are decoded by ``hpack`` (dynamic table, Huffman), and blocks made only
  of indexed fields (the steady state of a gRPC server's headers and trailers) are memoised while
  the table does not change;
* keepalive: while streams are open, a PING after ``KEEPALIVE`` seconds without a frame from the
  peer, and the connection is dropped if nothing arrives within ``KEEPALIVE_TIMEOUT`` after it;
* errors: ``UNAVAILABLE`` when the connection cannot be made or is lost (every open stream fails
  with it), or a stream is refused (``GOAWAY`` past it, ``REFUSED_STREAM``); ``DEADLINE_EXCEEDED``
  when a call's deadline passes (it is also sent as ``grpc-timeout``, and the stream is reset).
  Messages are bounded by ``max_message`` (``RESOURCE_EXHAUSTED`` past it).

Writes are coalesced: frames queued during one pass of the event loop go out in one ``send``.
"""

from __future__ import annotations

import asyncio
import collections
import ssl
import struct
import typing
from collections.abc import Sequence

import hpack

from kplane.server.storage.etcd import frames, grpc_status, grpc_stream

KEEPALIVE, KEEPALIVE_TIMEOUT = 10.0, 5.0


class Connection(asyncio.Protocol):
    """One HTTP/2 connection to a gRPC server (see the module docstring). Use from one loop."""

    def __init__(self, authority: str, *, tls: bool, max_message: int) -> None:
        self.authority = authority
        self.tls = tls
        self.loop = asyncio.get_running_loop()
        self._max_message = max_message
        self._transport: asyncio.Transport | None = None
        self._buf = bytearray()
        self._streams: dict[int, grpc_stream.Stream] = {}
        self._next_id = 1
        self._decoder = hpack.Decoder()
        self._decoded: dict[bytes, dict[bytes, bytes]] = {}
        self._block: tuple[int, int, bytearray] | None = None  # HEADERS awaiting CONTINUATION
        self._send_window = frames.DEFAULT_WINDOW
        self._peer_window = frames.DEFAULT_WINDOW  # the peer's initial stream window
        self._max_frame = 16_384
        self._max_streams = 1 << 31
        self._unacked = 0
        self._windows: asyncio.Event | None = None  # set when the peer opens a window
        self._slots: collections.deque[asyncio.Future[None]] = collections.deque()
        self._headers: dict[str, bytes] = {}
        self.error: grpc_status.RpcError | None = None  # set once the connection is lost
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
        settings = struct.pack(">HIHI", 0x2, 0, 0x4, frames.WINDOW)  # ENABLE_PUSH 0, INITIAL_WINDOW_SIZE
        transport.write(
            frames.PREFACE
            + frames.frame(frames.SETTINGS, 0, 0, settings)
            + frames.frame(frames.WINDOW_UPDATE, 0, 0, frames.U32.pack(frames.WINDOW - frames.DEFAULT_WINDOW))
        )
        self._keepalive = self.loop.call_later(KEEPALIVE, self._tick)

    def connection_lost(self, exc: Exception | None) -> None:
        why = f": {exc}" if exc else ""
        self._lose(grpc_status.RpcError(grpc_status.UNAVAILABLE, f"connection to {self.authority} lost{why}"))

    def data_received(self, data: bytes) -> None:
        self._heard = self.loop.time()
        buf = self._buf
        if buf:
            buf += data
            data = bytes(buf)
            buf.clear()
        pos, n = 0, len(data)
        while n - pos >= 9:
            hi, lo, kind, flags, sid = frames.FRAME_HEADER.unpack_from(data, pos)
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
        if self._block is not None and kind != frames.CONTINUATION:
            raise ValueError("header block interrupted")
        if kind == frames.DATA:
            self._data(flags, sid, payload)
        elif kind == frames.HEADERS:
            if flags & frames.PADDED:
                payload = payload[1 : len(payload) - payload[0]]
            if flags & frames.PRIORITY:
                payload = payload[5:]
            if flags & frames.END_HEADERS:
                self._header_block(sid, flags, payload)
            else:
                self._block = (sid, flags, bytearray(payload))
        elif kind == frames.CONTINUATION:
            if self._block is None or self._block[0] != sid:
                raise ValueError("unexpected CONTINUATION")
            self._block[2].extend(payload)
            if len(self._block[2]) > 1 << 20:
                raise ValueError("header block too large")
            if flags & frames.END_HEADERS:
                sid, first, block = self._block
                self._block = None
                self._header_block(sid, first, bytes(block))
        elif kind == frames.WINDOW_UPDATE:
            increment = frames.U32.unpack(payload)[0] & 0x7FFFFFFF
            if sid == 0:
                self._send_window += increment
            elif (stream := self._streams.get(sid)) is not None:
                stream.send_window += increment
            if self._windows is not None:
                self._windows.set()
        elif kind == frames.SETTINGS:
            if not flags & frames.ACK:
                self._settings(payload)
        elif kind == frames.PING:
            if not flags & frames.ACK:
                self._write(frames.frame(frames.PING, frames.ACK, 0, payload))
        elif kind == frames.RST_STREAM:
            stream = self._streams.get(sid)
            if stream is not None:
                code = frames.U32.unpack(payload)[0]
                why = f"stream reset by the server (HTTP/2 error {code})"
                stream.fail(grpc_status.RpcError(grpc_status.from_reset(code), why))
        elif kind == frames.GOAWAY:
            last = frames.U32.unpack_from(payload)[0] & 0x7FFFFFFF
            self.draining = True
            for stream in [s for i, s in self._streams.items() if i > last]:
                stream.fail(
                    grpc_status.RpcError(
                        grpc_status.UNAVAILABLE, f"{self.authority} is closing the connection"
                    )
                )
        elif kind == frames.PUSH_PROMISE:
            raise ValueError("PUSH_PROMISE with push disabled")

    def _data(self, flags: int, sid: int, payload: bytes) -> None:
        size = len(payload)
        self._unacked += size
        if self._unacked >= frames.WINDOW // 2:
            self._write(frames.frame(frames.WINDOW_UPDATE, 0, 0, frames.U32.pack(self._unacked)))
            self._unacked = 0
        stream = self._streams.get(sid)
        if stream is None:
            return  # a stream we reset or gave up on: counted for the connection only
        if flags & frames.PADDED:
            payload = payload[1 : len(payload) - payload[0]]
        stream.feed(payload, self._max_message)
        if flags & frames.END_STREAM:
            stream.fail(grpc_status.RpcError(grpc_status.INTERNAL, "stream ended without a status"))
            return
        stream.arrived(size)

    def credit(self, stream: grpc_stream.Stream, size: int) -> None:
        """Open ``stream``'s receive window by ``size`` bytes (a stream's window is returned as
        its messages are read, so a reader that stops holds the server back, not our memory)."""
        self._write(frames.frame(frames.WINDOW_UPDATE, 0, stream.id, frames.U32.pack(size)))

    def _header_block(self, sid: int, flags: int, block: bytes) -> None:
        fields = self._decoded.get(block)
        if fields is None:
            fields = dict(self._decoder.decode(block, raw=True))
            if frames.indexed_only(block):
                if len(self._decoded) > 64:
                    self._decoded.clear()
                self._decoded[block] = fields
            else:
                self._decoded.clear()  # the table may have changed
        stream = self._streams.get(sid)
        if stream is not None:
            stream.headers(fields, bool(flags & frames.END_STREAM))

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
        self._write(frames.frame(frames.SETTINGS, frames.ACK, 0))

    # -- streams out -------------------------------------------------------------------------

    async def open(
        self,
        path: str,
        *,
        timeout: float | None,  # noqa: ASYNC109
        metadata: Sequence[tuple[str, str]] = (),
    ) -> grpc_stream.Stream:
        """A new stream with its request headers sent (``timeout``: the call's deadline)."""
        deadline = None if timeout is None else self.loop.time() + timeout
        while len(self._streams) >= self._max_streams and self.usable:
            slot = self.loop.create_future()
            self._slots.append(slot)
            try:
                async with asyncio.timeout_at(deadline):
                    await slot
            except TimeoutError:
                raise grpc_status.RpcError(
                    grpc_status.DEADLINE_EXCEEDED, "deadline exceeded waiting for a stream"
                ) from None
        stream = self._start(path, timeout, metadata)
        return stream

    def _start(
        self, path: str, timeout: float | None, metadata: Sequence[tuple[str, str]], body: bytes | None = None
    ) -> grpc_stream.Stream:
        """Open a stream: send its headers (and ``body`` as its only message, if given and the
        windows allow it at once; else the caller writes it)."""
        if not self.usable:
            raise self.error or grpc_status.RpcError(
                grpc_status.UNAVAILABLE, f"connection to {self.authority} is closing"
            )
        key = path if not metadata else path + repr(tuple(metadata))
        block = self._headers.get(key)
        if block is None:
            block = frames.request_headers(path, self.authority, tls=self.tls, metadata=metadata)
            self._headers[key] = block
        sid = self._next_id
        self._next_id += 2
        if self._next_id > 0x7FFFFFFF:
            self.draining = True  # stream ids exhausted: the client opens a new connection
        stream = grpc_stream.Stream(self, sid, self._peer_window)
        self._streams[sid] = stream
        if timeout is not None:
            block += frames.timeout_header(timeout)
            stream.timer = self.loop.call_later(timeout, stream.expire)
        out = frames.frame(frames.HEADERS, frames.END_HEADERS, sid, block)
        if body is not None:
            data = frames.grpc_message(body)
            if self.fits(stream, len(data)):
                self._send_window -= len(data)
                stream.send_window -= len(data)
                out += frames.frame(frames.DATA, frames.END_STREAM, sid, data)
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

    def fits(self, stream: grpc_stream.Stream, size: int) -> bool:
        return size <= self._max_frame and size <= self._send_window and size <= stream.send_window

    def send_data(self, stream: grpc_stream.Stream, data: bytes, end: bool) -> None:
        self._send_window -= len(data)
        stream.send_window -= len(data)
        self._write(frames.frame(frames.DATA, frames.END_STREAM if end else 0, stream.id, data))

    async def send_data_slowly(self, stream: grpc_stream.Stream, data: bytes, end: bool) -> None:
        """Send ``data`` in frames as the peer's windows allow."""
        view = memoryview(data)
        while True:
            if stream.error is not None:
                raise stream.error
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
            self._write(
                frames.frame(
                    frames.DATA, frames.END_STREAM if end and last else 0, stream.id, bytes(view[:size])
                )
            )
            view = view[size:]
            if last:
                return

    def reset(self, stream: grpc_stream.Stream, code: int) -> None:
        if stream.id in self._streams:
            self._write(frames.frame(frames.RST_STREAM, 0, stream.id, frames.U32.pack(code)))

    def forget(self, stream: grpc_stream.Stream) -> None:
        if self._streams.pop(stream.id, None) is not None:
            if stream.timer is not None:
                stream.timer.cancel()
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
            self._write(frames.frame(frames.PING, 0, 0, b"kplane\0\0"))
            self._keepalive = self.loop.call_later(KEEPALIVE_TIMEOUT, self._tick)
        else:
            self._keepalive = self.loop.call_later(max(0.1, KEEPALIVE - quiet), self._tick)

    def _abort(self, why: str) -> None:
        transport = self._transport
        self._lose(grpc_status.RpcError(grpc_status.UNAVAILABLE, f"connection to {self.authority}: {why}"))
        if transport is not None:
            transport.abort()

    def _lose(self, error: grpc_status.RpcError) -> None:
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
        """Drop the connection; open streams fail with ``grpc_status.UNAVAILABLE``."""
        transport = self._transport
        self._lose(grpc_status.RpcError(grpc_status.UNAVAILABLE, "connection closed"))
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
        raise grpc_status.RpcError(
            grpc_status.UNAVAILABLE, f"connection to {endpoint} failed: {e or type(e).__name__}"
        ) from None
    return conn
