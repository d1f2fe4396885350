"""How fast ``kplane.testing`` gives a test a ready control plane; one JSON line.

    python benchmarks/testing_startup.py [--runs 20]

Measures, in one process: importing ``kplane.testing``; a first ``ControlPlane`` start with an
empty state directory (the server's modules load and the PKI is generated: what the first test of a
first run on a machine pays); then ``--runs`` starts reusing it (every later test), each from
``async with ControlPlane()`` until the first request of its client answers; the same with one CRD
installed and served; and one more start on another empty state directory (PKI generation alone,
modules already loaded). Figures are
medians in milliseconds (target: ready in <= 200 ms). Like ``startup.py`` this measures kplane
only: it starts the servers itself.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.bench.example.com"},
    "spec": {
        "group": "bench.example.com",
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                },
            }
        ],
    },
}


async def ready_ms(control_plane: Any, state_dir: Path, **options: Any) -> float:
    """Milliseconds from entering the control plane until its client's first request answers."""
    t0 = time.perf_counter()
    async with control_plane(state_dir=state_dir, **options) as cp:
        await cp.client.rest.request("GET", "/api/v1/namespaces/default")
        return (time.perf_counter() - t0) * 1000


async def main(runs: int) -> dict[str, Any]:
    t0 = time.perf_counter()
    from kplane.testing import ControlPlane

    import_ms = (time.perf_counter() - t0) * 1000
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp)
        first = await ready_ms(ControlPlane, state)
        warm = [await ready_ms(ControlPlane, state) for _ in range(runs)]
        with_crd = [await ready_ms(ControlPlane, state, crds=[CRD]) for _ in range(runs)]
    with tempfile.TemporaryDirectory() as tmp:
        fresh_pki = await ready_ms(ControlPlane, Path(tmp))
    return {
        "benchmark": "testing_startup",
        "runs": runs,
        "import_ms": round(import_ms, 1),
        "first_start_ms": round(first, 1),
        "fresh_pki_start_ms": round(fresh_pki, 1),
        "ready_ms_median": round(statistics.median(warm), 1),
        "ready_ms_max": round(max(warm), 1),
        "ready_with_crd_ms_median": round(statistics.median(with_crd), 1),
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(main(args.runs))), file=sys.stdout)
