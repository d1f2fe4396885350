"""A TLS server on loopback built from a PKI, for handshake tests."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from kplane.server.auth import certs, x509


class TLSServer:
    """Answers ``ok`` on each connection and records the peer certificate it saw (decoded and DER)."""

    def __init__(self, server: asyncio.Server) -> None:
        self.server = server
        self.port: int = server.sockets[0].getsockname()[1]
        self.peercerts: list[dict[str, Any] | None] = []
        self.peerders: list[bytes] = []

    async def ask(self, ctx: ssl.SSLContext, *, server_hostname: str = "127.0.0.1") -> bytes:
        """Connect with ``ctx``, read the server's reply (``ok``) and close."""
        reader, writer = await asyncio.open_connection(
            "127.0.0.1", self.port, ssl=ctx, server_hostname=server_hostname
        )
        try:
            return await asyncio.wait_for(reader.readexactly(2), 5)
        finally:
            writer.close()


TLSServerFactory = Callable[..., AbstractAsyncContextManager[TLSServer]]
"""``tls_server(pki, certificates=None)``."""


@pytest.fixture
def tls_server() -> TLSServerFactory:
    """A factory: ``async with tls_server(pki) as srv`` serves with ``pki.ssl_server_context()``,
    with ``certificates`` (an ``x509.ClientCertificates``) installed on it when given."""

    @asynccontextmanager
    async def start(
        pki: certs.PKI, certificates: x509.ClientCertificates | None = None
    ) -> AsyncIterator[TLSServer]:
        holder: list[TLSServer] = []

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            holder[0].peercerts.append(writer.get_extra_info("peercert"))
            holder[0].peerders.append(writer.get_extra_info("ssl_object").getpeercert(binary_form=True))
            writer.write(b"ok")
            await writer.drain()
            writer.close()

        ctx = pki.ssl_server_context()
        if certificates is not None:
            assert certificates.install(ctx)
        server = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=ctx)
        holder.append(TLSServer(server))
        try:
            yield holder[0]
        finally:
            server.close()
            await server.wait_closed()

    return start


async def present(
    tls_server: TLSServerFactory,
    pki: certs.PKI,
    certificates: x509.ClientCertificates,
    cert_pem: bytes,
    key_pem: bytes,
    tmp_path: Path,
) -> TLSServer:
    """Present ``cert_pem`` to a server of ``pki`` with ``certificates`` installed; the server as
    it ended (``peerders``/``peercerts`` hold what it saw)."""
    (tmp_path / "present.crt").write_bytes(cert_pem)
    (tmp_path / "present.key").write_bytes(key_pem)
    ctx = ssl.create_default_context(cafile=str(pki.ca_cert_file))
    ctx.load_cert_chain(tmp_path / "present.crt", tmp_path / "present.key")
    async with tls_server(pki, certificates) as srv:
        assert await srv.ask(ctx) == b"ok"
    return srv
