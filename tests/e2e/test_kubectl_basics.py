"""The real kubectl against a real server: everyday commands on ConfigMaps, Services, namespaces, raw."""

from __future__ import annotations

import json
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.conftest import Server, requires_kubectl
from tests.e2e.helpers import Kube, LineReader, cm_path, configmap, unique

MERGE = "application/merge-patch+json"

pytestmark = requires_kubectl


@pytest.fixture
def ns(api: Kube) -> str:
    """A fresh namespace per test, so listings show only what the test made."""
    name = unique("kb")
    api.ok(
        "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    )
    return name


def _table(out: str) -> list[list[str]]:
    """kubectl's column output as rows of cells (split on runs of 2+ spaces)."""
    import re

    return [re.split(r"\s{2,}", line.strip()) for line in out.strip().splitlines()]


def _manifest(path: Path, *docs: dict[str, Any]) -> str:
    path.write_text(yaml.safe_dump_all(docs))
    return str(path)


def test_api_resources(server: Server) -> None:
    """api-resources lists deployments with SHORTNAMES deploy and APIVERSION apps/v1, and core kinds."""
    rows = _table(server.kubectl("api-resources").stdout)
    assert rows[0] == ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"]
    by_name = {(r[0], r[-1]): r for r in rows[1:]}
    assert by_name[("deployments", "Deployment")] == [
        "deployments",
        "deploy",
        "apps/v1",
        "true",
        "Deployment",
    ]
    assert by_name[("namespaces", "Namespace")] == ["namespaces", "ns", "v1", "false", "Namespace"]
    assert by_name[("configmaps", "ConfigMap")] == ["configmaps", "cm", "v1", "true", "ConfigMap"]
    assert ("leases", "Lease") in by_name and ("jobs", "Job") in by_name


def test_api_versions(server: Server) -> None:
    """api-versions prints one group/version per line, including v1 and apps/v1."""
    lines = server.kubectl("api-versions").stdout.split()
    assert {"v1", "apps/v1", "batch/v1", "coordination.k8s.io/v1", "events.k8s.io/v1"} <= set(lines)
    assert lines == sorted(lines)


def test_get_namespaces(server: Server) -> None:
    """get ns shows the four built-in namespaces as Active."""
    rows = _table(server.kubectl("get", "ns").stdout)
    assert rows[0] == ["NAME", "STATUS", "AGE"]
    status = {r[0]: r[1] for r in rows[1:]}
    for name in ("default", "kube-system", "kube-public", "kube-node-lease"):
        assert status[name] == "Active"


def test_get_raw(server: Server) -> None:
    """get --raw returns the server's JSON for /api/v1 and /version."""
    v1 = json.loads(server.kubectl("get", "--raw", "/api/v1").stdout)
    assert v1["kind"] == "APIResourceList" and v1["groupVersion"] == "v1"
    version = json.loads(server.kubectl("get", "--raw", "/version").stdout)
    assert version["gitVersion"].startswith("v1.32.")


def test_version_uses_matching_kubectl(server: Server) -> None:
    """kubectl version reports a 1.32 server (the dispatcher picks the 1.32 client)."""
    out = json.loads(server.kubectl("version", "-o", "json").stdout)
    assert out["serverVersion"]["minor"] == "32"
    assert out["clientVersion"]["gitVersion"].startswith("v1.32.")


def test_get_configmap_watch(server: Server, api: Kube, ns: str) -> None:
    """get cm -w prints the initial list, then a line per create, modify and delete."""
    api.ok("POST", cm_path(ns), configmap("w0", ns))
    proc = server.kubectl_popen("get", "cm", "-n", ns, "-w", "--request-timeout=20s")
    out = LineReader(proc.stdout)
    try:
        assert out.next().split() == ["NAME", "DATA", "AGE"]
        assert out.next().split()[0] == "w0"
        api.ok("POST", cm_path(ns), configmap("w1", ns))
        assert out.next().split()[:2] == ["w1", "1"]
        patch = {"data": {"a": "1", "b": "2"}}
        api.ok("PATCH", cm_path(ns, "w1"), patch, content_type="application/merge-patch+json")
        assert out.next().split()[:2] == ["w1", "3"]
        api.ok("DELETE", cm_path(ns, "w1"))
        assert out.next().split()[0] == "w1"
    finally:
        _end(proc)


def _end(proc: subprocess.Popen[str]) -> tuple[str, str]:
    """Stop a background kubectl (if still running) and collect what is left of its output."""
    if proc.poll() is None:
        proc.terminate()
    try:
        return proc.communicate(timeout=10)
    except ValueError:  # a LineReader thread already owns the pipe
        proc.wait(10)
        return "", ""


def _unhold(api: Kube, ns: str, name: str) -> None:
    api.ok("PATCH", cm_path(ns, name), {"metadata": {"finalizers": None}}, content_type=MERGE)


def test_label_and_annotate(server: Server, api: Kube, ns: str) -> None:
    """label and annotate change metadata; -l selects by the new label; --overwrite and key- work."""
    api.ok("POST", cm_path(ns), configmap("lab", ns))
    api.ok("POST", cm_path(ns), configmap("other", ns))
    assert "labeled" in server.kubectl("label", "cm", "lab", "tier=fe", "-n", ns).stdout
    assert "annotated" in server.kubectl("annotate", "cm", "lab", "note=hello", "-n", ns).stdout
    meta = api.ok("GET", cm_path(ns, "lab"))["metadata"]
    assert meta["labels"] == {"tier": "fe"} and meta["annotations"] == {"note": "hello"}
    out = server.kubectl("get", "cm", "-n", ns, "-l", "tier=fe", "-o", "name").stdout.split()
    assert out == ["configmap/lab"]
    server.kubectl("label", "cm", "lab", "tier=be", "--overwrite", "-n", ns)
    assert server.kubectl("get", "cm", "-n", ns, "-l", "tier in (be)", "-o", "name").stdout.split() == [
        "configmap/lab"
    ]
    assert server.kubectl("get", "cm", "-n", ns, "-l", "!tier", "-o", "name").stdout.split() == [
        "configmap/other"
    ]
    server.kubectl("label", "cm", "lab", "tier-", "-n", ns)
    assert (
        "labels" not in api.ok("GET", cm_path(ns, "lab"))["metadata"]
        or not api.ok("GET", cm_path(ns, "lab"))["metadata"]["labels"]
    )


def test_field_selector(server: Server, api: Kube, ns: str) -> None:
    """--field-selector metadata.name=x returns only x."""
    for n in ("fa", "fb"):
        api.ok("POST", cm_path(ns), configmap(n, ns))
    out = server.kubectl("get", "cm", "-n", ns, "--field-selector", "metadata.name=fb", "-o", "name").stdout
    assert out.split() == ["configmap/fb"]
    res = server.kubectl("get", "cm", "-n", ns, "--field-selector", "spec.nope=1", check=False)
    assert res.returncode != 0 and "field label not supported: spec.nope" in res.stderr


def test_chunked_list(server: Server, api: Kube, ns: str) -> None:
    """get --chunk-size=2 over 5 objects follows continue tokens and prints all five once."""
    for i in range(5):
        api.ok("POST", cm_path(ns), configmap(f"chunk{i}", ns))
    out = server.kubectl("get", "cm", "-n", ns, "--chunk-size=2").stdout
    rows = _table(out)
    assert [r[0] for r in rows[1:]] == [f"chunk{i}" for i in range(5)]


def test_chunked_list_makes_three_requests(server: Server, api: Kube, ns: str) -> None:
    """With 5 objects and --chunk-size=2 kubectl sends three list requests (limit=2, then continue twice)."""
    for i in range(5):
        api.ok("POST", cm_path(ns), configmap(f"c{i}", ns))
    log = server.kubectl("get", "cm", "-n", ns, "--chunk-size=2", "-v=6").stderr
    lists = [
        line for line in log.splitlines() if f"/namespaces/{ns}/configmaps?" in line and "limit=2" in line
    ]
    assert len(lists) == 3, log
    assert sum("continue=" in line for line in lists) == 2


def test_patch_merge_json_strategic(server: Server, api: Kube, ns: str) -> None:
    """patch --type=merge, --type=json and the default strategic patch each apply."""
    api.ok("POST", cm_path(ns), configmap("pt", ns, data={"a": "1"}))
    server.kubectl("patch", "cm", "pt", "-n", ns, "--type=merge", "-p", '{"data":{"b":"2"}}')
    server.kubectl(
        "patch", "cm", "pt", "-n", ns, "--type=json", "-p", '[{"op":"replace","path":"/data/a","value":"10"}]'
    )
    server.kubectl("patch", "cm", "pt", "-n", ns, "-p", '{"data":{"c":"3","b":null}}')
    assert api.ok("GET", cm_path(ns, "pt"))["data"] == {"a": "10", "c": "3"}


def test_edit_with_scripted_editor(server: Server, api: Kube, ns: str, tmp_path: Path) -> None:
    """edit with EDITOR set to a sed script changes the object."""
    api.ok("POST", cm_path(ns), configmap("ed", ns, data={"color": "red"}))
    editor = tmp_path / "editor.sh"
    editor.write_text('#!/bin/sh\nsed -i "s/color: red/color: blue/" "$1"\n')
    editor.chmod(editor.stat().st_mode | stat.S_IEXEC)
    out = server.kubectl(
        "edit", "cm", "ed", "-n", ns, env={"EDITOR": str(editor), "KUBE_EDITOR": str(editor)}
    )
    assert "edited" in out.stdout
    assert api.ok("GET", cm_path(ns, "ed"))["data"] == {"color": "blue"}


def test_replace_from_file(server: Server, api: Kube, ns: str, tmp_path: Path) -> None:
    """replace -f overwrites the object with the file's content."""
    api.ok("POST", cm_path(ns), configmap("rep", ns, data={"a": "1"}))
    path = _manifest(tmp_path / "cm.yaml", configmap("rep", ns, data={"b": "2"}))
    assert "replaced" in server.kubectl("replace", "-f", path).stdout
    assert api.ok("GET", cm_path(ns, "rep"))["data"] == {"b": "2"}


def test_create_service_allocates_cluster_ip(server: Server, ns: str, tmp_path: Path) -> None:
    """create -f of a Service allocates a clusterIP that get svc shows."""
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "svc", "namespace": ns},
        "spec": {"selector": {"app": "x"}, "ports": [{"port": 80, "targetPort": 8080}]},
    }
    assert (
        "service/svc created" in server.kubectl("create", "-f", _manifest(tmp_path / "svc.yaml", svc)).stdout
    )
    obj = json.loads(server.kubectl("get", "svc", "svc", "-n", ns, "-o", "json").stdout)
    ip = obj["spec"]["clusterIP"]
    assert ip and ip != "None" and len(ip.split(".")) == 4
    assert obj["spec"]["type"] == "ClusterIP"
    rows = _table(server.kubectl("get", "svc", "-n", ns).stdout)
    assert rows[0] == ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"]
    assert rows[1][:5] == ["svc", "ClusterIP", ip, "<none>", "80/TCP"]


def test_get_pods_and_services(server: Server, api: Kube, ns: str) -> None:
    """get pods,svc prints both kinds with kind/ name prefixes."""
    api.ok(
        "POST",
        f"/api/v1/namespaces/{ns}/pods",
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]},
        },
    )
    api.ok(
        "POST",
        f"/api/v1/namespaces/{ns}/services",
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {"ports": [{"port": 81}]}},
    )
    out = server.kubectl("get", "pods,svc", "-n", ns).stdout
    assert "pod/p" in out and "service/s" in out


def test_get_pods_all_namespaces(server: Server, api: Kube, ns: str) -> None:
    """get pods -A adds a NAMESPACE column and shows pods from every namespace."""
    api.ok(
        "POST",
        f"/api/v1/namespaces/{ns}/pods",
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "pa"},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]},
        },
    )
    rows = _table(server.kubectl("get", "pods", "-A").stdout)
    assert rows[0][:3] == ["NAMESPACE", "NAME", "READY"]
    assert [ns, "pa"] in [r[:2] for r in rows[1:]]


def test_apply_server_side_creates(server: Server, api: Kube, ns: str, tmp_path: Path) -> None:
    """apply --server-side creates a missing object with one apply patch (201)."""
    path = _manifest(tmp_path / "ssa.yaml", configmap("ssa", ns, data={"x": "1"}))
    res = server.kubectl("apply", "--server-side", "-f", path, "-v=6")
    assert "configmap/ssa serverside-applied" in res.stdout
    assert any(
        "PATCH" in line and "/configmaps/ssa" in line and "201" in line for line in res.stderr.splitlines()
    )
    assert api.ok("GET", cm_path(ns, "ssa"))["data"] == {"x": "1"}


def test_delete_and_delete_wait(server: Server, api: Kube, ns: str) -> None:
    """delete removes an object; with a finalizer, delete --wait returns once the finalizer is removed."""
    api.ok("POST", cm_path(ns), configmap("d1", ns))
    assert 'configmap "d1" deleted' in server.kubectl("delete", "cm", "d1", "-n", ns).stdout
    assert api.get(cm_path(ns, "d1")).status == 404
    api.ok("POST", cm_path(ns), configmap("d2", ns, finalizers=["example.com/hold"]))
    proc = server.kubectl_popen("delete", "cm", "d2", "-n", ns, "--wait=true", "--timeout=20s", "-v=6")
    try:
        # kubectl logs its watch request once it is waiting for the object to go.
        LineReader(proc.stderr).until(lambda line: "watch=true" in line)
        assert proc.poll() is None
        assert api.ok("GET", cm_path(ns, "d2"))["metadata"]["deletionTimestamp"]
        _unhold(api, ns, "d2")
        assert proc.wait(15) == 0
        assert proc.stdout is not None and 'configmap "d2" deleted' in proc.stdout.read()
    finally:
        _end(proc)


def test_delete_by_label(server: Server, api: Kube, ns: str) -> None:
    """delete -l removes exactly the matching objects."""
    for n, lab in (("l1", "x"), ("l2", "x"), ("l3", "y")):
        api.ok("POST", cm_path(ns), configmap(n, ns, labels={"grp": lab}))
    out = server.kubectl("delete", "cm", "-n", ns, "-l", "grp=x").stdout
    assert 'configmap "l1" deleted' in out and 'configmap "l2" deleted' in out
    names = {i["metadata"]["name"] for i in api.ok("GET", cm_path(ns))["items"]}
    assert names == {"l3"}


def test_wait_for_delete(server: Server, api: Kube, ns: str) -> None:
    """kubectl wait --for=delete returns when the object goes away."""
    api.ok("POST", cm_path(ns), configmap("wd", ns, finalizers=["example.com/hold"]))
    api.ok("DELETE", cm_path(ns, "wd"))
    proc = server.kubectl_popen("wait", "--for=delete", "cm/wd", "-n", ns, "--timeout=20s", "-v=6")
    try:
        LineReader(proc.stderr).until(lambda line: "watch=true" in line)
        assert proc.poll() is None
        _unhold(api, ns, "wd")
        assert proc.wait(15) == 0
        assert proc.stdout is not None and "condition met" in proc.stdout.read()
    finally:
        _end(proc)


def test_wait_for_delete_of_missing_object(server: Server, ns: str) -> None:
    """kubectl wait --for=delete on an object that is already gone succeeds at once."""
    res = server.kubectl("wait", "--for=delete", "cm/never-there", "-n", ns, "--timeout=5s", check=False)
    assert res.returncode == 0, res.stderr


def test_get_missing_reports_not_found(server: Server, ns: str) -> None:
    """get of a missing object prints the server's NotFound message."""
    res = server.kubectl("get", "cm", "nope", "-n", ns, check=False)
    assert res.returncode != 0
    assert 'Error from server (NotFound): configmaps "nope" not found' in res.stderr


def test_create_duplicate_reports_already_exists(server: Server, api: Kube, ns: str, tmp_path: Path) -> None:
    """create -f of an existing object prints AlreadyExists."""
    api.ok("POST", cm_path(ns), configmap("dup", ns))
    res = server.kubectl("create", "-f", _manifest(tmp_path / "dup.yaml", configmap("dup", ns)), check=False)
    assert res.returncode != 0
    assert (
        "Error from server (AlreadyExists)" in res.stderr and 'configmaps "dup" already exists' in res.stderr
    )
