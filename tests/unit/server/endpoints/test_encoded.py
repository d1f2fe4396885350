"""The protobuf memo: same bytes as the encoder, reuse by identity only, bounded."""

from __future__ import annotations

from kplane.api import protobuf
from kplane.server.endpoints.encoded import ProtobufMemo


def _cm(name: str, value: str = "v") -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": value}}


def test_memo_bytes_equal_the_encoders() -> None:
    """Bodies and list items from the memo are exactly what the encoder writes, hit or miss."""
    memo = ProtobufMemo()
    objs = [_cm("a"), _cm("b")]
    for _ in range(2):
        assert memo.encode(objs[0]) == protobuf.encode(objs[0])
        items = memo.items(objs, "v1", "ConfigMap")
        expected = [protobuf.item_field(protobuf.item_message("v1", "ConfigMap", o)) for o in objs]
        assert items == expected


def test_memo_keys_by_identity_not_content() -> None:
    """A new object with the same name (a later write) gets its own encoding."""
    memo = ProtobufMemo()
    old = _cm("a", "1")
    memo.encode(old)
    new = _cm("a", "2")
    assert protobuf.decode(memo.encode(new))["data"] == {"k": "2"}
    assert protobuf.decode(memo.encode(old))["data"] == {"k": "1"}


def test_memo_stays_within_its_budget() -> None:
    """Past the byte budget the oldest entries are dropped."""
    memo = ProtobufMemo(budget_bytes=2000)
    objs = [_cm(f"n{i}") for i in range(200)]
    memo.items(objs, "v1", "ConfigMap")
    assert 0 < len(memo) < 200
    assert memo.items(objs[:1], "v1", "ConfigMap") == [
        protobuf.item_field(protobuf.item_message("v1", "ConfigMap", objs[0]))
    ]
