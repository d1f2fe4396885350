"""``kplane controllers``: the built-in controllers (scheduler, simulated nodes and kubelets,
workloads, garbage collector, ...) as their own process, against any kplane server, like upstream's
kube-controller-manager. ``kplane serve`` starts one (``cli/controlplane``) with its admin
kubeconfig and ``--stop-on-stdin-close``, so the controllers never outlive the server.

They run in a process of their own because CPython runs one thread of Python at a time: in the
server's process their informers and reconciles took a quarter of the CPU a ConfigMap create costs
there (the garbage collector watches every resource); here they use the machine's other cores.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import logging
import os
import signal
import socket
import sys
import uuid
from pathlib import Path
from typing import Any

from kplane._util import gctune


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "controllers",
        help="run the built-in controllers (scheduler, simulated nodes, workloads...) against a server",
    )
    p.add_argument(
        "--kubeconfig",
        type=Path,
        default=None,
        help="kubeconfig to use (default: as kubectl); kplane serve gives the user"
        " system:kube-controller-manager's (DATA_DIR/controllers/kube-controller-manager.kubeconfig)",
    )
    p.add_argument(
        "--use-service-account-credentials",
        action="store_true",
        help="run each controller as the ServiceAccount kube-system/<controller> (created if missing),"
        " with a token from TokenRequest renewed before it expires, as kube-controller-manager's flag;"
        " the shared informers keep --kubeconfig's identity",
    )
    p.add_argument(
        "--scheduler-kubeconfig",
        type=Path,
        default=None,
        help="kubeconfig of the scheduler's identity (default: --kubeconfig's)",
    )
    p.add_argument(
        "--nodes-kubeconfig",
        type=Path,
        default=None,
        help="kubeconfig with one context per simulated node (named after it), for the node and its"
        " kubelet (default: --kubeconfig's identity for every node)",
    )
    p.add_argument(
        "--nodes", type=int, default=3, help="simulated nodes to register, with their kubelets (default 3)"
    )
    p.add_argument(
        "--pod-logs",
        type=Path,
        default=None,
        help="directory the simulated kubelet writes container output to (the server's DATA_DIR/pod-logs,"
        " so that `kubectl logs` finds it)",
    )
    p.add_argument(
        "--leader-elect",
        action="store_true",
        help="take turns with other replicas through the Lease kube-system/kube-controller-manager"
        " (kplane serve sets it on etcd, where several servers may share the state)",
    )
    p.add_argument(
        "--leader-elect-identity",
        default="",
        help="this replica's name in the Lease (default HOSTNAME_PID_RANDOM)",
    )
    p.add_argument(
        "--stop-on-stdin-close",
        action="store_true",
        help="stop when standard input closes (how `kplane serve` ties this process to its own life)",
    )
    p.add_argument(
        "--metrics-bind-address",
        default="127.0.0.1:0",
        help="where to serve the controllers' /metrics and /debug/kplane/traces: HOST:PORT (default"
        " 127.0.0.1:0, a free loopback port), unix:PATH (a Unix domain socket, mode 0600; what"
        " `kplane serve` uses) or 0 (off); printed on standard output as `metrics: URL` once it listens",
    )
    p.add_argument(
        "--no-process-metrics",
        action="store_true",
        help="leave process_* out of /metrics (`kplane serve` merges these into its own, which has them)",
    )
    p.add_argument("--log-level", default="WARNING", help="Python logging level (default WARNING)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    try:
        import uvloop

        runner: Any = uvloop.run
    except ImportError:  # pragma: no cover - uvloop is a dependency on Linux
        runner = asyncio.run
    result: int = runner(_main(args))
    return result


async def _main(args: argparse.Namespace) -> int:
    from kplane import controllers, runtime
    from kplane.client import config as config_mod

    loaded = (
        config_mod.Config.from_kubeconfig(args.kubeconfig) if args.kubeconfig else config_mod.Config.load()
    )
    config = dataclasses.replace(loaded, qps=0.0)  # the server's fairness protects it, as controller-runtime
    options = runtime.ManagerOptions(
        metrics_bind_address=args.metrics_bind_address,
        graceful_shutdown_timeout=2.0,
        process_metrics=not args.no_process_metrics,
    )
    if args.leader_elect:
        # as kube-controller-manager's replicas do: one Lease, the holder runs every controller
        options = dataclasses.replace(
            options,
            leader_election=True,
            leader_election_id="kube-controller-manager",
            leader_election_namespace="kube-system",
            leader_election_identity=args.leader_elect_identity
            or f"{socket.gethostname()}_{os.getpid()}_{uuid.uuid4()}",
        )
    manager = runtime.Manager(config, options)
    identity, node_api = await _identities(args, manager)
    await controllers.install(
        manager, nodes=max(0, args.nodes), pod_logs=args.pod_logs, identity=identity, node_api=node_api
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    if args.stop_on_stdin_close:
        _watch_stdin(loop, stop)
    task = loop.create_task(manager.start())
    if args.metrics_bind_address != "0":
        await _announce_metrics(manager, task)
    gctune.tune_for_service()
    waiter = loop.create_task(stop.wait())
    try:
        await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await manager.close()
    if not task.cancelled() and task.exception() is not None:
        print(f"kplane controllers: stopped: {task.exception()}", file=sys.stderr)
        return 1
    return 0


async def _identities(args: argparse.Namespace, manager: Any) -> tuple[Any, Any]:
    """The ``identity`` and ``node_api`` of ``controllers.install`` the flags ask for."""
    from kplane import controllers
    from kplane.cli import identities
    from kplane.client import config as config_mod
    from kplane.client import typed

    accounts = None
    if args.use_service_account_credentials:
        accounts = identities.ServiceAccountIdentities(manager)
        manager.add(accounts)
    scheduler = manager
    if args.scheduler_kubeconfig is not None:
        loaded = config_mod.Config.from_kubeconfig(args.scheduler_kubeconfig)
        scheduler = manager.with_api(typed.Client(dataclasses.replace(loaded, qps=0.0)))

    async def identity(name: str) -> Any:
        if name == controllers.SCHEDULER:
            return scheduler
        return await accounts.identity(name) if accounts is not None else manager

    node_api = None
    if args.nodes_kubeconfig is not None:
        clients = identities.node_clients(args.nodes_kubeconfig)
        for client in clients.values():
            manager.adopt(client)

        def node_api(name: str) -> Any:
            return clients.get(name, manager.api)

    return identity, node_api


async def _announce_metrics(manager: Any, task: asyncio.Task[None]) -> None:
    """Print ``metrics: URL`` once the manager's metrics server listens (or it failed to start)."""
    for _ in range(1000):
        server = manager.servers.get("metrics")
        if server is not None and server.listening:
            print(f"metrics: {server.url}", flush=True)
            return
        if task.done():
            return
        await asyncio.sleep(0.01)


def _watch_stdin(loop: asyncio.AbstractEventLoop, stop: asyncio.Event) -> None:
    """Set ``stop`` when standard input reaches end of file (its writer, the parent, is gone)."""
    fd = sys.stdin.fileno()
    os.set_blocking(fd, False)

    def readable() -> None:
        try:
            data = os.read(fd, 4096)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            loop.remove_reader(fd)
            stop.set()

    loop.add_reader(fd, readable)
