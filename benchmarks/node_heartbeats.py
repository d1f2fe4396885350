"""Server CPU while N nodes heartbeat; one JSON line.

    python benchmarks/node_heartbeats.py [--nodes 1000] [--window 30] [--kplane PATH]
    python benchmarks/node_heartbeats.py --kubeconfig PATH --server-pid PID [--nodes 1000] [--window 30]

Without ``--kubeconfig``: starts ``kplane serve --nodes N --storage sqlite`` on a fresh data
directory (its simulated kubelets renew each node's Lease every 10 s, in its `kplane controllers` child),
waits until N Nodes are Ready, lets them settle for one renewal period, then reads the server
process's CPU time over ``--window`` seconds: ``server_cpu_pct_of_one_core`` (target < 50 % for
1,000 nodes). ``lease_renewals_per_s`` counts the Lease writes seen on a watch meanwhile.

With ``--kubeconfig`` (any API server, e.g. kube-apiserver): this process plays N kubelets
itself, renewing N Leases in ``kube-node-lease`` every 10 s (one PUT each, spread over the period)
and reads the CPU of ``--server-pid`` over the window.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import pathlib
import re
import shutil
import signal
import sys
import tempfile
import time
from typing import Any

import _client
import aiohttp

SERVING = re.compile(rb"serving (https://\S+)")
RENEW = 10.0


async def _ready_nodes(http: aiohttp.ClientSession, server: str) -> int:
    data = json.loads(await _client.request(http, "GET", f"{server}/api/v1/nodes"))
    count = 0
    for node in data.get("items") or []:
        for c in (node.get("status") or {}).get("conditions") or []:
            if c.get("type") == "Ready" and c.get("status") == "True":
                count += 1
    return count


async def _count_lease_writes(http: aiohttp.ClientSession, server: str, seconds: float) -> int:
    url = f"{server}/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases?watch=1&resourceVersion=0"
    seen = 0
    deadline = time.monotonic() + seconds
    try:
        async with http.get(url, timeout=aiohttp.ClientTimeout(total=seconds + 5)) as resp:
            async for line in resp.content:
                if time.monotonic() >= deadline:
                    break
                if b'"MODIFIED"' in line[:40]:
                    seen += 1
    except (TimeoutError, aiohttp.ClientError):
        pass
    return seen


async def _play_kubelets(http: aiohttp.ClientSession, server: str, nodes: int, stop: asyncio.Event) -> None:
    """N kubelets' Lease renewals, as upstream's: create once, then PUT every 10 s."""
    base = f"{server}/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
    leases: list[dict[str, Any]] = []
    for i in range(nodes):
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": f"bench-node-{i}"},
            "spec": {"holderIdentity": f"bench-node-{i}", "leaseDurationSeconds": 40},
        }
        raw = await _client.request(http, "POST", base, body=json.dumps(body).encode(), ok=(201, 409))
        lease = json.loads(raw)
        if lease.get("kind") != "Lease":
            lease = json.loads(await _client.request(http, "GET", f"{base}/bench-node-{i}"))
        leases.append(lease)
    while not stop.is_set():
        for i, lease in enumerate(leases):
            if stop.is_set():
                return
            await asyncio.sleep(RENEW / nodes)
            lease["spec"]["renewTime"] = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
            raw = await _client.request(
                http, "PUT", f"{base}/{lease['metadata']['name']}", body=json.dumps(lease).encode()
            )
            leases[i] = json.loads(raw)


async def _measure(target: _client.Target, pid: int, window: float, nodes: int, play: bool) -> dict[str, Any]:
    async with _client.session(target, connections=4) as http:
        stop = asyncio.Event()
        player = asyncio.create_task(_play_kubelets(http, target.server, nodes, stop)) if play else None
        await asyncio.sleep(RENEW)  # one full renewal period before measuring
        cpu0, t0 = _client.process_cpu_seconds(pid), time.monotonic()
        writes = await _count_lease_writes(http, target.server, window)
        cpu1, t1 = _client.process_cpu_seconds(pid), time.monotonic()
        stop.set()
        if player is not None:
            await player
        return {
            "benchmark": "node_heartbeats",
            "nodes": nodes,
            "window_s": round(t1 - t0, 2),
            "server_cpu_pct_of_one_core": round(100 * (cpu1 - cpu0) / (t1 - t0), 1),
            "lease_renewals_per_s": round(writes / (t1 - t0), 1),
        }


async def _with_kplane(kplane: str, nodes: int, window: float) -> dict[str, Any]:
    data_dir = pathlib.Path(tempfile.mkdtemp(prefix="kplane-bench-nodes-"))
    proc = await asyncio.create_subprocess_exec(
        kplane, "serve", "--data-dir", str(data_dir), "--port", "0", "--nodes", str(nodes),
        stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert proc.stdout is not None
    try:
        while not SERVING.search(await asyncio.wait_for(proc.stdout.readline(), timeout=30)):
            pass
        target = _client.load_kubeconfig(data_dir / "kubeconfig")
        started = time.monotonic()
        async with _client.session(target) as http:
            while await _ready_nodes(http, target.server) < nodes:
                if time.monotonic() - started > 300:
                    raise RuntimeError("nodes not Ready within 300 s")
                await asyncio.sleep(0.5)
        registered = time.monotonic() - started
        result = await _measure(target, proc.pid, window, nodes, play=False)
        result["registration_s"] = round(registered, 2)
        return result
    finally:
        proc.send_signal(signal.SIGTERM)
        await proc.wait()
        shutil.rmtree(data_dir, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--window", type=float, default=30.0)
    parser.add_argument("--kubeconfig", type=pathlib.Path, default=None)
    parser.add_argument("--server-pid", type=int, default=None)
    parser.add_argument("--kplane", default=shutil.which("kplane") or "kplane")
    args = parser.parse_args()
    if args.kubeconfig is not None:
        if args.server_pid is None:
            parser.error("--server-pid is required with --kubeconfig")
        target = _client.load_kubeconfig(args.kubeconfig)
        result = _client.run(_measure(target, args.server_pid, args.window, args.nodes, play=True))
    else:
        result = _client.run(_with_kplane(args.kplane, args.nodes, args.window))
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
