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


def _message_type(package: str, name: str) -> Any:
    proto = descriptor_pb2.FileDescriptorProto(
        name=f"kplane/cel/{package}_{name}.proto", package=package, syntax="proto3"
    )
    msg = proto.message_type.add(name=name)
    msg.field.add(name="value", number=1, type=_STRING, label=_OPTIONAL)
    POOL.Add(proto)
    return message_factory.GetMessageClass(POOL.FindMessageTypeByName(f"{package}.{name}"))


Quantity = _message_type("kubernetes", "Quantity")
URL = _message_type("kubernetes", "URL")
IP = _message_type("net", "IP")
CIDR = _message_type("net", "CIDR")

T = cel.Type
QUANTITY = T("kubernetes.Quantity")
URL_T = T("kubernetes.URL")
IP_T = T("net.IP")
CIDR_T = T("net.CIDR")
