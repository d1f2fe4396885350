"""``kplane serve`` serves its built-in controllers' reconcile traces at ``/debug/kplane/traces``,
behind the API server's authentication and RBAC."""

from __future__ import annotations

import json
import subprocess
import sys
import time

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
