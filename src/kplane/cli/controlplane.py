"""The built-in controllers of ``kplane serve``: a ``kplane controllers`` child process reaching the
server over loopback as any client would (upstream's kube-controller-manager beside kube-apiserver).
The server module never imports this one.

* Identities (``cli/identities``): before each start, kubeconfigs with fresh client certificates
  for ``system:kube-controller-manager``, ``system:kube-scheduler`` and each simulated node
  (``system:node:<node>``) are written to ``DATA_DIR/controllers`` (0600 in 0700); the child runs
  with ``--use-service-account-credentials``, so each controller acts as its ServiceAccount
  ``kube-system/<controller>`` under its ``system:controller:*`` role, never as the admin.

* Lifetime: the child reads nothing from its standard input and stops when that pipe closes, so it
  dies with the server even when the server is killed; ``stop`` sends SIGTERM, then SIGKILL after
  ``STOP_GRACE``. A child that exits on its own is started again after a back-off (1 s doubling to
  30 s, back to 1 s after a minute of good health).
* On etcd, where several servers may share the state, the child runs with ``--leader-elect``: one
  replica's controllers work at a time.
* Metrics and traces: the child serves its controllers' ``/metrics`` and ``/debug/kplane/traces`` on
  a Unix domain socket, ``DATA_DIR/controllers/metrics.sock`` (mode 0600 in a 0700 directory: no
  other local user can read them, where a loopback TCP port would be open to every user of the
  machine), and says so on its first line of output. The metrics are scraped every
  ``SCRAPE_INTERVAL`` and appended to the server's ``/metrics``; a request for the server's
  ``/debug/kplane/traces`` (authenticated and authorized there) is relayed to the child.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from kplane.cli import identities
from kplane.controllers.nodes import node_name

log = logging.getLogger(__name__)

STOP_GRACE = 5.0
"""Seconds the child has to stop after SIGTERM before it is killed."""
SCRAPE_INTERVAL = 2.0
"""Seconds between two reads of the child's metrics."""
_MAX_BODY = 8 << 20  # bytes read from one answer of the child
_SUN_PATH_MAX = 108  # bytes of a Unix socket path, its terminating NUL included (Linux sockaddr_un)
_TEMP_PREFIX = "kplane-controllers-"
_NO_TRACES = orjson.dumps({"apiVersion": "kplane.dev/v1alpha1", "kind": "ReconcileTraceList", "items": []})


@dataclass
class Controllers:
    """The running child, the task that supervises it, and its last metrics."""

    argv: list[str]
    process: asyncio.subprocess.Process | None = None
    task: asyncio.Task[None] | None = None
    stopping: bool = False
    started: asyncio.Event = field(default_factory=asyncio.Event)
    metrics: bytes = b""
    base_url: str = ""
    socket_path: str = ""
    _session: aiohttp.ClientSession | None = None

    def exposition(self) -> bytes:
        """The child's metrics as last scraped (empty before the first scrape)."""
        return self.metrics

    async def traces(self, query: Mapping[str, str]) -> bytes:
        """The child's reconcile traces matching ``query`` (an empty list while it is not up)."""
        if not self.base_url or self._session is None:
            return _NO_TRACES
        try:
            async with self._session.get(self.base_url + "/debug/kplane/traces", params=dict(query)) as resp:
                if resp.status == 200:
                    return await resp.content.read(_MAX_BODY)
        except (aiohttp.ClientError, TimeoutError):
            pass
        return _NO_TRACES

    async def supervise(self) -> None:
        loop = asyncio.get_running_loop()
        delay = 1.0
        timeout = aiohttp.ClientTimeout(total=SCRAPE_INTERVAL * 2)
        connector = aiohttp.UnixConnector(self.socket_path) if self.socket_path else None
        async with aiohttp.ClientSession(timeout=timeout, connector=connector) as self._session:
            while not self.stopping:
                began = loop.time()
                process = self.process = await asyncio.create_subprocess_exec(
                    *self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=None
                )
                self.started.set()
                scraper = loop.create_task(self._scrape(process))
                code = await process.wait()
                scraper.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await scraper
                self.metrics, self.base_url = b"", ""
                if self.stopping:
                    return
                if loop.time() - began > 60:
                    delay = 1.0
                log.error("built-in controllers exited with %s; starting them again in %.0f s", code, delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 30.0)

    async def _scrape(self, process: asyncio.subprocess.Process) -> None:
        assert process.stdout is not None and self._session is not None
        line = (await process.stdout.readline()).decode(errors="replace").strip()
        # nothing else comes on stdout; keep the pipe drained all the same
        drain = asyncio.get_running_loop().create_task(_drain(process.stdout))
        try:
            if not line.startswith("metrics: "):
                return
            url = line.removeprefix("metrics: ")
            # on the socket, the URL's host is only the Host header
            self.base_url = "http://localhost" if url.startswith("unix:") else url
            while True:
                with contextlib.suppress(aiohttp.ClientError, TimeoutError):
                    async with self._session.get(self.base_url + "/metrics") as resp:
                        if resp.status == 200:
                            self.metrics = await resp.content.read(_MAX_BODY)
                await asyncio.sleep(SCRAPE_INTERVAL)
        finally:
            drain.cancel()


async def _drain(stream: asyncio.StreamReader) -> None:
    while await stream.read(4096):
        pass


async def start(server: Any, *, nodes: int) -> Controllers:
    """Start the controllers against ``server`` (a started ``APIServer``). Their caches sync after
    this returns: the server is already serving."""
    data_dir = Path(server.config.data_dir)
    socket_path = _socket_path(data_dir)
    directory = data_dir / "controllers"
    names = [node_name(i) for i in range(nodes)]
    await asyncio.to_thread(identities.write_credentials, data_dir, directory, server.url, names)
    argv = [
        sys.executable,
        "-m",
        "kplane.cli.main",
        "controllers",
        "--kubeconfig",
        str(directory / identities.KCM_FILE),
        "--use-service-account-credentials",
        "--scheduler-kubeconfig",
        str(directory / identities.SCHEDULER_FILE),
        *(("--nodes-kubeconfig", str(directory / identities.NODES_FILE)) if names else ()),
        "--nodes",
        str(nodes),
        "--pod-logs",
        str(server.pod_logs_dir),
        "--stop-on-stdin-close",
        "--metrics-bind-address",
        "unix:" + socket_path,
        "--no-process-metrics",  # the server's /metrics has its own process_* and merges these
        "--log-level",
        logging.getLevelName(logging.getLogger().getEffectiveLevel()),
    ]
    if server.config.storage == "etcd":
        identity = f"{socket.gethostname()}_{server.url}_{uuid.uuid4()}"
        argv += ["--leader-elect", "--leader-elect-identity", identity]
    # a garbage collector runs: deletes may now add the orphan/foregroundDeletion finalizers
    server.registry.gc_finalizers = True
    controllers = Controllers(argv, socket_path=socket_path)
    server.metrics_sources.append(controllers.exposition)
    if server.nonresource is not None:
        server.nonresource.traces = controllers.traces  # /debug/kplane/traces, with the API's auth
    controllers.task = asyncio.get_running_loop().create_task(controllers.supervise())
    await controllers.started.wait()
    return controllers


def _socket_path(data_dir: Path) -> str:
    """``DATA_DIR/controllers/metrics.sock``, its directory made 0700. A socket path longer than
    ``sun_path`` holds (108 bytes on Linux) goes to a fresh 0700 directory under the temporary
    directory instead."""
    directory = data_dir / "controllers"
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(directory, 0o700)
    path = str((directory / "metrics.sock").absolute())
    if len(path.encode()) >= _SUN_PATH_MAX:
        path = os.path.join(tempfile.mkdtemp(prefix=_TEMP_PREFIX), "metrics.sock")
    return path


async def stop(controllers: Controllers) -> None:
    """Stop the controllers (before the server stops)."""
    controllers.stopping = True
    process = controllers.process
    if process is not None and process.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            process.terminate()
        try:
            await asyncio.wait_for(process.wait(), STOP_GRACE)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()
    if controllers.task is not None:
        controllers.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await controllers.task
    parent = os.path.dirname(controllers.socket_path)
    if os.path.basename(parent).startswith(_TEMP_PREFIX):
        with contextlib.suppress(OSError):
            os.rmdir(parent)  # the fallback directory of a long data directory's socket
