"""Operating kplane on etcd: migrate a SQLite data directory into etcd and back, and back up and
restore etcd with its own snapshot tools, as the README describes. Skipped, saying so, where etcd
is not installed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kplane.server.storage.testing import etcd_process
from tests.e2e import helpers
from tests.e2e.conftest import start_server
from tests.e2e.test_etcd_replicas import kube

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not etcd_process.available() or shutil.which("etcdctl") is None,
        reason="etcd is not installed (Debian: apt-get install etcd-server etcd-client; .ci/run installs it)",
    ),
]


def kplane(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kplane.cli.main", *args], capture_output=True, text=True, timeout=60
    )


def etcdctl(endpoint: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ETCDCTL_API": "3"}
    res = subprocess.run(
        ["etcdctl", f"--endpoints={endpoint}", *args], capture_output=True, text=True, env=env, timeout=60
    )
    assert res.returncode == 0, res.stderr
    return res


def names(api: helpers.Kube, ns: str) -> set[str]:
    return {o["metadata"]["name"] for o in api.ok("GET", f"/api/v1/namespaces/{ns}/configmaps")["items"]}


def test_migrate_into_etcd_backup_restore_and_back(tmp_path: Path) -> None:
    sqlite_dir = tmp_path / "sqlite"
    srv = start_server(sqlite_dir)
    try:
        api = kube(srv)
        api.ok("POST", "/api/v1/namespaces", {"metadata": {"name": "shop"}})
        for n in ("a", "b"):
            api.ok("POST", "/api/v1/namespaces/shop/configmaps", helpers.configmap(n, "shop"))
    finally:
        srv.stop()

    with etcd_process.EtcdCluster(1, tmp_path / "etcd") as cluster:
        endpoint = cluster.endpoints[0]
        storage = f"etcd://{endpoint}"
        res = kplane("migrate", "--from", str(sqlite_dir), "--to", storage)
        assert res.returncode == 0, res.stderr
        assert res.stdout.startswith("kplane: copied ")
        again = kplane("migrate", "--from", str(sqlite_dir), "--to", storage)
        assert again.returncode == 1 and "the destination already holds objects" in again.stderr

        # The etcd server keeps the SQLite server's PKI: its kubeconfig and tokens still work.
        srv = start_server(tmp_path / "on-etcd", "--pki-dir", str(sqlite_dir / "pki"), storage=storage)
        try:
            api = kube(srv)
            assert names(api, "shop") >= {"a", "b"}
            etcdctl(endpoint, "snapshot", "save", str(tmp_path / "backup.db"))
            api.ok("POST", "/api/v1/namespaces/shop/configmaps", helpers.configmap("after-backup", "shop"))
        finally:
            srv.stop()

        # Restore: the member's data directory is replaced by the snapshot's.
        member = cluster.members[0]
        cluster.kill(0)
        shutil.rmtree(member.data_dir)
        peer = f"http://127.0.0.1:{member.peer_port}"
        etcdctl(
            endpoint,
            "snapshot",
            "restore",
            str(tmp_path / "backup.db"),
            f"--data-dir={member.data_dir}",
            f"--name={member.name}",
            f"--initial-cluster={member.name}={peer}",
            f"--initial-advertise-peer-urls={peer}",
            "--initial-cluster-token=kplane-test",
        )
        cluster.restart(0)
        srv = start_server(tmp_path / "on-etcd", "--pki-dir", str(sqlite_dir / "pki"), storage=storage)
        try:
            got = names(kube(srv), "shop")
            assert {"a", "b"} <= got and "after-backup" not in got
        finally:
            srv.stop()

        back = tmp_path / "back"
        res = kplane("migrate", "--from", storage, "--to", str(back))
        assert res.returncode == 0, res.stderr
    srv = start_server(back)
    try:
        assert {"a", "b"} <= names(kube(srv), "shop")
    finally:
        srv.stop()
