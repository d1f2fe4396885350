"""The opaque value types of Kubernetes' CEL libraries, as protobuf messages CEL can carry.

cel-expr-python hands values of custom types between CEL and Python only as protobuf messages, so
``kubernetes.Quantity``, ``kubernetes.URL``, ``net.IP`` and ``net.CIDR`` are one-field messages
(``value``: the canonical text) in a private descriptor pool built here at import. Their names are
upstream's CEL type names, so type errors read as upstream's (``found no matching overload for
'isInteger' applied to '(kubernetes.URL)'``). The ``value`` field is an artefact of this encoding:
upstream's types have no fields.
"""

from __future__ import annotations

from typing import Any

from cel_expr_python import cel
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_STRING = descriptor_pb2.FieldDescriptorProto.TYPE_STRING
_OPTIONAL = descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL

POOL = descriptor_pool.DescriptorPool()


_INT64 = descriptor_pb2.FieldDescriptorProto.TYPE_INT64
_BOOL = descriptor_pb2.FieldDescriptorProto.TYPE_BOOL


def _message_type(
    package: str, name: str, fields: tuple[tuple[str, int], ...] = (("value", _STRING),)
) -> Any:
    proto = descriptor_pb2.FileDescriptorProto(
        name=f"kplane/cel/{package}_{name}.proto", package=package, syntax="proto3"
    )
    msg = proto.message_type.add(name=name)
    for number, (field, kind) in enumerate(fields, start=1):
        msg.field.add(name=field, number=number, type=kind, label=_OPTIONAL)
    POOL.Add(proto)
    return message_factory.GetMessageClass(POOL.FindMessageTypeByName(f"{package}.{name}"))


Quantity = _message_type("kubernetes", "Quantity")
URL = _message_type("kubernetes", "URL")
IP = _message_type("net", "IP")
CIDR = _message_type("net", "CIDR")
NamedFormat = _message_type("kubernetes", "NamedFormat")  # ``value``: the format's name
# The authorizer library's values: ``ref`` names the request's authorizer (``authz``).
_CHECK = (
    ("ref", _INT64),
    ("path", _STRING),
    ("group", _STRING),
    ("resource", _STRING),
    ("subresource", _STRING),
    ("namespace", _STRING),
    ("name", _STRING),
    ("user", _STRING),
)
Authorizer = _message_type("kubernetes.authorization", "Authorizer", (("ref", _INT64), ("user", _STRING)))
PathCheck = _message_type("kubernetes.authorization", "PathCheck", _CHECK)
GroupCheck = _message_type("kubernetes.authorization", "GroupCheck", _CHECK)
ResourceCheck = _message_type("kubernetes.authorization", "ResourceCheck", _CHECK)
Decision = _message_type(
    "kubernetes.authorization", "Decision", (("allowed", _BOOL), ("reason", _STRING), ("error", _STRING))
)

MESSAGES = (Quantity, URL, IP, CIDR, NamedFormat, Authorizer, PathCheck, GroupCheck, ResourceCheck, Decision)
"""Every message class above (a descriptor pool checking expressions needs them all)."""

T = cel.Type
QUANTITY = T("kubernetes.Quantity")
URL_T = T("kubernetes.URL")
IP_T = T("net.IP")
CIDR_T = T("net.CIDR")
NAMED_FORMAT_T = T("kubernetes.NamedFormat")
AUTHORIZER_T = T("kubernetes.authorization.Authorizer")
PATH_CHECK_T = T("kubernetes.authorization.PathCheck")
GROUP_CHECK_T = T("kubernetes.authorization.GroupCheck")
RESOURCE_CHECK_T = T("kubernetes.authorization.ResourceCheck")
DECISION_T = T("kubernetes.authorization.Decision")
