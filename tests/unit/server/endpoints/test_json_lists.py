"""The list body encoder: upstream's typed-list bytes, items memoised by resourceVersion."""

from __future__ import annotations

import json

from kplane.server.endpoints.encoded import JsonLists


def _cm(name: str, rv: str, value: str = "v") -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "resourceVersion": rv},
        "data": {"k": value},
    }


def test_items_carry_no_type_and_body_ends_with_newline() -> None:
    """Items lose apiVersion/kind, the list keeps its own, the body ends in one newline."""
    items = [_cm("a", "1"), _cm("b", "2")]
    body = JsonLists().encode("v1", "ConfigMapList", {"resourceVersion": "2"}, items)
    assert body.endswith(b"]}\n")
    assert json.loads(body) == {
        "kind": "ConfigMapList",
        "apiVersion": "v1",
        "metadata": {"resourceVersion": "2"},
        "items": [
            {"metadata": {"name": "a", "resourceVersion": "1"}, "data": {"k": "v"}},
            {"metadata": {"name": "b", "resourceVersion": "2"}, "data": {"k": "v"}},
        ],
    }
    assert items[0]["kind"] == "ConfigMap"  # the stored objects are not touched


def test_a_new_resource_version_is_encoded_again() -> None:
    """An object written again (new resourceVersion) is served in its new state."""
    enc = JsonLists()
    enc.encode("v1", "ConfigMapList", {}, [_cm("a", "1")])
    body = enc.encode("v1", "ConfigMapList", {}, [_cm("a", "3", "new")])
    assert json.loads(body)["items"][0]["data"] == {"k": "new"}


def test_versions_are_memoised_apart_and_memory_is_bounded() -> None:
    """The same resourceVersion at two apiVersions gives two encodings; past the budget it starts over."""
    enc = JsonLists(max_bytes=200)
    v1 = enc.encode("autoscaling/v1", "L", {}, [{"metadata": {"resourceVersion": "5"}, "spec": {"a": 1}}])
    v2 = enc.encode("autoscaling/v2", "L", {}, [{"metadata": {"resourceVersion": "5"}, "spec": {"b": 2}}])
    assert json.loads(v1)["items"][0]["spec"] == {"a": 1}
    assert json.loads(v2)["items"][0]["spec"] == {"b": 2}
    enc.encode("v1", "L", {}, [_cm(f"n{i}", str(10 + i)) for i in range(20)])
    assert enc._bytes <= 200
