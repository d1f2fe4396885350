"""Declared CEL types of a structural schema, for type-checking rules as upstream does.

Upstream checks ``self`` against types derived from the OpenAPI schema (apiserver pkg/cel/common/
schemas.go): an object's fields are known, so ``self.replica`` is ``undefined field 'replica'`` at
CRD write and ``self.replicas`` has type int. cel-expr-python knows object types only as protobuf
messages, so ``SchemaTypes`` builds one message per object node (fields = the node's properties
under CEL's escaped names) in a descriptor pool of its own, used only to *check* rules; programs
then run with ``self`` as ``dyn`` over the plain decoded object, which behaves the same for every
rule that checks.

Mapping: integer → int, number → double, boolean → bool, string → string (``date``/``date-time``
→ timestamp, ``duration`` → duration, ``byte`` → bytes: ``converter`` turns such values into
protobuf well-known types for evaluation), array → list(T),
``additionalProperties`` → map(string, T), object with properties → message, and int-or-string,
preserve-unknown-fields and untyped nodes → dyn (``google.protobuf.Value``). Lists of lists and
maps of collections are dyn (a protobuf restriction; upstream types them).
"""

from __future__ import annotations

import base64
import binascii
import datetime
import itertools
import re
from collections.abc import Callable, Mapping
from typing import Any

from cel_expr_python import cel
from google.protobuf import descriptor_pb2, descriptor_pool, duration_pb2, struct_pb2, timestamp_pb2

from kplane.api.cel import types
from kplane.api.duration import parse_timestamp

T = cel.Type
F = descriptor_pb2.FieldDescriptorProto
_NAME = re.compile(r"^[a-zA-Z_.\-/][a-zA-Z0-9_.\-/]*$")
RESERVED = frozenset(
    [
        "true",
        "false",
        "null",
        "in",
        "as",
        "break",
        "const",
        "continue",
        "else",
        "for",
        "function",
        "if",
        "import",
        "let",
        "loop",
        "package",
        "namespace",
        "return",
        "var",
        "void",
        "while",
    ]
)
_SCALARS = {
    "integer": (F.TYPE_INT64, T.INT),
    "number": (F.TYPE_DOUBLE, T.DOUBLE),
    "boolean": (F.TYPE_BOOL, T.BOOL),
}
_VALUE = ".google.protobuf.Value"
# Strings of these formats are typed values in CEL (apiserver pkg/cel/common/schemas.go).
_FORMAT_TYPES: dict[Any, tuple[str, Any]] = {
    "byte": ("bytes", T.BYTES),
    "duration": (".google.protobuf.Duration", T.DURATION),
    "date": (".google.protobuf.Timestamp", T.TIMESTAMP),
    "date-time": (".google.protobuf.Timestamp", T.TIMESTAMP),
}
_DURATION_PART = re.compile(r"\s*([-+]?(?:\d+(?:\.\d*)?|\.\d+))\s*(ns|us|µs|ms|s|m|h|d|w)")
_UNIT_SECONDS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
    "d": 86400.0,
    "w": 604800.0,
}


def format_value(fmt: Any, value: Any) -> Any:
    """A string of a typed format as CEL sees it (timestamp, duration, bytes); unparsable values
    stay strings (schema validation has reported them)."""
    if not isinstance(value, str):
        return value
    if fmt in ("date-time", "date"):
        text = value + "T00:00:00Z" if fmt == "date" and len(value) == 10 else value
        parsed = parse_timestamp(text)
        if parsed is None:
            return value
        stamp = timestamp_pb2.Timestamp()  # the engine takes nested times only as well-known types
        stamp.FromDatetime(parsed.astimezone(datetime.UTC).replace(tzinfo=None))
        return stamp
    if fmt == "duration":
        parts = _DURATION_PART.findall(value)
        if value.strip() == "0":
            return duration_pb2.Duration()
        if not parts or "".join(f"{n}{u}" for n, u in parts) != re.sub(r"\s+", "", value):
            return value
        span = duration_pb2.Duration()
        span.FromTimedelta(datetime.timedelta(seconds=sum(float(n) * _UNIT_SECONDS[u] for n, u in parts)))
        return span
    if fmt == "byte":
        try:
            return base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            return value
    return value


_serial = itertools.count()


def escape(name: str) -> str | None:
    """A property name as CEL sees it (``a-b`` → ``a__dash__b``), or None if not accessible."""
    if not _NAME.match(name):
        return None
    if name in RESERVED:
        return f"__{name}__"
    return (
        name.replace("__", "__underscores__")
        .replace(".", "__dot__")
        .replace("-", "__dash__")
        .replace("/", "__slash__")
    )


def needs_escape(name: str) -> bool:
    return escape(name) != name


def _is_object(node: Mapping[str, Any]) -> bool:
    return node.get("type") == "object" and bool(node.get("properties"))


def _is_dyn(node: Mapping[str, Any]) -> bool:
    return bool(node.get("x-kubernetes-int-or-string")) or node.get("type") not in (
        "integer",
        "number",
        "boolean",
        "string",
        "array",
        "object",
    )


class SchemaTypes:
    """Message types for every object node of one schema, in a private descriptor pool."""

    def __init__(self, schema: Mapping[str, Any]) -> None:
        self.pool = descriptor_pool.DescriptorPool()
        for proto in (struct_pb2, timestamp_pb2, duration_pb2):
            file = descriptor_pb2.FileDescriptorProto()
            proto.DESCRIPTOR.CopyToProto(file)
            self.pool.Add(file)
        for msg in types.MESSAGES:
            file = descriptor_pb2.FileDescriptorProto()
            msg.DESCRIPTOR.file.CopyToProto(file)
            self.pool.Add(file)
        self.package = f"kplane.schema{next(_serial)}"
        self._file = descriptor_pb2.FileDescriptorProto(
            name=f"{self.package}.proto",
            package=self.package,
            syntax="proto3",
            dependency=[
                "google/protobuf/struct.proto",
                "google/protobuf/timestamp.proto",
                "google/protobuf/duration.proto",
            ],
        )
        self._messages: dict[int, str] = {}
        self._count = itertools.count()
        self._message(schema, root=True)
        self.pool.Add(self._file)

    def cel_type(self, node: Mapping[str, Any]) -> Any:
        """The CEL type of values at ``node`` (a node of the schema this was built from)."""
        name = self._messages.get(id(node))
        if name is not None:
            return T(f"{self.package}.{name}")
        if _is_dyn(node):
            return T.DYN
        kind = node.get("type")
        if kind in _SCALARS:
            return _SCALARS[kind][1]
        if kind == "string":
            return _FORMAT_TYPES.get(node.get("format"), (None, T.STRING))[1]
        if kind == "array":
            items = node.get("items")
            return T.List(self.cel_type(items)) if isinstance(items, Mapping) else T.List(T.DYN)
        additional = node.get("additionalProperties")
        if isinstance(additional, Mapping):
            return T.Map(T.STRING, self.cel_type(additional))
        return T.DYN

    def _message(self, node: Mapping[str, Any], *, root: bool = False) -> str:
        name = f"M{next(self._count)}"
        self._messages[id(node)] = name
        msg = self._file.message_type.add(name=name)
        props: dict[str, Any] = dict(node.get("properties") or {})
        if root or node.get("x-kubernetes-embedded-resource"):
            props["apiVersion"] = {"type": "string"}
            props["kind"] = {"type": "string"}
            props["metadata"] = {
                "type": "object",
                "properties": {"name": {"type": "string"}, "generateName": {"type": "string"}},
            }
        number = 1
        for prop, sub in props.items():
            field_name = escape(prop)
            if field_name is None or not isinstance(sub, Mapping):
                continue
            self._field(msg, field_name, number, sub)
            number += 1
        return name

    def _field(self, msg: Any, name: str, number: int, node: Mapping[str, Any]) -> None:
        field = msg.field.add(name=name, number=number, label=F.LABEL_OPTIONAL)
        kind = node.get("type")
        if kind == "array" and not _is_dyn(node):
            field.label = F.LABEL_REPEATED
            items = node.get("items")
            self._element(field, items if isinstance(items, Mapping) else {})
            return
        additional = node.get("additionalProperties")
        if kind == "object" and not node.get("properties") and isinstance(additional, Mapping):
            entry_name = _map_entry_name(name)
            entry = msg.nested_type.add(name=entry_name)
            entry.options.map_entry = True
            entry.field.add(name="key", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
            value = entry.field.add(name="value", number=2, label=F.LABEL_OPTIONAL)
            self._element(value, additional)
            field.label = F.LABEL_REPEATED
            field.type = F.TYPE_MESSAGE
            field.type_name = f".{self.package}.{msg.name}.{entry_name}"
            return
        self._element(field, node)

    def _element(self, field: Any, node: Mapping[str, Any]) -> None:
        kind = node.get("type")
        if _is_object(node) and not _is_dyn(node):
            name = self._messages.get(id(node)) or self._message(node)
            field.type = F.TYPE_MESSAGE
            field.type_name = f".{self.package}.{name}"
        elif not _is_dyn(node) and kind in _SCALARS:
            field.type = _SCALARS[kind][0]
        elif not _is_dyn(node) and kind == "string":
            special = _FORMAT_TYPES.get(node.get("format"))
            if special is None:
                field.type = F.TYPE_STRING
            elif special[0] == "bytes":
                field.type = F.TYPE_BYTES
            else:
                field.type = F.TYPE_MESSAGE
                field.type_name = special[0]
        else:
            field.type = F.TYPE_MESSAGE
            field.type_name = _VALUE


def _map_entry_name(field: str) -> str:
    """protobuf's required name of a map field's entry type: the field in CamelCase + ``Entry``."""
    out, upper = [], True
    for ch in field:
        if ch == "_":
            upper = True
        elif upper:
            out.append(ch.upper())
            upper = False
        else:
            out.append(ch)
    return "".join(out) + "Entry"


Convert = Callable[[Any], Any]


def converter(node: Mapping[str, Any]) -> Convert | None:
    """A function giving a value at ``node`` its CEL shape: escaped field names (``a-b`` →
    ``a__dash__b``) and typed formats (``format_value``); None when nothing at or below ``node``
    needs it (the usual case: values pass as is)."""
    raw_props = node.get("properties")
    props: Mapping[str, Any] = raw_props if isinstance(raw_props, Mapping) else {}
    children = {k: converter(v) for k, v in props.items() if isinstance(v, Mapping)}
    items = node.get("items")
    item_conv = converter(items) if isinstance(items, Mapping) else None
    additional = node.get("additionalProperties")
    value_conv = converter(additional) if isinstance(additional, Mapping) else None
    renamed = any(needs_escape(k) for k in props)
    fmt = node.get("format") if node.get("type") == "string" else None
    if fmt in _FORMAT_TYPES:
        return lambda value: format_value(fmt, value)
    if not (renamed or item_conv or value_conv or any(children.values())):
        return None

    def run(value: Any) -> Any:
        if isinstance(value, list):
            return [item_conv(x) for x in value] if item_conv else value
        if not isinstance(value, dict):
            return value
        if props:
            out = {}
            for k, x in value.items():
                conv = children.get(k)
                out[escape(k) or k] = conv(x) if conv else x
            return out
        return {k: value_conv(x) for k, x in value.items()} if value_conv else value

    return run
