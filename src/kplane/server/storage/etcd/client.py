"""A small etcd v3 gRPC client: unary calls with failover across endpoints, and watch streams.

Requests and responses are the hand-coded messages of ``wire``; ``http2`` carries them as gRPC
messages over one HTTP/2 connection per endpoint, on the event loop (no generated stubs, no
gRPC runtime). Every call has a deadline (``timeout``): a call never waits longer, whatever etcd
does.

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
import ssl
import time
from collections.abc import Sequence
from pathlib import Path

from kplane.server.storage import interface
from kplane.server.storage.etcd import grpc_status, grpc_stream, http2

_log = logging.getLogger(__name__)

COMPACTED = "etcdserver: mvcc: required revision has been compacted"
FUTURE = "etcdserver: mvcc: required revision is a future revision"
NO_SPACE = "etcdserver: mvcc: database space exceeded"
NO_LEADER = "etcdserver: no leader"

# One response at most: a page of objects (etcd refuses values over 1.5 MiB by default).
MAX_MESSAGE = 256 * 1024 * 1024
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

    def context(self) -> ssl.SSLContext:
        """A client TLS context: etcd's certificate checked against ``cafile`` (else the system's
        CAs) and the endpoint's host name or address; HTTP/2 offered by ALPN."""
        ctx = ssl.create_default_context(cafile=str(self.cafile) if self.cafile is not None else None)
        if self.certfile is not None:
            ctx.load_cert_chain(self.certfile, self.keyfile)
        ctx.set_alpn_protocols(["h2"])
        return ctx


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
        self._ssl = tls.context() if tls is not None else None
        self._conns: dict[str, http2.Connection] = {}
        self._connecting: dict[str, asyncio.Future[http2.Connection]] = {}
        self._current = 0
        self._closed = False
        self.last_error = ""
        """The last failure an endpoint answered (for start-up messages)."""

    @property
    def endpoint(self) -> str:
        """The endpoint calls go to now."""
        return self.endpoints[self._current]

    async def connection(self, endpoint: str, timeout: float) -> http2.Connection:  # noqa: ASYNC109
        """The open connection to ``endpoint``, made if needed (one attempt shared by concurrent
        callers; ``RpcError(UNAVAILABLE)`` if it fails)."""
        conn = self._conns.get(endpoint)
        if conn is not None and conn.usable:
            return conn
        pending = self._connecting.get(endpoint)
        if pending is None:
            if conn is not None and not conn.draining:
                conn.close()
            pending = self._connecting[endpoint] = asyncio.ensure_future(
                http2.connect(endpoint, ssl_context=self._ssl, timeout=timeout, max_message=MAX_MESSAGE)
            )
            pending.add_done_callback(lambda f: self._connected(endpoint, f))
        return await asyncio.shield(pending)

    def _connected(self, endpoint: str, fut: asyncio.Future[http2.Connection]) -> None:
        self._connecting.pop(endpoint, None)
        if fut.cancelled() or fut.exception() is not None:
            return
        conn = fut.result()
        if self._closed:
            conn.close()
        else:
            self._conns[endpoint] = conn

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
        path = "/etcdserverpb." + method
        tried = 0
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise Timeout()
            endpoint = self.endpoint
            try:
                conn = self._conns.get(endpoint)
                if conn is None or not conn.usable:
                    conn = await self.connection(endpoint, left)
                return await conn.unary(path, request, left)
            except grpc_status.RpcError as e:
                error = _translate(e)
                if error is not None:
                    raise error from None
                details = e.details
                self.last_error = f"{endpoint}: {details or grpc_status.CODE_NAMES.get(e.code, str(e.code))}"
                retry = e.code == grpc_status.UNAVAILABLE and (
                    not details.startswith("etcdserver:") or details == NO_LEADER or not write
                )
                if e.code == grpc_status.DEADLINE_EXCEEDED:
                    raise Timeout() from None
                if not retry:
                    raise Unavailable(details or grpc_status.CODE_NAMES.get(e.code, str(e.code))) from None
                self.fail_over(endpoint)
                tried += 1
                if tried % len(self.endpoints) == 0:
                    await asyncio.sleep(min(_RETRY_PAUSE, max(0.0, deadline - time.monotonic())))

    async def stream(self, method: str, *, metadata: Sequence[tuple[str, str]] = ()) -> grpc_stream.Stream:
        """A bidirectional stream on the current endpoint (``write``/``read`` bytes; ``read``
        returns None at the end). ``RpcError`` if the endpoint cannot be reached."""
        if self._closed:
            raise interface.StorageError("storage is closed")
        conn = await self.connection(self.endpoint, self.timeout)
        return await conn.open("/etcdserverpb." + method, timeout=None, metadata=metadata)

    async def close(self) -> None:
        self._closed = True
        conns, self._conns = self._conns, {}
        for pending in list(self._connecting.values()):
            pending.cancel()
        for conn in conns.values():
            conn.close()


def _translate(e: grpc_status.RpcError) -> interface.StorageError | None:
    """The storage error for etcd's revision and space errors, else None."""
    details = e.details
    if details == COMPACTED:
        return interface.Expired(0, 0)
    if details == FUTURE:
        return interface.TooLargeRevision(0, 0)
    if details == NO_SPACE:
        return interface.NoSpace("etcd", details)
    return None
