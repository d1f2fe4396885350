"""Field sets: FieldsV1 round trips with upstream examples, ordering, set algebra, the parse memo."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from kplane.api.apply import fieldpath, pathelement
from kplane.api.apply.fieldpath import FieldSet

UPSTREAM_UPDATE = (
    '{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:replicas":{},"f:template":{"f:spec":'
    '{"f:containers":{"k:{\\"name\\":\\"nginx\\"}":{".":{},"f:image":{},"f:name":{}}}}}}}'
)
# structured-merge-diff's golden serialization (fieldpath/serialize_test.go): f < k < v < i, values
# numbers < strings < booleans.
UPSTREAM_GOLDEN = (
    '{"f:aaa":{},"f:aab":{},"k:{\\"name\\":\\"first\\"}":{},"k:{\\"name\\":\\"second\\"}":{},'
    '"k:{\\"port\\":443,\\"protocol\\":\\"tcp\\"}":{},"v:1":{},"v:2":{},"v:\\"aa\\"":{},"v:true":{},'
    '"i:1":{},"i:4":{}}'
)


def _roundtrip(text: str) -> str:
    return orjson.dumps(FieldSet.from_fields_v1(orjson.loads(text)).to_fields_v1()).decode()


def test_upstream_update_example_round_trips_with_self_last() -> None:
    """An apiserver FieldsV1 value decodes and re-encodes with "." written last, as SMD does."""
    out = _roundtrip(UPSTREAM_UPDATE)
    assert orjson.loads(out) == orjson.loads(UPSTREAM_UPDATE)
    assert '"f:labels":{"f:app":{},".":{}}' in out


def test_golden_order_is_reproduced() -> None:
    """Element kinds and values sort exactly as structured-merge-diff's golden data."""
    assert _roundtrip(UPSTREAM_GOLDEN) == UPSTREAM_GOLDEN


def test_membership_of_decoded_set() -> None:
    """ "." marks a node that is both a member and a parent; {} marks a leaf member."""
    s = FieldSet.from_fields_v1(orjson.loads(UPSTREAM_UPDATE))
    assert s.has(("f:metadata", "f:labels"))
    assert s.has(("f:metadata", "f:labels", "f:app"))
    assert not s.has(("f:metadata",))
    assert s.has_prefix(("f:metadata",))
    containers = ("f:spec", "f:template", "f:spec", "f:containers")
    assert s.has((*containers, 'k:{"name":"nginx"}'))
    assert len(s) == 6


def test_unknown_element_kinds_are_dropped() -> None:
    """Unknown element prefixes are ignored, as upstream's decoder does."""
    assert FieldSet.from_fields_v1({"f:a": {}, "r:b": {}}).to_fields_v1() == {"f:a": {}}


@pytest.mark.parametrize(
    "bad", [[], {"f:a": 1}, {"k:{oops": {}}, {"x": {}}], ids=["list", "leaf", "json", "short"]
)
def test_malformed_fields_v1_raises(bad: Any) -> None:
    """Malformed fieldsV1 is a ValueError."""
    with pytest.raises(ValueError):
        FieldSet.from_fields_v1(bad)


def test_key_elements_are_canonicalized() -> None:
    """Key JSON is normalized (sorted keys, compact), so differently spelled keys are equal."""
    a = FieldSet.from_fields_v1({'k:{"protocol":"TCP", "port":80}': {}})
    b = FieldSet.from_fields_v1({'k:{"port":80,"protocol":"TCP"}': {}})
    assert a == b
    assert pathelement.key({"protocol": "TCP", "port": 80}) == 'k:{"port":80,"protocol":"TCP"}'


def test_set_algebra() -> None:
    """Union, difference and intersection respect membership of parents and children."""
    a = FieldSet.of_paths(("f:spec", "f:replicas"), ("f:spec", "f:paused"))
    b = FieldSet.of_paths(("f:spec", "f:replicas"), ("f:metadata", "f:labels", "f:x"))
    assert set(a.union(b).paths()) == {
        ("f:spec", "f:replicas"),
        ("f:spec", "f:paused"),
        ("f:metadata", "f:labels", "f:x"),
    }
    assert list(a.difference(b).paths()) == [("f:spec", "f:paused")]
    assert list(a.intersection(b).paths()) == [("f:spec", "f:replicas")]
    parent = FieldSet.of_paths(("f:a",), ("f:a", "f:b"))
    assert list(parent.difference(FieldSet.of_paths(("f:a",))).paths()) == [("f:a", "f:b")]
    assert parent.difference(parent).empty()


def test_difference_with_nothing_shared_is_the_set_itself() -> None:
    """Taking away fields under other top-level elements removes nothing: the answer is the
    (immutable) set itself, so its encoding is not computed again."""
    spec = FieldSet.of_paths(("f:spec", "f:value"), ("f:metadata", "f:labels", "f:a"))
    status = FieldSet.of_paths(("f:status", "f:observed"))
    assert spec.difference(status) is spec
    assert spec.difference(FieldSet()) is spec
    labels = FieldSet.of_paths(("f:metadata", "f:labels", "f:b"))
    kept = spec.difference(labels)  # a shared top-level element: a new set, equal in content
    assert kept == spec and list(kept.paths()) == list(spec.paths())


def test_parsing_the_same_text_again_gives_the_same_set() -> None:
    """A fieldsV1 value parsed before is answered from the memo: the same (immutable) set, whose
    encoding is computed once; a differently spelled equal value is parsed on its own."""
    data = {"f:spec": {".": {}, "f:value": {}}}
    first = FieldSet.from_fields_v1(data)
    again = FieldSet.from_fields_v1(orjson.loads(orjson.dumps(data)))
    assert again is first
    assert first.to_fields_v1() is first.to_fields_v1()
    assert first.to_fields_v1() == {"f:spec": {"f:value": {}, ".": {}}}
    reordered = FieldSet.from_fields_v1({"f:spec": {"f:value": {}, ".": {}}})
    assert reordered is not first and reordered == first


def test_parse_memo_stays_bounded() -> None:
    """Many distinct values never grow the memo past its size; long ones are not kept."""
    for i in range(fieldpath._PARSED_SIZE + 10):
        FieldSet.from_fields_v1({f"f:k{i}": {}})
        assert len(fieldpath._parsed) <= fieldpath._PARSED_SIZE
    big = {f"f:{'x' * 100}{i}": {} for i in range(60)}
    assert FieldSet.from_fields_v1(big) is not FieldSet.from_fields_v1(big)
