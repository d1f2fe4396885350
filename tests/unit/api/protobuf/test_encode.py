"""Encoding replies as Kubernetes protobuf: Go's exact bytes, round trips for every kind, golden bytes."""

from __future__ import annotations

import base64
import pathlib
from typing import Any

import pytest

from kplane.api import protobuf
from kplane.api.protobuf import _tables, decoding, encoding
from tests.unit.api.protobuf import descriptors, samples

FIXTURES = pathlib.Path(__file__).parent / "fixtures"
CAPTURES = sorted(p.stem for p in FIXTURES.glob("*.bin"))
KINDS = sorted(_tables.KINDS)
needs_kubectl = pytest.mark.skipif(not descriptors.KUBECTL.exists(), reason="needs the kubectl 1.32 binary")


@pytest.mark.parametrize("tag", CAPTURES)
def test_encoding_reproduces_go_bytes(tag: str) -> None:
    """Bodies that kubectl (Go, gogo-protobuf) wrote are rewritten byte for byte from their decoded form."""
    body = (FIXTURES / f"{tag}.bin").read_bytes()
    assert protobuf.encode(protobuf.decode(body)) == body


def _filled(name: str, depth: int = 0) -> Any:
    """An instance of message ``name`` with every field set to a non-zero value (messages to depth 4)."""
    codec = _tables.SPECIAL.get(name)
    if codec is not None:
        return {
            "time": "2026-01-02T03:04:05Z",
            "microtime": "2026-01-02T03:04:05.123456Z",
            "duration": "1h2m3.5s",
            "quantity": "250m",
            "intorstring": "25%",
            "rawextension": {"kind": "Raw", "n": 1},
            "fieldsv1": {"f:metadata": {}},
            "items": ["x", "y"],
        }[codec]
    out: dict[str, Any] = {}
    for number, (json_name, ftype, flags, ref) in _tables.MESSAGES[name].items():
        if flags & 4:
            out.update(_filled(ref, depth))  # inlined: same JSON object
            continue
        if ftype in (11, 100) and depth >= 4:
            if ftype == 11 and not flags:  # Go writes a value struct anyway: expect its zero form back
                zero = encoding.message({}, ref) if ref not in _tables.SPECIAL else b""
                out[json_name] = decoding.message(memoryview(zero), ref) if zero else _filled(ref)
            continue
        if ftype == 100:
            value_type, value_ref = _tables.MESSAGES[ref][2][1], _tables.MESSAGES[ref][2][3]
            value = _scalar(value_type, value_ref, number, depth)
            out[json_name] = {"b-key": value, "a-key": value}
        elif flags & 1:
            out[json_name] = [_scalar(ftype, ref, number, depth), _scalar(ftype, ref, number + 1, depth)]
        else:
            out[json_name] = _scalar(ftype, ref, number, depth)
    return out


def _scalar(ftype: int, ref: str, number: int, depth: int) -> Any:
    if ftype == 11:
        return _filled(ref, depth + 1)
    if ftype == 9:
        return f"v{number}-ü"
    if ftype == 12:
        return base64.b64encode(bytes([number, 0, 255])).decode()
    if ftype == 8:
        return True
    return -number if ftype == 5 else 2**40 + number  # int32 negative: ten-byte varints


@pytest.mark.parametrize(("api_version", "kind"), KINDS, ids=[f"{a}/{k}" for a, k in KINDS])
def test_every_kind_round_trips_with_every_field(api_version: str, kind: str) -> None:
    """An object of each kind with all its fields set decodes back to itself (lists, Status included)."""
    name = _tables.KINDS[(api_version, kind)]
    obj = {"apiVersion": api_version, "kind": kind, **_filled(name)}
    raw = encoding.message(obj, name)
    back: dict[str, Any] = {"apiVersion": api_version, "kind": kind}
    decoding._decode_into(memoryview(raw), name, back)
    assert back == obj


@needs_kubectl
@pytest.mark.parametrize(("api_version", "kind"), KINDS, ids=[f"{a}/{k}" for a, k in KINDS])
def test_every_kind_is_canonical_for_the_official_runtime(api_version: str, kind: str) -> None:
    """Google's protobuf runtime, given upstream's descriptors, parses each encoding and writes it
    back identically: fields in number order, maps sorted, nothing unknown, nothing malformed."""
    name = _tables.KINDS[(api_version, kind)]
    body = protobuf.encode({"apiVersion": api_version, "kind": kind, **_filled(name)})
    unknown = descriptors.message_class("runtime.Unknown").FromString(body[4:])
    assert (unknown.typeMeta.apiVersion, unknown.typeMeta.kind) == (api_version, kind)
    assert unknown.SerializeToString(deterministic=True) == body[4:]
    parsed = descriptors.message_class(name).FromString(unknown.raw)
    assert parsed.SerializeToString(deterministic=True) == unknown.raw


@needs_kubectl
def test_official_runtime_reads_the_values() -> None:
    """Spot values read back by Google's runtime: strings, ints, Time seconds, IntOrString, Quantity."""
    pod = protobuf.encode(samples.SAMPLES["pod"])
    unknown = descriptors.message_class("runtime.Unknown").FromString(pod[4:])
    parsed = descriptors.message_class("core.v1.Pod").FromString(unknown.raw)
    assert parsed.metadata.name == "web-0"
    assert parsed.metadata.creationTimestamp.seconds == 1767323045  # 2026-01-02T03:04:05Z
    assert parsed.metadata.creationTimestamp.nanos == 0
    assert parsed.spec.securityContext.runAsGroup == -1
    assert list(parsed.spec.securityContext.supplementalGroups) == [1, 2, 3]
    assert parsed.spec.activeDeadlineSeconds == 600


# --- golden bytes, derived by hand from the field numbers of apimachinery's generated.proto ---------


def test_golden_status_not_found() -> None:
    """A 404 Status: Unknown{TypeMeta{v1, Status}, raw, "", ""} around Status's six fields."""
    status = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'pods "x" not found',
        "reason": "NotFound",
        "details": {"name": "x", "kind": "pods"},
        "code": 404,
    }
    raw = (
        b"\x0a\x06" + b"\x0a\x00\x12\x00\x1a\x00"  # 1 metadata: ListMeta{selfLink, resourceVersion, continue}
        b"\x12\x07Failure"  # 2 status
        b'\x1a\x12pods "x" not found'  # 3 message
        b"\x22\x08NotFound"  # 4 reason
        b"\x2a\x0f"  # 5 details (a pointer: present)
        b"\x0a\x01x\x12\x00\x1a\x04pods\x28\x00\x32\x00"  # name, group, kind, retryAfterSeconds, uid
        b"\x30\x94\x03"  # 6 code: 404 as a varint
    )
    envelope = (
        b"k8s\x00"
        + b"\x0a\x0c\x0a\x02v1\x12\x06Status"
        + b"\x12"
        + bytes([len(raw)])
        + raw
        + b"\x1a\x00\x22\x00"
    )
    assert protobuf.encode(status) == envelope


def test_golden_configmap_with_go_zero_values() -> None:
    """Absent non-pointer fields are written as zeros (ObjectMeta's strings, generation, the zero
    creationTimestamp as an empty message); absent pointers (immutable) and empty maps are not."""
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "v"}}
    meta = b"\x0a\x01c\x12\x00\x1a\x00\x22\x00\x2a\x00\x32\x00\x38\x00\x42\x00"
    entry = b"\x0a\x01k\x12\x01v"
    raw = b"\x0a" + bytes([len(meta)]) + meta + b"\x12" + bytes([len(entry)]) + entry
    assert protobuf.encode(cm) == encoding.envelope("v1", "ConfigMap", raw)
    assert encoding.envelope("v1", "X", b"") == b"k8s\x00\x0a\x07\x0a\x02v1\x12\x01X\x12\x00\x1a\x00\x22\x00"


def test_golden_special_values() -> None:
    """Time drops nanos; MicroTime keeps microseconds; IntOrString writes all three fields."""
    assert encoding._time("1970-01-01T00:02:08Z") == b"\x08\x80\x01\x10\x00"
    assert encoding._time(None) == b""
    assert encoding._micro_time("1970-01-01T00:00:01.000002Z") == b"\x08\x01\x10\xd0\x0f"
    assert encoding._int_or_string(3) == b"\x08\x00\x10\x03\x1a\x00"
    assert encoding._int_or_string("25%") == b"\x08\x01\x10\x00\x1a\x0325%"
    assert encoding._quantity(None) == b"\x0a\x010"
    assert encoding._duration("1s") == b"\x08\x80\x94\xeb\xdc\x03"
    assert encoding.varint(-1) == b"\xff" * 9 + b"\x01"


def test_golden_list_and_watch_frame() -> None:
    """A list is ListMeta then one ``items`` field per item; a watch frame is a 4-byte big-endian
    length and a bare WatchEvent whose RawExtension holds the whole enveloped object."""
    items = [protobuf.item_field(b"\x0a\x00"), protobuf.item_field(b"\x0a\x01z")]
    body = protobuf.encode_list("v1", "ConfigMapList", {"resourceVersion": "7"}, items)
    raw = b"\x0a\x07\x0a\x00\x12\x017\x1a\x00" + b"\x12\x02\x0a\x00" + b"\x12\x03\x0a\x01z"
    assert body == encoding.envelope("v1", "ConfigMapList", raw)
    obj = encoding.envelope("v1", "ConfigMap", b"")
    event = b"\x0a\x05ADDED" + b"\x12" + bytes([len(obj) + 2]) + b"\x0a" + bytes([len(obj)]) + obj
    assert protobuf.watch_frame("ADDED", obj) == len(event).to_bytes(4, "big") + event


@pytest.mark.parametrize(
    ("text", "nanos"),
    [
        ("0", 0),
        ("0s", 0),
        ("1h0m0s", 3600 * 10**9),
        ("1.5s", 1_500_000_000),
        ("-300ms", -300_000_000),
        ("2m3s", 123 * 10**9),
        ("1µs", 1000),
        ("1us", 1000),
        ("10ns", 10),
        (".5h", 1800 * 10**9),
    ],
)
def test_parse_duration_as_go(text: str, nanos: int) -> None:
    """Go's time.ParseDuration forms, including what go_duration writes."""
    assert encoding.parse_duration(text) == nanos


@pytest.mark.parametrize("text", ["", "1", "s", "1x", "1h-2m", "--1s"])
def test_parse_duration_refuses_garbage(text: str) -> None:
    """Malformed durations raise ProtobufError, never something else."""
    with pytest.raises(protobuf.ProtobufError):
        encoding.parse_duration(text)


def test_times_with_offsets_are_utc_seconds() -> None:
    """A time written with an offset encodes as the same instant."""
    assert encoding._time("2026-01-02T04:04:05+01:00") == encoding._time("2026-01-02T03:04:05Z")


@pytest.mark.parametrize(
    "obj",
    [
        {"apiVersion": "example.com/v1", "kind": "Widget"},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": 5}},
        {"apiVersion": "v1", "kind": "Secret", "data": {"k": "not base64!"}},
        {"apiVersion": "v1", "kind": "Pod", "spec": {"activeDeadlineSeconds": "x"}},
    ],
)
def test_values_that_do_not_fit_raise_protobuf_error(obj: dict[str, Any]) -> None:
    """Kinds without descriptors and ill-typed values raise ProtobufError (mapped to a Status)."""
    with pytest.raises(protobuf.ProtobufError):
        protobuf.encode(obj)


def test_unknown_fields_are_dropped_and_output_is_deterministic() -> None:
    """Keys the Go struct does not have vanish, as Go's JSON decoding drops them; same dict, same bytes."""
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"b": "2", "a": "1"}}
    assert protobuf.encode({**cm, "extra": {"x": 1}}) == protobuf.encode(cm)
    assert protobuf.encode(cm) == protobuf.encode({**cm, "data": {"a": "1", "b": "2"}})
