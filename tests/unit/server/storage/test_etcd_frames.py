"""The bytes the etcd client's transport writes and reads (``frames``): HPACK pieces against
RFC 7541's examples and a standard decoder."""

from __future__ import annotations

import hpack

from kplane.server.storage.etcd import frames


def test_hpack_integers_match_rfc_7541_examples() -> None:
    """RFC 7541 C.1.1 to C.1.3: 10 and 1337 with a 5-bit prefix, 42 at an octet boundary."""
    assert frames.hpack_int(10, 5, 0) == b"\x0a"
    assert frames.hpack_int(1337, 5, 0) == b"\x1f\x9a\x0a"
    assert frames.hpack_int(42, 8, 0) == b"\x2a"


def test_request_headers_decode_as_a_grpc_request() -> None:
    """The header block we send is what a standard HPACK decoder reads as a gRPC POST."""
    block = frames.request_headers(
        "/etcdserverpb.KV/Range", "127.0.0.1:2379", tls=False, metadata=[("hasleader", "true")]
    )
    block += frames.timeout_header(4.5)
    assert hpack.Decoder().decode(block) == [
        (":method", "POST"),
        (":scheme", "http"),
        (":path", "/etcdserverpb.KV/Range"),
        (":authority", "127.0.0.1:2379"),
        ("content-type", "application/grpc"),
        ("te", "trailers"),
        ("hasleader", "true"),
        ("grpc-timeout", "4500m"),
    ]


def test_indexed_only_blocks_are_recognised() -> None:
    """Only blocks of indexed fields (which cannot change the dynamic table) are memoised."""
    assert frames.indexed_only(b"\x88\xbe")  # :status 200, dynamic entry 62
    assert frames.indexed_only(b"\xff\x80\x01")  # index 255: a multi-byte integer
    assert not frames.indexed_only(b"\x88\x40\x01a\x01b")  # a literal with incremental indexing
    assert not frames.indexed_only(b"\x20")  # a table size update
