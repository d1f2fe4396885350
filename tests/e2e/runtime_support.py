"""Shared pieces of the runtime's end-to-end tests: a manager on a real server, and ``eventually``."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TypeVar

from kplane import runtime, testing
from kplane.client import Config, typed
from tests.e2e import conftest as e2e

T = TypeVar("T")


def config(server: e2e.Server) -> Config:
    """The server's admin config without client-side rate limiting."""
    return dataclasses.replace(Config.from_kubeconfig(server.kubeconfig), qps=0)


async def eventually(check: Callable[[], Awaitable[T]], *, within: float = 10.0) -> T:
    """``kplane.testing.eventually`` for checks that assert (and may return None when they pass)."""

    async def holds() -> tuple[T]:
        return (await check(),)

    return (await testing.eventually(holds, timeout=within, interval=0.02))[0]


@contextlib.asynccontextmanager
async def running(manager: runtime.Manager) -> AsyncIterator[asyncio.Task[None]]:
    """Run ``manager`` in a task; on exit cancel it (a graceful stop) and close its client."""
    task = asyncio.get_running_loop().create_task(manager.start())
    try:
        await asyncio.wait_for(_elected_or_failed(manager, task), 15)
        yield task
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await manager.api.close()


async def _elected_or_failed(manager: runtime.Manager, task: asyncio.Task[None]) -> None:
    waiter = asyncio.ensure_future(manager.elected.wait())
    await asyncio.wait({waiter, task}, return_when=asyncio.FIRST_COMPLETED)
    if task.done():
        waiter.cancel()
        task.result()


def new_manager(server: e2e.Server | Config, **options: object) -> runtime.Manager:
    """A manager on ``server`` (or a config) with metrics on a free loopback port unless told otherwise."""
    opts = runtime.ManagerOptions(**{"metrics_bind_address": "127.0.0.1:0", **options})  # type: ignore[arg-type]
    cfg = server if isinstance(server, Config) else config(server)
    return runtime.Manager(options=opts, api=typed.Client(cfg))
