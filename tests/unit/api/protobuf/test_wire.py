"""The protobuf wire reader."""

from __future__ import annotations

import pytest

from kplane.api.protobuf import wire
from tests.unit.api.protobuf import encoder


@pytest.mark.parametrize("value", [0, 1, 127, 128, 300, 2**32, 2**63 - 1, 2**64 - 1])
def test_varint_round_trip(value: int) -> None:
    """Varints read back the value the test encoder wrote, and consume all its bytes."""
    data = encoder.varint(value)
    assert wire.read_varint(memoryview(data), 0) == (value, len(data))


def test_negative_int32_is_ten_bytes() -> None:
    """Go writes a negative int32 as a sign-extended ten-byte varint; signed() recovers it."""
    data = encoder.varint(-5)
    assert len(data) == 10
    raw, _ = wire.read_varint(memoryview(data), 0)
    assert wire.signed(raw, 32) == -5
    assert wire.signed(raw, 64) == -5


def test_fields_in_wire_order() -> None:
    """fields() yields every field with its wire type, including fixed-width ones."""
    data = (
        encoder.tag(1, 0)
        + encoder.varint(7)
        + encoder.length_delimited(2, b"ab")
        + encoder.tag(3, 1)
        + (9).to_bytes(8, "little")
        + encoder.tag(4, 5)
        + (10).to_bytes(4, "little")
    )
    got = [(n, t, v if isinstance(v, int) else bytes(v)) for n, t, v in wire.fields(memoryview(data))]
    assert got == [(1, 0, 7), (2, 2, b"ab"), (3, 1, 9), (4, 5, 10)]


@pytest.mark.parametrize(
    "data",
    [b"\x08", b"\x08\x80", b"\x12\x03ab", b"\x19\x00", b"\x1d\x00", b"\x0b", b"\x0e", b"\x00\x00"],
    ids=["no-value", "cut-varint", "short-len", "short-fixed64", "short-fixed32", "group", "wt6", "field0"],
)
def test_malformed_fields_raise(data: bytes) -> None:
    """Truncated values, groups, reserved wire types and field number 0 raise ProtobufError."""
    with pytest.raises(wire.ProtobufError):
        list(wire.fields(memoryview(data)))


def test_packed_fixed_rejects_ragged_length() -> None:
    """A packed fixed32 field whose length is not a multiple of 4 is an error."""
    assert wire.packed_fixed(memoryview(b"\x01\x00\x00\x00"), 4) == [1]
    with pytest.raises(wire.ProtobufError):
        wire.packed_fixed(memoryview(b"\x01\x00\x00"), 4)
