"""The etcd client's hand-coded protobuf decoding: the fast field scanner reads what the shared
protobuf reader reads, and rejects what it rejects (malformed input is a DecodeError, never an
IndexError or a wrong value)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kplane.api.protobuf import wire as pbwire
from kplane.api.protobuf.encoding import varint
from kplane.server.storage.etcd import wire


def _reference(buf: bytes) -> list[tuple[int, int | bytes]]:
    out: list[tuple[int, int | bytes]] = []
    for num, kind, value in pbwire.fields(memoryview(buf)):
        if kind == pbwire.VARINT:
            assert isinstance(value, int)
            out.append((num, value - (1 << 64) if value >= 1 << 63 else value))
        elif kind == pbwire.LEN:
            assert isinstance(value, memoryview)
            out.append((num, bytes(value)))
    return out


_field = st.one_of(
    st.tuples(st.integers(1, 5000), st.integers(0, (1 << 64) - 1)).map(
        lambda f: varint(f[0] << 3) + varint(f[1])
    ),
    st.tuples(st.integers(1, 5000), st.binary(max_size=300)).map(
        lambda f: varint(f[0] << 3 | 2) + varint(len(f[1])) + f[1]
    ),
    st.tuples(st.integers(1, 20), st.binary(min_size=8, max_size=8)).map(
        lambda f: varint(f[0] << 3 | 1) + f[1]
    ),
    st.tuples(st.integers(1, 20), st.binary(min_size=4, max_size=4)).map(
        lambda f: varint(f[0] << 3 | 5) + f[1]
    ),
)


@given(st.lists(_field, max_size=12))
def test_fields_match_the_reference_reader(parts: list[bytes]) -> None:
    """Well-formed messages (multi-byte tags, lengths, negative int64s, fixed fields) decode alike."""
    buf = b"".join(parts)
    assert wire._fields(buf) == _reference(buf)


@given(st.lists(_field, min_size=1, max_size=6), st.data())
def test_truncated_messages_are_decode_errors(parts: list[bytes], data: st.DataObject) -> None:
    """A message cut anywhere either still parses as the reference says or fails as DecodeError."""
    buf = b"".join(parts)
    cut = buf[: data.draw(st.integers(0, len(buf)))]
    try:
        expected = _reference(cut)
    except pbwire.ProtobufError:
        with pytest.raises(wire.DecodeError):
            wire._fields(cut)
    else:
        assert wire._fields(cut) == expected


def test_a_txn_response_reads_its_revision_and_outcome() -> None:
    """A Txn answer with a two-byte revision and a failed compare's range is read back."""
    header = wire.int_field(3, 300_000)
    kv = wire.bytes_field(1, b"/k") + wire.int_field(3, 299_999) + wire.bytes_field(5, b"{}")
    rng = wire.bytes_field(1, header) + wire.bytes_field(2, kv)
    raw = wire.bytes_field(1, header) + wire.bytes_field(3, wire.bytes_field(1, rng))
    got = wire.txn_response(raw)
    assert (got.header.revision, got.succeeded) == (300_000, False)
    assert got.ranges[0].kvs[0] == wire.KeyValue(b"/k", 0, 299_999, 0, b"{}", 0)


@given(st.lists(_field, max_size=8))
def test_a_header_reads_the_revision_any_layout(parts: list[bytes]) -> None:
    """The header's revision is its last field 3 varint, whatever else the message holds."""
    buf = b"".join(parts)
    revisions = [v for n, v in _reference(buf) if n == 3 and isinstance(v, int)]
    assert wire.header(buf).revision == (revisions[-1] if revisions else 0)


def test_etcds_header_with_64_bit_ids() -> None:
    """etcd's own header: ten-byte cluster and member ids are skipped, the revision read."""
    raw = wire.int_field(1, (1 << 64) - 5) + wire.int_field(2, 1 << 63) + wire.int_field(3, 70_000)
    assert wire.header(raw + wire.int_field(4, 3)).revision == 70_000
    with pytest.raises(wire.DecodeError):
        wire.header(raw[:-1])
