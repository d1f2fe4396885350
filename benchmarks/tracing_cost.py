"""What reconcile tracing costs per reconcile, in process; prints one JSON line.

The tracing work of one reconcile of ``reconcile_throughput.py``'s operator, without the network:
a source's ADDED event noted as the cause, ``Controller.reconcile_handler`` running a reconciler
that makes one write (reported to the write observer as the REST client does), the outcome
handled. ``--rounds`` alternating rounds of ``--reconciles`` reconciles, traced (a ``Tracer`` with
the manager's default ring of 1,000) and untraced, each timed in process CPU time (so a loaded
machine's waiting does not count); prints the medians per reconcile and their difference.

    python benchmarks/tracing_cost.py [--reconciles N] [--rounds R]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from typing import Any

from kplane.runtime import controller as controller_mod
from kplane.runtime import handler as handler_mod
from kplane.runtime import reconcile, tracing

RESOURCE = "widgets.bench.kplane.dev"


def _widget(i: int, rv: int) -> dict[str, Any]:
    return {
        "apiVersion": "bench.kplane.dev/v1",
        "kind": "Widget",
        "metadata": {"name": f"w-{i:06}", "namespace": "bench", "resourceVersion": str(rv)},
        "spec": {"value": i},
    }


async def one_round(count: int, traced: bool) -> float:
    """Process CPU µs per reconcile of ``count`` reconciles, traced or not."""
    tracer = tracing.Tracer() if traced else None
    observer = tracer.observe_write if tracer is not None else None
    written = _widget(0, 2)  # what the server answered (decoded either way)

    async def reconciler(req: reconcile.Request) -> None:
        if observer is not None:  # the REST client's check when no observer is set
            observer("patch", RESOURCE, "status", req.namespace, req.name, written, None)

    ctrl = controller_mod.Controller("bench", reconciler, tracer=tracer)
    feed = tracing.TriggerQueue(ctrl.queue, tracer, "bench") if tracer is not None else None
    handler = handler_mod.EnqueueRequestForObject()
    objects = [_widget(i, i + 1) for i in range(count)]
    started = time.process_time()
    for obj in objects:
        if feed is not None:
            feed.event("ADDED", obj, handler)
            handler.create(obj, feed)
        else:
            handler.create(obj, ctrl.queue)
        req = await ctrl.queue.get()
        await ctrl.reconcile_handler(req)
        ctrl.queue.done(req)
    return (time.process_time() - started) / count * 1e6


async def run(count: int, rounds: int) -> dict[str, Any]:
    on: list[float] = []
    off: list[float] = []
    for r in range(rounds):
        for traced in (True, False) if r % 2 == 0 else (False, True):
            (on if traced else off).append(await one_round(count, traced))
    m_on, m_off = statistics.median(on), statistics.median(off)
    return {
        "benchmark": "tracing_cost",
        "reconciles": count,
        "us_per_reconcile_on": [round(x, 2) for x in on],
        "us_per_reconcile_off": [round(x, 2) for x in off],
        "median_on": round(m_on, 2),
        "median_off": round(m_off, 2),
        "tracing_us_per_reconcile": round(m_on - m_off, 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--reconciles", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args(argv)
    print(json.dumps(asyncio.run(run(args.reconciles, args.rounds))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
