"""A small etcd v3 gRPC client: unary calls with failover across endpoints, and watch streams.

Requests and responses are the hand-coded messages of ``wire``; gRPC carries them as raw bytes
(``grpc.aio`` generic calls, no generated stubs). Every call has a deadline (``timeout``): a call
never waits longer, whatever etcd does.

Failover: the client talks to one endpoint at a time. When a call fails because that endpoint is
unreachable (gRPC ``UNAVAILABLE`` without an etcd server error, or etcd's ``no leader``: the
request was not applied), it moves to the next endpoint and tries again within the same deadline.
Reads are also retried after etcd's ``request timed out``; writes are not (etcd may still apply
them), so such a write fails with ``Unavailable``.

Errors are ``interface.StorageError`` subclasses: ``Timeout`` when the deadline passes (the API
answers 504), ``Unavailable`` for etcd's own errors (the API answers 500 with etcd's message, as
kube-apiserver does), ``Expired`` / ``TooLargeRevision`` for compacted / future revisions.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

# gRPC's C core logs every failed TLS handshake or connection attempt to stderr; kplane reports
# its own errors (set GRPC_VERBOSITY to see gRPC's).
os.environ.setdefault("GRPC_VERBOSITY", "NONE")

import grpc
import grpc.aio

from kplane.server.storage import interface

_log = logging.getLogger(__name__)

COMPACTED = "etcdserver: mvcc: required revision has been compacted"
FUTURE = "etcdserver: mvcc: required revision is a future revision"
NO_SPACE = "etcdserver: mvcc: database space exceeded"
NO_LEADER = "etcdserver: no leader"

_IDENTITY: Any = None  # grpc's "no serializer": requests and responses are bytes
_OPTIONS = [
    ("grpc.keepalive_time_ms", 10_000),
    ("grpc.keepalive_timeout_ms", 5_000),
    ("grpc.keepalive_permit_without_calls", 1),
    # One response at most: a page of objects (etcd refuses values over 1.5 MiB by default).
    ("grpc.max_receive_message_length", 256 * 1024 * 1024),
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 1_000),
]
_RETRY_PAUSE = 0.05  # seconds between two rounds over every endpoint


Timeout = interface.Timeout
Unavailable = interface.Unavailable


@dataclasses.dataclass(frozen=True, slots=True)
class TLSFiles:
    """PEM files for TLS to etcd: the CA that signed etcd's serving certificates, and an optional
    client certificate and key (etcd's ``--client-cert-auth``)."""

    cafile: Path | None = None
    certfile: Path | None = None
    keyfile: Path | None = None

    def credentials(self) -> grpc.ChannelCredentials:
        def read(p: Path | None) -> bytes | None:
            return p.read_bytes() if p is not None else None

        return grpc.ssl_channel_credentials(
            root_certificates=read(self.cafile),
            private_key=read(self.keyfile),
            certificate_chain=read(self.certfile),
        )


def parse_endpoints(spec: str) -> list[str]:
    """``etcd://h1:2379,h2:2379`` (or ``h1:2379,...``, ``https://h1:2379,...``) → ``["h1:2379", ...]``."""
    body = spec.split("://", 1)[1] if "://" in spec else spec
    out = []
    for part in body.split(","):
        part = part.strip().removeprefix("http://").removeprefix("https://").rstrip("/")
        if not part:
            continue
        if ":" not in part.rsplit("]", 1)[-1]:
            part += ":2379"
        out.append(part)
    if not out:
        raise ValueError(f"no etcd endpoint in {spec!r}")
    return out


class EtcdClient:
    """Calls etcd's v3 services (see the module docstring). Use from one event loop."""

    def __init__(
        self, endpoints: Sequence[str], *, tls: TLSFiles | None = None, timeout: float = 5.0
    ) -> None:
        if not endpoints:
            raise ValueError("at least one etcd endpoint is required")
        self.endpoints = list(endpoints)
        self.timeout = timeout
        self._credentials = tls.credentials() if tls is not None else None
        self._channels: dict[str, grpc.aio.Channel] = {}
        self._stubs: dict[tuple[str, str], Any] = {}  # (endpoint, method) → unary multicallable
        self._current = 0
        self._closed = False
        self.last_error = ""
        """The last failure an endpoint answered (for start-up messages)."""

    @property
    def endpoint(self) -> str:
        """The endpoint calls go to now."""
        return self.endpoints[self._current]

    def channel(self, endpoint: str | None = None) -> grpc.aio.Channel:
        endpoint = endpoint or self.endpoint
        ch = self._channels.get(endpoint)
        if ch is None:
            if self._credentials is not None:
                ch = grpc.aio.secure_channel(endpoint, self._credentials, options=_OPTIONS)
            else:
                ch = grpc.aio.insecure_channel(endpoint, options=_OPTIONS)
            self._channels[endpoint] = ch
        return ch

    def fail_over(self, failed: str) -> None:
        """Move to the next endpoint if ``failed`` is still the current one."""
        if self.endpoint == failed and len(self.endpoints) > 1:
            self._current = (self._current + 1) % len(self.endpoints)
            _log.warning("etcd endpoint %s failed; trying %s", failed, self.endpoint)

    # ``timeout`` is the gRPC deadline sent with the call, not a cancel scope of ours.
    async def call(
        self,
        method: str,
        request: bytes,
        *,
        write: bool = False,
        timeout: float = 0,  # noqa: ASYNC109
    ) -> bytes:
        """Call ``/etcdserverpb.<method>`` with failover (see the module docstring)."""
        if self._closed:
            raise interface.StorageError("storage is closed")
        deadline = time.monotonic() + (timeout or self.timeout)
        tried = 0
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise Timeout()
            endpoint = self.endpoint
            stub = self._stubs.get((endpoint, method))
            if stub is None:
                stub = self._stubs[endpoint, method] = self.channel(endpoint).unary_unary(
                    f"/etcdserverpb.{method}", request_serializer=_IDENTITY, response_deserializer=_IDENTITY
                )
            try:
                response: bytes = await stub(request, timeout=left, wait_for_ready=False)
                return response
            except grpc.aio.AioRpcError as e:
                error = _translate(e)
                if error is not None:
                    raise error from None
                details = e.details() or ""
                self.last_error = f"{endpoint}: {details or e.code().name}"
                retry = e.code() == grpc.StatusCode.UNAVAILABLE and (
                    not details.startswith("etcdserver:") or details == NO_LEADER or not write
                )
                if e.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
                    raise Timeout() from None
                if not retry:
                    raise Unavailable(details or e.code().name) from None
                self.fail_over(endpoint)
                tried += 1
                if tried % len(self.endpoints) == 0:
                    await asyncio.sleep(min(_RETRY_PAUSE, max(0.0, deadline - time.monotonic())))

    def stream(self, method: str, *, metadata: Sequence[tuple[str, str]] = ()) -> Any:
        """A bidirectional stream call on the current endpoint (``write``/``read`` bytes)."""
        if self._closed:
            raise interface.StorageError("storage is closed")
        return self.channel().stream_stream(
            f"/etcdserverpb.{method}", request_serializer=_IDENTITY, response_deserializer=_IDENTITY
        )(metadata=tuple(metadata))

    def unary_stream(self, method: str, request: bytes, *, timeout: float) -> Any:
        """A server-streaming call on the current endpoint (iterate it for bytes)."""
        if self._closed:
            raise interface.StorageError("storage is closed")
        return self.channel().unary_stream(
            f"/etcdserverpb.{method}", request_serializer=_IDENTITY, response_deserializer=_IDENTITY
        )(request, timeout=timeout)

    async def close(self) -> None:
        self._closed = True
        channels, self._channels = self._channels, {}
        self._stubs.clear()
        for ch in channels.values():
            await ch.close()


def _translate(e: grpc.aio.AioRpcError) -> interface.StorageError | None:
    """The storage error for etcd's revision and space errors, else None."""
    details = e.details() or ""
    if details == COMPACTED:
        return interface.Expired(0, 0)
    if details == FUTURE:
        return interface.TooLargeRevision(0, 0)
    if details == NO_SPACE:
        return interface.NoSpace("etcd", details)
    return None
