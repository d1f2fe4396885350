"""Decoding Kubernetes protobuf request bodies: real kubectl captures, round trips, malformed input."""

from __future__ import annotations

import copy
import json
import pathlib
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kplane.api import protobuf
from kplane.api.protobuf import _tables
from tests.unit.api.protobuf import encoder, samples

FIXTURES = pathlib.Path(__file__).parent / "fixtures"
CAPTURES = sorted(p.stem for p in FIXTURES.glob("*.bin"))

# Go's JSON writes zero non-pointer fields that lack ``omitempty`` (and ``null`` for their nil
# slices); the decoder leaves them out by design. These are the only such fields in the
# ``--dry-run=client -o json`` output of the captured commands.
GO_ONLY_ZERO_FIELDS: dict[str, list[tuple[str, ...]]] = {
    "clusterrole_agg": [("rules",)],
    "pdb": [
        ("status", f) for f in ("currentHealthy", "desiredHealthy", "disruptionsAllowed", "expectedPods")
    ],
}


def _expected(tag: str) -> dict[str, Any]:
    expected: dict[str, Any] = json.loads((FIXTURES / f"{tag}.json").read_text())
    for path in GO_ONLY_ZERO_FIELDS.get(tag, []):
        parent = expected
        for key in path[:-1]:
            parent = parent[key]
        del parent[path[-1]]
    return expected


def test_fixtures_cover_the_kubectl_commands() -> None:
    """The captured bodies include every kubectl command named in the brief."""
    assert {
        "configmap",
        "secret_generic",
        "deployment",
        "namespace",
        "serviceaccount",
        "role",
        "rolebinding",
        "job",
        "cronjob",
        "priorityclass",
        "quota",
        "cani",
        "whoami",
        "token",
        "service_clusterip",
    } <= set(CAPTURES)


@pytest.mark.parametrize("tag", CAPTURES)
def test_real_kubectl_body_decodes_to_its_json_form(tag: str) -> None:
    """A body captured from kubectl 1.32/1.33 decodes to what ``kubectl --dry-run=client -o json`` prints."""
    body = (FIXTURES / f"{tag}.bin").read_bytes()
    assert body.startswith(protobuf.MAGIC)
    assert protobuf.decode(body) == _expected(tag)


def test_configmap_capture_in_detail() -> None:
    """The ConfigMap capture keeps an empty data value and the null creationTimestamp, nothing else."""
    obj = protobuf.decode((FIXTURES / "configmap.bin").read_bytes())
    assert obj == {
        "kind": "ConfigMap",
        "apiVersion": "v1",
        "metadata": {"name": "x", "creationTimestamp": None},
        "data": {"a": "b", "empty": ""},
    }


def test_pointer_zero_survives_and_plain_zero_does_not() -> None:
    """``replicas: 0`` (a Go pointer) is kept from a real capture; zero non-pointer strings are not."""
    obj = protobuf.decode((FIXTURES / "deployment_zero.bin").read_bytes())
    assert obj["spec"]["replicas"] == 0
    assert "namespace" not in obj["metadata"]
    assert "uid" not in obj["metadata"]


def test_secret_bytes_are_base64() -> None:
    """Secret data values (Go ``[]byte``) decode to base64 strings, including non-UTF-8 bytes."""
    obj = protobuf.decode((FIXTURES / "secret_generic.bin").read_bytes())
    assert obj["data"] == {"bin": "/w==", "k": "dg=="}  # b"\xff", not valid UTF-8


def test_token_request_renames_uid() -> None:
    """BoundObjectReference's proto field ``uID`` decodes under its JSON name ``uid``."""
    obj = protobuf.decode((FIXTURES / "token.bin").read_bytes())
    assert obj["spec"]["boundObjectRef"]["uid"] == "123e4567-e89b-12d3-a456-426614174000"
    assert obj["spec"]["expirationSeconds"] == 3600


@pytest.mark.parametrize("name", sorted(samples.SAMPLES))
def test_round_trip(name: str) -> None:
    """A canonical object survives encode -> decode unchanged."""
    obj = samples.SAMPLES[name]
    assert protobuf.decode(encoder.encode(obj)) == obj


def _only_zero_messages(value: Any) -> bool:
    return value is None or (isinstance(value, dict) and all(map(_only_zero_messages, value.values())))


def _same_but_zero_messages(got: Any, want: Any) -> bool:
    """``got`` equals ``want`` except for extra keys holding zero messages (``{}``, ``null`` times)."""
    if isinstance(got, dict) and isinstance(want, dict):
        extra = set(got) - set(want)
        return (
            set(want) <= set(got)
            and all(_only_zero_messages(got[k]) for k in extra)
            and all(_same_but_zero_messages(got[k], want[k]) for k in want)
        )
    if isinstance(got, list) and isinstance(want, list):
        return len(got) == len(want) and all(map(_same_but_zero_messages, got, want))
    return bool(got == want)


@pytest.mark.parametrize("name", sorted(samples.SAMPLES))
def test_round_trip_drops_go_zero_noise(name: str) -> None:
    """Zero values gogo writes for every unset non-pointer scalar do not show up after decoding; Go's
    unset value structs come back as empty messages (``creationTimestamp: null``), as in Go's JSON."""
    obj = samples.SAMPLES[name]
    assert _same_but_zero_messages(protobuf.decode(protobuf.encode(obj)), obj)  # Go's zeros, via the server


def test_inline_fields_are_flattened() -> None:
    """Go-embedded inline structs (VolumeSource, ProbeHandler, LocalObjectReference) merge into the parent."""
    obj = protobuf.decode(encoder.encode(samples.SAMPLES["pod"]))
    container = obj["spec"]["containers"][0]
    assert obj["spec"]["volumes"][0]["configMap"]["name"] == "web-config"
    assert container["livenessProbe"]["httpGet"]["port"] == "http"
    assert container["env"][1]["valueFrom"]["configMapKeyRef"] == {"name": "web-config", "key": "k"}


def test_special_values() -> None:
    """IntOrString, Quantity, MicroTime, negative int32 and RawExtension decode to their JSON forms."""
    pod = protobuf.decode(encoder.encode(samples.SAMPLES["pod"]))
    assert pod["spec"]["containers"][0]["readinessProbe"]["tcpSocket"]["port"] == 8080
    assert pod["spec"]["containers"][0]["resources"]["limits"]["cpu"] == "500m"
    assert pod["spec"]["securityContext"]["runAsGroup"] == -1
    lease = protobuf.decode(encoder.encode(samples.SAMPLES["lease"]))
    assert lease["spec"]["acquireTime"] == "2026-01-02T03:04:05.123456Z"
    rev = protobuf.decode(encoder.encode(samples.SAMPLES["controllerrevision"]))
    assert rev["data"]["list"] == [1, 2.5, None, True]


def _time_body(seconds: int, nanos: int) -> bytes:
    time = encoder.tag(1, 0) + encoder.varint(seconds) + encoder.tag(2, 0) + encoder.varint(nanos)
    meta = encoder.length_delimited(8, time)
    return encoder.envelope("v1", "Namespace", encoder.length_delimited(1, meta))


def test_time_drops_nanoseconds_and_zero_is_null() -> None:
    """``metav1.Time`` keeps whole seconds in RFC 3339; seconds=nanos=0 is Go's zero time, ``null``."""
    assert protobuf.decode(_time_body(1767323045, 999_999_999))["metadata"] == {
        "creationTimestamp": "2026-01-02T03:04:05Z"
    }
    assert protobuf.decode(_time_body(0, 0))["metadata"] == {"creationTimestamp": None}
    assert protobuf.decode(_time_body(0, 1))["metadata"] == {"creationTimestamp": "1970-01-01T00:00:00Z"}


def test_packed_repeated_ints_decode() -> None:
    """A packed repeated int64 (legal protobuf, not what gogo writes) decodes like the unpacked form."""
    packed = b"".join(encoder.varint(v) for v in (1, 2, -3))
    ctx = encoder.length_delimited(4, packed)  # PodSecurityContext.supplementalGroups
    spec = encoder.length_delimited(14, ctx)  # PodSpec.securityContext
    body = encoder.envelope("v1", "Pod", encoder.length_delimited(2, spec))
    assert protobuf.decode(body)["spec"]["securityContext"]["supplementalGroups"] == [1, 2, -3]


def test_unknown_fields_are_skipped_and_repeated_messages_merge() -> None:
    """Unknown field numbers are ignored; a message field sent twice merges, as protobuf merges."""
    meta1 = encoder.length_delimited(1, encoder.length_delimited(1, b"a"))
    meta2 = encoder.length_delimited(1, encoder.length_delimited(3, b"ns"))
    unknown = encoder.tag(999, 0) + encoder.varint(7) + encoder.length_delimited(998, b"zz")
    body = encoder.envelope("v1", "ConfigMap", meta1 + unknown + meta2)
    assert protobuf.decode(body) == {
        "kind": "ConfigMap",
        "apiVersion": "v1",
        "metadata": {"name": "a", "namespace": "ns"},
    }


def test_invalid_utf8_is_replaced() -> None:
    """Invalid UTF-8 in a string field becomes U+FFFD, as Go's JSON encoder writes it."""
    meta = encoder.length_delimited(1, encoder.length_delimited(1, b"a\xffb"))
    assert protobuf.decode(encoder.envelope("v1", "ConfigMap", meta))["metadata"]["name"] == "a\ufffdb"


def test_map_entry_without_value_gets_zero_value() -> None:
    """A map entry missing its value field decodes to the value type's zero value."""
    entry = encoder.length_delimited(1, b"k")
    body = encoder.envelope("v1", "ConfigMap", encoder.length_delimited(2, entry))
    assert protobuf.decode(body)["data"] == {"k": ""}


def test_supported_kinds() -> None:
    """Every kind the server must accept as protobuf is supported, and nothing pretends to be a List."""
    kinds = protobuf.supported_kinds()
    required = {
        ("v1", k)
        for k in (
            "ConfigMap",
            "Secret",
            "Namespace",
            "Service",
            "ServiceAccount",
            "Event",
            "ResourceQuota",
            "Pod",
        )
    } | {
        ("apps/v1", "Deployment"),
        ("apps/v1", "ReplicaSet"),
        ("apps/v1", "StatefulSet"),
        ("apps/v1", "DaemonSet"),
        ("batch/v1", "Job"),
        ("batch/v1", "CronJob"),
        ("rbac.authorization.k8s.io/v1", "Role"),
        ("rbac.authorization.k8s.io/v1", "RoleBinding"),
        ("rbac.authorization.k8s.io/v1", "ClusterRole"),
        ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
        ("coordination.k8s.io/v1", "Lease"),
        ("events.k8s.io/v1", "Event"),
        ("scheduling.k8s.io/v1", "PriorityClass"),
        ("authorization.k8s.io/v1", "SelfSubjectAccessReview"),
        ("authentication.k8s.io/v1", "SelfSubjectReview"),
        ("authentication.k8s.io/v1", "TokenRequest"),
        ("policy/v1", "Eviction"),
        ("v1", "DeleteOptions"),
    }
    assert required <= kinds
    assert not any(kind.endswith("List") for _, kind in kinds)


def test_public_surface() -> None:
    """The package exports exactly its documented names."""
    assert sorted(protobuf.__all__) == [
        "MAGIC",
        "ProtobufError",
        "decode",
        "encodable",
        "encode",
        "encode_list",
        "envelope",
        "item_field",
        "item_message",
        "supported_kinds",
        "watch_frame",
    ]
    assert issubclass(protobuf.ProtobufError, ValueError)


def _configmap(raw: bytes) -> bytes:
    return encoder.envelope("v1", "ConfigMap", raw)


MALFORMED = {
    "empty": b"",
    "bad-magic": b"k8s\x01" + encoder.length_delimited(1, b""),
    "json": b'{"kind": "ConfigMap"}',
    "truncated-varint": _configmap(b"\x38\x80"),
    "overlong-varint": _configmap(b"\x38" + b"\xff" * 11),
    "length-past-end": _configmap(b"\x0a\x05ab"),
    "wrong-wire-type": _configmap(encoder.length_delimited(1, b"\x08\x01")),  # ObjectMeta.name as varint
    "message-as-varint": _configmap(b"\x08\x01"),
    "group-wire-type": _configmap(b"\x0b"),
    "field-zero": _configmap(b"\x00\x01"),
    "unknown-kind": encoder.envelope("v1", "Frobnicator", b""),
    "list-kind": encoder.envelope("v1", "ConfigMapList", b""),
    "no-type-meta": encoder.envelope("", "", b""),
    "content-encoding": b"k8s\x00" + encoder.length_delimited(3, b"gzip"),
    "bad-intorstring": encoder.envelope(
        "policy/v1",
        "PodDisruptionBudget",
        encoder.length_delimited(2, encoder.length_delimited(1, b"\x08\x05")),
    ),
    "rawextension-not-json": encoder.envelope(
        "apps/v1", "ControllerRevision", encoder.length_delimited(2, encoder.length_delimited(1, b"\x01"))
    ),
    "time-out-of-range": _time_body(1 << 62, 0),
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_input_raises_protobuf_error(name: str) -> None:
    """Every kind of malformed body raises ProtobufError, never another exception."""
    with pytest.raises(protobuf.ProtobufError):
        protobuf.decode(MALFORMED[name])


def _decode_or_protobuf_error(body: bytes) -> None:
    try:
        obj = protobuf.decode(body)
    except protobuf.ProtobufError:
        return
    json.dumps(obj)  # whatever decodes must be JSON-serializable


@settings(max_examples=300, deadline=None, database=None)
@given(st.binary(max_size=200))
def test_fuzz_random_bytes(data: bytes) -> None:
    """Random bodies (with and without the magic) only ever raise ProtobufError."""
    _decode_or_protobuf_error(data)
    _decode_or_protobuf_error(protobuf.MAGIC + data)


_SEEDS = [(FIXTURES / f"{tag}.bin").read_bytes() for tag in ("deployment", "token", "quota")]


@settings(max_examples=300, deadline=None, database=None)
@given(st.sampled_from(_SEEDS), st.integers(min_value=0, max_value=10_000), st.integers(0, 255))
def test_fuzz_mutated_captures(seed: bytes, position: int, byte: int) -> None:
    """Real captures with one byte changed, or truncated there, only ever raise ProtobufError."""
    pos = len(protobuf.MAGIC) + position % (len(seed) - len(protobuf.MAGIC))
    _decode_or_protobuf_error(seed[:pos] + bytes([byte]) + seed[pos + 1 :])
    _decode_or_protobuf_error(seed[:pos])


def test_decode_returns_fresh_dicts() -> None:
    """Mutating one decoded object does not affect the next decode of the same body."""
    body = encoder.encode(samples.SAMPLES["deployment"])
    first = protobuf.decode(body)
    snapshot = copy.deepcopy(first)
    first["spec"]["template"]["spec"]["containers"].clear()
    assert protobuf.decode(body) == snapshot


def test_tables_reference_only_known_messages() -> None:
    """Every message a table row points to is itself in the tables or has a special codec."""
    known = set(_tables.MESSAGES) | set(_tables.SPECIAL)
    for rows in _tables.MESSAGES.values():
        for _, ftype, _, ref in rows.values():
            assert ftype not in (11, 100) or ref in known
    assert set(_tables.KINDS.values()) <= known
