"""``kplane serve`` serves its built-in controllers' reconcile traces at ``/debug/kplane/traces``,
behind the API server's authentication and RBAC."""

from __future__ import annotations

import contextlib
import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

from tests.e2e.conftest import Server, requires_kubectl

pytestmark = requires_kubectl


def test_builtin_controller_traces_are_served(cluster: Server) -> None:
    """The deployment controller's reconcile of a new Deployment is listed with the event that
    triggered it and the ReplicaSet it created; a user without rights gets 403."""
    created = json.loads(
        cluster.kubectl("create", "deployment", "traced", "--image=nginx", "-o", "json").stdout
    )
    deadline = time.monotonic() + 20
    items: list[dict[str, object]] = []
    while time.monotonic() < deadline:
        out = cluster.kubectl("get", "--raw", "/debug/kplane/traces?controller=deployment&name=traced")
        body = json.loads(out.stdout)
        assert body["kind"] == "ReconcileTraceList"
        items = body["items"]
        if any(
            w["verb"] == "create" and w["resource"] == "replicasets.apps" for t in items for w in t["writes"]
        ):
            break
        time.sleep(0.2)
    first = next(t for t in items if any(w["resource"] == "replicasets.apps" for w in t["writes"]))
    assert {
        (t["kind"], t["name"], t["resourceVersion"])
        for t in first["triggers"]
        if t["type"] in ("Event", "InitialList")
    } >= {("Deployment", "traced", created["metadata"]["resourceVersion"])}
    assert len(first["traceID"]) == 32
    denied = cluster.kubectl("get", "--raw", "/debug/kplane/traces", "--as=nobody", check=False)
    assert denied.returncode != 0 and "forbidden" in denied.stderr


def test_kplane_why_names_the_builtin_controller_behind_a_revision(cluster: Server) -> None:
    """``kplane why deploy/NAME --revision N`` for a revision the deployment controller wrote shows
    that controller's reconcile, what triggered it and the write (traces read from the API server)."""
    cluster.kubectl("create", "deployment", "explained", "--image=nginx")
    deadline = time.monotonic() + 20
    revision = ""
    while time.monotonic() < deadline and not revision:
        out = cluster.kubectl(
            "get", "--raw", "/debug/kplane/traces?controller=deployment&writeName=explained"
        )
        writes = [
            w
            for t in json.loads(out.stdout)["items"]
            for w in t["writes"]
            if w["resource"] == "deployments.apps" and w["name"] == "explained" and w["resourceVersion"]
        ]
        revision = writes[0]["resourceVersion"] if writes else ""
        time.sleep(0.2)
    assert revision, "the deployment controller wrote the Deployment"
    res = subprocess.run(
        [sys.executable, "-m", "kplane.cli.main", "why", "deploy/explained", "--revision", revision,
         "--kubeconfig", str(cluster.kubeconfig)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0].startswith(f"revision {revision} of Deployment default/explained: UPDATE at ")
    assert any(line.startswith("reconcile of deployment for default/explained: ") for line in lines)
    assert any(
        line.endswith("<- this revision") and "deployments.apps default/explained" in line for line in lines
    )


def _listening_tcp_inodes() -> set[str]:
    """Socket inodes of every listening TCP socket of this network namespace (IPv4 and IPv6)."""
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for row in list(f)[1:]:
                cols = row.split()
                if cols[3] == "0A":  # TCP_LISTEN
                    inodes.add(cols[9])
    return inodes


def test_controllers_metrics_are_served_on_an_owner_only_unix_socket(cluster: Server) -> None:
    """The child's /metrics and traces are on DATA_DIR/controllers/metrics.sock (0600, directory
    0700), and the child listens on no TCP port at all: another local user cannot read them."""
    directory = cluster.data_dir / "controllers"
    sock = directory / "metrics.sock"
    assert stat.S_ISSOCK(sock.stat().st_mode)
    assert stat.S_IMODE(sock.stat().st_mode) == 0o600
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    children = Path(f"/proc/{cluster.proc.pid}/task/{cluster.proc.pid}/children").read_text().split()
    assert children, "the server runs no controllers process"
    listening = _listening_tcp_inodes()
    for pid in children:
        fds = Path(f"/proc/{pid}/fd")
        sockets = set()
        for fd in fds.iterdir():
            with contextlib.suppress(FileNotFoundError):  # closed meanwhile
                sockets.add(os.readlink(fd).removeprefix("socket:[").rstrip("]"))
        assert not sockets & listening, f"controllers process {pid} listens on TCP"
    # the scrape still works through the socket: the server's /metrics carries the controllers'
    deadline = time.monotonic() + 20
    while "controller_runtime_reconcile_total" not in (
        text := cluster.kubectl("get", "--raw", "/metrics").stdout
    ):
        assert time.monotonic() < deadline, "the controllers' metrics never reached the server's /metrics"
        time.sleep(0.5)
    assert 'controller="deployment"' in text
