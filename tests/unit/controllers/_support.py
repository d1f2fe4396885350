"""What the controller tests share: the built-in controllers in one manager on a fake clock."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from kplane import controllers, runtime
from kplane.client import dynamic
from kplane.testing import AutoAdvancingClock, ControlPlane


@contextlib.asynccontextmanager
async def cluster(
    kplane: ControlPlane, clock: AutoAdvancingClock, logs: Path, nodes: int = 2
) -> AsyncIterator[dynamic.DynamicClient]:
    """``controllers.install`` with ``nodes`` simulated nodes, running until the block ends."""
    assert kplane.config is not None
    manager = runtime.Manager(kplane.config, runtime.ManagerOptions(metrics_bind_address="0"), clock=clock)
    await controllers.install(manager, nodes=nodes, pod_logs=logs)
    task = asyncio.get_running_loop().create_task(manager.start())
    try:
        yield manager.api.dynamic
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await manager.api.close()
