"""Watch delivery latency: create sent → ADDED event received; one JSON line.

    python benchmarks/watch_latency.py --kubeconfig PATH [--objects 500] [--gap-ms 5 10] [--watchers 1]

``--creator-kubeconfig`` sends the creates to another server (a replica sharing the same etcd and
credentials), so the figure is the delivery from one server's write to another's watch.

This process opens ``--watchers`` watches on the ConfigMaps of a fresh namespace. A second process
(so that neither side's event loop delays the other's timestamps) then creates ``--objects``
ConfigMaps one at a time, each sent a random 5-10 ms after the previous one was answered, and
records when it sent each (``--client raw``, the default, sends pre-built bytes on one keep-alive
connection, see ``_rawhttp``, so the send time is not inflated by client-side request building).
Both sides read ``time.monotonic()``, which on Linux is one clock for the
whole machine. The latency of an event is its arrival on a watch (the line read, before decoding)
minus the send time of its create; every watcher's events count. The namespace is deleted at the
end.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import random
import sys
import time
import uuid
from typing import Any

import _client
import _rawhttp
import aiohttp
import orjson

BODY = (
    b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"%s","labels":{"bench":"watch"}},'
    b'"data":{"greeting":"hello"}}'
)


async def _create(
    kubeconfig: str,
    context: str | None,
    auth: str,
    url: str,
    objects: int,
    gap: tuple[float, float],
    client_kind: str = "raw",
) -> dict[str, Any]:
    target = _client.load_kubeconfig(kubeconfig, context=context, auth=auth)
    sent: dict[str, float] = {}
    answered: list[float] = []
    rng = random.Random(1)
    if client_kind == "raw":
        conn = _rawhttp.RawConnection(target.server, target.ssl_context, target.headers)
        await conn.connect()
        path = url[len(target.server) :]
        try:
            for i in range(3):  # warm the connection
                await conn.request(conn.build("POST", path, BODY % f"warm-{i}".encode()))
            for i in range(objects):
                name = f"w-{i:05d}"
                raw = conn.build("POST", path, BODY % name.encode())
                await asyncio.sleep(rng.uniform(*gap))
                t = time.monotonic()
                status, reply = await conn.request(raw)
                answered.append(time.monotonic() - t)
                if status != 201:
                    raise _client.HTTPError("POST", url, status, reply)
                sent[name] = t
        finally:
            conn.close()
        return {"sent": sent, "answered": answered}
    async with _client.session(target) as http:
        for i in range(3):  # warm the connection
            await _client.request(http, "POST", url, body=BODY % f"warm-{i}".encode())
        for i in range(objects):
            name = f"w-{i:05d}"
            body = BODY % name.encode()
            await asyncio.sleep(rng.uniform(*gap))
            t = time.monotonic()
            await _client.request(http, "POST", url, body=body)
            answered.append(time.monotonic() - t)
            sent[name] = t
    return {"sent": sent, "answered": answered}


def _creator_process(args: tuple[Any, ...], conn: Any) -> None:
    conn.send(_client.run(_create(*args)))
    conn.close()


class _Arrivals:
    """Arrival times of ADDED events by object name, across every watch; ``complete`` is set once
    ``expected`` events (when known) have arrived."""

    def __init__(self) -> None:
        self.times: dict[str, list[float]] = {}
        self.count = 0
        self.expected: int | None = None
        self.complete = asyncio.Event()

    def add(self, name: str, at: float) -> None:
        self.times.setdefault(name, []).append(at)
        self.count += 1
        self.check()

    def check(self) -> None:
        if self.expected is not None and self.count >= self.expected:
            self.complete.set()


async def _watch(http: aiohttp.ClientSession, url: str, arrivals: _Arrivals, opened: asyncio.Event) -> None:
    async with http.get(url) as resp:
        if resp.status != 200:
            raise _client.HTTPError("GET", url, resp.status, await resp.read())
        opened.set()
        while True:
            line = await resp.content.readline()
            now = time.monotonic()
            if not line:
                return
            event = orjson.loads(line)
            if event.get("type") == "ADDED" and event["object"]["metadata"]["name"].startswith("w-"):
                arrivals.add(event["object"]["metadata"]["name"], now)


async def _run(args: argparse.Namespace) -> dict[str, Any]:
    target = _client.load_kubeconfig(args.kubeconfig, context=args.context, auth=args.auth)
    namespace = f"bench-watch-{uuid.uuid4().hex[:6]}"
    url = f"{target.server}/api/v1/namespaces/{namespace}/configmaps"
    arrivals = _Arrivals()
    sessions = [_client.session(target) for _ in range(args.watchers)]
    try:
        await _client.ensure_namespace(sessions[0], target.server, namespace)
        listing = orjson.loads(await _client.request(sessions[0], "GET", url))
        rv = listing["metadata"].get("resourceVersion", "")
        watch_url = f"{url}?watch=1&resourceVersion={rv}"
        events = [asyncio.Event() for _ in sessions]
        watches = [
            asyncio.ensure_future(_watch(s, watch_url, arrivals, e))
            for s, e in zip(sessions, events, strict=True)
        ]
        await asyncio.wait_for(asyncio.gather(*(e.wait() for e in events)), timeout=10)

        ctx = multiprocessing.get_context("spawn")
        recv, send = ctx.Pipe(duplex=False)
        gap = (args.gap_ms[0] / 1000, args.gap_ms[1] / 1000)
        creator = ctx.Process(
            target=_creator_process,
            args=(
                (
                    args.creator_kubeconfig or args.kubeconfig,
                    args.context,
                    args.auth,
                    url,
                    args.objects,
                    gap,
                    args.client,
                ),
                send,
            ),
        )
        creator.start()
        loop = asyncio.get_running_loop()
        result: dict[str, Any] = await loop.run_in_executor(None, recv.recv)
        await loop.run_in_executor(None, creator.join)
        sent: dict[str, float] = result["sent"]

        arrivals.expected = len(sent) * len(sessions)
        arrivals.check()
        try:
            await asyncio.wait_for(arrivals.complete.wait(), timeout=5)
        except TimeoutError:
            pass  # reported as missing events
        for w in watches:
            w.cancel()
        await asyncio.gather(*watches, return_exceptions=True)
        await _client.delete_namespace(sessions[0], target.server, namespace)
    finally:
        await asyncio.gather(*(s.close() for s in sessions))

    latencies = [t - sent[name] for name in sent for t in arrivals.times.get(name, ())]
    missing = len(sent) * len(sessions) - len(latencies)
    return {
        "benchmark": "watch_latency",
        "server": target.server,
        "auth": target.auth,
        "objects": args.objects,
        "watchers": args.watchers,
        "gap_ms": args.gap_ms,
        "events": len(latencies),
        "missing_events": missing,
        "delivery": _client.quantiles_ms(latencies),
        "create_latency": _client.quantiles_ms(result["answered"]),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--context", default=None)
    parser.add_argument("--auth", choices=("auto", "cert", "token"), default="auto")
    parser.add_argument("--objects", type=int, default=500)
    parser.add_argument("--gap-ms", type=float, nargs=2, default=[5.0, 10.0], metavar=("MIN", "MAX"))
    parser.add_argument("--watchers", type=int, default=1)
    parser.add_argument(
        "--creator-kubeconfig",
        default=None,
        help="create through this server instead (another replica on the same etcd: cross-server latency)",
    )
    parser.add_argument("--client", choices=("raw", "aiohttp"), default="raw", help="how the creator sends")
    args = parser.parse_args(argv)
    print(json.dumps(_client.run(_run(args))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
