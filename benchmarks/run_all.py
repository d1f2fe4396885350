"""Run every API server benchmark against a fresh kplane and print the figures and a summary table.

    python benchmarks/run_all.py [--storage sqlite|memory] [--quick] [--only NAME ...]

First ``startup.py`` (it starts its own servers), then one ``kplane serve`` on a fresh data directory
for ``create_throughput.py``, ``list_latency.py`` and ``watch_latency.py`` in turn, each in its own
process so that no benchmark's client shares an event loop (or a core's caches) with another. Each
benchmark's JSON line is printed as it finishes; the table at the end compares the figures with the
targets (on the 2-core machine the project is developed on, clients included). ``machine busy`` is
the share of all cores in use during the create load: near 100 % means the figure was limited by
the machine (which may be shared), not only by the server. Exits 1 if a benchmark failed, not if a
target was missed: the figures are noisy where the machine is shared.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable
from typing import Any

HERE = pathlib.Path(__file__).resolve().parent
SERVING = re.compile(r"serving (https://\S+)")

Row = tuple[str, str, Callable[[dict[str, dict[str, Any]]], float | None], str, float | None]


def _get(*path: str) -> Callable[[dict[str, dict[str, Any]]], float | None]:
    def get(results: dict[str, dict[str, Any]]) -> float | None:
        value: Any = results
        for key in path:
            if not isinstance(value, dict) or key not in value:
                return None
            value = value[key]
        return float(value) if isinstance(value, int | float) else None

    return get


def _row(label: str, unit: str, path: str, op: str = "", target: float | None = None) -> Row:
    """A table row; ``path`` is dotted keys into the results, ``op`` and ``target`` the goal if any."""
    return (label, unit, _get(*path.split(".")), op, target)


READY = "ready: spawn → first authenticated /readyz"
ROWS: list[Row] = [
    _row(f"{READY} (fresh dir)", "s", "startup.fresh.first_readyz_s", "<=", 0.5),
    _row(f"{READY} (reused dir)", "s", "startup.reused.first_readyz_s", "<=", 0.5),
    _row("ready: 'ready in' printed by kplane (fresh dir)", "s", "startup.fresh.printed_ready_s"),
    _row("idle RSS after ready", "MiB", "startup.fresh.idle_rss_mib", "<=", 100),
    _row("creates/s, 16 clients", "/s", "create_throughput.creates_per_s", ">=", 3000),
    _row("  create latency under load, p99", "ms", "create_throughput.latency_under_load.p99_ms"),
    _row("  server CPU per create", "µs", "create_throughput.server_cpu_us_per_create"),
    _row("  client CPU per create", "µs", "create_throughput.client_cpu_us_per_create"),
    _row("  machine busy during the load (share of all cores)", "", "create_throughput.machine_busy"),
    _row("create latency, sequential, median", "ms", "create_throughput.create_latency.median_ms"),
    _row("create latency, sequential, p99", "ms", "create_throughput.create_latency.p99_ms"),
    _row("GET latency, median", "ms", "create_throughput.get_latency.median_ms"),
    _row("GET latency, p99", "ms", "create_throughput.get_latency.p99_ms"),
    _row("list 2,000 ConfigMaps, median", "ms", "list_latency.full_list.median_ms", "<=", 20),
    _row("list 2,000 ConfigMaps, p99", "ms", "list_latency.full_list.p99_ms"),
    _row("paged list by 500 (all pages), median", "ms", "list_latency.paged_list.median_ms"),
    _row("watch delivery, median", "ms", "watch_latency.delivery.median_ms"),
    _row("watch delivery, p99", "ms", "watch_latency.delivery.p99_ms", "<=", 5),
    _row("server RSS after the benchmarks", "MiB", "server.rss_mib"),
]


def _run_script(name: str, args: list[str]) -> dict[str, Any] | None:
    """Run one benchmark script; return its JSON line (also printed), or None if it failed."""
    cmd = [sys.executable, str(HERE / f"{name}.py"), *args]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=False)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        print(f"run_all: {name} failed (exit {proc.returncode})", file=sys.stderr)
        return None
    print(lines[-1], flush=True)
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def _rss_mib(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def _table(results: dict[str, dict[str, Any]]) -> str:
    lines = [f"{'figure':<58} {'value':>10}  {'target':<10} ok", "-" * 84]
    for label, unit, get, op, target in ROWS:
        value = get(results)
        shown = "n/a" if value is None else f"{value:.3f}" if value < 10 else f"{value:.1f}"
        goal = f"{op} {target:g}" if target is not None else ""
        verdict = ""
        if target is not None and value is not None:
            met = value <= target if op == "<=" else value >= target
            verdict = "yes" if met else "NO"
        lines.append(f"{label:<58} {shown:>10} {unit:<4} {goal:<10} {verdict}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    default_kplane = os.path.join(os.path.dirname(sys.executable), "kplane")
    names = ["startup", "create_throughput", "list_latency", "watch_latency"]
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--storage", choices=("sqlite", "memory"), default="sqlite")
    parser.add_argument("--kplane", default=default_kplane, help="the kplane executable")
    parser.add_argument("--quick", action="store_true", help="fewer runs and a shorter load")
    parser.add_argument("--only", nargs="+", choices=names, default=names)
    args = parser.parse_args(argv)

    results: dict[str, dict[str, Any]] = {}
    failed = False
    if "startup" in args.only:
        runs = ["--runs", "2" if args.quick else "5", "--storage", args.storage, "--kplane", args.kplane]
        result = _run_script("startup", runs)
        failed |= result is None
        if result:
            results["startup"] = result

    against = [n for n in args.only if n != "startup"]
    if against:
        data_dir = pathlib.Path(tempfile.mkdtemp(prefix="kplane-bench-"))
        server = subprocess.Popen(
            [args.kplane, "serve", "--data-dir", str(data_dir), "--port", "0", "--storage", args.storage],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert server.stdout is not None
            for line in server.stdout:
                if SERVING.search(line):
                    break
            else:
                raise SystemExit(f"run_all: kplane exited with {server.wait()} before serving")
            kubeconfig = str(data_dir / "kubeconfig")
            extra = {
                "create_throughput": ["--server-pid", str(server.pid)]
                + (["--duration", "2", "--samples", "200"] if args.quick else []),
                "list_latency": ["--rounds", "10"] if args.quick else [],
                "watch_latency": ["--objects", "200"] if args.quick else [],
            }
            for name in against:
                result = _run_script(name, ["--kubeconfig", kubeconfig, *extra[name]])
                failed |= result is None
                if result:
                    results[name] = result
            results["server"] = {"rss_mib": _rss_mib(server.pid), "storage": args.storage}
        finally:
            server.send_signal(signal.SIGTERM)
            try:
                server.wait(timeout=15)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
            shutil.rmtree(data_dir, ignore_errors=True)

    print()
    print(_table(results))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
