"""Encode JSON-shaped objects as Kubernetes protobuf, byte for byte as kube-apiserver writes them.

Design note. A reply in ``application/vnd.kubernetes.protobuf`` is ``"k8s\\x00"`` followed by a
``runtime.Unknown`` whose ``raw`` is the object's own message. kube-apiserver produces those bytes
with gogo-protobuf's generated marshallers over Go structs; kplane holds the object as the dict its
JSON would be. So the encoder answers one question per field: what would the Go struct hold after
``json.Unmarshal`` of this dict, and what does gogo write for that value? The tables (``_tables``,
the same rows the request decoder reads) give each field's number, type and whether the Go field
is a pointer; from those the rules are:

* fields in field-number order (gogo marshals back to front from the highest number, so the bytes
  read in ascending order); map entries sorted by key, each entry with both key and value;
* a non-pointer scalar is always written, zero when absent or ``null`` (proto2, no presence);
  a pointer scalar and a ``bytes`` field only when present;
* a non-pointer message is always written, as the encoding of ``{}`` when absent (its own zero
  scalars included); a pointer message only when present; repeated fields are never packed;
* the special messages follow their Go marshallers: ``Time`` is ``{seconds, nanos: 0}`` (the zero
  time is an empty message), ``MicroTime`` keeps microseconds, ``Duration`` is nanoseconds,
  ``Quantity`` its string (``"0"`` when absent), ``IntOrString`` always writes type, int and
  string, ``RawExtension``/``FieldsV1`` carry the embedded JSON.

Fields the tables do not know are dropped, as decoding the JSON into the Go struct would drop
them. ``encode`` is deterministic: equal dicts give equal bytes. Values whose Python type does
not fit the field (the schema validated them, so this means a bug) raise ``ProtobufError``.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import functools
import re
from collections.abc import Callable
from typing import Any

import orjson

from kplane.api.protobuf import _tables, wire

MAGIC = b"k8s\x00"
CONTENT_TYPE = "application/vnd.kubernetes.protobuf"

_INT64, _INT32, _BOOL, _STRING, _MESSAGE, _BYTES, _MAP = 3, 5, 8, 9, 11, 12, 100
_REPEATED, _POINTER, _INLINE = 1, 2, 4
_U64 = (1 << 64) - 1
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)

# Plan steps: what to do with one field. Codes are compared in a hot loop, so they are small ints.
_STR, _STR_OPT, _INT, _INT_OPT, _BOOL_ALWAYS, _BOOL_OPT, _BYTES_OPT = 0, 1, 2, 3, 4, 5, 6
_MSG, _MSG_OPT, _INLINED, _REP_STR, _REP_INT, _REP_MSG, _MAP_ENTRIES = 7, 8, 9, 10, 11, 12, 13

_SMALL = [bytes([i]) for i in range(128)]


def varint(value: int) -> bytes:
    """``value`` as a protobuf varint; negative numbers are their 64-bit two's complement (ten bytes)."""
    if 0 <= value < 128:
        return _SMALL[value]
    value &= _U64
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _key(number: int, wire_type: int) -> bytes:
    return varint(number << 3 | wire_type)


def _len(key: bytes, payload: bytes) -> bytes:
    n = len(payload)
    return key + (_SMALL[n] if n < 128 else varint(n)) + payload


# --- special messages -----------------------------------------------------------------------


@functools.lru_cache(maxsize=8192)
def _instant(text: str) -> tuple[int, int]:
    """An RFC 3339 time as ``(unix_seconds, nanoseconds)``; Go's ``time.Time`` of its JSON form."""
    try:
        when = datetime.datetime.fromisoformat(text)
    except ValueError:
        raise wire.ProtobufError(f"time {text!r} is not RFC 3339") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.UTC)
    delta = when - _EPOCH
    return delta.days * 86400 + delta.seconds, delta.microseconds * 1000


def _time(value: Any) -> bytes:
    if not value:
        return b""
    seconds, _ = _instant(value)  # metav1.Time.ProtoTime drops the fraction
    return b"\x08" + varint(seconds) + b"\x10\x00"


def _micro_time(value: Any) -> bytes:
    if not value:
        return b""
    seconds, nanos = _instant(value)
    return b"\x08" + varint(seconds) + b"\x10" + varint(nanos)


_DURATION_PART = re.compile(r"(\d*)(?:\.(\d*))?(ns|us|µs|μs|ms|s|m|h)")
_UNIT_NS = {
    "ns": 1,
    "us": 1000,
    "µs": 1000,
    "μs": 1000,
    "ms": 10**6,
    "s": 10**9,
    "m": 60 * 10**9,
    "h": 3600 * 10**9,
}


def parse_duration(text: str) -> int:
    """Go's ``time.ParseDuration``: ``"1h0m0s"``, ``"1.5s"``, ``"-300ms"``, ``"0"`` → nanoseconds."""
    sign = 1
    rest = text
    if rest[:1] in ("-", "+"):
        sign = -1 if rest[0] == "-" else 1
        rest = rest[1:]
    if rest == "0":
        return 0
    if not rest:
        raise wire.ProtobufError(f"invalid duration {text!r}")
    total = 0
    pos = 0
    while pos < len(rest):
        m = _DURATION_PART.match(rest, pos)
        if m is None or not (m.group(1) or m.group(2)):
            raise wire.ProtobufError(f"invalid duration {text!r}")
        whole, frac, unit = m.group(1) or "0", m.group(2) or "", m.group(3)
        scale = _UNIT_NS[unit]
        total += int(whole) * scale
        if frac:
            total += int(frac) * scale // 10 ** len(frac)
        pos = m.end()
    return sign * total


def _duration(value: Any) -> bytes:
    return b"\x08" + varint(parse_duration(value) if value else 0)


def _quantity(value: Any) -> bytes:
    return _len(b"\x0a", str(value if value is not None else "0").encode())


def _int_or_string(value: Any) -> bytes:
    if isinstance(value, str):
        return b"\x08\x01\x10\x00" + _len(b"\x1a", value.encode())
    return b"\x08\x00\x10" + varint(int(value or 0)) + b"\x1a\x00"


def _embedded_json(value: Any) -> bytes:
    return b"" if value is None else _len(b"\x0a", orjson.dumps(value))


_SPECIAL_ENCODERS: dict[str, Callable[[Any], bytes]] = {
    "time": _time,
    "microtime": _micro_time,
    "duration": _duration,
    "quantity": _quantity,
    "intorstring": _int_or_string,
    "rawextension": _embedded_json,
    "fieldsv1": _embedded_json,
}


def _items(ref: str) -> Callable[[Any], bytes]:
    """A Go named slice (``ExtraValue``): ``repeated string items = 1``."""

    def encode_items(value: Any) -> bytes:
        return b"".join(_len(b"\x0a", str(v).encode()) for v in value or ())

    return encode_items


# --- plans ----------------------------------------------------------------------------------

Step = tuple[int, str, bytes, Any]
_PLANS: dict[str, list[Step]] = {}


def _value_encoder(ftype: int, ref: str) -> Callable[[Any], bytes]:
    """The payload encoder (no key) of a map value or a message reference."""
    if ftype == _MESSAGE:
        codec = _tables.SPECIAL.get(ref)
        if codec == "items":
            return _items(ref)
        if codec is not None:
            return _SPECIAL_ENCODERS[codec]
        return functools.partial(_message_of, ref)
    if ftype == _STRING:
        return lambda v: str(v or "").encode()
    if ftype == _BYTES:
        return _bytes
    raise wire.ProtobufError(f"no encoder for map value type {ftype}")


def _message_of(name: str, value: Any) -> bytes:
    return message(value or {}, name)


def _plan(name: str) -> list[Step]:
    """The steps that encode message ``name``, in field-number order; built once per message."""
    plan = _PLANS.get(name)
    if plan is not None:
        return plan
    plan = []
    for number, (json_name, ftype, flags, ref) in sorted(_tables.MESSAGES[name].items()):
        if ftype == _MAP:
            entry = _tables.MESSAGES[ref]
            encode_value = _value_encoder(entry[2][1], entry[2][3])
            plan.append((_MAP_ENTRIES, json_name, _key(number, wire.LEN), encode_value))
        elif flags & _INLINE:
            plan.append((_INLINED, json_name, _key(number, wire.LEN), ref))
        elif ftype == _MESSAGE:
            code = _REP_MSG if flags & _REPEATED else _MSG_OPT if flags & _POINTER else _MSG
            plan.append((code, json_name, _key(number, wire.LEN), _value_encoder(ftype, ref)))
        elif ftype == _STRING:
            code = _REP_STR if flags & _REPEATED else _STR_OPT if flags & _POINTER else _STR
            plan.append((code, json_name, _key(number, wire.LEN), None))
        elif ftype == _BYTES:
            plan.append((_BYTES_OPT, json_name, _key(number, wire.LEN), None))
        elif ftype == _BOOL:
            plan.append(
                (_BOOL_OPT if flags & _POINTER else _BOOL_ALWAYS, json_name, _key(number, wire.VARINT), None)
            )
        elif ftype in (_INT64, _INT32):
            code = _REP_INT if flags & _REPEATED else _INT_OPT if flags & _POINTER else _INT
            plan.append((code, json_name, _key(number, wire.VARINT), None))
        else:  # the generator would have to grow a new type first
            raise wire.ProtobufError(f"{name}.{json_name}: no encoder for field type {ftype}")
    _PLANS[name] = plan
    return plan


def _bytes(value: Any) -> bytes:
    try:
        return base64.b64decode(value or "", validate=True)
    except (binascii.Error, ValueError, TypeError):
        raise wire.ProtobufError(f"not base64: {str(value)[:40]!r}") from None


def _text(value: Any) -> bytes:
    if not isinstance(value, str):
        raise wire.ProtobufError(f"expected a string, got {type(value).__name__}")
    return value.encode("utf-8", errors="surrogatepass")


def _write(out: bytearray, obj: dict[str, Any], plan: list[Step]) -> None:
    get = obj.get
    for code, json_name, key, extra in plan:
        value = get(json_name)
        if code == _STR:
            out += key
            if value:
                data = _text(value)
                n = len(data)
                out += _SMALL[n] if n < 128 else varint(n)
                out += data
            else:
                out += b"\x00"
        elif code == _MSG:
            out += _len(key, extra(value))
        elif code == _INT:
            out += key
            out += varint(int(value)) if value else b"\x00"
        elif value is None:
            if code == _BOOL_ALWAYS:
                out += key + b"\x00"
            elif code == _INLINED:
                out += _len(key, message(obj, extra))
        elif code == _STR_OPT:
            out += _len(key, _text(value))
        elif code == _MSG_OPT:
            out += _len(key, extra(value))
        elif code == _REP_MSG:
            for item in value:
                out += _len(key, extra(item))
        elif code == _REP_STR:
            for item in value:
                out += _len(key, _text(item))
        elif code == _MAP_ENTRIES:
            for k in sorted(value):
                out += _len(key, _len(b"\x0a", _text(k)) + _len(b"\x12", extra(value[k])))
        elif code in (_BOOL_ALWAYS, _BOOL_OPT):
            out += key + (b"\x01" if value else b"\x00")
        elif code == _INT_OPT:
            out += key + varint(int(value))
        elif code == _REP_INT:
            for item in value:
                out += key + varint(int(item))
        elif code == _BYTES_OPT:
            out += _len(key, _bytes(value))
        else:  # _INLINED with a key of its own name present: the embedded struct's fields are the parent's
            out += _len(key, message(obj, extra))


def message(obj: dict[str, Any], name: str) -> bytes:
    """The bytes of message ``name`` (a key of ``_tables.MESSAGES``) for the JSON-shaped ``obj``."""
    if not isinstance(obj, dict):
        raise wire.ProtobufError(f"{name}: expected an object, got {type(obj).__name__}")
    out = bytearray()
    try:
        _write(out, obj, _plan(name))
    except (TypeError, ValueError, AttributeError) as err:
        if isinstance(err, wire.ProtobufError):
            raise
        raise wire.ProtobufError(f"{name}: {err}") from None
    return bytes(out)


def _envelope_parts(api_version: str, kind: str, raw_size: int) -> tuple[bytes, bytes]:
    """What goes before and after an object's ``raw`` bytes of ``raw_size`` in a reply body."""
    type_meta = _len(b"\x0a", api_version.encode()) + _len(b"\x12", kind.encode())
    head = MAGIC + _len(b"\x0a", type_meta) + b"\x12" + varint(raw_size)
    return head, b"\x1a\x00\x22\x00"


def envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    """``raw`` wrapped as the serializer writes it: magic, then ``runtime.Unknown{typeMeta, raw, "", ""}``."""
    head, tail = _envelope_parts(api_version, kind, len(raw))
    return b"".join((head, raw, tail))


def message_name(api_version: str, kind: str) -> str | None:
    """The message that encodes ``kind`` at ``api_version``, or None when it has no protobuf form."""
    return _tables.KINDS.get((api_version, kind))


def encodable(api_version: str, kind: str) -> bool:
    """Whether objects of ``kind`` at ``api_version`` (and so their list) can be encoded."""
    return (api_version, kind) in _tables.KINDS


def encode(obj: dict[str, Any]) -> bytes:
    """A whole reply body for ``obj`` (which carries ``apiVersion`` and ``kind``).

    Raises ``ProtobufError`` when the kind has no protobuf form or a value does not fit its field.
    """
    api_version, kind = obj.get("apiVersion") or "", obj.get("kind") or ""
    name = _tables.KINDS.get((api_version, kind))
    if name is None:
        raise wire.ProtobufError(f"no protobuf encoding for apiVersion {api_version!r}, kind {kind!r}")
    return envelope(api_version, kind, message(obj, name))


def encode_list(api_version: str, list_kind: str, metadata: dict[str, Any], items: list[bytes]) -> bytes:
    """A list reply from its ``ListMeta`` and its items as ``item_field`` bytes, in order.

    Items come encoded so that a caller may reuse one object's bytes across lists; the body is
    assembled with one copy of them.
    """
    name = _tables.KINDS.get((api_version, list_kind))
    if name is None:
        raise wire.ProtobufError(f"no protobuf encoding for apiVersion {api_version!r}, kind {list_kind!r}")
    list_meta = _len(b"\x0a", message(metadata, "apis.meta.v1.ListMeta"))
    head, tail = _envelope_parts(api_version, list_kind, len(list_meta) + sum(map(len, items)))
    return b"".join((head, list_meta, *items, tail))


def item_message(api_version: str, kind: str, obj: dict[str, Any]) -> bytes:
    """One object's message: ``obj`` as ``kind`` without the envelope."""
    name = _tables.KINDS.get((api_version, kind))
    if name is None:
        raise wire.ProtobufError(f"no protobuf encoding for apiVersion {api_version!r}, kind {kind!r}")
    return message(obj, name)


def item_field(encoded_message: bytes) -> bytes:
    """A message as one element of a list's ``items`` (field 2)."""
    return _len(b"\x12", encoded_message)


def watch_frame(event_type: str, encoded_object: bytes) -> bytes:
    """One frame of a ``;stream=watch`` reply: a 4-byte big-endian length, then the raw (unwrapped)
    ``metav1.WatchEvent{type, object: RawExtension{raw: encoded_object}}``, where ``encoded_object``
    is a whole ``encode`` result (magic and envelope included), as client-go's decoder expects."""
    event = _len(b"\x0a", event_type.encode()) + _len(b"\x12", _len(b"\x0a", encoded_object))
    return len(event).to_bytes(4, "big") + event
