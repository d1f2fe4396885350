"""Decode a Kubernetes protobuf request body into the JSON-shaped dict a JSON body would have been.

Design note. client-go sends built-in kinds as ``"k8s\\x00"`` + ``runtime.Unknown{typeMeta, raw}``,
where ``raw`` is the object's own protobuf. The descriptor tables (``_tables``, generated from the
descriptors compiled into kubectl) give, per message and field number, the JSON name, the type and
whether the Go field is a pointer; the decoder walks the bytes once and builds the dict directly,
with no intermediate typed object.

The aim is the dict the server would get had the same Go object been sent as JSON, so that one
code path (defaulting, validation, storage) serves both encodings. gogo-protobuf writes every
non-pointer scalar, even when zero, and only the pointers that are set; so:

* a zero value of a non-pointer scalar is dropped (it is indistinguishable from "unset" in Go,
  and absent keys let the server's defaulting apply); a pointer scalar on the wire is kept even
  when zero (``replicas: 0``, ``automountServiceAccountToken: false``);
* a message field on the wire is kept (``status: {}``, ``creationTimestamp: null``);
* repeated fields and maps appear only when non-empty (Go's JSON writes ``null`` for the nil
  slices of fields without ``omitempty``; the server treats both alike).

Special messages follow their Go ``MarshalJSON``: ``Time``/``MicroTime`` (RFC 3339 or ``null``),
``Duration`` (``"1h0m0s"``), ``Quantity`` (its string), ``IntOrString`` (int or str),
``RawExtension``/``FieldsV1`` (the embedded JSON), named slices like ``ExtraValue`` (a list), and
``bytes`` fields become base64 strings. Unknown field numbers are skipped, as Go does; a known
field with the wrong wire type is an error. Strings with invalid UTF-8 get U+FFFD, as Go's JSON
encoder writes them.
"""

from __future__ import annotations

import base64
import struct
from typing import Any

import orjson

from kplane.api.protobuf import _tables, formats, wire

MAGIC = b"k8s\x00"

# FieldDescriptorProto types, plus the tables' own code for maps.
_DOUBLE, _FLOAT, _INT64, _UINT64, _INT32, _FIXED64, _FIXED32, _BOOL, _STRING = 1, 2, 3, 4, 5, 6, 7, 8, 9
_MESSAGE, _BYTES, _UINT32, _ENUM, _SFIXED32, _SFIXED64, _SINT32, _SINT64 = 11, 12, 13, 14, 15, 16, 17, 18
_MAP = 100
_REPEATED, _POINTER, _INLINE = 1, 2, 4

_VARINT_TYPES = frozenset({_INT64, _UINT64, _INT32, _BOOL, _UINT32, _ENUM, _SINT32, _SINT64})
_FIXED64_TYPES = frozenset({_DOUBLE, _FIXED64, _SFIXED64})
_FIXED32_TYPES = frozenset({_FLOAT, _FIXED32, _SFIXED32})
_LEN_TYPES = frozenset({_STRING, _BYTES, _MESSAGE, _MAP})
_WIRE_TYPE = (
    dict.fromkeys(_VARINT_TYPES, wire.VARINT)
    | dict.fromkeys(_FIXED64_TYPES, wire.FIXED64)
    | dict.fromkeys(_FIXED32_TYPES, wire.FIXED32)
    | dict.fromkeys(_LEN_TYPES, wire.LEN)
)

_ZERO: dict[int, Any] = {_STRING: "", _BYTES: "", _BOOL: False}

# Kinds a request body may carry: the tables also describe lists, Status, WatchEvent and the
# metadata views, which only replies hold.
_REPLY_ONLY = {"Status", "WatchEvent", "PartialObjectMetadata", "PartialObjectMetadataList"}
_REQUEST_KINDS = {
    key: name
    for key, name in _tables.KINDS.items()
    if not key[1].endswith("List") and key[1] not in _REPLY_ONLY
}


def _number(ftype: int, raw: int) -> int | float | bool:
    """Interpret an integer read off the wire as a value of scalar type ``ftype``."""
    if ftype in (_INT64, _SFIXED64):
        return wire.signed(raw, 64)
    if ftype in (_INT32, _ENUM, _SFIXED32):
        return wire.signed(raw, 32)
    if ftype == _UINT32:
        return raw & 0xFFFFFFFF
    if ftype == _BOOL:
        return raw != 0
    if ftype in (_SINT32, _SINT64):
        return (raw >> 1) ^ -(raw & 1)
    if ftype == _DOUBLE:
        return float(struct.unpack("<d", raw.to_bytes(8, "little"))[0])
    if ftype == _FLOAT:
        return float(struct.unpack("<f", raw.to_bytes(4, "little"))[0])
    return raw  # uint64, fixed64, fixed32


def _scalar(
    ftype: int, ref: str, wire_type: int, value: int | memoryview, owner: str, field: str = ""
) -> Any:
    """Convert one wire value of a field of type ``ftype`` (``owner.field``, for errors) to JSON."""
    expected = _WIRE_TYPE[ftype]
    if wire_type != expected:
        where = f"{owner}.{field}" if field else owner
        raise wire.ProtobufError(f"{where}: wire type {wire_type}, expected {expected}")
    if isinstance(value, int):
        return _number(ftype, value)
    if ftype == _STRING:
        return bytes(value).decode("utf-8", errors="replace")
    if ftype == _BYTES:
        return base64.b64encode(value).decode("ascii")
    return message(value, ref)


def _packed(ftype: int, buf: memoryview) -> list[Any]:
    if ftype in _VARINT_TYPES:
        raws = wire.packed_varints(buf)
    elif ftype in _FIXED64_TYPES:
        raws = wire.packed_fixed(buf, 8)
    else:
        raws = wire.packed_fixed(buf, 4)
    return [_number(ftype, raw) for raw in raws]


def _map_entry(buf: memoryview, entry: str, where: str) -> tuple[str, Any]:
    rows = _tables.MESSAGES[entry]
    _, key_type, _, _ = rows[1]
    _, value_type, _, value_ref = rows[2]
    key: Any = None
    value: Any = None
    for number, wire_type, raw in wire.fields(buf):
        if number == 1:
            key = _scalar(key_type, "", wire_type, raw, f"{where} key")
        elif number == 2:
            value = _scalar(value_type, value_ref, wire_type, raw, f"{where} value")
    if key is None:
        key = _ZERO.get(key_type, 0)
    if value is None:
        value = message(memoryview(b""), value_ref) if value_type == _MESSAGE else _ZERO.get(value_type, 0)
    return str(key), value


def _decode_into(buf: memoryview, name: str, out: dict[str, Any]) -> None:
    """Decode message ``name`` from ``buf`` into ``out``, merging as protobuf merges a repeated message."""
    rows = _tables.MESSAGES[name]
    for number, wire_type, value in wire.fields(buf):
        row = rows.get(number)
        if row is None:
            continue
        json_name, ftype, flags, ref = row
        if ftype == _MAP:
            if wire_type != wire.LEN or not isinstance(value, memoryview):
                raise wire.ProtobufError(f"{name}.{json_name}: wire type {wire_type}, expected 2")
            key, item = _map_entry(value, ref, f"{name}.{json_name}")
            out.setdefault(json_name, {})[key] = item
        elif flags & _REPEATED:
            items = out.setdefault(json_name, [])
            if isinstance(value, memoryview) and ftype not in _LEN_TYPES:
                items.extend(_packed(ftype, value))
            else:
                items.append(_scalar(ftype, ref, wire_type, value, name, json_name))
        elif flags & _INLINE:
            if wire_type != wire.LEN or not isinstance(value, memoryview):
                raise wire.ProtobufError(f"{name}.{json_name}: wire type {wire_type}, expected 2")
            _decode_into(value, ref, out)
        elif ftype == _MESSAGE and ref not in _tables.SPECIAL and isinstance(out.get(json_name), dict):
            if wire_type != wire.LEN or not isinstance(value, memoryview):
                raise wire.ProtobufError(f"{name}.{json_name}: wire type {wire_type}, expected 2")
            _decode_into(value, ref, out[json_name])
        elif ftype == _STRING and isinstance(value, memoryview):  # fast path for the commonest field
            if value or flags & _POINTER:
                out[json_name] = bytes(value).decode("utf-8", errors="replace")
            else:
                out.pop(json_name, None)
        else:
            item = _scalar(ftype, ref, wire_type, value, name, json_name)
            if ftype == _MESSAGE or flags & _POINTER or item:
                out[json_name] = item
            else:
                out.pop(json_name, None)


# Field types of the special messages, by codec: field number -> type.
_SPECIAL_FIELDS: dict[str, dict[int, int]] = {
    "time": {1: _INT64, 2: _INT32},
    "microtime": {1: _INT64, 2: _INT32},
    "duration": {1: _INT64},
    "quantity": {1: _STRING},
    "intorstring": {1: _INT64, 2: _INT32, 3: _STRING},
    "rawextension": {1: _BYTES},
    "fieldsv1": {1: _BYTES},
}


def _special_fields(buf: memoryview, name: str, codec: str) -> dict[int, Any]:
    """Decode a special message's fields, keeping zero values (its codec decides what zero means).

    ``bytes`` fields stay raw ``bytes`` here: they hold embedded JSON, not data to base64.
    """
    types = _SPECIAL_FIELDS[codec]
    values: dict[int, Any] = {}
    for number, wire_type, raw in wire.fields(buf):
        ftype = types.get(number)
        if ftype == _BYTES and wire_type == wire.LEN and isinstance(raw, memoryview):
            values[number] = bytes(raw)
        elif ftype is not None:
            values[number] = _scalar(ftype, "", wire_type, raw, name)
    return values


def _embedded_json(raw: bytes | None, name: str) -> Any:
    if not raw:
        return None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise wire.ProtobufError(f"{name}: embedded bytes are not JSON: {exc}") from None


def _special(buf: memoryview, name: str) -> Any:
    codec = _tables.SPECIAL[name]
    if codec == "items":
        out: dict[str, Any] = {}
        _decode_into(buf, name, out)
        return out.get("items", [])
    f = _special_fields(buf, name, codec)
    try:
        if codec == "time":
            return formats.rfc3339(f.get(1, 0), f.get(2, 0))
        if codec == "microtime":
            return formats.rfc3339_micro(f.get(1, 0), f.get(2, 0))
    except OverflowError:
        raise wire.ProtobufError(f"{name}: time out of range") from None
    if codec == "duration":
        return formats.go_duration(f.get(1, 0))
    if codec == "quantity":
        return f.get(1) or "0"
    if codec == "intorstring":
        kind = f.get(1, 0)
        if kind == 0:
            return f.get(2, 0)
        if kind == 1:
            return f.get(3, "")
        raise wire.ProtobufError(f"{name}: invalid IntOrString type {kind}")
    return _embedded_json(f.get(1), name)  # rawextension, fieldsv1


def message(buf: memoryview, name: str) -> Any:
    """Decode one message of the descriptor ``name`` (a key of ``_tables.MESSAGES`` or ``SPECIAL``).

    Returns a dict for ordinary messages and the special codec's value otherwise. Raises
    ``ProtobufError`` on malformed input.
    """
    if name in _tables.SPECIAL:
        return _special(buf, name)
    out: dict[str, Any] = {}
    _decode_into(buf, name, out)
    return out


def unwrap(body: bytes) -> tuple[str, str, memoryview]:
    """Check the magic prefix and open the ``runtime.Unknown`` envelope.

    Returns ``(apiVersion, kind, raw)``. An envelope that declares a ``contentEncoding`` (none
    is defined) or a ``contentType`` other than protobuf is refused.
    """
    if not body.startswith(MAGIC):
        raise wire.ProtobufError("body does not start with the Kubernetes protobuf magic 'k8s\\x00'")
    api_version = kind = encoding = content_type = ""
    raw = memoryview(b"")
    for number, wire_type, value in wire.fields(memoryview(body)[len(MAGIC) :]):
        if number > 4:
            continue
        if wire_type != wire.LEN or not isinstance(value, memoryview):
            raise wire.ProtobufError(f"runtime.Unknown field {number}: wire type {wire_type}, expected 2")
        if number == 1:
            for tnum, twire, tvalue in wire.fields(value):
                if tnum in (1, 2):
                    text = _scalar(_STRING, "", twire, tvalue, "runtime.TypeMeta")
                    api_version, kind = (text, kind) if tnum == 1 else (api_version, text)
        elif number == 2:
            raw = value
        elif number == 3:
            encoding = bytes(value).decode("utf-8", errors="replace")
        else:
            content_type = bytes(value).decode("utf-8", errors="replace")
    if encoding:
        raise wire.ProtobufError(f"unsupported contentEncoding {encoding!r}")
    if content_type and content_type != "application/vnd.kubernetes.protobuf":
        raise wire.ProtobufError(f"unsupported embedded contentType {content_type!r}")
    return api_version, kind, raw


def decode(body: bytes) -> dict[str, Any]:
    """Decode a whole ``application/vnd.kubernetes.protobuf`` body into a JSON-shaped object.

    The result carries ``kind`` and ``apiVersion`` from the envelope and is a fresh dict the
    caller may mutate. Raises ``ProtobufError`` (and nothing else) for a bad magic, a malformed
    message, an unsupported kind or a value Go's JSON encoder would refuse.
    """
    api_version, kind, raw = unwrap(body)
    name = _REQUEST_KINDS.get((api_version, kind))
    if name is None:
        raise wire.ProtobufError(f"no protobuf decoder for apiVersion {api_version!r}, kind {kind!r}")
    obj: dict[str, Any] = {"kind": kind, "apiVersion": api_version}
    try:
        _decode_into(raw, name, obj)
    except RecursionError:
        raise wire.ProtobufError("message nested too deeply") from None
    return obj


def supported_kinds() -> set[tuple[str, str]]:
    """The ``(apiVersion, kind)`` pairs ``decode`` understands."""
    return set(_REQUEST_KINDS)
