"""Fixtures for the client tests: one real kplane server (``kplane.testing``) for the whole session.

Behaviour users see is checked against that server; ``local_server`` is a tiny aiohttp app for the
replies a real server cannot be made to send on demand (Warning headers, 429, 401, odd bodies).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from aiohttp import web

from kplane.client import Config, typed
from kplane.testing import ThreadedControlPlane


@pytest.fixture
def config(kplane_session: ThreadedControlPlane) -> Config:
    """The session control plane's admin config, without a client-side rate limit (tests send bursts)."""
    return kplane_session.config


@pytest.fixture
async def client(config: Config) -> AsyncIterator[typed.Client]:
    async with typed.Client(config) as c:
        yield c


@pytest.fixture
def name() -> str:
    """A name no other test uses."""
    return f"t-{uuid.uuid4().hex[:8]}"


@pytest.fixture
async def namespace(client: typed.Client, name: str) -> str:
    """A fresh namespace for one test."""
    await client.resource("namespaces").create({"metadata": {"name": name}})
    return name


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@pytest.fixture
async def local_server() -> AsyncIterator[Callable[[Handler], Awaitable[str]]]:
    """Start a plain-HTTP aiohttp app answering every path with ``handler``; returns its URL."""
    runners: list[web.AppRunner] = []

    async def start(handler: Handler) -> str:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", handler)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        runners.append(runner)
        port = runner.addresses[0][1]
        return f"http://127.0.0.1:{port}"

    yield start
    for runner in runners:
        await runner.cleanup()
