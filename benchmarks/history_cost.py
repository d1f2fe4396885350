"""What object history and reconcile tracing cost: creates/s and reconciles/s, on vs off, one run.

    python benchmarks/history_cost.py [--rounds 5] [--duration 5] [--count 2000] [--together]

Starts two ``kplane serve --no-controllers`` processes on this machine, one as shipped (history
recorded: each write's user and time, one hour of retention) and one with ``--no-object-history``,
and alternates, ``--rounds`` times, ``create_throughput.py`` (ConfigMap creates/s, 16 clients) and
``reconcile_throughput.py`` (a kplane.runtime operator with 8 workers: traced against the first
server, ``kplane-untraced`` against the second) between them, so both sides see the same machine
load. Within a round the two sides run back to back (on/off for creates, then off/on for
reconciles, the order flipped every round: ABBA), so a round is a pair measured seconds apart.

Prints one JSON line: for each figure (rates, and the server's CPU per create and the operator's
CPU per object, which a loaded machine disturbs less) every round's value on both sides, the
medians, ``cost_pct`` (the medians compared) and ``paired_cost_pct``, the median over rounds of
each pair's own cost: on a machine shared with other work, whose load drifts by more than the
effect measured, the paired figure is the one to read (it cancels drifts slower than a round).
``--together`` loads both sides at the same time instead (two ``create_throughput.py``, then two
operators, side by side): they share the machine, so each rate is lower than alone, but every
instant's load from elsewhere hits both alike, and as both servers are CPU-bound and share the
cores evenly, their rates compare their costs.
kplane-specific by design: it compares two configurations of kplane.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


@contextlib.contextmanager
def serve(data_dir: Path, *extra: str) -> Iterator[tuple[str, int]]:
    """A ``kplane serve`` in ``data_dir``: (its kubeconfig, its pid); stopped on exit."""
    cmd = [sys.executable, "-m", "kplane.cli.main", "serve", "--data-dir", str(data_dir), "--port", "0"]
    proc = subprocess.Popen(
        [*cmd, "--no-controllers", *extra], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            m = re.match(r"export KUBECONFIG=(\S+)", line)
            if m:
                yield m.group(1), proc.pid
                return
        raise RuntimeError("kplane serve did not start")
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _json_run(script: str, *args: str) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, str(HERE / script), *args], capture_output=True, text=True, timeout=900, check=True
    )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def creates(kubeconfig: str, pid: int, duration: float) -> tuple[float, float]:
    """(creates/s, server CPU µs per create)."""
    result = _json_run(
        "create_throughput.py", "--kubeconfig", kubeconfig, "--duration", str(duration),
        "--samples", "50", "--server-pid", str(pid),
    )  # fmt: skip
    return float(result["creates_per_s"]), float(result["server_cpu_us_per_create"])


def reconciles(kubeconfig: str, operator: str, count: int) -> tuple[float, float]:
    """(reconciled objects/s, operator CPU ms per object)."""
    result = _json_run(
        "reconcile_throughput.py", "--kubeconfig", kubeconfig, "--count", str(count),
        "--latency-samples", "5", "--operators", f"{operator}:8",
    )  # fmt: skip
    run = result["runs"][0]
    return float(run["objects_per_s"]), float(run["operator_cpu_ms_per_object"])


def _pct(on: float, off: float, lower_is_better: bool) -> float:
    """The cost of ``on`` in percent of ``off``: for a rate what it loses, for a CPU time what it adds."""
    return 100.0 * ((on - off) / off if lower_is_better else (off - on) / off)


def cost(on: list[float], off: list[float], *, lower_is_better: bool = False) -> dict[str, Any]:
    """Both sides' values (``on[i]`` and ``off[i]`` measured in the same round), their medians, the
    cost of the medians and the median of the rounds' own costs (see the module docstring)."""
    m_on, m_off = statistics.median(on), statistics.median(off)
    paired = [_pct(a, b, lower_is_better) for a, b in zip(on, off, strict=True)]
    return {
        "on": on,
        "off": off,
        "median_on": round(m_on, 3),
        "median_off": round(m_off, 3),
        "cost_pct": round(_pct(m_on, m_off, lower_is_better), 1),
        "paired_cost_pct": round(statistics.median(paired), 1),
        "paired_costs_pct": [round(x, 1) for x in paired],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--duration", type=float, default=5.0, help="seconds of create load per round")
    parser.add_argument("--count", type=int, default=2000, help="objects reconciled per round")
    parser.add_argument(
        "--together",
        action="store_true",
        help="load both sides at the same time (sharing the machine) instead of one after the other",
    )
    args = parser.parse_args(argv)
    create_on: list[tuple[float, float]] = []
    create_off: list[tuple[float, float]] = []
    rec_on: list[tuple[float, float]] = []
    rec_off: list[tuple[float, float]] = []
    with tempfile.TemporaryDirectory(prefix="kplane-history-cost-") as tmp:
        os.chmod(tmp, 0o700)
        with (
            serve(Path(tmp) / "on") as (on_cfg, on_pid),
            serve(Path(tmp) / "off", "--no-object-history") as (
                off_cfg,
                off_pid,
            ),
        ):
            for r in range(args.rounds):
                sides = [(on_cfg, on_pid, True), (off_cfg, off_pid, False)]
                if args.together:
                    # both sides at once: every instant's machine load hits both alike
                    with concurrent.futures.ThreadPoolExecutor(2) as pool:
                        c_on, c_off = pool.map(lambda s: creates(s[0], s[1], args.duration), sides)
                        r_on, r_off = pool.map(
                            lambda s: reconciles(s[0], "kplane" if s[2] else "kplane-untraced", args.count),
                            sides,
                        )
                    create_on.append(c_on)
                    create_off.append(c_off)
                    rec_on.append(r_on)
                    rec_off.append(r_off)
                    continue
                # ABBA, flipped every round: neither side always runs first or right after the other
                order = sides if r % 2 == 0 else sides[::-1]
                for cfg, pid, on in order:
                    (create_on if on else create_off).append(creates(cfg, pid, args.duration))
                for cfg, _, on in order[::-1]:
                    (rec_on if on else rec_off).append(
                        reconciles(cfg, "kplane" if on else "kplane-untraced", args.count)
                    )
    print(
        json.dumps(
            {
                "benchmark": "history_cost",
                "creates_per_s": cost([c[0] for c in create_on], [c[0] for c in create_off]),
                "server_cpu_us_per_create": cost(
                    [c[1] for c in create_on], [c[1] for c in create_off], lower_is_better=True
                ),
                "reconciles_per_s": cost([r[0] for r in rec_on], [r[0] for r in rec_off]),
                "operator_cpu_ms_per_object": cost(
                    [r[1] for r in rec_on], [r[1] for r in rec_off], lower_is_better=True
                ),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
