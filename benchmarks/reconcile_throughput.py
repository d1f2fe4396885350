"""Operator throughput: N custom objects created by C clients, time until every one has its status.

The same workload is run, against the same server in the same run, by a kplane.runtime manager with
1 and with 8 concurrent reconciles, and by kopf (its defaults, event posting off). Each operator
runs in its own process (``benchmarks/_reconcile_operators.py``) watching a fresh namespace; after a
warm-up object, ``--count`` ``Widget`` objects (default 1,000) are created by ``--clients`` clients
(default 16) and the clock stops when a watch has seen ``status.observed == spec.value`` on every
one. Also measured: the one-object create-to-status latency (median of ``--latency-samples``
objects created one at a time against an idle operator) and the operator process's RSS after the
run. ``--rounds N`` repeats the whole sequence N times, alternating the operators, and reports each
figure's median per operator. Prints one JSON line. Targets: kplane ≥ 10x kopf's objects/s,
latency ≤ 3 ms, RSS ≤ 50 MiB.

``--server-pid PID`` (a server on this machine) adds what the server spends: its CPU per object in
each run (process, and its main thread: the one Python thread that runs every request, whatever
other threads do), and, each round, the same creates with no operator at all (``none``). Their
difference is what one reconcile costs the server (the status write, its events to two watches,
the create's event to the operator's watch); the main thread's CPU per object bounds any
operator's objects/s on that server (``server_bound_objects_per_s``), and kplane's bound over kopf's
rate is the best ratio reachable there (``kplane_vs_kopf_ceiling``).

Runs against any conformant API server: ``--kubeconfig`` is required (``kplane serve`` prints one).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import statistics
import sys
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import _client
import _reconcile_operators as ops

from kplane.api import errors
from kplane.client import Config, ListOptions, typed

NAMESPACES = "namespaces"
CRDS = "customresourcedefinitions.apiextensions.k8s.io"


class Watcher:
    """Follows the namespace's widgets and resolves a waiter once an object's status is observed."""

    def __init__(self, api: typed.Client, namespace: str) -> None:
        self._rc = api.dynamic.resource(ops.WIDGETS, namespace)
        self.done: set[str] = set()
        self.added = 0
        self._added_waiter: tuple[int, asyncio.Future[float]] | None = None
        self._waiters: dict[str, asyncio.Future[float]] = {}
        self._all: tuple[int, asyncio.Future[float]] | None = None
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        page = await self._rc.list()
        rv = page["metadata"]["resourceVersion"]
        self._task = asyncio.get_running_loop().create_task(self._run(rv))

    async def _run(self, rv: str) -> None:
        while True:
            async for event in self._rc.watch(ListOptions(resource_version=rv)):
                obj = event.object
                rv = obj["metadata"]["resourceVersion"]
                if event.type == "ADDED":
                    self._count_added()
                if event.type in ("ADDED", "MODIFIED") and _observed(obj):
                    self._mark(obj["metadata"]["name"])

    def _mark(self, name: str) -> None:
        if name in self.done:
            return
        self.done.add(name)
        now = time.perf_counter()
        waiter = self._waiters.pop(name, None)
        if waiter is not None and not waiter.done():
            waiter.set_result(now)
        if self._all is not None and len(self.done) >= self._all[0] and not self._all[1].done():
            self._all[1].set_result(now)

    def _count_added(self) -> None:
        self.added += 1
        waiter = self._added_waiter
        if waiter is not None and self.added >= waiter[0] and not waiter[1].done():
            waiter[1].set_result(time.perf_counter())

    def wait_for_added(self, count: int) -> asyncio.Future[float]:
        """Resolves once ``count`` objects have been seen created (no status needed)."""
        fut: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        self._added_waiter = (count, fut)
        if self.added >= count:
            fut.set_result(time.perf_counter())
        return fut

    def wait_for(self, name: str) -> asyncio.Future[float]:
        fut = self._waiters[name] = asyncio.get_running_loop().create_future()
        if name in self.done:
            fut.set_result(time.perf_counter())
        return fut

    def wait_for_count(self, count: int) -> asyncio.Future[float]:
        fut: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        self._all = (count, fut)
        if len(self.done) >= count:
            fut.set_result(time.perf_counter())
        return fut

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


def _observed(obj: dict[str, Any]) -> bool:
    return bool((obj.get("status") or {}).get("observed") == (obj.get("spec") or {}).get("value"))


def _widget(name: str, value: int) -> dict[str, Any]:
    return {"apiVersion": f"{ops.GROUP}/{ops.VERSION}", "kind": "Widget", "metadata": {"name": name},
            "spec": {"value": value}}  # fmt: skip


class ServerCPU:
    """CPU the server process (and its main thread) used between ``start`` and ``stop``."""

    def __init__(self, pid: int | None) -> None:
        self.pid = pid
        self._at: tuple[float, float] = (0.0, 0.0)

    def _now(self) -> tuple[float, float]:
        assert self.pid is not None
        return _client.process_cpu_seconds(self.pid), _client.process_cpu_seconds(self.pid, thread=self.pid)

    def start(self) -> None:
        if self.pid is not None:
            self._at = self._now()

    def per_object_us(self, count: int) -> dict[str, float]:
        if self.pid is None:
            return {}
        process, main = self._now()
        return {
            "server_cpu_us_per_object": round((process - self._at[0]) * 1e6 / count, 1),
            "server_main_thread_us_per_object": round((main - self._at[1]) * 1e6 / count, 1),
        }


@contextlib.asynccontextmanager
async def operator(
    kubeconfig: str, mode: str, namespace: str, workers: int
) -> AsyncIterator[asyncio.subprocess.Process]:
    """The operator process, once it has printed READY; terminated (SIGTERM) on exit."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, ops.__file__, mode, kubeconfig, namespace, str(workers),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        line = await asyncio.wait_for(proc.stdout.readline(), 60)
        if line.strip() != b"READY":
            raise RuntimeError(f"{mode} operator did not start (exit {proc.returncode})")
        yield proc
    finally:
        if proc.returncode is None:
            proc.terminate()
        try:
            await asyncio.wait_for(proc.wait(), 15)
        except TimeoutError:
            proc.kill()
            await proc.wait()


async def creates_only(cfg: Config, count: int, clients: int, server: ServerCPU) -> dict[str, Any]:
    """The same creates, watched the same way, with no operator: what the creates cost the server."""
    ns = f"bench-none-{uuid.uuid4().hex[:5]}"
    async with typed.Client(cfg) as api:
        await api.dynamic.resource(NAMESPACES).create({"metadata": {"name": ns}})
        watcher = Watcher(api, ns)
        await watcher.start()
        try:
            seen = watcher.wait_for_added(count)
            server.start()
            started = time.perf_counter()
            await _create_all(cfg, ns, count, clients)
            finished = await asyncio.wait_for(seen, 600)
            cpu = server.per_object_us(count)
        finally:
            await watcher.stop()
            with contextlib.suppress(errors.APIError):
                await api.dynamic.resource(NAMESPACES).delete(ns)
    seconds = finished - started
    return {"operator": "none", "workers": 0, "objects": count, "seconds": round(seconds, 3),
            "objects_per_s": round(count / seconds, 1), **cpu}  # fmt: skip


async def one_run(
    cfg: Config,
    kubeconfig: str,
    mode: str,
    workers: int,
    count: int,
    clients: int,
    samples: int,
    server: ServerCPU,
) -> dict[str, Any]:
    ns = f"bench-{mode.replace('+', '-')}-{workers}-{uuid.uuid4().hex[:5]}"
    async with typed.Client(cfg) as api:
        await api.dynamic.resource(NAMESPACES).create({"metadata": {"name": ns}})
        watcher = Watcher(api, ns)
        await watcher.start()
        try:
            async with operator(kubeconfig, mode, ns, workers) as proc:
                warm = watcher.wait_for("warmup")
                await api.dynamic.resource(ops.WIDGETS, ns).create(_widget("warmup", 1))
                await asyncio.wait_for(warm, 60)
                all_done = watcher.wait_for_count(count + 1)
                cpu_before = _client.process_cpu_seconds(proc.pid)
                server.start()
                started = time.perf_counter()
                await _create_all(cfg, ns, count, clients)
                created = time.perf_counter()
                finished = await asyncio.wait_for(all_done, 600)
                cpu = _client.process_cpu_seconds(proc.pid) - cpu_before
                server_cpu = server.per_object_us(count)
                latencies = []
                for i in range(samples):
                    name = f"lat-{i}"
                    fut = watcher.wait_for(name)
                    t0 = time.perf_counter()
                    await api.dynamic.resource(ops.WIDGETS, ns).create(_widget(name, i))
                    latencies.append((await asyncio.wait_for(fut, 30)) - t0)
                rss = _client.process_rss_mib(proc.pid) or 0.0
        finally:
            await watcher.stop()
            with contextlib.suppress(errors.APIError):
                await api.dynamic.resource(NAMESPACES).delete(ns)
    seconds = finished - started
    return {
        "operator": mode,
        "workers": workers if workers > 0 else "default",
        "objects": count,
        "seconds": round(seconds, 3),
        "objects_per_s": round(count / seconds, 1),
        "create_seconds": round(created - started, 3),
        "latency_ms_median": round(statistics.median(latencies) * 1000, 2) if latencies else None,
        "operator_cpu_ms_per_object": round(cpu * 1000 / count, 3),
        "rss_mib": round(rss, 1),
        **server_cpu,
    }


async def _create_all(cfg: Config, ns: str, count: int, clients: int) -> None:
    async def client(k: int) -> None:
        async with typed.Client(cfg) as api:
            rc = api.dynamic.resource(ops.WIDGETS, ns)
            for i in range(k, count, clients):
                await rc.create(_widget(f"w-{i}", i))

    await asyncio.gather(*(client(k) for k in range(clients)))


async def run(args: argparse.Namespace) -> dict[str, Any]:
    cfg = dataclasses.replace(Config.from_kubeconfig(args.kubeconfig), qps=0.0)
    async with typed.Client(cfg) as api:
        try:
            await api.dynamic.resource(CRDS).create(ops.CRD)
        except errors.AlreadyExists:
            pass
    operators = [("kplane", 1), ("kplane", 8), *((("kopf", 0),) if not args.skip_kopf else ())]
    if args.operators:
        operators = [(m, int(w)) for m, _, w in (o.partition(":") for o in args.operators.split(","))]
    server = ServerCPU(args.server_pid)
    runs = []
    for _ in range(args.rounds):
        if args.server_pid is not None:
            runs.append(await creates_only(cfg, args.count, args.clients, server))
        for mode, workers in operators:
            load = (args.count, args.clients, args.latency_samples)
            runs.append(await one_run(cfg, args.kubeconfig, mode, workers, *load, server))
    medians = _medians(runs)
    kopf = next((m for m in medians if m["operator"].startswith("kopf")), None)
    best = max((m["objects_per_s"] for m in medians if m["operator"].startswith("kplane")), default=0.0)
    out: dict[str, Any] = {
        "benchmark": "reconcile_throughput",
        "rounds": args.rounds,
        "runs": runs,
        "medians": medians,
        "kplane_vs_kopf": round(best / kopf["objects_per_s"], 1) if kopf else None,
    }
    if args.server_pid is not None:
        out.update(_server_costs(medians))
    return out


def _medians(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (operator, workers), the median of every numeric figure over the rounds, in run order."""
    groups: dict[tuple[str, Any], list[dict[str, Any]]] = {}
    for r in runs:
        groups.setdefault((r["operator"], r["workers"]), []).append(r)
    out = []
    for (mode, workers), group in groups.items():
        row: dict[str, Any] = {"operator": mode, "workers": workers, "rounds": len(group)}
        for key, value in group[0].items():
            values = [g[key] for g in group if g.get(key) is not None]
            if isinstance(value, int | float) and key not in ("workers", "objects") and values:
                row[key] = round(statistics.median(values), 3)
        out.append(row)
    return out


def _server_costs(medians: list[dict[str, Any]]) -> dict[str, Any]:
    """What a create and a reconcile cost the server's main thread, and what that allows.

    Each operator's objects/s cannot exceed 1 / (main-thread CPU per object): the thread is one
    core at most, and even an operator that cost nothing would leave the server that work. So
    ``kplane_vs_kopf_ceiling`` (kplane's bound over kopf's measured rate) is the best ratio any
    kplane operator doing this reconcile could reach against that kopf run on this server.
    """
    out: dict[str, Any] = {}
    for m in medians:
        us = m.get("server_main_thread_us_per_object")
        if us:
            m["server_bound_objects_per_s"] = round(1e6 / us)
    create = next(
        (m.get("server_main_thread_us_per_object") for m in medians if m["operator"] == "none"), None
    )
    out["server_main_thread_us_per_create"] = create
    kplane = [
        m for m in medians if m["operator"].startswith("kplane") and m.get("server_bound_objects_per_s")
    ]
    kopf = next((m for m in medians if m["operator"].startswith("kopf")), None)
    best = min(kplane, key=lambda m: m["server_main_thread_us_per_object"]) if kplane else None
    if best is not None and create is not None:
        out["server_main_thread_us_per_kplane_reconcile"] = round(
            best["server_main_thread_us_per_object"] - create, 1
        )
    if kopf is not None and create is not None and kopf.get("server_main_thread_us_per_object"):
        out["server_main_thread_us_per_kopf_reconcile"] = round(
            kopf["server_main_thread_us_per_object"] - create, 1
        )
    if best is not None and kopf is not None and kopf.get("objects_per_s"):
        out["kplane_vs_kopf_ceiling"] = round(best["server_bound_objects_per_s"] / kopf["objects_per_s"], 2)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--latency-samples", type=int, default=50)
    parser.add_argument("--skip-kopf", action="store_true")
    parser.add_argument("--rounds", type=int, default=1, help="repeat, alternating the operators; medians")
    parser.add_argument("--server-pid", type=int, default=None, help="the server's pid: report its CPU use")
    parser.add_argument(
        "--operators",
        default="",
        help="MODE:WORKERS,... instead of kplane:1,kplane:8,kopf:0 (modes: kplane, kplane-untraced, "
        "kopf; a +uvloop suffix runs the operator on uvloop)",
    )
    args = parser.parse_args(argv)
    print(json.dumps(asyncio.run(run(args))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
