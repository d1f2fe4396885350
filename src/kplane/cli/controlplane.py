"""The built-in controllers of ``kplane serve``: one ``runtime.Manager`` in the server's process,
reaching the server over loopback with the admin kubeconfig, as any client would. The server
module never imports this one (nor the runtime)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import socket
import uuid
from typing import Any

log = logging.getLogger(__name__)


async def start(server: Any, *, nodes: int) -> asyncio.Task[None]:
    """Start the controllers against ``server`` (a started ``APIServer``); returns the task that runs
    them. Their caches sync after this returns: the server is already serving."""
    from kplane import controllers, runtime
    from kplane.client import config as config_mod

    config = dataclasses.replace(config_mod.Config.from_kubeconfig(server.kubeconfig_path), qps=0.0)
    options = runtime.ManagerOptions(metrics_bind_address="0", graceful_shutdown_timeout=2.0)
    if server.config.storage == "etcd":
        # Several servers may share the etcd: their controllers take turns through one Lease, as
        # kube-controller-manager's replicas do (kube-system/kube-controller-manager).
        options = dataclasses.replace(
            options,
            leader_election=True,
            leader_election_id="kube-controller-manager",
            leader_election_namespace="kube-system",
            leader_election_identity=f"{socket.gethostname()}_{server.url}_{uuid.uuid4()}",
        )
    manager = runtime.Manager(config, options, clock=server.config.clock)
    await controllers.install(manager, nodes=nodes, pod_logs=server.pod_logs_dir)
    # their queue depths and reconcile counts and latencies on the server's /metrics (the dashboard
    # plots them), since they run in its process and the manager's own /metrics listener is off
    server.metrics_sources.append(manager.metrics.exposition)
    # a garbage collector runs: deletes may now add the orphan/foregroundDeletion finalizers
    server.registry.gc_finalizers = True
    if manager.tracer is not None and server.nonresource is not None:
        server.nonresource.traces = manager.tracer.query  # /debug/kplane/traces, with the API's auth

    async def run() -> None:
        try:
            await manager.start()
        finally:
            await manager.api.close()

    task = asyncio.get_running_loop().create_task(run())
    task.add_done_callback(_report)
    return task


def _report(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("built-in controllers stopped: %s", task.exception())


async def stop(task: asyncio.Task[None]) -> None:
    """Stop the controllers (before the server stops)."""
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await task
