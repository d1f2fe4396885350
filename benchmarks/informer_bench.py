"""Informer initial sync: seconds to sync N ConfigMaps and memory per cached object.

Creates ``--count`` ConfigMaps (default 10,000; two short data keys each, as a typical small
ConfigMap) in a fresh namespace, then starts a ``SharedIndexInformer`` on that namespace with
managedFields stripped and times ``start → has_synced``. Memory is reported two ways: the growth of
the process RSS from before the informer started to after the sync (after a GC), divided by N, and
the deep size of the cached objects (dicts, lists and strings, shared ones counted once), divided
by N. Prints one JSON line. Targets: sync ≤ 1 s; ≤ 3 KiB per ConfigMap.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import gc
import json
import os
import sys
import time
import uuid
from typing import Any

from kplane.client import Config, dynamic, rest
from kplane.client import watch as watch_mod
from kplane.informers import informer as informer_mod
from kplane.informers import reflector as reflector_mod

CONFIGMAPS = dynamic.Resource("", "v1", "configmaps", "ConfigMap", namespaced=True)
NAMESPACES = dynamic.Resource("", "v1", "namespaces", "Namespace", namespaced=False)


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def deep_size(objs: list[Any]) -> int:
    seen: set[int] = set()
    total = 0
    stack: list[Any] = list(objs)
    while stack:
        o = stack.pop()
        if id(o) in seen:
            continue
        seen.add(id(o))
        total += sys.getsizeof(o)
        if isinstance(o, dict):
            stack.extend(o.keys())
            stack.extend(o.values())
        elif isinstance(o, list | tuple):
            stack.extend(o)
    return total


async def run(args: argparse.Namespace) -> dict[str, Any]:
    cfg = dataclasses.replace(Config.from_kubeconfig(args.kubeconfig), qps=0.0)
    async with rest.RESTClient(cfg) as rc:
        dc = dynamic.DynamicClient(rc)
        ns = f"bench-informer-{uuid.uuid4().hex[:6]}"
        await dc.resource(NAMESPACES).create({"metadata": {"name": ns}})
        cms = dc.resource(CONFIGMAPS, ns)
        sem = asyncio.Semaphore(32)

        async def create(i: int) -> None:
            async with sem:
                await cms.create(
                    {"metadata": {"name": f"cm-{i:05d}"}, "data": {"key": f"value-{i}", "mode": "on"}}
                )

        await asyncio.gather(*(create(i) for i in range(args.count)))
        gc.collect()
        rss0 = rss_bytes()
        inf: informer_mod.SharedIndexInformer[Any] = informer_mod.SharedIndexInformer(
            watch_mod.ListWatch(cms),
            informer_mod.InformerOptions(transform=reflector_mod.strip_managed_fields),
        )
        t0 = time.perf_counter()
        task = inf.start()
        await inf.wait_for_sync()
        sync_s = time.perf_counter() - t0
        gc.collect()
        rss1 = rss_bytes()
        cached = inf.store.list()
        deep = deep_size(cached)
        reflector = inf.reflector
        mode = "watchlist" if reflector is not None and reflector._watch_list else "list"
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        if not args.keep:
            await dc.resource(NAMESPACES).delete(ns)
        return {
            "benchmark": "informer_initial_sync",
            "objects": len(cached),
            "sync_seconds": round(sync_s, 3),
            "rss_bytes_per_object": round((rss1 - rss0) / max(1, len(cached))),
            "deep_bytes_per_object": round(deep / max(1, len(cached))),
            "initial_sync": mode,
            "managed_fields_stripped": True,
            "targets": {"sync_seconds": 1.0, "bytes_per_object": 3072},
        }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--keep", action="store_true", help="do not delete the namespace afterwards")
    args = parser.parse_args(argv)
    print(json.dumps(asyncio.run(run(args))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
