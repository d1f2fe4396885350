"""Real etcd servers for tests: one member or a cluster, on loopback, on free ports, in a temp dir.

``EtcdCluster(n, root)`` starts ``n`` members of one cluster with the ``etcd`` binary found on
``PATH`` (``ETCD_BINARY`` overrides it); ``endpoints`` are their client addresses (``127.0.0.1:P``).
Members can be stopped (``kill``, SIGKILL) and started again (``restart``, same data directory) to
test failures. ``available()`` says whether etcd is installed, for a clear skip where it is not.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

_READY_TIMEOUT = 20.0


def binary() -> str | None:
    """The etcd executable, or None."""
    return os.environ.get("ETCD_BINARY") or shutil.which("etcd")


def available() -> bool:
    return binary() is not None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class Member:
    name: str
    client_port: int
    peer_port: int
    data_dir: Path
    log: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.client_port}"


class EtcdCluster:
    """``n`` etcd members on loopback (see the module docstring). Use as a context manager."""

    def __init__(
        self,
        n: int,
        root: Path,
        *,
        extra_args: tuple[str, ...] = (),
        tls: tuple[Path, Path, Path] | None = None,
    ) -> None:
        exe = binary()
        if exe is None:
            raise RuntimeError("etcd is not installed (Debian: apt-get install etcd-server)")
        self._exe = exe
        self._extra = extra_args
        # (CA, certificate, key): clients connect over TLS and must present a certificate of that CA.
        self._tls = tls
        self._scheme = "https" if tls is not None else "http"
        root.mkdir(parents=True, exist_ok=True)
        self.members = [
            Member(f"m{i}", free_port(), free_port(), root / f"m{i}", root / f"m{i}.log") for i in range(n)
        ]
        self._initial = ",".join(f"{m.name}=http://127.0.0.1:{m.peer_port}" for m in self.members)

    @property
    def endpoints(self) -> list[str]:
        return [m.endpoint for m in self.members]

    def start(self) -> EtcdCluster:
        for m in self.members:
            self._spawn(m, state="new")
        for m in self.members:
            self._wait_port(m)
        return self

    def _spawn(self, m: Member, *, state: str) -> None:
        args = [
            self._exe,
            "--name", m.name,
            "--data-dir", str(m.data_dir),
            "--listen-client-urls", f"{self._scheme}://127.0.0.1:{m.client_port}",
            "--advertise-client-urls", f"{self._scheme}://127.0.0.1:{m.client_port}",
            "--listen-peer-urls", f"http://127.0.0.1:{m.peer_port}",
            "--initial-advertise-peer-urls", f"http://127.0.0.1:{m.peer_port}",
            "--initial-cluster", self._initial,
            "--initial-cluster-state", state,
            "--initial-cluster-token", "kplane-test",
            "--heartbeat-interval", "50",
            "--election-timeout", "500",
            "--log-level", "warn",
            *self._extra,
        ]  # fmt: skip
        if self._tls is not None:
            ca, cert, key = self._tls
            args += ["--trusted-ca-file", str(ca), "--cert-file", str(cert), "--key-file", str(key)]
            args += ["--client-cert-auth"]
        log = m.log.open("ab")
        m.process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()

    def _wait_port(self, m: Member) -> None:
        deadline = time.monotonic() + _READY_TIMEOUT
        while time.monotonic() < deadline:
            if m.process is not None and m.process.poll() is not None:
                raise RuntimeError(f"etcd {m.name} exited: {m.log.read_text()[-2000:]}")
            try:
                with socket.create_connection(("127.0.0.1", m.client_port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"etcd {m.name} did not listen within {_READY_TIMEOUT}s")

    def kill(self, i: int) -> None:
        """SIGKILL member ``i`` and wait for it to exit."""
        p = self.members[i].process
        if p is not None and p.poll() is None:
            p.send_signal(signal.SIGKILL)
            p.wait(10)

    def restart(self, i: int) -> None:
        """Start member ``i`` again on its data directory and ports."""
        m = self.members[i]
        self._spawn(m, state="existing")
        self._wait_port(m)

    def stop(self) -> None:
        for m in self.members:
            p = m.process
            if p is not None and p.poll() is None:
                p.terminate()
        for m in self.members:
            p = m.process
            if p is not None:
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait(10)

    def __enter__(self) -> EtcdCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
