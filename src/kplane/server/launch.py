"""Starting a server, shared by ``kplane serve`` and ``kplane.testing``.

``launch`` is the one start-up path: import aiohttp cheaply, build the ``APIServer`` from a
``ServerConfig``, start it. Callers only decide what to do with the running server (the CLI prints
its URL and waits for a signal; ``kplane.testing`` hands it to a test).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kplane._util import aiohttpimport

if TYPE_CHECKING:
    from kplane.server.app import APIServer
    from kplane.server.serverconfig import ServerConfig


def import_aiohttp_quickly() -> None:
    """Import aiohttp without OpenSSL parsing the whole CA bundle (``_util/aiohttpimport``): ~50-100
    ms of a start-up budget of 500 ms, for a context the server never uses."""
    aiohttpimport.import_aiohttp(entry_point=True)


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
