"""Generate ``_tables.py`` from the protobuf descriptors compiled into a ``kubectl`` binary.

Usage: ``python -m kplane.api.protobuf._gen /path/to/kubectl > src/kplane/api/protobuf/_tables.py``
then ``ruff format`` the output.

Design note. Every Go program that links ``k8s.io/api`` carries, for each ``generated.proto``, the
gzipped ``FileDescriptorProto`` that gogo-protobuf registered for it. Those descriptors are the
exact field numbers, names and types of the upstream ``.proto`` files, plus the gogoproto options
the ``.proto`` text no longer shows; one of them, ``(gogoproto.nullable) = false``, tells which Go
struct fields are *not* pointers, which the decoder needs to reproduce Go's JSON (a pointer field
that is set to zero is sent; a non-pointer zero field is noise). So the generator scans the binary
for gzip streams, keeps the Kubernetes descriptors, walks them with this package's wire reader,
and prints the closure of the supported kinds as plain data: names, numbers and types only.
"""

from __future__ import annotations

import re
import sys
import zlib
from dataclasses import dataclass, field

from kplane.api.protobuf import wire

# FieldDescriptorProto types used by Kubernetes, and the codes written into the tables.
_MESSAGE = 11
_MAP = 100
_REPEATED = 1
_POINTER = 2
_INLINE = 4

_NULLABLE_OPTION = 65001
_CUSTOMNAME_OPTION = 65004
_MAP_ENTRY_OPTION = 7

# k8s.io/api package directory -> API group, for the group versions whose kinds are supported.
_GROUPS = {
    "core/v1": "",
    "apps/v1": "apps",
    "batch/v1": "batch",
    "rbac/v1": "rbac.authorization.k8s.io",
    "coordination/v1": "coordination.k8s.io",
    "scheduling/v1": "scheduling.k8s.io",
    "authorization/v1": "authorization.k8s.io",
    "authentication/v1": "authentication.k8s.io",
    "events/v1": "events.k8s.io",
    "policy/v1": "policy",
    "autoscaling/v1": "autoscaling",
    "autoscaling/v2": "autoscaling",
    "networking/v1": "networking.k8s.io",
    "discovery/v1": "discovery.k8s.io",
    "certificates/v1": "certificates.k8s.io",
    "storage/v1": "storage.k8s.io",
    "admissionregistration/v1": "admissionregistration.k8s.io",
    "node/v1": "node.k8s.io",
    "flowcontrol/v1": "flowcontrol.apiserver.k8s.io",
}

# Messages whose JSON form is not the generic one (see decoding.py for each codec).
_SPECIAL = {
    "apis.meta.v1.Time": "time",
    "apis.meta.v1.MicroTime": "microtime",
    "apis.meta.v1.Duration": "duration",
    "apis.meta.v1.FieldsV1": "fieldsv1",
    "util.intstr.IntOrString": "intorstring",
    "api.resource.Quantity": "quantity",
    "runtime.RawExtension": "rawextension",
}

# Message fields whose Go field name equals their type name are either embedded structs or named
# fields; the descriptor cannot tell which. These are the embedded ones tagged ``json:",inline"``
# (their fields appear in the parent's JSON object) and the rest, as read in k8s.io/api types.go.
# ``generate`` fails on a candidate in neither set, so a newer kubectl cannot slip one past.
_INLINE_FIELDS = {
    "localObjectReference",
    "ephemeralContainerCommon",
    "persistentVolumeSource",
    "handler",
    "volumeSource",
    "rule",
    "ruleWithOperations",
    "ingressRuleValue",
}
_NOT_INLINE = {"metadata", "userInfo", "podAffinityTerm", "roleRef", "limitResponse", "time"}

# Fields whose protobuf name is not their JSON name (``json:"uid" protobuf:"...,name=uID"``), found by
# scanning the Go struct tags in the kubectl binary for a json name that differs from the proto name.
# ``generate`` fails if one of these is missing, so a rename upstream cannot go unnoticed.
_JSON_NAMES = {
    ("admissionregistration.v1.MutatingWebhookConfiguration", "Webhooks"): "webhooks",
    ("admissionregistration.v1.ValidatingWebhookConfiguration", "Webhooks"): "webhooks",
    ("admissionregistration.v1.Validation", "Expression"): "expression",
    ("admissionregistration.v1.Variable", "Name"): "name",
    ("admissionregistration.v1.Variable", "Expression"): "expression",
    ("authentication.v1.BoundObjectReference", "uID"): "uid",
    ("networking.v1.IngressClassParametersReference", "aPIGroup"): "apiGroup",
}

# The meta.k8s.io kinds a reply can carry: errors (Status, unversioned, so ``v1``), watch frames and
# metadata-only views. They are encoded, never decoded from a request body except DeleteOptions.
_META_KINDS = {
    ("meta.k8s.io/v1", "DeleteOptions"): "apis.meta.v1.DeleteOptions",
    ("v1", "Status"): "apis.meta.v1.Status",
    ("meta.k8s.io/v1", "WatchEvent"): "apis.meta.v1.WatchEvent",
    ("meta.k8s.io/v1", "PartialObjectMetadata"): "apis.meta.v1.PartialObjectMetadata",
    ("meta.k8s.io/v1", "PartialObjectMetadataList"): "apis.meta.v1.PartialObjectMetadataList",
}

# Registered-looking messages (they carry ObjectMeta) that are not API kinds.
_NOT_KINDS = {
    "JobTemplateSpec",
    "PodTemplateSpec",
    "PersistentVolumeClaimTemplate",
    "PodStatusResult",
    "RangeAllocation",
}


@dataclass
class _Field:
    name: str
    number: int
    repeated: bool
    type: int
    type_name: str
    nullable: bool
    customname: str


@dataclass
class _Message:
    name: str
    fields: list[_Field] = field(default_factory=list)
    map_entry: bool = False


def _short(full: str) -> str:
    name = full.lstrip(".")
    for prefix in ("k8s.io.api.", "k8s.io.apimachinery.pkg."):
        if name.startswith(prefix):
            return name[len(prefix) :]
    return name


def _parse_field(buf: memoryview) -> _Field:
    f = _Field("", 0, False, 0, "", True, "")
    for number, _, value in wire.fields(buf):
        if number == 1 and isinstance(value, memoryview):
            f.name = bytes(value).decode()
        elif number == 3 and isinstance(value, int):
            f.number = value
        elif number == 4 and isinstance(value, int):
            f.repeated = value == 3
        elif number == 5 and isinstance(value, int):
            f.type = value
        elif number == 6 and isinstance(value, memoryview):
            f.type_name = _short(bytes(value).decode())
        elif number == 8 and isinstance(value, memoryview):
            for onum, _, ovalue in wire.fields(value):
                if onum == _NULLABLE_OPTION and isinstance(ovalue, int):
                    f.nullable = bool(ovalue)
                elif onum == _CUSTOMNAME_OPTION and isinstance(ovalue, memoryview):
                    f.customname = bytes(ovalue).decode()
    return f


def _parse_message(buf: memoryview, scope: str, out: dict[str, _Message]) -> None:
    msg = _Message("")
    nested: list[memoryview] = []
    for number, _, value in wire.fields(buf):
        if not isinstance(value, memoryview):
            continue
        if number == 1:
            msg.name = f"{scope}.{bytes(value).decode()}"
        elif number == 2:
            msg.fields.append(_parse_field(value))
        elif number == 3:
            nested.append(value)
        elif number == 7:
            msg.map_entry = any(n == _MAP_ENTRY_OPTION and v == 1 for n, _, v in wire.fields(value))
    out[msg.name] = msg
    for sub in nested:
        _parse_message(sub, msg.name, out)


def _descriptors(binary: bytes) -> dict[str, bytes]:
    found: dict[str, bytes] = {}
    for match in re.finditer(rb"\x1f\x8b\x08\x00\x00\x00\x00\x00", binary):
        try:
            raw = zlib.decompressobj(31).decompress(binary[match.start() : match.start() + 1_000_000])
        except zlib.error:
            continue
        if not raw.startswith(b"\x0a"):
            continue
        try:
            first = next(wire.fields(memoryview(raw)))
        except (wire.ProtobufError, StopIteration):
            continue
        if isinstance(first[2], memoryview):
            name = bytes(first[2]).decode(errors="replace")
            if name.startswith("k8s.io/") and name.endswith("generated.proto"):
                found.setdefault(name, raw)
    return found


def _messages(files: dict[str, bytes]) -> dict[str, _Message]:
    out: dict[str, _Message] = {}
    for raw in files.values():
        package = ""
        for number, _, value in wire.fields(memoryview(raw)):
            if number == 2 and isinstance(value, memoryview):
                package = _short(bytes(value).decode())
        for number, _, value in wire.fields(memoryview(raw)):
            if number == 4 and isinstance(value, memoryview):
                _parse_message(value, package, out)
    return out


def _kinds(messages: dict[str, _Message]) -> dict[tuple[str, str], str]:
    kinds: dict[tuple[str, str], str] = {}
    for pkg, group in _GROUPS.items():
        prefix = pkg.replace("/", ".") + "."
        version = pkg.split("/")[1]
        api_version = f"{group}/{version}" if group else version
        for name, msg in messages.items():
            kind = name[len(prefix) :]
            if not name.startswith(prefix) or "." in kind or kind.endswith("List") or kind in _NOT_KINDS:
                continue
            if any(f.name == "metadata" and f.type_name == "apis.meta.v1.ObjectMeta" for f in msg.fields):
                kinds[(api_version, kind)] = name
        kinds[(api_version, "DeleteOptions")] = "apis.meta.v1.DeleteOptions"
    for (api_version, kind), name in list(kinds.items()):
        listed = messages.get(name + "List")
        if listed is not None and any(f.name == "items" and f.type_name == name for f in listed.fields):
            kinds[(api_version, kind + "List")] = listed.name
    kinds.update(_META_KINDS)
    return kinds


def _closure(messages: dict[str, _Message], roots: list[str]) -> list[str]:
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        if name in _SPECIAL:
            continue
        todo.extend(f.type_name for f in messages[name].fields if f.type == _MESSAGE)
    return sorted(seen)


def _is_items_wrapper(msg: _Message) -> bool:
    """A Go named slice type (``type ExtraValue []string``) travels as ``{repeated items = 1}``."""
    only = msg.fields[0] if len(msg.fields) == 1 else None
    return msg.name.endswith(".ExtraValue") and only is not None and only.name == "items" and only.repeated


def _row(owner: str, f: _Field, messages: dict[str, _Message]) -> tuple[str, int, int, str]:
    ftype, flags = f.type, 0
    json_name = _JSON_NAMES.get((owner, f.name), f.name)
    target = messages.get(f.type_name)
    if target is not None and target.map_entry:
        return (json_name, _MAP, 0, f.type_name)
    if f.repeated:
        flags |= _REPEATED
    elif f.nullable:
        flags |= _POINTER
    # Go pointers are never embedded inline in Kubernetes types, so only value fields are candidates.
    embedded = (
        f.type == _MESSAGE
        and not f.repeated
        and not f.nullable
        and f.customname == f.type_name.rsplit(".", 1)[-1]
    )
    if embedded and f.name in _INLINE_FIELDS:
        flags |= _INLINE
    elif embedded and f.name not in _NOT_INLINE:
        raise ValueError(f"classify embedded field {f.name!r} ({f.type_name}) in _INLINE_FIELDS/_NOT_INLINE")
    return (json_name, ftype, flags, f.type_name)


def generate(binary: bytes, source: str) -> str:
    """Return the text of ``_tables.py`` for the descriptors found in ``binary``."""
    messages = _messages(_descriptors(binary))
    kinds = _kinds(messages)
    names = _closure(messages, sorted(set(kinds.values())))
    for owner, proto_name in _JSON_NAMES:
        if not any(f.name == proto_name for f in messages[owner].fields):
            raise ValueError(f"{owner} has no field {proto_name!r} any more: update _JSON_NAMES")
    special = dict(_SPECIAL)
    for name in names:
        if name not in special and _is_items_wrapper(messages[name]):
            special[name] = "items"
    lines = [
        '"""Protobuf descriptors of the supported Kubernetes kinds. GENERATED by ``_gen.py``; do not edit.',
        "",
        f"Source: {source}.",
        "",
        "``MESSAGES[name][number] = (json_name, type, flags, message)``: ``type`` is the",
        "FieldDescriptorProto type (9 string, 11 message, ...) or 100 for a map (``message`` is then the",
        "entry message, key field 1, value field 2); ``flags`` is 1 repeated | 2 Go pointer | 4 inlined",
        "into the parent's JSON. ``SPECIAL`` names the messages with their own JSON codec.",
        '"""',
        "",
        "from typing import Final",
        "",
        "FieldRow = tuple[str, int, int, str]",
        "",
        "MESSAGES: Final[dict[str, dict[int, FieldRow]]] = {",
    ]
    for name in names:
        if name in _SPECIAL:
            continue
        lines.append(f"    {name!r}: {{")
        for f in sorted(messages[name].fields, key=lambda f: f.number):
            lines.append(f"        {f.number}: {_row(name, f, messages)!r},")
        lines.append("    },")
    lines.append("}")
    lines.append("")
    lines.append("SPECIAL: Final[dict[str, str]] = {")
    lines.extend(f"    {k!r}: {v!r}," for k, v in sorted(special.items()))
    lines.append("}")
    lines.append("")
    lines.append("KINDS: Final[dict[tuple[str, str], str]] = {")
    lines.extend(f"    {k!r}: {v!r}," for k, v in sorted(kinds.items()))
    lines.append("}")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    """Command-line entry point: ``_gen.py KUBECTL_BINARY`` prints the module on stdout."""
    if len(argv) != 2:
        print("usage: python -m kplane.api.protobuf._gen KUBECTL_BINARY", file=sys.stderr)
        return 2
    with open(argv[1], "rb") as fh:
        binary = fh.read()
    sys.stdout.write(generate(binary, "the kubectl v1.32 binary (k8s.io/api v0.32)"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
