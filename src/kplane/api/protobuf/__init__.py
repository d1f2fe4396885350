"""Decoding of Kubernetes protobuf request bodies (``application/vnd.kubernetes.protobuf``).

client-go typed clients (and so ``kubectl create``, ``auth can-i``, controller-runtime) send
built-in kinds as protobuf. ``decode`` turns such a body into the same JSON-shaped dict a JSON
body would give, so the server has one write path; replies stay JSON. Pure values, no I/O.
"""

from kplane.api.protobuf.decoding import MAGIC, decode, supported_kinds
from kplane.api.protobuf.wire import ProtobufError

__all__ = ["MAGIC", "ProtobufError", "decode", "supported_kinds"]
