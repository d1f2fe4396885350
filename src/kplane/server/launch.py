"""Starting a server, shared by ``kplane serve`` and ``kplane.testing``.

``launch`` is the one start-up path: import aiohttp cheaply, build the ``APIServer`` from a
``ServerConfig``, start it. Callers only decide what to do with the running server (the CLI prints
its URL and waits for a signal; ``kplane.testing`` hands it to a test).
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kplane.server.app import APIServer, ServerConfig


def import_aiohttp_quickly() -> None:
    """Import aiohttp without OpenSSL parsing the whole CA bundle.

    aiohttp builds a verifying client SSL context at import time. With ``SSL_CERT_FILE`` set (or
    the system bundle as OpenSSL's default file) that parses every CA in the bundle, ~50-100 ms of
    a start-up budget of 500 ms; the server never uses that context. The hashed CA directory
    (``SSL_CERT_DIR``, read lazily by OpenSSL) holds the same CAs, so hiding only the file for the
    duration of this one import leaves verification equivalent.
    """
    if "aiohttp" in sys.modules:
        return
    saved = os.environ.get("SSL_CERT_FILE")
    os.environ["SSL_CERT_FILE"] = os.devnull
    try:
        import aiohttp  # noqa: F401
    finally:
        if saved is None:
            del os.environ["SSL_CERT_FILE"]
        else:
            os.environ["SSL_CERT_FILE"] = saved


async def launch(config: ServerConfig) -> APIServer:
    """A started server for ``config``; the caller must ``await server.stop()``.

    Raises ``OSError`` when the address cannot be bound (nothing is left running then).
    """
    import_aiohttp_quickly()
    from kplane.server.app import APIServer

    server = APIServer(config)
    try:
        await server.start()
    except BaseException:
        await server.stop()
        raise
    return server
