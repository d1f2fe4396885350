"""kplane start-up time and idle memory; one JSON line.

    python benchmarks/startup.py [--runs 5] [--storage sqlite|memory] [--kplane PATH]

Starts ``kplane serve --port 0`` ``--runs`` times with a fresh data directory (it generates its PKI
and database) and ``--runs`` times on one reused directory (warmed by one uncounted run), and
measures for each run: from just before the process is spawned to the "serving" line on its
stdout, and to the first successful ``GET /readyz`` authenticated with the admin client
certificate of the kubeconfig it wrote; the "ready in" it prints itself; and its resident memory
(VmRSS) ``--settle`` seconds after it is ready. Figures are medians over the runs. Unlike the other
benchmarks this one measures kplane only: it starts the servers itself.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pathlib
import re
import shutil
import signal
import statistics
import sys
import tempfile
import time
from typing import Any

import _client
import aiohttp

SERVING = re.compile(rb"serving (https://\S+) \(ready in ([0-9.]+)\s*s")


async def _readyz(kubeconfig: pathlib.Path) -> None:
    """Poll ``/readyz`` with the kubeconfig's credentials until it answers 200."""
    target = _client.load_kubeconfig(kubeconfig, auth="cert")
    async with _client.session(target) as http:
        for _ in range(2000):
            try:
                async with http.get(f"{target.server}/readyz") as resp:
                    await resp.read()
                    if resp.status == 200:
                        return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.002)
    raise RuntimeError("/readyz never answered 200")


async def _one_run(kplane: str, data_dir: pathlib.Path, storage: str, settle: float) -> dict[str, float]:
    t0 = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        kplane, "serve", "--data-dir", str(data_dir), "--port", "0", "--storage", storage,
        stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert proc.stdout is not None
    try:
        while True:
            line = await asyncio.wait_for(proc.stdout.readline(), timeout=30)
            if not line:
                raise RuntimeError(f"kplane exited with {await proc.wait()} before serving")
            match = SERVING.search(line)
            if match:
                break
        t_line = time.perf_counter() - t0
        await _readyz(data_dir / "kubeconfig")
        t_ready = time.perf_counter() - t0
        await asyncio.sleep(settle)
        rss = _client.process_rss_mib(proc.pid)
        if rss is None:
            raise RuntimeError("no VmRSS")
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(proc.wait(), timeout=10)
            except TimeoutError:
                proc.kill()
                await proc.wait()
    return {
        "serving_line_s": t_line,
        "first_readyz_s": t_ready,
        "printed_ready_s": float(match.group(2)),
        "idle_rss_mib": rss,
    }


def _medians(runs: list[dict[str, float]]) -> dict[str, float]:
    out = {k: round(statistics.median(r[k] for r in runs), 3) for k in runs[0]}
    out["max_first_readyz_s"] = round(max(r["first_readyz_s"] for r in runs), 3)
    return out


async def _run(args: argparse.Namespace) -> dict[str, Any]:
    root = pathlib.Path(tempfile.mkdtemp(prefix="kplane-startup-"))
    try:
        fresh = [
            await _one_run(args.kplane, root / f"fresh-{i}", args.storage, args.settle)
            for i in range(args.runs)
        ]
        reused_dir = root / "reused"
        await _one_run(args.kplane, reused_dir, args.storage, 0.0)
        reused = [
            await _one_run(args.kplane, reused_dir, args.storage, args.settle) for _ in range(args.runs)
        ]
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return {
        "benchmark": "startup",
        "storage": args.storage,
        "runs": args.runs,
        "fresh": _medians(fresh),
        "reused": _medians(reused),
    }


def main(argv: list[str] | None = None) -> int:
    default_kplane = os.path.join(os.path.dirname(sys.executable), "kplane")
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--storage", choices=("sqlite", "memory"), default="sqlite")
    parser.add_argument("--kplane", default=default_kplane, help="the kplane executable")
    parser.add_argument("--settle", type=float, default=1.0, help="seconds idle before reading RSS")
    args = parser.parse_args(argv)
    print(json.dumps(_client.run(_run(args))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
