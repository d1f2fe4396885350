"""Helpers for running the example locally (its tests and ``benchmarks/queue_vs_hpa.py``): a private
``redis-server`` and QueueScaler objects."""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from typing import Any

from examples.queuescaler import crd


@contextlib.contextmanager
def private_redis(binary: str) -> Iterator[str]:
    """Run ``binary`` (a redis-server) on a free loopback port without persistence; yields its URL.
    The server is stopped and its directory removed on exit."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    workdir = tempfile.mkdtemp(prefix="queuescaler-redis-")
    args = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    proc = subprocess.Popen([*args, "--dir", workdir], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.1):
                break
            if proc.poll() is not None:
                raise RuntimeError("redis-server exited at start")
            time.sleep(0.05)  # start-up polling of a child process, not the controller's time
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        shutil.rmtree(workdir, ignore_errors=True)


def queue_scaler(
    name: str,
    *,
    deployment: str,
    url: str,
    key: str,
    per_replica: int,
    max_replicas: int,
    min_replicas: int = 1,
    cooldown: int = 60,
    poll: int = 5,
) -> dict[str, Any]:
    """A QueueScaler object."""
    return {
        "apiVersion": f"{crd.GROUP}/{crd.VERSION}",
        "kind": crd.KIND,
        "metadata": {"name": name},
        "spec": {
            "deployment": deployment,
            "redisURL": url,
            "listKey": key,
            "messagesPerReplica": per_replica,
            "minReplicas": min_replicas,
            "maxReplicas": max_replicas,
            "cooldownSeconds": cooldown,
            "pollSeconds": poll,
        },
    }
