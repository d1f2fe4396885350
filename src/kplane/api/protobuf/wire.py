"""The protobuf wire format, read side: varints, fixed-width numbers and length-delimited fields.

``fields(buf)`` splits one encoded message into ``(number, wire_type, value)`` triples in wire
order, without knowing the schema; the decoder then interprets each value by its descriptor.
Values are ``int`` for varint and fixed-width wire types and a ``memoryview`` slice (no copy) for
length-delimited ones. Groups (wire types 3 and 4, deprecated and never written by Kubernetes)
and the reserved wire types 6 and 7 are errors.

Every malformed input raises ``ProtobufError`` (a ``ValueError``); no other exception escapes.
"""

from __future__ import annotations

from collections.abc import Iterator

VARINT = 0
FIXED64 = 1
LEN = 2
FIXED32 = 5

_MAX_VARINT_BYTES = 10
_U64 = (1 << 64) - 1


class ProtobufError(ValueError):
    """A request body is not a decodable Kubernetes protobuf message."""


def read_varint(buf: memoryview, pos: int) -> tuple[int, int]:
    """Read an unsigned varint at ``pos``; return ``(value, next_pos)``.

    The value is truncated to 64 bits, as Go does. A varint longer than ten bytes or cut off by
    the end of ``buf`` raises ``ProtobufError``.
    """
    result = 0
    shift = 0
    end = len(buf)
    for _ in range(_MAX_VARINT_BYTES):
        if pos >= end:
            raise ProtobufError("unexpected end of data in varint")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result & _U64, pos
        shift += 7
    raise ProtobufError("varint longer than 10 bytes")


def fields(buf: memoryview) -> Iterator[tuple[int, int, int | memoryview]]:
    """Yield ``(field_number, wire_type, value)`` for each field of the message in ``buf``.

    Fields come in wire order; repeated fields appear once per occurrence. The iterator raises
    ``ProtobufError`` at the first malformed field (bad tag, field number 0, truncated value,
    unsupported wire type).
    """
    pos = 0
    end = len(buf)
    while pos < end:
        key = buf[pos]
        if key < 0x80:  # fast path: one-byte tags (field numbers below 16) are the common case
            pos += 1
        else:
            key, pos = read_varint(buf, pos)
        number, wire_type = key >> 3, key & 7
        if number == 0 or number > 0x1FFFFFFF:
            raise ProtobufError(f"invalid field number {number}")
        value: int | memoryview
        if wire_type == VARINT:
            value, pos = read_varint(buf, pos)
        elif wire_type == LEN:
            if pos < end and buf[pos] < 0x80:
                size = buf[pos]
                pos += 1
            else:
                size, pos = read_varint(buf, pos)
            if size > end - pos:
                raise ProtobufError(f"field {number}: length {size} runs past the end of the data")
            value = buf[pos : pos + size]
            pos += size
        elif wire_type == FIXED64:
            if pos + 8 > end:
                raise ProtobufError(f"field {number}: unexpected end of data in fixed64")
            value = int.from_bytes(buf[pos : pos + 8], "little")
            pos += 8
        elif wire_type == FIXED32:
            if pos + 4 > end:
                raise ProtobufError(f"field {number}: unexpected end of data in fixed32")
            value = int.from_bytes(buf[pos : pos + 4], "little")
            pos += 4
        else:
            raise ProtobufError(f"field {number}: unsupported wire type {wire_type}")
        yield number, wire_type, value


def packed_varints(buf: memoryview) -> list[int]:
    """Decode a packed repeated varint field (concatenated varints) into unsigned values."""
    out: list[int] = []
    pos = 0
    while pos < len(buf):
        value, pos = read_varint(buf, pos)
        out.append(value)
    return out


def packed_fixed(buf: memoryview, width: int) -> list[int]:
    """Decode a packed repeated fixed32 (``width`` 4) or fixed64 (``width`` 8) field."""
    if len(buf) % width:
        raise ProtobufError(f"packed fixed{width * 8} field has a ragged length {len(buf)}")
    return [int.from_bytes(buf[i : i + width], "little") for i in range(0, len(buf), width)]


def signed(value: int, bits: int) -> int:
    """Reinterpret the low ``bits`` bits of ``value`` as two's complement (Go's ``int32(v)``)."""
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value
