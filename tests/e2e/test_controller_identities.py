"""``kplane serve``'s built-in controllers act as upstream's least-privilege identities: each
controller as its ServiceAccount ``kube-system/<controller>`` bound to ``system:controller:<controller>``
(kube-controller-manager's ``--use-service-account-credentials``), the shared informers as
``system:kube-controller-manager``, the scheduler as ``system:kube-scheduler`` and each simulated
kubelet as ``system:node:<node>`` in ``system:nodes``. Role contents are upstream's
(plugin/pkg/auth/authorizer/rbac/bootstrappolicy/controller_policy.go and testdata/*.yaml, 1.32)."""

from __future__ import annotations

import json
import stat
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e import conftest as e2e

pytestmark = [e2e.requires_kubectl, pytest.mark.timeout(180)]

SA = "system:serviceaccount:kube-system:"

_POLICY = """apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
"""


@pytest.fixture(scope="module")
def audited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[e2e.Server]:
    """A cluster (controllers and 3 nodes) writing every request to an audit log."""
    data = tmp_path_factory.mktemp("kplane")
    policy = data / "policy.yaml"
    policy.write_text(_POLICY)
    srv = e2e.start_server(
        data,
        "--audit-policy-file",
        str(policy),
        "--audit-log-path",
        str(data / "audit.log"),
        controllers=True,
    )
    yield srv
    srv.stop()


def _events(server: e2e.Server) -> list[dict[str, Any]]:
    lines = (server.data_dir / "audit.log").read_text().splitlines()
    return [e for e in map(json.loads, lines) if e.get("stage") == "ResponseComplete"]


def _writes_by(events: list[dict[str, Any]]) -> set[tuple[str, str, str, str]]:
    """(user, verb, resource, subresource) of every write."""
    return {
        (
            e["user"]["username"],
            e["verb"],
            e.get("objectRef", {}).get("resource", ""),
            e.get("objectRef", {}).get("subresource", ""),
        )
        for e in events
        if e["verb"] not in ("get", "list", "watch")
    }


def test_each_controller_writes_as_its_own_identity(audited: e2e.Server) -> None:
    """A rollout, a deletion with its dependents and a namespace deletion are carried out by the
    controllers' own users, none of them refused; no controller acts as the admin."""
    audited.kubectl("create", "deployment", "web", "--image=nginx", "--replicas=2")
    audited.kubectl("rollout", "status", "deployment/web", "--timeout=60s")
    audited.kubectl("create", "namespace", "doomed")
    audited.kubectl("create", "configmap", "c", "-n", "doomed")
    audited.kubectl("delete", "namespace", "doomed", "--timeout=60s")
    audited.kubectl("delete", "deployment", "web", "--cascade=foreground", "--timeout=60s")
    wanted = {
        (SA + "deployment-controller", "create", "replicasets", ""),
        (SA + "deployment-controller", "update", "deployments", "status"),
        (SA + "replicaset-controller", "create", "pods", ""),
        (SA + "replicaset-controller", "update", "replicasets", "status"),
        ("system:kube-scheduler", "create", "pods", "binding"),
        (SA + "namespace-controller", "update", "namespaces", "finalize"),
        (SA + "generic-garbage-collector", "delete", "replicasets", ""),
        (SA + "root-ca-cert-publisher", "create", "configmaps", ""),
        ("system:kube-controller-manager", "create", "serviceaccounts", "token"),
    }
    deadline = time.monotonic() + 30
    while True:
        events = _events(audited)
        writes = _writes_by(events)
        kubelet = {
            w for w in writes if w[0].startswith("system:node:") and w[1:] == ("patch", "pods", "status")
        }
        if wanted <= writes and kubelet:
            break
        assert time.monotonic() < deadline, f"missing writes: {wanted - writes}"
        time.sleep(0.5)
    refused = [
        (e["user"]["username"], e["verb"], e.get("requestURI"))
        for e in events
        if e.get("responseStatus", {}).get("code") in (401, 403)
    ]
    assert refused == []
    # the admin wrote only what this test asked kubectl for
    assert all(
        e["userAgent"].startswith("kubectl") for e in events if e["user"]["username"] == "kplane-admin"
    )
    node_groups = {
        tuple(e["user"]["groups"]) for e in events if e["user"]["username"].startswith("system:node:")
    }
    assert node_groups == {("system:nodes", "system:authenticated")}


def test_a_controller_is_refused_what_its_role_does_not_grant(audited: e2e.Server) -> None:
    """``auth can-i`` answers from the controllers' roles, and a real request with the deployment
    controller's token is refused with upstream's Forbidden message."""

    def can_i(user: str, *args: str) -> str:
        res = audited.kubectl("auth", "can-i", f"--as={user}", *args, check=False)
        return res.stdout.strip()

    assert can_i(SA + "deployment-controller", "delete", "nodes") == "no"
    assert can_i(SA + "deployment-controller", "create", "replicasets", "-n", "default") == "yes"
    assert can_i(SA + "deployment-controller", "patch", "deployments", "-n", "default") == "no"
    assert can_i(SA + "replicaset-controller", "get", "secrets", "-n", "kube-system") == "no"
    assert can_i("system:kube-scheduler", "create", "pods", "--subresource=binding", "-n", "default") == "yes"
    assert can_i("system:kube-scheduler", "delete", "deployments", "-n", "default") == "no"
    assert can_i("system:kube-controller-manager", "watch", "secrets", "-A") == "yes"
    assert can_i("system:kube-controller-manager", "delete", "pods", "-n", "default") == "no"
    node = ["--as-group=system:nodes", "--as-group=system:authenticated"]
    assert (
        can_i("system:node:kplane-node-0", "patch", "pods", "--subresource=status", *node, "-n", "default")
        == "yes"
    )
    assert can_i("system:node:kplane-node-0", "delete", "namespaces", *node) == "no"

    token = audited.kubectl("create", "token", "deployment-controller", "-n", "kube-system").stdout.strip()
    assert e2e.KUBECTL is not None
    denied = subprocess.run(
        [
            e2e.KUBECTL,
            "--kubeconfig=/dev/null",
            f"--server={audited.url}",
            f"--certificate-authority={audited.data_dir / 'pki' / 'ca.crt'}",
            f"--token={token}",
            "delete",
            "node",
            "kplane-node-0",
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert denied.returncode != 0
    # upstream: staging/src/k8s.io/apiserver/pkg/endpoints/handlers/responsewriters/errors.go
    assert (
        'nodes "kplane-node-0" is forbidden: User "system:serviceaccount:kube-system:deployment-controller"'
        ' cannot delete resource "nodes" in API group "" at the cluster scope'
    ) in denied.stderr


def test_component_credentials_are_owner_only_certificates(audited: e2e.Server) -> None:
    """The components' kubeconfigs (client certificates from the cluster CA, as kubeadm writes)
    are 0600 in a 0700 directory and name the components' users."""
    directory = audited.data_dir / "controllers"
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    for name, user in (
        ("kube-controller-manager.kubeconfig", "system:kube-controller-manager"),
        ("kube-scheduler.kubeconfig", "system:kube-scheduler"),
        ("nodes.kubeconfig", "system:node:kplane-node-0"),
    ):
        path: Path = directory / name
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        out = audited.kubectl("--kubeconfig", str(path), "auth", "whoami", "-o", "json").stdout
        assert json.loads(out)["status"]["userInfo"]["username"] == user


def test_controller_roles_are_upstreams(audited: e2e.Server) -> None:
    """Two roles as 1.32's testdata/controller-roles.yaml lists them, bound to their ServiceAccounts."""
    role = json.loads(
        audited.kubectl("get", "clusterrole", "system:controller:deployment-controller", "-o", "json").stdout
    )
    events = {
        "apiGroups": ["", "events.k8s.io"],
        "resources": ["events"],
        "verbs": ["create", "patch", "update"],
    }
    apps = ["apps", "extensions"]
    assert role["rules"] == [
        {"apiGroups": apps, "resources": ["deployments"], "verbs": ["get", "list", "update", "watch"]},
        {"apiGroups": apps, "resources": ["deployments/status"], "verbs": ["update"]},
        {"apiGroups": apps, "resources": ["deployments/finalizers"], "verbs": ["update"]},
        {
            "apiGroups": apps,
            "resources": ["replicasets"],
            "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"],
        },
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "update", "watch"]},
        events,
    ]
    gc = json.loads(
        audited.kubectl(
            "get", "clusterrole", "system:controller:generic-garbage-collector", "-o", "json"
        ).stdout
    )
    assert gc["rules"] == [
        {
            "apiGroups": ["*"],
            "resources": ["*"],
            "verbs": ["delete", "get", "list", "patch", "update", "watch"],
        },
        events,
    ]
    binding = json.loads(
        audited.kubectl("get", "clusterrolebinding", "system:controller:job-controller", "-o", "json").stdout
    )
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "job-controller", "namespace": "kube-system"}
    ]
    node = json.loads(audited.kubectl("get", "clusterrolebinding", "system:node", "-o", "json").stdout)
    assert "subjects" not in node  # upstream binds it to nobody (the Node authorizer grants kubelets)


def test_a_node_reports_the_usage_of_its_own_node_only(audited: e2e.Server, tmp_path: Path) -> None:
    """A simulated kubelet's identity may PUT its node's usage report (kplane:resource-usage-reporter)
    but not another node's: NodeRestriction's message (plugin/pkg/admission/noderestriction)."""
    nodes = str(audited.data_dir / "controllers" / "nodes.kubeconfig")
    body = tmp_path / "report.json"
    body.write_text(
        json.dumps(
            {
                "timestamp": "2026-01-01T00:00:00Z",
                "window": "15s",
                "usage": {"cpu": "0", "memory": "0"},
                "pods": [],
            }
        )
    )

    def put(context: str, node: str) -> subprocess.CompletedProcess[str]:
        path = f"/kplane/v1/nodes/{node}/resource-usage"
        return audited.kubectl(
            "--kubeconfig",
            nodes,
            "--context",
            context,
            "replace",
            "--raw",
            path,
            "-f",
            str(body),
            check=False,
        )

    own = put("kplane-node-1", "kplane-node-1")
    assert own.returncode == 0, own.stderr
    other = put("kplane-node-1", "kplane-node-0")
    assert other.returncode != 0
    assert 'node "kplane-node-1" is not allowed to modify node "kplane-node-0"' in other.stderr


def test_a_deleted_controller_account_is_recreated_with_a_new_token(audited: e2e.Server) -> None:
    """Deleting kube-system/deployment-controller invalidates its token (401); the manager recreates
    the account and asks for a new token, and Deployments roll out again."""
    old = json.loads(
        audited.kubectl("get", "sa", "deployment-controller", "-n", "kube-system", "-o", "json").stdout
    )
    audited.kubectl("delete", "sa", "deployment-controller", "-n", "kube-system")
    audited.kubectl("create", "deployment", "after", "--image=nginx", "--replicas=1")
    audited.kubectl("rollout", "status", "deployment/after", "--timeout=60s")
    new = json.loads(
        audited.kubectl("get", "sa", "deployment-controller", "-n", "kube-system", "-o", "json").stdout
    )
    assert new["metadata"]["uid"] != old["metadata"]["uid"]
