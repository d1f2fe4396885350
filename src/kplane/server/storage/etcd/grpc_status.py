"""gRPC status codes and the one error a gRPC call ends with, for the etcd client's transport.

Contract: every failure of a call made through ``http2`` is an ``RpcError(code, details)`` with
gRPC's status codes (https://grpc.github.io/grpc/core/md_doc_statuscodes.html):

* the server's ``grpc-status`` and percent-decoded ``grpc-message`` when it sent them;
* a response that is not HTTP 200 and has no ``grpc-status`` maps as gRPC's HTTP-to-gRPC table
  does (``from_http_status``); a stream reset by the server maps its HTTP/2 error code
  (``from_reset``);
* ``UNAVAILABLE`` when the connection cannot be made or is lost, or a stream is refused;
  ``DEADLINE_EXCEEDED`` when a call's deadline passes; ``CANCELLED`` when the caller abandons it;
  ``RESOURCE_EXHAUSTED`` for a message past the connection's bound; ``INTERNAL`` for a response
  that breaks the protocol.

``client`` turns these into storage errors; nothing else inspects them.
"""

from __future__ import annotations

from typing import Final

OK, CANCELLED, UNKNOWN, DEADLINE_EXCEEDED = 0, 1, 2, 4
RESOURCE_EXHAUSTED, PERMISSION_DENIED, UNIMPLEMENTED, INTERNAL, UNAVAILABLE = 8, 7, 12, 13, 14
UNAUTHENTICATED = 16
CODE_NAMES: Final = {
    OK: "OK",
    CANCELLED: "CANCELLED",
    UNKNOWN: "UNKNOWN",
    DEADLINE_EXCEEDED: "DEADLINE_EXCEEDED",
    PERMISSION_DENIED: "PERMISSION_DENIED",
    RESOURCE_EXHAUSTED: "RESOURCE_EXHAUSTED",
    UNIMPLEMENTED: "UNIMPLEMENTED",
    INTERNAL: "INTERNAL",
    UNAVAILABLE: "UNAVAILABLE",
    UNAUTHENTICATED: "UNAUTHENTICATED",
}

# HTTP/2 error codes (RFC 9113 §7) a server resets a stream with: REFUSED_STREAM, CANCEL,
# ENHANCE_YOUR_CALM, INADEQUATE_SECURITY; any other is INTERNAL.
_RST_CODES: Final = {7: UNAVAILABLE, 8: CANCELLED, 11: RESOURCE_EXHAUSTED, 12: PERMISSION_DENIED}
_HTTP_CODES: Final = {400: INTERNAL, 401: UNAUTHENTICATED, 403: PERMISSION_DENIED, 404: UNIMPLEMENTED}


class RpcError(Exception):
    """A gRPC call's failure: ``code`` (gRPC status code) and ``details`` (its message)."""

    def __init__(self, code: int, details: str = "") -> None:
        super().__init__(f"{CODE_NAMES.get(code, code)}: {details}")
        self.code = code
        self.details = details


def from_http_status(status: bytes) -> int:
    """gRPC's status code for a response that is not HTTP 200 (gRPC's HTTP-to-gRPC mapping)."""
    if status in (b"429", b"502", b"503", b"504"):
        return UNAVAILABLE
    return _HTTP_CODES.get(int(status) if status.isdigit() else 0, UNKNOWN)


def from_reset(error_code: int) -> int:
    """gRPC's status code for a stream the server reset with HTTP/2 ``error_code``."""
    return _RST_CODES.get(error_code, INTERNAL)
