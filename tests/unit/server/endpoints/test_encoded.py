"""The protobuf memo: same bytes as the encoder, reuse by stored state only, bounded."""

from __future__ import annotations

from typing import Any

from kplane.api import protobuf
from kplane.server.endpoints.encoded import ProtobufMemo


def _cm(name: str, value: str = "v", rv: str = "1", uid: str = "u") -> dict[str, Any]:
    meta = {"name": name, "resourceVersion": rv, "uid": uid}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"k": value}}


def _field(obj: dict[str, Any]) -> bytes:
    return protobuf.item_field(protobuf.item_message("v1", "ConfigMap", obj))


def test_memo_bytes_equal_the_encoders() -> None:
    """Bodies and list items from the memo are exactly what the encoder writes, hit or miss."""
    memo = ProtobufMemo()
    objs = [_cm("a", rv="1"), _cm("b", rv="2")]
    for _ in range(2):
        assert memo.encode(objs[0]) == protobuf.encode(objs[0])
        assert memo.items(objs, "v1", "ConfigMap") == [_field(o) for o in objs]
    assert len(memo) == 2


def test_memo_keys_by_stored_state() -> None:
    """A new resourceVersion (a later write) or another uid gets its own encoding; an object
    that names no stored state is encoded and not kept."""
    memo = ProtobufMemo()
    memo.encode(_cm("a", "1", rv="5"))
    assert protobuf.decode(memo.encode(_cm("a", "2", rv="6")))["data"] == {"k": "2"}
    assert protobuf.decode(memo.encode(_cm("a", "3", rv="5", uid="other")))["data"] == {"k": "3"}
    assert protobuf.decode(memo.encode(_cm("a", "1", rv="5")))["data"] == {"k": "1"}
    kept = len(memo)
    unnamed = _cm("a", "4", rv="")
    assert memo.items([unnamed], "v1", "ConfigMap") == [_field(unnamed)]
    assert len(memo) == kept


def test_memo_stays_within_its_budget() -> None:
    """Past the byte budget the oldest entries are dropped."""
    memo = ProtobufMemo(budget_bytes=2000)
    objs = [_cm(f"n{i}", rv=str(i)) for i in range(200)]
    assert memo.items(objs, "v1", "ConfigMap") == [_field(o) for o in objs]
    assert 0 < len(memo) < 200
    # the per-kind index lists serve from forgets what the budget dropped, and lists stay exact
    assert sum(len(entries) for entries in memo._by_kind.values()) == len(memo)
    assert memo.items(objs, "v1", "ConfigMap") == [_field(o) for o in objs]
