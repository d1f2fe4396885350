"""End-to-end fixtures: a real ``kplane serve`` process on a free loopback port.

``server`` is shared by a test module (one server per module keeps the suite fast); tests that need
a pristine or killable server start their own with ``start_server``. ``kubectl`` runs the real
binary against the server's kubeconfig, with its discovery cache in a private directory.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from kubernetes import client as k8s_client
from kubernetes import config as k8s_config

from kplane.server.storage.testing import etcd_process
from tests.e2e import helpers

KUBECTL = shutil.which("kubectl")
requires_kubectl = pytest.mark.skipif(
    KUBECTL is None, reason="kubectl is not installed: kubectl e2e tests skipped"
)
requires_etcd = pytest.mark.skipif(
    not etcd_process.available(),
    reason="etcd is not installed (Debian: apt-get install etcd-server; .ci/run installs it)",
)


@dataclass
class Server:
    proc: subprocess.Popen[str]
    data_dir: Path
    url: str
    kubeconfig: Path
    log: Path

    def kubectl(
        self,
        *args: str,
        input: str | None = None,
        check: bool = True,
        env: dict[str, str] | None = None,
        timeout: float = 30,
    ) -> subprocess.CompletedProcess[str]:
        """Run the real kubectl against this server; raises with its output when ``check`` fails."""
        assert KUBECTL is not None
        full_env = {
            **os.environ,
            "KUBECONFIG": str(self.kubeconfig),
            "KUBECACHEDIR": str(self.data_dir / "kubecache"),
            **(env or {}),
        }
        res = subprocess.run(
            [KUBECTL, f"--cache-dir={self.data_dir / 'kubecache'}", *args],
            input=input,
            capture_output=True,
            text=True,
            env=full_env,
            timeout=timeout,
        )
        if check and res.returncode != 0:
            raise AssertionError(
                f"kubectl {' '.join(args)} failed ({res.returncode}):\n{res.stdout}\n{res.stderr}"
            )
        return res

    def kubectl_popen(self, *args: str) -> subprocess.Popen[str]:
        """Start kubectl in the background (``get -w``, ``delete --wait``, ``wait``); the caller ends it."""
        assert KUBECTL is not None
        env = {**os.environ, "KUBECONFIG": str(self.kubeconfig)}
        return subprocess.Popen(
            [KUBECTL, f"--cache-dir={self.data_dir / 'kubecache'}", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


def serve_command(data_dir: Path) -> list[str]:
    """``kplane serve`` on a free port with ``data_dir``, run by this interpreter."""
    return [sys.executable, "-m", "kplane.cli.main", "serve", "--data-dir", str(data_dir), "--port", "0"]


def start_server(
    data_dir: Path,
    *extra: str,
    storage: str = "sqlite",
    prefix: tuple[str, ...] = (),
    log: Path | None = None,
    controllers: bool = False,
) -> Server:
    """Start ``kplane serve --port 0`` in ``data_dir`` and wait until it prints its URL. ``prefix``
    runs it through another command (e.g. ``nsenter`` into a mount namespace); its log goes to
    ``log`` (default ``data_dir/server.log``). The bare API server unless ``controllers`` (then the
    built-in controllers and 3 simulated nodes run too)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    log = log or data_dir / "server.log"
    out = open(log, "a")  # noqa: SIM115 - the process owns it for its lifetime
    proc = subprocess.Popen(
        [
            *prefix,
            *serve_command(data_dir),
            "--storage",
            storage,
            *(() if controllers else ("--no-controllers",)),
            *extra,
        ],
        stdout=subprocess.PIPE,
        stderr=out,
        text=True,
    )
    assert proc.stdout is not None
    deadline = time.monotonic() + 20
    url = ""
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        m = re.search(r"serving (https://\S+)", line)
        if m:
            url = m.group(1)
        if line.startswith("export KUBECONFIG="):
            return Server(proc, data_dir, url, Path(line.split("=", 1)[1].strip()), log)
    proc.kill()
    raise RuntimeError(f"server did not start; log:\n{log.read_text()}")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = start_server(tmp_path_factory.mktemp("kplane"))
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """``kplane serve`` as users run it: the built-in controllers and 3 simulated nodes."""
    srv = start_server(tmp_path_factory.mktemp("kplane"), controllers=True)
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def api(server: Server) -> helpers.Kube:
    """Raw HTTPS access to the module's server with its admin credentials."""
    return helpers.Kube.from_kubeconfig(server.kubeconfig, server.data_dir / "e2e-pki")


@pytest.fixture(scope="module")
def k8s(server: Server) -> Iterator[k8s_client.ApiClient]:
    """The official ``kubernetes`` client, configured from the server's admin kubeconfig."""
    cl = k8s_config.new_client_from_config(config_file=str(server.kubeconfig))
    yield cl
    cl.close()


@pytest.fixture(scope="module")
def etcd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[etcd_process.EtcdCluster]:
    """A one-member etcd on loopback, shared by one module's tests (mark them ``requires_etcd``)."""
    with etcd_process.EtcdCluster(1, tmp_path_factory.mktemp("etcd")) as cluster:
        yield cluster
