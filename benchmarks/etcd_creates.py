"""Creates/s through kplane on etcd, and etcd's own ceiling for kplane's client, in one run.

    python benchmarks/etcd_creates.py [--endpoint H:P] [--clients 16] [--duration 5]

Without ``--endpoint`` it starts a fresh one-member etcd on loopback (free ports, temp dir; needs the
``etcd`` binary). It then prints JSON lines from:

1. ``benchmarks/etcd_client.py``: raw puts and ranges through kplane's gRPC client (and the JSON
   gateway), the ceiling any server using that client can reach on this machine;
2. ``benchmarks/create_throughput.py`` against ``kplane serve --storage etcd://...`` started here
   (bare API server, no controllers): ConfigMap creates/s with ``--clients`` concurrent clients;
3. ``benchmarks/watch_latency.py`` with a second replica on the same etcd (``--pki-dir``): creates sent
   to the second, ADDED events read from a watch on the first (cross-replica delivery latency);
4. with ``--etcdctl-perf LOAD`` (``s``, ``m``, ``l``, ``xl``; needs ``etcdctl``): etcd's own
   ``etcdctl check perf`` (60 s of puts from Go's etcd client), its writes/s as one JSON line: the
   ceiling with etcd's own client, beside step 1's for kplane's.

To compare with kube-apiserver, run ``create_throughput.py --kubeconfig`` against it on the same etcd
(kube-apiserver is not available on the machine these figures were first taken on).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

from kplane.server.storage.testing import etcd_process  # noqa: E402


@contextlib.contextmanager
def _etcd(endpoint: str | None, root: Path) -> Iterator[str]:
    if endpoint:
        yield endpoint
        return
    with etcd_process.EtcdCluster(1, root / "etcd") as cluster:
        yield cluster.endpoints[0]


@contextlib.contextmanager
def _kplane(endpoint: str, root: Path, *extra: str) -> Iterator[tuple[Path, int]]:
    args = [sys.executable, "-m", "kplane.cli.main", "serve", "--data-dir", str(root), "--port", "0"]
    args += ["--storage", f"etcd://{endpoint}", "--no-controllers", *extra]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            m = re.match(r"export KUBECONFIG=(\S+)", line)
            if m:
                yield Path(m.group(1)), proc.pid
                return
        raise RuntimeError("kplane serve did not start")
    finally:
        proc.terminate()
        proc.wait(10)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--endpoint", default=None, help="an existing etcd (default: start one)")
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--duration", type=float, default=5.0)
    ap.add_argument("--count", type=int, default=3000, help="raw etcd requests per phase")
    ap.add_argument(
        "--objects", type=int, default=300, help="creates timed from one replica to another's watch"
    )
    ap.add_argument("--etcdctl-perf", default=None, help="also run etcdctl check perf with this load")
    args = ap.parse_args()
    env = {**os.environ, "PYTHONPATH": str(HERE.parent / "src")}
    with tempfile.TemporaryDirectory() as tmp, _etcd(args.endpoint, Path(tmp)) as endpoint:
        subprocess.run(
            [
                sys.executable,
                str(HERE / "etcd_client.py"),
                "--endpoint",
                endpoint,
                "--count",
                str(args.count),
            ],
            check=True,
            env=env,
        )
        with _kplane(endpoint, Path(tmp) / "r0") as (kubeconfig, pid):
            subprocess.run(
                [
                    sys.executable,
                    str(HERE / "create_throughput.py"),
                    "--kubeconfig",
                    str(kubeconfig),
                    "--clients",
                    str(args.clients),
                    "--duration",
                    str(args.duration),
                    "--server-pid",
                    str(pid),
                ],
                check=True,
                env=env,
            )
            pki = str(Path(tmp) / "r0" / "pki")
            with _kplane(endpoint, Path(tmp) / "r1", "--pki-dir", pki) as (other, _):
                subprocess.run(
                    [
                        sys.executable,
                        str(HERE / "watch_latency.py"),
                        "--kubeconfig",
                        str(kubeconfig),
                        "--creator-kubeconfig",
                        str(other),
                        "--objects",
                        str(args.objects),
                    ],
                    check=True,
                    env=env,
                )
        if args.etcdctl_perf:
            print(json.dumps(_etcdctl_perf(endpoint, args.etcdctl_perf)), flush=True)


def _etcdctl_perf(endpoint: str, load: str) -> dict[str, object]:
    """``etcdctl check perf`` against ``endpoint``: the writes/s it reached and its verdict."""
    run = subprocess.run(
        ["etcdctl", "--endpoints", endpoint, "check", "perf", "--load", load],
        capture_output=True,
        text=True,
        env={**os.environ, "ETCDCTL_API": "3"},
        check=False,
    )
    m = re.search(r"Throughput (?:is|too low:) (\d+) writes/s", run.stdout)
    return {
        "benchmark": "etcdctl check perf",
        "load": load,
        "writes_per_s": int(m.group(1)) if m else None,
        "passed": run.stdout.rstrip().endswith("PASS"),
    }


if __name__ == "__main__":
    main()
