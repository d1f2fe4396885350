"""Object history end to end: the ``history.kplane.dev`` revisions API, GET at an exact past
revision, 410 beyond retention, RBAC, through the real kubectl against ``kplane serve``."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import Server, requires_kubectl, start_server

pytestmark = requires_kubectl

_WEB = "target.resource=deployments.apps,target.name=web"
_REVISIONS = "/apis/history.kplane.dev/v1alpha1/namespaces/hist/revisions"


@pytest.fixture(scope="module")
def edited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, list[dict[str, Any]]]]:
    """A server where Deployment hist/web was created, edited 4 times by two users with two field
    managers, and deleted; with its RevisionList read after."""
    srv = start_server(tmp_path_factory.mktemp("kplane-history"))
    try:
        k = srv.kubectl
        k("create", "namespace", "hist")
        k("create", "rolebinding", "bob-edit", "--clusterrole=edit", "--user=bob", "-n", "hist")
        k("create", "deployment", "web", "--image=nginx:1", "-n", "hist")  # admin, kubectl-create
        k("set", "image", "deployment/web", "nginx=nginx:2", "-n", "hist", "--as=bob")  # bob, kubectl-set
        for replicas, manager in ((2, "alice-tool"), (3, "bob-tool"), (4, "alice-tool")):
            k(
                "patch", "deployment", "web", "-n", "hist", "--type=merge", f"--field-manager={manager}",
                "-p", json.dumps({"spec": {"replicas": replicas}}),
                *(("--as=bob",) if manager == "bob-tool" else ()),
            )  # fmt: skip
        k("delete", "deployment", "web", "-n", "hist", "--as=bob")
        listed = json.loads(k("get", "--raw", f"{_REVISIONS}?fieldSelector={_WEB}").stdout)
        yield srv, listed["items"]
    finally:
        srv.stop()


def test_revisions_list_every_write_with_its_writer(edited: tuple[Server, list[dict[str, Any]]]) -> None:
    """Create, four edits by two users and two field managers, and a delete: six revisions, in
    order, each with its operation, user and the field manager it stamped."""
    _, items = edited
    assert [(i["operation"], i["user"], i["fieldManagers"]) for i in items] == [
        ("CREATE", "kplane-admin", ["kubectl-create"]),
        ("UPDATE", "bob", ["kubectl-set"]),
        ("UPDATE", "kplane-admin", ["alice-tool"]),
        ("UPDATE", "bob", ["bob-tool"]),
        ("UPDATE", "kplane-admin", ["alice-tool"]),
        ("DELETE", "bob", []),
    ]
    revs = [i["revision"] for i in items]
    assert revs == sorted(revs) and len(set(revs)) == 6
    assert [i["object"]["spec"]["replicas"] for i in items] == [1, 1, 2, 3, 4, 4]
    assert items[1]["object"]["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:2"
    assert all(i["timestamp"].endswith("Z") and i["target"]["name"] == "web" for i in items)
    assert {i["object"]["metadata"]["resourceVersion"] for i in items} == {str(r) for r in revs}


def test_deleted_objects_are_found(edited: tuple[Server, list[dict[str, Any]]]) -> None:
    """``operation=DELETE`` without a name lists the resource's deletions, with the last state."""
    srv, items = edited
    out = srv.kubectl(
        "get", "--raw", f"{_REVISIONS}?fieldSelector=target.resource=deployments.apps,operation=DELETE"
    )
    deleted = json.loads(out.stdout)["items"]
    assert [(d["target"]["name"], d["revision"]) for d in deleted] == [("web", items[-1]["revision"])]
    assert deleted[0]["object"]["spec"]["replicas"] == 4


def test_kubectl_get_revisions_prints_a_table(edited: tuple[Server, list[dict[str, Any]]]) -> None:
    """``kubectl get revisions`` (discovery names the resource) prints the printer columns."""
    srv, _ = edited
    out = srv.kubectl("get", "revisions", "-n", "hist", f"--field-selector={_WEB}").stdout.splitlines()
    assert out[0].split() == ["NAME", "REVISION", "OPERATION", "TIME", "USER", "MANAGERS"]
    assert [line.split()[2] for line in out[1:]] == [
        "CREATE",
        "UPDATE",
        "UPDATE",
        "UPDATE",
        "UPDATE",
        "DELETE",
    ]
    resources = srv.kubectl("api-resources", "--api-group=history.kplane.dev", "--no-headers").stdout
    assert resources.split() == ["revisions", "history.kplane.dev/v1alpha1", "true", "Revision"]


def test_get_at_an_exact_past_revision(edited: tuple[Server, list[dict[str, Any]]]) -> None:
    """GET with resourceVersion=N&resourceVersionMatch=Exact returns the object as it was at N,
    also after its deletion; before its creation it is 404."""
    srv, items = edited
    for item in items[:-1]:
        path = f"/apis/apps/v1/namespaces/hist/deployments/web?resourceVersion={item['revision']}"
        got = json.loads(srv.kubectl("get", "--raw", path + "&resourceVersionMatch=Exact").stdout)
        assert got["spec"]["replicas"] == item["object"]["spec"]["replicas"]
        assert got["metadata"]["resourceVersion"] == str(item["revision"])
    # A list at an exact past revision (upstream semantics) sees the then-state too.
    at = items[2]["revision"]
    path = f"/apis/apps/v1/namespaces/hist/deployments?resourceVersion={at}&resourceVersionMatch=Exact"
    listed = json.loads(srv.kubectl("get", "--raw", path).stdout)
    assert listed["metadata"]["resourceVersion"] == str(at)
    assert [d["spec"]["replicas"] for d in listed["items"]] == [2]
    before = items[0]["revision"] - 1
    res = srv.kubectl(
        "get", "--raw",
        f"/apis/apps/v1/namespaces/hist/deployments/web?resourceVersion={before}&resourceVersionMatch=Exact",
        check=False,
    )  # fmt: skip
    assert res.returncode != 0 and 'deployments.apps "web" not found' in res.stderr


def test_history_needs_get_on_the_object(edited: tuple[Server, list[dict[str, Any]]]) -> None:
    """Reading an object's history is authorized as reading the object: bob (edit in hist) may,
    carol (no role) gets upstream's 403 for ``get`` on the Deployment."""
    srv, _ = edited
    path = f"{_REVISIONS}?fieldSelector={_WEB}"
    assert json.loads(srv.kubectl("get", "--raw", path, "--as=bob").stdout)["items"]
    res = srv.kubectl("get", "--raw", path, "--as=carol", check=False)
    # Upstream's RBAC denial (k8s.io/apiserver endpoints/handlers/responsewriters.ForbiddenStatusError).
    assert res.returncode != 0
    assert (
        'deployments.apps "web" is forbidden: User "carol" cannot get resource "deployments" in API group '
        '"apps" in the namespace "hist"' in res.stderr
    )


def test_beyond_retention_is_gone(tmp_path: Path) -> None:
    """Once compaction removed a revision (here: ``kplane compact`` on the stopped store), a GET at
    it answers 410 with upstream's message for a read at a compacted etcd revision."""
    srv = start_server(tmp_path / "srv")
    try:
        srv.kubectl("create", "configmap", "old", "--from-literal=a=1")
        first = json.loads(srv.kubectl("get", "configmap", "old", "-o", "json").stdout)["metadata"]
        srv.kubectl("patch", "configmap", "old", "--type=merge", "-p", '{"data":{"a":"2"}}')
    finally:
        srv.stop()
    compact = subprocess.run(
        [sys.executable, "-m", "kplane.cli.main", "compact", "--data-dir", str(tmp_path / "srv")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert compact.returncode == 0, compact.stderr
    srv = start_server(tmp_path / "srv")
    try:
        path = f"/api/v1/namespaces/default/configmaps/old?resourceVersion={first['resourceVersion']}"
        res = srv.kubectl("get", "--raw", path + "&resourceVersionMatch=Exact", check=False)
        # k8s.io/apiserver/pkg/storage/etcd3/errors.go: `expired` ("The resourceVersion for the
        # provided list is too old."), the 410 of a read at a revision etcd compacted.
        assert res.returncode != 0
        assert "The resourceVersion for the provided list is too old." in res.stderr
        assert "(Expired)" in res.stderr
    finally:
        srv.stop()


def _kplane(srv: Server, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kplane.cli.main", *args, "--kubeconfig", str(srv.kubeconfig)],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_kplane_history_lists_revisions_with_writers(edited: tuple[Server, list[dict[str, Any]]]) -> None:
    """``kplane history deploy/web -n hist`` (short name through discovery) prints the six revisions
    with their time, operation, user and field manager."""
    srv, items = edited
    res = _kplane(srv, "history", "deploy/web", "-n", "hist")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0].split() == ["REVISION", "TIME", "OPERATION", "USER", "MANAGERS"]
    rows = [line.split() for line in lines[1:]]
    assert [(r[0], r[3], r[4], r[5]) for r in rows] == [
        (str(items[0]["revision"]), "CREATE", "kplane-admin", "kubectl-create"),
        (str(items[1]["revision"]), "UPDATE", "bob", "kubectl-set"),
        (str(items[2]["revision"]), "UPDATE", "kplane-admin", "alice-tool"),
        (str(items[3]["revision"]), "UPDATE", "bob", "bob-tool"),
        (str(items[4]["revision"]), "UPDATE", "kplane-admin", "alice-tool"),
        (str(items[5]["revision"]), "DELETE", "bob", "-"),
    ]


def test_kplane_history_diff_shows_each_change(edited: tuple[Server, list[dict[str, Any]]]) -> None:
    """``--diff FROM TO`` is a unified YAML diff of the two states; ``--diff`` alone shows every
    change, each headed by its revision and writer."""
    srv, items = edited
    a, b = items[2]["revision"], items[4]["revision"]
    res = _kplane(srv, "history", "deployment/web", "-n", "hist", "--diff", str(a), str(b))
    assert res.returncode == 0, res.stderr
    assert f"--- deployment/web@{a}\n+++ deployment/web@{b}\n" in res.stdout
    assert "-  replicas: 2\n+  replicas: 4\n" in res.stdout
    assert "managedFields" not in res.stdout
    every = _kplane(srv, "history", "deploy/web", "-n", "hist", "--diff")
    assert every.returncode == 0, every.stderr
    heads = [line for line in every.stdout.splitlines() if line.startswith("# revision ")]
    assert [h.split()[3] for h in heads] == ["CREATE", "UPDATE", "UPDATE", "UPDATE", "UPDATE", "DELETE"]
    assert "-        image: nginx:1\n+        image: nginx:2\n" in every.stdout
    for replicas in (
        "-  replicas: 1\n+  replicas: 2\n",
        "-  replicas: 2\n+  replicas: 3\n",
        "-  replicas: 3\n+  replicas: 4\n",
    ):
        assert replicas in every.stdout
    assert f"+++ deploy/web@{items[5]['revision']}\n@@ -1," in every.stdout  # the deletion removes it all


def test_kplane_history_finds_deleted_objects(edited: tuple[Server, list[dict[str, Any]]]) -> None:
    """``kplane history --deleted deploy -n hist`` lists the deleted Deployment and who deleted it."""
    srv, items = edited
    res = _kplane(srv, "history", "--deleted", "deploy", "-n", "hist")
    assert res.returncode == 0, res.stderr
    rows = [line.split() for line in res.stdout.splitlines()]
    assert rows[0] == ["NAMESPACE", "NAME", "REVISION", "DELETED", "USER"]
    assert [(r[0], r[1], r[2], r[-1]) for r in rows[1:]] == [
        ("hist", "web", str(items[5]["revision"]), "bob")
    ]
    none = _kplane(srv, "history", "--deleted", "cm", "-n", "hist")
    assert none.returncode == 0 and none.stdout == "No deleted objects found.\n"
