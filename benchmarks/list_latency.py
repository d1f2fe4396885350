"""Latency of listing 2,000 ConfigMaps, whole and paged; one JSON line.

    python benchmarks/list_latency.py --kubeconfig PATH [--objects 2000] [--rounds 30] [--page 500]

Makes sure namespace ``--namespace`` (default ``bench-list``) holds at least ``--objects``
ConfigMaps, creating the missing ones with 16 concurrent clients, then times ``--rounds`` full lists
(``GET .../configmaps``) and ``--rounds`` paged lists (``limit=--page`` and ``continue`` until the last
page). A list's time runs from sending the request to having the whole body; decoding it to check
the item count and read the continue token is not counted, since that is the client's cost. The
namespace is kept so that later runs skip the filling step.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
import urllib.parse
from typing import Any

import _client
import aiohttp
import orjson

BODY = (
    b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm-%05d","labels":{"bench":"list"}},'
    b'"data":{"greeting":"hello","config.yaml":"replicas: 3\\nimage: registry.example/app:1.0\\n"}}'
)


async def _fill(target: _client.Target, url: str, want: int) -> int:
    """Create ``cm-00000`` … up to ``want`` objects, skipping names that exist; returns how many were made."""
    async with _client.session(target) as http:
        body = await _client.request(http, "GET", url)
        have = {item["metadata"]["name"] for item in orjson.loads(body)["items"]}
    missing = [i for i in range(want) if f"cm-{i:05d}" not in have]
    if len(have) >= want or not missing:
        return 0
    queue = iter(missing)
    created = 0

    async def worker() -> None:
        nonlocal created
        async with _client.session(target) as http:
            for i in queue:
                await _client.request(http, "POST", url, body=BODY % i, ok=(201, 409))
                created += 1

    await asyncio.gather(*(worker() for _ in range(16)))
    return created


async def _timed_get(http: aiohttp.ClientSession, url: str) -> tuple[float, bytes]:
    t = time.perf_counter()
    async with http.get(url) as resp:
        data = await resp.read()
        elapsed = time.perf_counter() - t
        if resp.status != 200:
            raise _client.HTTPError("GET", url, resp.status, data)
    return elapsed, data


async def _measure(target: _client.Target, url: str, objects: int, rounds: int, page: int) -> dict[str, Any]:
    full: list[float] = []
    paged: list[float] = []
    sizes: list[int] = []
    pages = 0
    async with _client.session(target) as http:
        for _ in range(3):  # warm the connection and any server-side caches
            await _timed_get(http, url)
        for _ in range(rounds):
            elapsed, data = await _timed_get(http, url)
            full.append(elapsed)
            sizes.append(len(data))
            count = len(orjson.loads(data)["items"])
            if count < objects:
                raise SystemExit(f"list returned {count} items, expected at least {objects}")
        for _ in range(rounds):
            total = 0.0
            pages = 0
            items = 0
            token = ""
            while True:
                query = f"?limit={page}" + (
                    f"&continue={urllib.parse.quote(token, safe='')}" if token else ""
                )
                elapsed, data = await _timed_get(http, url + query)
                total += elapsed
                pages += 1
                decoded = orjson.loads(data)
                items += len(decoded["items"])
                token = decoded["metadata"].get("continue") or ""
                if not token:
                    break
            if items < objects:
                raise SystemExit(f"paged list returned {items} items, expected at least {objects}")
            paged.append(total)
    return {
        "full_list": _client.quantiles_ms(full),
        "full_list_bytes": sizes[-1] if sizes else 0,
        "paged_list": _client.quantiles_ms(paged),
        "pages": pages,
    }


async def _run(args: argparse.Namespace) -> dict[str, Any]:
    target = _client.load_kubeconfig(args.kubeconfig, context=args.context, auth=args.auth)
    async with _client.session(target) as http:
        await _client.ensure_namespace(http, target.server, args.namespace)
    url = f"{target.server}/api/v1/namespaces/{args.namespace}/configmaps"
    t = time.perf_counter()
    created = await _fill(target, url, args.objects)
    fill_s = time.perf_counter() - t
    figures = await _measure(target, url, args.objects, args.rounds, args.page)
    return {
        "benchmark": "list_latency",
        "server": target.server,
        "auth": target.auth,
        "namespace": args.namespace,
        "objects": args.objects,
        "created": created,
        "fill_s": round(fill_s, 3),
        "rounds": args.rounds,
        "page_size": args.page,
        **figures,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--context", default=None)
    parser.add_argument("--auth", choices=("auto", "cert", "token"), default="auto")
    parser.add_argument("--namespace", default="bench-list")
    parser.add_argument("--objects", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--page", type=int, default=500)
    args = parser.parse_args(argv)
    print(json.dumps(_client.run(_run(args))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
