"""Kubernetes protobuf (``application/vnd.kubernetes.protobuf``): request bodies in, replies out.

client-go typed clients (and so ``kubectl create``, ``auth can-i``, controller-runtime) send
built-in kinds as protobuf and ask for protobuf replies first. ``decode`` turns such a body into
the same JSON-shaped dict a JSON body would give, so the server has one write path; ``encode``,
``encode_list`` and ``watch_frame`` write JSON-shaped objects back as kube-apiserver's bytes. Both
read the same descriptor tables. Pure values, no I/O.
"""

from kplane.api.protobuf.decoding import MAGIC, decode, supported_kinds
from kplane.api.protobuf.encoding import (
    encodable,
    encode,
    encode_list,
    envelope,
    item_field,
    item_message,
    watch_frame,
)
from kplane.api.protobuf.wire import ProtobufError

__all__ = [
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
