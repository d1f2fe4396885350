"""Deployment rollout throughput: pods created and pods Ready per second; one JSON line.

    python benchmarks/deployment_rollout.py --kubeconfig PATH [--replicas 1000]
        [--deployments 100 --per 10] [--until ready|created] [--timeout 300]
        [--cpu-pid server=PID --cpu-pid controllers=PID]

Two phases, each in a fresh namespace (deleted afterwards unless ``--keep``; the next phase starts
once it is gone, so a phase never pays for the previous one's cleanup, which is reported apart as
``cleanup_s``):

* ``single``: one Deployment of ``--replicas`` replicas, from its POST to all its pods created and
  (``--until ready``) all Ready;
* ``many``: ``--deployments`` Deployments of ``--per`` replicas each, POSTed by 16 concurrent
  clients, to all their pods created / Ready.

Pods are counted from one watch on the namespace opened before the first POST, so the figures are
what a client sees: ``created_s`` (the last pod's ADDED event), ``ready_s`` (the last pod's
condition Ready True), and the rates ``pods / seconds``. Pods only become Ready where something
runs them (kube-controller-manager, a scheduler and kubelets, or kplane serve's simulated nodes);
with ``--until created`` the run stops once every pod exists. ``--cpu-pid NAME=PID`` (repeatable)
adds the CPU milliseconds each named process spent per pod (``cpu_ms_per_pod``, from the first
POST to the last pod counted). Works against any conformant server; ``kplane serve`` needs
``--nodes 10`` or more for 1,000 Ready pods (each node takes 110 pods).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import time
import uuid
from typing import Any

import _client
import aiohttp

CLIENTS = 16


def deployment(name: str, replicas: int) -> bytes:
    labels = {"app": name}
    body = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "app", "image": "registry.example/app:1.0"}]},
            },
        },
    }
    return json.dumps(body).encode()


class PodCounter:
    """Pods of a namespace seen by one watch: when each appeared and when each became Ready."""

    def __init__(self, want: int) -> None:
        self.want = want
        self.created: dict[str, float] = {}
        self.ready: dict[str, float] = {}
        self.all_created = asyncio.Event()
        self.all_ready = asyncio.Event()

    def feed(self, event: dict[str, Any]) -> None:
        obj = event.get("object") or {}
        uid = (obj.get("metadata") or {}).get("uid")
        if not uid or event.get("type") not in ("ADDED", "MODIFIED"):
            return
        now = time.monotonic()
        self.created.setdefault(uid, now)
        conditions = (obj.get("status") or {}).get("conditions") or ()
        if any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions):
            self.ready.setdefault(uid, now)
        if len(self.created) >= self.want:
            self.all_created.set()
        if len(self.ready) >= self.want:
            self.all_ready.set()


async def watch(http: aiohttp.ClientSession, server: str, ns: str, counter: PodCounter) -> None:
    url = f"{server}/api/v1/namespaces/{ns}/pods?watch=1&allowWatchBookmarks=false"
    while True:
        async with http.get(url, timeout=aiohttp.ClientTimeout(total=None)) as resp:
            if resp.status != 200:
                raise _client.HTTPError("GET", url, resp.status, await resp.read())
            async for line in resp.content:
                if line.strip():
                    counter.feed(json.loads(line))


async def phase(
    target: _client.Target,
    sizes: list[int],
    until: str,
    limit: float,
    keep: bool,
    cpu: _client.CPUMeter,
) -> dict[str, Any]:
    ns = f"rollout-{uuid.uuid4().hex[:6]}"
    total = sum(sizes)
    counter = PodCounter(total)
    async with _client.session(target, connections=CLIENTS + 2) as http:
        await _client.ensure_namespace(http, target.server, ns)
        watcher = asyncio.create_task(watch(http, target.server, ns, counter))
        await asyncio.sleep(0.2)  # the watch is open before the clock starts
        url = f"{target.server}/apis/apps/v1/namespaces/{ns}/deployments"
        queue = list(enumerate(sizes))
        cpu.start()
        start = time.monotonic()

        async def post() -> None:
            while queue:
                i, size = queue.pop()
                await _client.request(http, "POST", url, body=deployment(f"d{i}", size))

        await asyncio.gather(*(post() for _ in range(min(CLIENTS, len(sizes)))))
        out: dict[str, Any] = {"deployments": len(sizes), "pods": total}
        try:
            async with asyncio.timeout(limit):
                await counter.all_created.wait()
                created_s = max(counter.created.values()) - start
                out.update(created_s=round(created_s, 3), created_pods_per_s=round(total / created_s, 1))
                if until == "ready":
                    await counter.all_ready.wait()
                    ready_s = max(counter.ready.values()) - start
                    out.update(ready_s=round(ready_s, 3), ready_pods_per_s=round(total / ready_s, 1))
        except TimeoutError:
            out.update(timed_out=True, seen_created=len(counter.created), seen_ready=len(counter.ready))
        spent = cpu.stop()
        if spent:
            out["cpu_ms_per_pod"] = {name: round(s / total * 1000, 2) for name, s in spent.items()}
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError, aiohttp.ClientError):
            await watcher
        if not keep:
            await _client.delete_namespace(http, target.server, ns)
            waited = await _client.namespace_gone(http, target.server, ns, limit)
            out["cleanup_s"] = round(waited, 2) if waited is not None else None
    return out


async def main(args: argparse.Namespace) -> None:
    target = _client.load_kubeconfig(args.kubeconfig, context=args.context)
    cpu = _client.CPUMeter(_client.parse_pids(args.cpu_pid))
    many = [args.per] * args.deployments
    result = {
        "single": await phase(target, [args.replicas], args.until, args.timeout, args.keep, cpu),
        "many": await phase(target, many, args.until, args.timeout, args.keep, cpu),
        "until": args.until,
    }
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    fmt = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=fmt)
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--context", default=None)
    parser.add_argument("--replicas", type=int, default=1000)
    parser.add_argument("--deployments", type=int, default=100)
    parser.add_argument("--per", type=int, default=10)
    parser.add_argument("--until", choices=("ready", "created"), default="ready")
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--cpu-pid", action="append", default=[], metavar="NAME=PID")
    args = parser.parse_args()
    if args.replicas < 1 or args.deployments < 1 or args.per < 1:
        sys.exit("--replicas, --deployments and --per must be positive")
    try:
        _client.parse_pids(args.cpu_pid)
    except ValueError as err:
        parser.error(str(err))
    _client.run(main(args))
