"""Pods per second from create to Ready (scheduler + kubelet), one JSON line.

    python benchmarks/pods_ready.py --kubeconfig PATH [--pods 1000] [--clients 8] [--rounds 2]
        [--overlap] [--cpu-pid server=PID --cpu-pid controllers=PID]

Against any cluster with a scheduler and kubelets (``kplane serve``; a kind or kwok cluster):
watches pods in a fresh namespace, creates ``--pods`` pods (no resource requests) from
``--clients`` concurrent connections, and records when each is first seen with condition Ready
True. Per round: ``pods_per_s`` = pods / (last Ready - first create) (target ≥ 200 for kplane);
the create rate alone and the create-to-Ready latency (median, p99). The namespace is deleted
afterwards and, unless ``--overlap``, the next round starts once it is gone (``cleanup_s``: what
deleting 1,000 pods and their events costs, measured apart); with ``--overlap`` the next round
runs while the previous namespace is being emptied, as back-to-back runs used to. ``--cpu-pid
NAME=PID`` (repeatable) adds the CPU milliseconds each named process spent per pod during the
round (``cpu_ms_per_pod``) and during the cleanup (``cleanup_cpu_s``).
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


async def _round(
    http: aiohttp.ClientSession,
    target: _client.Target,
    args: argparse.Namespace,
    cpu: _client.CPUMeter,
) -> dict[str, Any]:
    ns = f"bench-ready-{uuid.uuid4().hex[:6]}"
    pods = args.pods
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

    cpu.start()
    t0 = time.perf_counter()
    await asyncio.gather(*(client(names[i :: args.clients]) for i in range(args.clients)))
    t_created = time.perf_counter()
    try:
        await asyncio.wait_for(watcher, args.timeout)
    except TimeoutError:
        pass
    spent = cpu.stop()
    last = max(ready.values()) if ready else float("nan")
    out: dict[str, Any] = {
        "ready": len(ready),
        "creates_per_s": round(pods / (t_created - t0), 1),
        "pods_per_s": round(len(ready) / (last - t0), 1) if ready else 0.0,
        "create_to_ready": _client.quantiles_ms([ready[n] - created[n] for n in ready]),
    }
    if spent:
        out["cpu_ms_per_pod"] = {name: round(s / pods * 1000, 2) for name, s in spent.items()}
    cpu.start()
    await _client.delete_namespace(http, target.server, ns)
    if not args.overlap:
        waited = await _client.namespace_gone(http, target.server, ns, args.timeout)
        out["cleanup_s"] = round(waited, 2) if waited is not None else None
        if spent:
            out["cleanup_cpu_s"] = {name: round(s, 2) for name, s in cpu.stop().items()}
    return out


async def _bench(target: _client.Target, args: argparse.Namespace) -> dict[str, Any]:
    cpu = _client.CPUMeter(_client.parse_pids(args.cpu_pid))
    async with _client.session(target, connections=args.clients + 2) as http:
        rounds = [await _round(http, target, args, cpu) for _ in range(args.rounds)]
    return {"benchmark": "pods_ready", "pods": args.pods, "overlap": args.overlap, "rounds": rounds}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--kubeconfig", type=pathlib.Path, required=True)
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--overlap", action="store_true", help="do not wait for the namespace to go")
    parser.add_argument("--cpu-pid", action="append", default=[], metavar="NAME=PID")
    parser.add_argument("--timeout", type=float, default=120.0)
    args = parser.parse_args()
    try:
        _client.parse_pids(args.cpu_pid)
    except ValueError as err:
        parser.error(str(err))
    target = _client.load_kubeconfig(args.kubeconfig)
    print(json.dumps(_client.run(_bench(target, args))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
