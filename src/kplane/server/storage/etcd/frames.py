"""HTTP/2 frames, the header blocks a gRPC client sends, and gRPC's message prefix, as bytes.

The encoding half of the etcd client's transport (``http2`` owns the connection's state): pure
functions and constants, no I/O.

* Frames (RFC 9113 §4.1): ``frame`` builds one; ``FRAME_HEADER`` parses the 9-byte header (the
  24-bit length comes as 8 + 16 bits).
* Header blocks (RFC 7541): ``request_headers`` and ``timeout_header`` use literal fields without
  indexing only, so sending them leaves no state at the peer and a block can be cached and resent.
  Decoding is ``hpack``'s; ``indexed_only`` tells which received blocks cannot change its
  dynamic table (so their decoding may be memoised).
* Messages (gRPC over HTTP/2): a 1-byte compressed flag (always 0 here) and a 4-byte length.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Final

# Frame types and flags (RFC 9113 §6).
DATA, HEADERS, RST_STREAM, SETTINGS, PUSH_PROMISE = 0, 1, 3, 4, 5
PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = 6, 7, 8, 9
END_STREAM, ACK, END_HEADERS, PADDED, PRIORITY = 0x1, 0x1, 0x4, 0x8, 0x20
PREFACE: Final = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DEFAULT_WINDOW: Final = 65_535
"""The initial flow-control window RFC 9113 gives every stream and the connection."""
WINDOW: Final = 1 << 24
"""Our receive window, per stream and for the connection."""
FRAME_HEADER: Final = struct.Struct(">BHBBI")  # length (24 bits as 8 + 16), type, flags, stream id
U32: Final = struct.Struct(">I")
MESSAGE_PREFIX: Final = 5
"""The length of gRPC's message prefix: compressed flag and big-endian length."""


def frame(kind: int, flags: int, sid: int, payload: bytes = b"") -> bytes:
    """One frame of type ``kind`` on stream ``sid`` (0: the connection)."""
    n = len(payload)
    return FRAME_HEADER.pack(n >> 16, n & 0xFFFF, kind, flags, sid) + payload


def grpc_message(message: bytes) -> bytes:
    """``message`` with gRPC's prefix (uncompressed): what a DATA frame carries."""
    return b"\0" + U32.pack(len(message)) + message


def hpack_int(value: int, prefix_bits: int, first: int) -> bytes:
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
    head = hpack_int(name, 4, 0) if isinstance(name, int) else b"\0" + hpack_int(len(name), 7, 0) + name
    return head + hpack_int(len(value), 7, 0) + value


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
    """The ``grpc-timeout`` field for a deadline ``seconds`` away (milliseconds, or seconds when
    milliseconds would pass gRPC's 8 digits)."""
    ms = max(1, int(seconds * 1000))
    value = f"{ms}m" if ms < 100_000_000 else f"{min(int(seconds), 99_999_999)}S"
    return _literal(b"grpc-timeout", value.encode())


def indexed_only(block: bytes) -> bool:
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
