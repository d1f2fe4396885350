"""The subset of etcd's v3 protobuf messages kplane uses, encoded and decoded by hand.

Only the fields kplane reads or writes are known here (numbers from etcd's documented
``etcdserverpb``/``mvccpb`` API); unknown fields are skipped on decode, as protobuf requires. Hand
coding keeps the backend free of generated code and of a protobuf runtime on the hot path: a
request is a few ``bytes`` joins, a response one pass over its fields.

Encoders return ``bytes`` ready for gRPC; decoders take ``bytes`` and return frozen dataclasses.
Integers are protobuf ``int64``/``uint64`` varints (negative int64 as ten-byte two's complement);
the varint and field-splitting primitives are those of ``kplane.api.protobuf``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kplane.api.protobuf import wire as pbwire
from kplane.api.protobuf.encoding import varint

# Compare.result / Compare.target (etcdserverpb.Compare)
EQUAL, GREATER, LESS, NOT_EQUAL = 0, 1, 2, 3
VERSION, CREATE, MOD, VALUE = 0, 1, 2, 3
# mvccpb.Event.EventType
PUT, DELETE = 0, 1
# RangeRequest.sort_order / sort_target
SORT_NONE, SORT_ASCEND, SORT_DESCEND = 0, 1, 2
SORT_KEY, SORT_MOD = 0, 2

_VARINT, _LEN = 0, 2
_U64 = (1 << 64) - 1


DecodeError = pbwire.ProtobufError
"""The bytes are not a well-formed message."""


# -- encoding ----------------------------------------------------------------------------------------


def _tag(num: int, wire: int) -> bytes:
    return varint((num << 3) | wire)


def int_field(num: int, value: int) -> bytes:
    """A varint field; the default (0/False) is omitted, as proto3 does."""
    return _tag(num, _VARINT) + varint(int(value)) if value else b""


def bytes_field(num: int, value: bytes, *, always: bool = False) -> bytes:
    """A length-delimited field (bytes, string or embedded message)."""
    if not value and not always:
        return b""
    return _tag(num, _LEN) + varint(len(value)) + value


def range_request(
    key: bytes,
    range_end: bytes = b"",
    *,
    limit: int = 0,
    revision: int = 0,
    serializable: bool = False,
    keys_only: bool = False,
    count_only: bool = False,
) -> bytes:
    return b"".join(
        (
            bytes_field(1, key),
            bytes_field(2, range_end),
            int_field(3, limit),
            int_field(4, revision),
            int_field(7, serializable),
            int_field(8, keys_only),
            int_field(9, count_only),
        )
    )


def put_request(key: bytes, value: bytes, *, lease: int = 0, prev_kv: bool = False) -> bytes:
    return bytes_field(1, key) + bytes_field(2, value) + int_field(3, lease) + int_field(4, prev_kv)


def delete_request(key: bytes, range_end: bytes = b"", *, prev_kv: bool = False) -> bytes:
    return bytes_field(1, key) + bytes_field(2, range_end) + int_field(3, prev_kv)


def op_range(request: bytes) -> bytes:
    return bytes_field(1, request, always=True)


def op_put(request: bytes) -> bytes:
    return bytes_field(2, request, always=True)


def op_delete(request: bytes) -> bytes:
    return bytes_field(3, request, always=True)


def compare_mod_revision(key: bytes, mod_revision: int, result: int = EQUAL) -> bytes:
    """``mod_revision(key) <result> mod_revision`` (0 matches a missing key)."""
    # The target value is a oneof: its zero must be sent, or etcd would compare nothing.
    return (
        int_field(1, result)
        + int_field(2, MOD)
        + bytes_field(3, key)
        + _tag(6, _VARINT)
        + varint(mod_revision)
    )


def compare_version(key: bytes, version: int, result: int = EQUAL) -> bytes:
    """``version(key) <result> version`` (0 matches a missing key)."""
    return (
        int_field(1, result)
        + int_field(2, VERSION)
        + bytes_field(3, key)
        + _tag(4, _VARINT)
        + varint(version)
    )


def txn_request(compare: list[bytes], success: list[bytes], failure: list[bytes] = []) -> bytes:  # noqa: B006
    return b"".join(
        [bytes_field(1, c, always=True) for c in compare]
        + [bytes_field(2, op, always=True) for op in success]
        + [bytes_field(3, op, always=True) for op in failure]
    )


def compaction_request(revision: int, *, physical: bool = False) -> bytes:
    return int_field(1, revision) + int_field(2, physical)


def lease_grant_request(ttl: int) -> bytes:
    return int_field(1, ttl)


def watch_create_request(
    key: bytes, range_end: bytes, start_revision: int, *, prev_kv: bool = True, progress_notify: bool = True
) -> bytes:
    create = (
        bytes_field(1, key)
        + bytes_field(2, range_end)
        + int_field(3, start_revision)
        + int_field(4, progress_notify)
        + int_field(6, prev_kv)
    )
    return bytes_field(1, create, always=True)


def watch_cancel_request(watch_id: int) -> bytes:
    return bytes_field(2, int_field(1, watch_id), always=True)


def watch_progress_request() -> bytes:
    return bytes_field(3, b"", always=True)


def prefix_end(prefix: bytes) -> bytes:
    """The ``range_end`` selecting every key that starts with ``prefix`` (etcd's convention:
    the prefix with its last byte below 0xff incremented; ``\\0`` = to the end of the key space)."""
    b = bytearray(prefix)
    while b:
        if b[-1] < 0xFF:
            b[-1] += 1
            return bytes(b)
        b.pop()
    return b"\0"


# -- decoding ----------------------------------------------------------------------------------------


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    """A varint of more than one byte at ``pos``: ``(value truncated to 64 bits, next pos)``."""
    result, shift = 0, 0
    for i in range(pos, min(pos + 10, len(buf))):
        byte = buf[i]
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result & _U64, i + 1
        shift += 7
    raise DecodeError("truncated or over-long varint")


def _fields(buf: bytes) -> list[tuple[int, int | bytes]]:
    """``(field number, value)`` pairs: a signed int for varints, bytes for length-delimited fields
    (fixed-width fields, unused by etcd's messages here, are skipped). One pass over ``bytes`` with
    one-byte tags, lengths and values read inline: this runs for every etcd response."""
    out: list[tuple[int, int | bytes]] = []
    pos, end = 0, len(buf)
    try:
        while pos < end:
            key = buf[pos]
            if key < 0x80:
                pos += 1
            else:
                key, pos = _varint(buf, pos)
            num, kind = key >> 3, key & 7
            if num == 0:
                raise DecodeError("invalid field number 0")
            # The one-byte case of each varint is read inline (not through ``_varint``) on purpose:
            # lengths and small values are one byte, and a call per field doubled the cost.
            if kind == _LEN:
                size = buf[pos]
                if size < 0x80:
                    pos += 1
                else:
                    size, pos = _varint(buf, pos)
                if size > end - pos:
                    raise DecodeError(f"field {num}: length {size} runs past the end of the data")
                out.append((num, buf[pos : pos + size]))
                pos += size
            elif kind == _VARINT:
                value = buf[pos]
                if value < 0x80:
                    pos += 1
                else:
                    value, pos = _varint(buf, pos)
                    if value >= 1 << 63:
                        value -= 1 << 64
                out.append((num, value))
            elif kind == 1 or kind == 5:
                pos += 8 if kind == 1 else 4
                if pos > end:
                    raise DecodeError(f"field {num}: unexpected end of data")
            else:
                raise DecodeError(f"field {num}: unsupported wire type {kind}")
    except IndexError:
        raise DecodeError("unexpected end of data") from None
    return out


@dataclass(frozen=True, slots=True)
class Header:
    """A ``ResponseHeader``: only the revision is read (cluster, member and term are not used)."""

    revision: int = 0


def header(buf: bytes) -> Header:
    """Every response carries one; the 64-bit cluster and member ids are skipped unread."""
    pos, end, revision = 0, len(buf), 0
    try:
        while pos < end:
            key = buf[pos]
            if key >= 0x80 or key & 7 != _VARINT:
                for num, value in _fields(buf):  # not etcd's layout: read it the general way
                    if num == 3 and isinstance(value, int):
                        revision = value
                return Header(revision)
            pos += 1
            if key == 0x18:  # field 3, varint: the revision
                revision = buf[pos]
                if revision < 0x80:
                    pos += 1
                else:
                    revision, pos = _varint(buf, pos)
            else:
                while buf[pos] >= 0x80:
                    pos += 1
                pos += 1
    except IndexError:
        raise DecodeError("unexpected end of data in a response header") from None
    return Header(revision)


@dataclass(frozen=True, slots=True)
class KeyValue:
    key: bytes = b""
    create_revision: int = 0
    mod_revision: int = 0
    version: int = 0
    value: bytes = b""
    lease: int = 0


def key_value(buf: bytes) -> KeyValue:
    key = value = b""
    ints = [0, 0, 0, 0]  # create_revision, mod_revision, version, lease
    for num, v in _fields(buf):
        if isinstance(v, int):
            if 2 <= num <= 4:
                ints[num - 2] = v
            elif num == 6:
                ints[3] = v
        elif num == 1:
            key = v
        elif num == 5:
            value = v
    return KeyValue(key, ints[0], ints[1], ints[2], value, ints[3])


def _header_only(buf: bytes) -> Header:
    for num, v in _fields(buf):
        if num == 1 and isinstance(v, bytes):
            return header(v)
    return Header()


@dataclass(frozen=True, slots=True)
class RangeResponse:
    header: Header
    kvs: list[KeyValue]
    more: bool
    count: int


def range_response(buf: bytes) -> RangeResponse:
    h, kvs, more, count = Header(), [], False, 0
    for num, v in _fields(buf):
        if isinstance(v, bytes):
            if num == 1:
                h = header(v)
            elif num == 2:
                kvs.append(key_value(v))
        elif num == 3:
            more = bool(v)
        elif num == 4:
            count = v
    return RangeResponse(h, kvs, more, count)


@dataclass(frozen=True, slots=True)
class DeleteRangeResponse:
    header: Header
    deleted: int
    prev_kvs: list[KeyValue]


def delete_range_response(buf: bytes) -> DeleteRangeResponse:
    h, deleted, prev = Header(), 0, []
    for num, v in _fields(buf):
        if isinstance(v, bytes):
            if num == 1:
                h = header(v)
            elif num == 3:
                prev.append(key_value(v))
        elif num == 2:
            deleted = v
    return DeleteRangeResponse(h, deleted, prev)


@dataclass(frozen=True, slots=True)
class TxnResponse:
    header: Header
    succeeded: bool
    ranges: list[RangeResponse] = field(default_factory=list)
    deletes: list[DeleteRangeResponse] = field(default_factory=list)


def txn_response(buf: bytes) -> TxnResponse:
    h, ok = Header(), False
    ranges: list[RangeResponse] = []
    deletes: list[DeleteRangeResponse] = []
    for num, v in _fields(buf):
        if isinstance(v, int):
            if num == 2:
                ok = bool(v)
        elif num == 1:
            h = header(v)
        elif num == 3:
            for kind, op in _fields(v):
                if isinstance(op, bytes):
                    if kind == 1:
                        ranges.append(range_response(op))
                    elif kind == 3:
                        deletes.append(delete_range_response(op))
    return TxnResponse(h, ok, ranges, deletes)


def header_of(buf: bytes) -> Header:
    """The header of any response whose field 1 is its ``ResponseHeader`` (Put, Compact...)."""
    return _header_only(buf)


@dataclass(frozen=True, slots=True)
class LeaseGrant:
    header: Header
    id: int
    ttl: int
    error: str


def lease_grant_response(buf: bytes) -> LeaseGrant:
    h, ident, ttl, error = Header(), 0, 0, ""
    for num, v in _fields(buf):
        if isinstance(v, bytes):
            if num == 1:
                h = header(v)
            elif num == 4:
                error = v.decode("utf-8", "replace")
        elif num == 2:
            ident = v
        elif num == 3:
            ttl = v
    return LeaseGrant(h, ident, ttl, error)


@dataclass(frozen=True, slots=True)
class Status:
    header: Header
    version: str
    db_size: int
    leader: int
    errors: list[str]


def status_response(buf: bytes) -> Status:
    h, version, db_size, leader, errors = Header(), "", 0, 0, []
    for num, v in _fields(buf):
        if isinstance(v, bytes):
            if num == 1:
                h = header(v)
            elif num == 2:
                version = v.decode("utf-8", "replace")
            elif num == 8:
                errors.append(v.decode("utf-8", "replace"))
        elif num == 3:
            db_size = v
        elif num == 4:
            leader = v
    return Status(h, version, db_size, leader, errors)


@dataclass(frozen=True, slots=True)
class WatchEvent:
    type: int
    kv: KeyValue
    prev_kv: KeyValue | None


def _event(buf: bytes) -> WatchEvent:
    kind, kv, prev = PUT, KeyValue(), None
    for num, v in _fields(buf):
        if isinstance(v, int):
            if num == 1:
                kind = v
        elif num == 2:
            kv = key_value(v)
        elif num == 3:
            prev = key_value(v)
    return WatchEvent(kind, kv, prev)


@dataclass(frozen=True, slots=True)
class WatchResponse:
    header: Header
    watch_id: int
    created: bool
    canceled: bool
    compact_revision: int
    cancel_reason: str
    fragment: bool
    events: list[WatchEvent]


def watch_response(buf: bytes) -> WatchResponse:
    h = Header()
    ints = [0, 0, 0, 0]  # watch_id, created, canceled, compact_revision
    reason, fragment, events = "", False, []
    for num, v in _fields(buf):
        if isinstance(v, int):
            if 2 <= num <= 5:
                ints[num - 2] = v
            elif num == 7:
                fragment = bool(v)
        elif num == 1:
            h = header(v)
        elif num == 6:
            reason = v.decode("utf-8", "replace")
        elif num == 11:
            events.append(_event(v))
    return WatchResponse(h, ints[0], bool(ints[1]), bool(ints[2]), ints[3], reason, fragment, events)


@dataclass(frozen=True, slots=True)
class SnapshotChunk:
    remaining: int
    blob: bytes


def snapshot_response(buf: bytes) -> SnapshotChunk:
    remaining, blob = 0, b""
    for num, v in _fields(buf):
        if isinstance(v, int):
            if num == 2:
                remaining = v
        elif num == 3:
            blob = v
    return SnapshotChunk(remaining, blob)
