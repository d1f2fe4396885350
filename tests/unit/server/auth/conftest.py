"""A TLS server on loopback built from a PKI, for handshake tests."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import pytest

from kplane.server.auth import certs


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


TLSServerFactory = Callable[[certs.PKI], AbstractAsyncContextManager[TLSServer]]


@pytest.fixture
def tls_server() -> TLSServerFactory:
    """A factory: ``async with tls_server(pki) as srv`` serves with ``pki.ssl_server_context()``."""

    @asynccontextmanager
    async def start(pki: certs.PKI) -> AsyncIterator[TLSServer]:
        holder: list[TLSServer] = []

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            holder[0].peercerts.append(writer.get_extra_info("peercert"))
            holder[0].peerders.append(writer.get_extra_info("ssl_object").getpeercert(binary_form=True))
            writer.write(b"ok")
            await writer.drain()
            writer.close()

        server = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=pki.ssl_server_context())
        holder.append(TLSServer(server))
        try:
            yield holder[0]
        finally:
            server.close()
            await server.wait_closed()

    return start
