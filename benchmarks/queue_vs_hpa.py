"""Queue-length autoscaling against CPU autoscaling on one bursty workload; one JSON line.

    python benchmarks/queue_vs_hpa.py --kubeconfig PATH [--redis-url redis://...] [--burst 200]
        [--per-replica 10] [--rate 1] [--max 20] [--cooldown 60] [--duration 150]

Two identical worker Deployments (1 replica, 100m CPU request) drain two Redis lists. One is
scaled by a HorizontalPodAutoscaler (CPU at 50 % of request, scale-down stabilization
``--cooldown``), the other by the example ``QueueScaler`` operator (``examples/queuescaler``:
``--per-replica`` messages per replica, the same cool-down, polling every 5 s), run in this process
with kplane.runtime. The benchmark plays the workers: every 0.5 s each Ready pod takes ``--rate``
messages per second off its list, and while a list is not empty its pods report the CPU a busy
worker uses (100m, annotation ``kplane.dev/cpu-usage``; 5m when idle), which is all the HPA can see.

At t = 0 the same burst of ``--burst`` messages lands on both lists. Measured per autoscaler: the
seconds until ``ceil(burst / per-replica)`` (at most ``--max``) replicas are Ready
(``enough_s``), until the list is empty (``drained_s``), and the replica-seconds spent over the
run (Ready pods integrated over time, and ``spec.replicas`` integrated: what a cluster reserves).

Needs a server running the HPA controller and serving ``metrics.k8s.io`` from pod usage, i.e.
``kplane serve`` (its simulated kubelet reports the annotation); ``redis-server`` is started on a
free loopback port unless ``--redis-url`` is given.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import pathlib
import shutil
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from examples.queuescaler import controller, crd, local, resp
from kplane import runtime
from kplane.api import errors
from kplane.client import config as config_mod
from kplane.client import dynamic, typed
from kplane.client.options import ListOptions
from kplane.testing import crds as crds_mod

PODS = dynamic.Resource("", "v1", "pods", "Pod", namespaced=True)
NAMESPACES = dynamic.Resource("", "v1", "namespaces", "Namespace", namespaced=False)
HPAS = dynamic.Resource(
    "autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler", namespaced=True
)
TICK = 0.5
BUSY, IDLE = "100m", "5m"
USAGE = "kplane.dev/cpu-usage"


@contextlib.contextmanager
def redis_server(url: str | None) -> Iterator[str]:
    if url:
        yield url
        return
    binary = shutil.which("redis-server")
    if binary is None:
        sys.exit(
            "redis-server not found: install it (Debian: apt-get install redis-server) or pass --redis-url"
        )
    with local.private_redis(binary) as started:
        yield started


def deployment(name: str) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels, "annotations": {USAGE: IDLE}},
                "spec": {
                    "containers": [
                        {
                            "name": "worker",
                            "image": "registry.example/worker:1",
                            "resources": {"requests": {"cpu": "100m"}},
                        }
                    ]
                },
            },
        },
    }


def hpa(name: str, args: argparse.Namespace) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
            "minReplicas": 1,
            "maxReplicas": args.max,
            "metrics": [
                {
                    "type": "Resource",
                    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}},
                }
            ],
            "behavior": {"scaleDown": {"stabilizationWindowSeconds": args.cooldown}},
        },
    }


def is_ready(pod: dict[str, Any]) -> bool:
    if pod["metadata"].get("deletionTimestamp"):
        return False
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in pod.get("status", {}).get("conditions") or []
    )


class Pool:
    """One worker Deployment and its list: what the simulated workers do each tick, and the figures."""

    def __init__(self, name: str, dc: dynamic.DynamicClient, ns: str, redis: resp.Redis, enough: int) -> None:
        self.name, self.dc, self.ns, self.redis, self.enough = name, dc, ns, redis, enough
        self.credit = 0.0
        self.enough_s: float | None = None
        self.drained_s: float | None = None
        self.ready_replica_s = 0.0
        self.spec_replica_s = 0.0
        self.peak = 0

    async def tick(self, elapsed: float, rate: float) -> None:
        pods = (await self.dc.resource(PODS, self.ns).list(ListOptions(label_selector=f"app={self.name}")))[
            "items"
        ]
        ready = [p for p in pods if is_ready(p)]
        spec = (await self.dc.resource(controller.DEPLOYMENTS, self.ns).get(self.name))["spec"]["replicas"]
        self.ready_replica_s += len(ready) * TICK
        self.spec_replica_s += spec * TICK
        self.peak = max(self.peak, len(ready))
        if self.enough_s is None and len(ready) >= self.enough:
            self.enough_s = elapsed
        self.credit += len(ready) * rate * TICK
        take = int(self.credit)
        self.credit -= take
        if take:
            await self.redis.command("LPOP", self.name, take)
        length = await self.redis.llen(self.name)
        if length == 0 and self.drained_s is None:
            self.drained_s = elapsed
        want = BUSY if length else IDLE
        for pod in ready:
            if (pod["metadata"].get("annotations") or {}).get(USAGE) != want:
                with contextlib.suppress(errors.NotFound):
                    await self.dc.resource(PODS, self.ns).patch(
                        pod["metadata"]["name"], {"metadata": {"annotations": {USAGE: want}}}
                    )

    def figures(self) -> dict[str, Any]:
        return {
            "enough_replicas": self.enough,
            "enough_s": None if self.enough_s is None else round(self.enough_s, 1),
            "drained_s": None if self.drained_s is None else round(self.drained_s, 1),
            "peak_ready": self.peak,
            "ready_replica_seconds": round(self.ready_replica_s),
            "spec_replica_seconds": round(self.spec_replica_s),
        }


@contextlib.asynccontextmanager
async def operator(config: config_mod.Config) -> AsyncIterator[runtime.Manager]:
    manager = runtime.Manager(config, runtime.ManagerOptions(metrics_bind_address="0"))
    reconciler = await controller.setup(manager)
    task = asyncio.get_running_loop().create_task(manager.start())
    try:
        yield manager
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
        await reconciler.close()
        await manager.api.close()


async def main(args: argparse.Namespace, url: str) -> dict[str, Any]:
    config = config_mod.Config.from_kubeconfig(args.kubeconfig)
    ns = f"qbench-{uuid.uuid4().hex[:6]}"
    enough = min(args.max, math.ceil(args.burst / args.per_replica))
    redis = resp.Redis(url)
    installer = typed.Client(config)
    try:  # before the operator starts, so its informer finds the resource at once
        await crds_mod.install(installer, [crd.MANIFEST], timeout=30)
    finally:
        await installer.close()
    async with operator(config) as manager:
        dc = manager.api.dynamic
        await dc.resource(NAMESPACES).create(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
        )
        try:
            for name in ("hpa-workers", "queue-workers"):
                await redis.command("DEL", name)
                await dc.resource(controller.DEPLOYMENTS, ns).create(deployment(name))
            await dc.resource(HPAS, ns).create(hpa("hpa-workers", args))
            scaler = local.queue_scaler(
                "queue-workers",
                deployment="queue-workers",
                url=url,
                key="queue-workers",
                per_replica=args.per_replica,
                max_replicas=args.max,
                cooldown=args.cooldown,
            )
            await dc.resource(crd.QUEUE_SCALERS, ns).create(scaler)
            pools = [Pool(n, dc, ns, redis, enough) for n in ("hpa-workers", "queue-workers")]
            for _ in range(240):  # both pools start from one Ready worker
                counts = []
                for pool in pools:
                    pods = (await dc.resource(PODS, ns).list(ListOptions(label_selector=f"app={pool.name}")))[
                        "items"
                    ]
                    counts.append(sum(is_ready(p) for p in pods))
                if counts == [1, 1]:
                    break
                await asyncio.sleep(0.25)
            await asyncio.sleep(20)  # a few metric reports and HPA syncs at rest
            for pool in pools:
                await redis.command("RPUSH", pool.name, *[f"m{i}" for i in range(args.burst)])
            start = time.monotonic()
            while (elapsed := time.monotonic() - start) < args.duration:
                await asyncio.gather(*(pool.tick(elapsed, args.rate) for pool in pools))
                await asyncio.sleep(max(0.0, start + elapsed + TICK - time.monotonic()))
            return {
                "benchmark": "queue_vs_hpa",
                "burst": args.burst,
                "per_replica": args.per_replica,
                "rate_per_worker": args.rate,
                "max_replicas": args.max,
                "cooldown_s": args.cooldown,
                "duration_s": args.duration,
                "hpa": pools[0].figures(),
                "queuescaler": pools[1].figures(),
            }
        finally:
            await redis.close()
            if not args.keep:
                with contextlib.suppress(errors.APIError):
                    await dc.resource(NAMESPACES).delete(ns)


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kubeconfig", required=True)
    p.add_argument("--redis-url")
    p.add_argument("--burst", type=int, default=200)
    p.add_argument("--per-replica", type=int, default=10)
    p.add_argument("--rate", type=float, default=1.0, help="messages per second one worker processes")
    p.add_argument("--max", type=int, default=20)
    p.add_argument("--cooldown", type=int, default=60)
    p.add_argument("--duration", type=float, default=150.0)
    p.add_argument("--keep", action="store_true")
    return p.parse_args()


if __name__ == "__main__":
    arguments = parse()
    with redis_server(arguments.redis_url) as redis_url:
        print(json.dumps(asyncio.run(main(arguments, redis_url))))
