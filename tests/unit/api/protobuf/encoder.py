"""A test-only minimal protobuf encoder: JSON-shaped dict -> Kubernetes protobuf body, via the same tables.

Unlike the server's encoder (``kplane.api.protobuf.encode``, which writes every zero a Go struct
would), it writes only the fields present, so tests can build the smallest bodies a client may
send and hand-made malformed ones. Unknown keys are an error (they would otherwise silently vanish
from a round trip and hide a typo in a test's data).
"""

from __future__ import annotations

import base64
import datetime
import struct
from typing import Any

import orjson

from kplane.api.protobuf import _tables, decoding
from kplane.api.protobuf.encoding import varint

_MESSAGE, _MAP, _STRING, _BYTES, _DOUBLE = 11, 100, 9, 12, 1
_REPEATED, _INLINE = 1, 4
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def tag(number: int, wire_type: int) -> bytes:
    """Encode a field key."""
    return varint(number << 3 | wire_type)


def length_delimited(number: int, payload: bytes) -> bytes:
    """Encode a length-delimited field."""
    return tag(number, 2) + varint(len(payload)) + payload


def _scalar(number: int, ftype: int, ref: str, value: Any) -> bytes:
    if ftype == _STRING:
        return length_delimited(number, value.encode())
    if ftype == _BYTES:
        return length_delimited(number, base64.b64decode(value))
    if ftype == _MESSAGE:
        return length_delimited(number, encode_message(value, ref))
    if ftype == _DOUBLE:
        return tag(number, 1) + struct.pack("<d", value)
    return tag(number, 0) + varint(int(value))


def _parse_time(text: str) -> tuple[int, int]:
    when = datetime.datetime.fromisoformat(text)
    seconds = (when.replace(microsecond=0) - _EPOCH) // datetime.timedelta(seconds=1)
    return seconds, when.microsecond * 1000


def _special(value: Any, codec: str, name: str) -> bytes:
    if codec == "items":
        _, item_type, _, item_ref = _tables.MESSAGES[name][1]
        return b"".join(_scalar(1, item_type, item_ref, v) for v in value)
    if codec in ("time", "microtime"):
        if value is None:
            return b""
        seconds, nanos = _parse_time(value)
        return tag(1, 0) + varint(seconds) + (tag(2, 0) + varint(nanos) if nanos else b"")
    if codec == "quantity":
        return length_delimited(1, value.encode())
    if codec == "intorstring":
        if isinstance(value, str):
            return tag(1, 0) + varint(1) + length_delimited(3, value.encode())
        return tag(1, 0) + varint(0) + tag(2, 0) + varint(value)
    if codec in ("rawextension", "fieldsv1"):
        return b"" if value is None else length_delimited(1, orjson.dumps(value))
    raise AssertionError(f"no test encoder for {codec}")


def _known_names(name: str) -> set[str]:
    names: set[str] = set()
    for json_name, _, flags, ref in _tables.MESSAGES[name].values():
        names |= _known_names(ref) if flags & _INLINE else {json_name}
    return names


def encode_message(value: Any, name: str) -> bytes:
    """Encode ``value`` as message ``name``; fields in number order, map entries sorted by key."""
    codec = _tables.SPECIAL.get(name)
    if codec is not None:
        return _special(value, codec, name)
    unknown = set(value) - _known_names(name)
    if unknown:
        raise KeyError(f"{name} has no fields {sorted(unknown)}")
    out = bytearray()
    for number, (json_name, ftype, flags, ref) in sorted(_tables.MESSAGES[name].items()):
        if flags & _INLINE:
            inner = {k: v for k, v in value.items() if k in _known_names(ref)}
            out += length_delimited(number, encode_message(inner, ref))
            continue
        if json_name not in value:
            continue
        item = value[json_name]
        if ftype == _MAP:
            _, _, _, value_ref = _tables.MESSAGES[ref][2]
            value_type = _tables.MESSAGES[ref][2][1]
            for key in sorted(item):
                entry = _scalar(1, _STRING, "", key)
                entry += _scalar(2, value_type, value_ref, item[key])
                out += length_delimited(number, entry)
        elif flags & _REPEATED:
            for element in item:
                out += _scalar(number, ftype, ref, element)
        else:
            out += _scalar(number, ftype, ref, item)
    return bytes(out)


def envelope(api_version: str, kind: str, raw: bytes, *, extra: bytes = b"") -> bytes:
    """Wrap ``raw`` in the magic prefix and a ``runtime.Unknown``; ``extra`` is appended to it."""
    type_meta = length_delimited(1, api_version.encode()) + length_delimited(2, kind.encode())
    unknown = length_delimited(1, type_meta) + length_delimited(2, raw)
    unknown += length_delimited(3, b"") + length_delimited(4, b"")
    return decoding.MAGIC + unknown + extra


def encode(obj: dict[str, Any]) -> bytes:
    """Encode a whole object (with ``apiVersion`` and ``kind``) as a request body."""
    body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}
    name = _tables.KINDS[(obj["apiVersion"], obj["kind"])]
    return envelope(obj["apiVersion"], obj["kind"], encode_message(body, name))
