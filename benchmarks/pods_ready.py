"""Pods per second from create to Ready (scheduler + kubelet), one JSON line.

    python benchmarks/pods_ready.py --kubeconfig PATH [--pods 1000] [--clients 8]

Against any cluster with a scheduler and kubelets (``kplane serve``; a kind or kwok cluster):
watches pods in a fresh namespace, creates ``--pods`` pods (no resource requests) from
``--clients`` concurrent connections, and records when each is first seen with condition Ready
True. ``pods_per_s`` = pods / (last Ready - first create) (target ≥ 200 for kplane); also the
create rate alone and the create-to-Ready latency (median, p99). The namespace is deleted afterwards.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import pathlib
import sys
import time
import uuid
from typing import Any

import _client
import aiohttp

BODY = (
    b'{"apiVersion":"v1","kind":"Pod","metadata":{"name":"%s","labels":{"bench":"ready"}},'
    b'"spec":{"containers":[{"name":"app","image":"registry.example/app:1.0"}]}}'
)


async def _watch_ready(
    http: aiohttp.ClientSession,
    server: str,
    ns: str,
    want: int,
    ready: dict[str, float],
    started: asyncio.Event,
) -> None:
    url = f"{server}/api/v1/namespaces/{ns}/pods?watch=1&allowWatchBookmarks=false"
    async with http.get(url, timeout=aiohttp.ClientTimeout(total=None)) as resp:
        started.set()
        async for line in resp.content:
            event: dict[str, Any] = json.loads(line)
            obj = event.get("object") or {}
            name = (obj.get("metadata") or {}).get("name")
            if name in ready:
                continue
            for c in (obj.get("status") or {}).get("conditions") or []:
                if c.get("type") == "Ready" and c.get("status") == "True":
                    ready[name] = time.perf_counter()
            if len(ready) >= want:
                return


async def _bench(target: _client.Target, pods: int, clients: int, wait_s: float) -> dict[str, Any]:
    ns = f"bench-ready-{uuid.uuid4().hex[:6]}"
    async with _client.session(target, connections=clients + 1) as http:
        await _client.ensure_namespace(http, target.server, ns)
        ready: dict[str, float] = {}
        created: dict[str, float] = {}
        watching = asyncio.Event()
        watcher = asyncio.create_task(_watch_ready(http, target.server, ns, pods, ready, watching))
        await watching.wait()
        names = [f"p-{i}" for i in range(pods)]
        url = f"{target.server}/api/v1/namespaces/{ns}/pods"

        async def client(mine: list[str]) -> None:
            for name in mine:
                created[name] = time.perf_counter()
                await _client.request(http, "POST", url, body=BODY % name.encode())

        t0 = time.perf_counter()
        await asyncio.gather(*(client(names[i::clients]) for i in range(clients)))
        t_created = time.perf_counter()
        try:
            await asyncio.wait_for(watcher, wait_s)
        except TimeoutError:
            pass
        await _client.delete_namespace(http, target.server, ns)
    last = max(ready.values()) if ready else float("nan")
    return {
        "benchmark": "pods_ready",
        "pods": pods,
        "ready": len(ready),
        "creates_per_s": round(pods / (t_created - t0), 1),
        "pods_per_s": round(len(ready) / (last - t0), 1) if ready else 0.0,
        "create_to_ready": _client.quantiles_ms([ready[n] - created[n] for n in ready]),
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--kubeconfig", type=pathlib.Path, required=True)
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--timeout", type=float, default=120.0)
    args = parser.parse_args()
    target = _client.load_kubeconfig(args.kubeconfig)
    print(json.dumps(_client.run(_bench(target, args.pods, args.clients, args.timeout))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
