"""etcd's ceiling for kplane's client: raw puts and ranges over gRPC and over the JSON gateway.

    python benchmarks/etcd_client.py --endpoint 127.0.0.1:2379 [--count 3000] [--concurrency 64]

Runs against any etcd v3 (3.4+): it writes ``--count`` keys under a fresh prefix (deleted
afterwards) and prints one JSON line per transport and mode:

* ``grpc``: kplane's own client (``kplane.server.storage.etcd.EtcdClient``: gRPC over its own
  HTTP/2 protocol on the event loop, hand-coded messages), ``KV/Put`` and ``KV/Range``;
* ``grpcio``: the same messages through grpcio's asyncio API (generic calls), where grpcio is
  installed (it is not a kplane dependency): what the client replaced;
* ``gateway``: etcd's JSON gateway (``POST /v3/kv/put``, ``/v3/kv/range`` with base64 keys and
  values) over one aiohttp session.

``sequential`` sends one request at a time (latency: median and p99 in ms); ``concurrent`` keeps
``--concurrency`` requests in flight (throughput in requests/s). ``cpu_us`` is this process's CPU
time per request (every thread). The values are 1 KiB, about a small ConfigMap. This is the
ceiling any storage backend on that client can reach on this machine: compare
``benchmarks/create_throughput.py`` against ``kplane serve --storage etcd://...``.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import statistics
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp

from kplane.server.storage.etcd import EtcdClient, wire

Op = Callable[[int], Awaitable[None]]


async def _measure(name: str, mode: str, op: Op, count: int, concurrency: int) -> dict[str, object]:
    latencies: list[float] = []
    start, cpu = time.perf_counter(), time.process_time()
    if mode == "sequential":
        for i in range(count):
            t = time.perf_counter()
            await op(i)
            latencies.append(time.perf_counter() - t)
    else:
        it = iter(range(count))

        async def worker() -> None:
            for i in it:
                await op(i)

        await asyncio.gather(*(worker() for _ in range(concurrency)))
    elapsed = time.perf_counter() - start
    cpu = time.process_time() - cpu
    out: dict[str, object] = {"transport": name, "mode": mode, "requests": count}
    out["per_s"] = round(count / elapsed)
    out["cpu_us"] = round(cpu / count * 1e6, 1)
    if latencies:
        latencies.sort()
        out["median_ms"] = round(statistics.median(latencies) * 1000, 3)
        out["p99_ms"] = round(latencies[int(len(latencies) * 0.99) - 1] * 1000, 3)
    return out


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--endpoint", default="127.0.0.1:2379")
    ap.add_argument("--count", type=int, default=3000)
    ap.add_argument("--concurrency", type=int, default=64)
    args = ap.parse_args()
    prefix = f"/kplane-bench-{uuid.uuid4().hex[:8]}/"
    value = b"x" * 1024
    client = EtcdClient([args.endpoint], timeout=30)
    session = aiohttp.ClientSession()
    url = f"http://{args.endpoint}/v3"

    def key(tag: str, i: int) -> bytes:
        return f"{prefix}{tag}/{i:08d}".encode()

    def b64(b: bytes) -> str:
        return base64.b64encode(b).decode()

    def grpc_put(tag: str) -> Op:
        async def op(i: int) -> None:
            await client.call("KV/Put", wire.put_request(key(tag, i), value), write=True)

        return op

    def grpc_get(tag: str) -> Op:
        async def op(i: int) -> None:
            wire.range_response(await client.call("KV/Range", wire.range_request(key(tag, i))))

        return op

    grpcio = _grpcio_channel(args.endpoint)

    def grpcio_put(tag: str) -> Op:
        assert grpcio is not None
        call = grpcio.unary_unary("/etcdserverpb.KV/Put")

        async def op(i: int) -> None:
            await call(wire.put_request(key(tag, i), value), timeout=30)

        return op

    def grpcio_get(tag: str) -> Op:
        assert grpcio is not None
        call = grpcio.unary_unary("/etcdserverpb.KV/Range")

        async def op(i: int) -> None:
            wire.range_response(await call(wire.range_request(key(tag, i)), timeout=30))

        return op

    def gw_put(tag: str) -> Op:
        async def op(i: int) -> None:
            body = {"key": b64(key(tag, i)), "value": b64(value)}
            async with session.post(f"{url}/kv/put", json=body) as r:
                await r.read()
                r.raise_for_status()

        return op

    def gw_get(tag: str) -> Op:
        async def op(i: int) -> None:
            async with session.post(f"{url}/kv/range", json={"key": b64(key(tag, i))}) as r:
                json.loads(await r.read())
                r.raise_for_status()

        return op

    transports = [("grpc", grpc_put, grpc_get), ("gateway", gw_put, gw_get)]
    if grpcio is not None:
        transports.insert(1, ("grpcio", grpcio_put, grpcio_get))
    try:
        for name, put, get in transports:
            for mode in ("sequential", "concurrent"):
                tag = f"{name}-{mode}"
                result = await _measure(name, mode, put(tag), args.count, args.concurrency)
                print(json.dumps({"op": "put", **result}), flush=True)
                result = await _measure(name, mode, get(tag), args.count, args.concurrency)
                print(json.dumps({"op": "range", **result}), flush=True)
    finally:
        end = wire.prefix_end(prefix.encode())
        await client.call("KV/DeleteRange", wire.delete_request(prefix.encode(), end), write=True)
        await session.close()
        await client.close()
        if grpcio is not None:
            await grpcio.close()


def _grpcio_channel(endpoint: str) -> Any:
    """A grpcio asyncio channel to ``endpoint``, or None where grpcio is not installed."""
    try:
        import grpc.aio
    except ImportError:
        return None
    return grpc.aio.insecure_channel(endpoint)


if __name__ == "__main__":
    asyncio.run(main())
