"""Work queue throughput: items per second through add → get → done with 4 worker tasks.

Prints one JSON line: ``{"benchmark": "workqueue", "items": N, "workers": 4, "items_per_s": ...}``
for the plain queue, the same with workers that suspend once per item (so ``get`` has to park and
be woken), the rate-limiting queue (all unnamed: no metrics) and a named queue with Prometheus
metrics. Target: >= 100,000 items/s for the plain queue.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time

import prometheus_client

from kplane.workqueue import metrics, queue, rate_limiting


async def _run(q: queue.Queue[int], items: int, workers: int, *, yielding: bool = False) -> float:
    """Push ``items`` keys through ``q``; ``yielding`` workers suspend once per item, as real work does."""
    processed = 0

    async def worker() -> None:
        nonlocal processed
        while True:
            try:
                item = await q.get()
            except queue.ShutDown:
                return
            processed += 1
            if yielding:
                await asyncio.sleep(0)
            q.done(item)

    async def producer() -> None:
        for start in range(0, items, 1000):
            for i in range(start, min(start + 1000, items)):
                q.add(i)
            await asyncio.sleep(0)  # Let the workers run, as an informer's handler would.

    tasks = [asyncio.create_task(worker()) for _ in range(workers)]
    t0 = time.perf_counter()
    await producer()
    await q.shutdown_with_drain()
    await asyncio.gather(*tasks)
    elapsed = time.perf_counter() - t0
    assert processed == items, (processed, items)
    return items / elapsed


async def _main(items: int, workers: int) -> dict[str, object]:
    plain = await _run(queue.Queue(), items, workers)
    yielding = await _run(queue.Queue(), items, workers, yielding=True)
    limited = await _run(rate_limiting.RateLimitingQueue(), items, workers)
    provider = metrics.PrometheusMetricsProvider(prometheus_client.CollectorRegistry())
    observed = await _run(queue.Queue("bench", metrics_provider=provider), items, workers)
    return {
        "benchmark": "workqueue",
        "items": items,
        "workers": workers,
        "items_per_s": round(plain),
        "yielding_workers_items_per_s": round(yielding),
        "rate_limiting_items_per_s": round(limited),
        "with_metrics_items_per_s": round(observed),
        "target_items_per_s": 100_000,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--items", type=int, default=200_000)
    parser.add_argument("--workers", type=int, default=4)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(_main(args.items, args.workers))))


if __name__ == "__main__":
    main()
