"""The audit log end to end: upstream's Policy decides levels and stages; every write of a kubectl
session appears exactly once (omitStages: RequestReceived) at its rule's level, with upstream's
Event fields (audit.k8s.io/v1 types.go) and authorization annotations."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.e2e.conftest import requires_kubectl, start_server
from tests.e2e.helpers import unique

pytestmark = requires_kubectl

POLICY = """
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
omitManagedFields: true
rules:
  - level: None
    verbs: [get, list, watch]
  - level: None
    nonResourceURLs: ["/api*", "/version", "/openapi/*"]
  - level: Metadata
    resources:
      - group: ""
        resources: [secrets]
  - level: RequestResponse
    resources:
      - group: ""
        resources: [configmaps]
  - level: Request
    namespaces: [default]
  - level: Metadata
"""
WRITES = ("create", "update", "patch", "delete", "deletecollection")


def _events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_every_write_once_at_its_level(tmp_path: Path) -> None:
    """A session of kubectl writes: each write is one ResponseComplete event, at the level of the
    first matching rule; reads are not logged (level None); bodies only where the level says."""
    (tmp_path / "policy.yaml").write_text(POLICY)
    log = tmp_path / "audit" / "audit.log"
    srv = start_server(
        tmp_path / "data", "--audit-policy-file", str(tmp_path / "policy.yaml"), "--audit-log-path", str(log)
    )
    cm, secret, dep = unique("cm"), unique("s"), unique("d")
    try:
        srv.kubectl("create", "configmap", cm, "--from-literal=a=1")
        srv.kubectl("label", "configmap", cm, "x=y")
        srv.kubectl("create", "secret", "generic", secret, "--from-literal=password=hunter2")
        srv.kubectl("create", "deployment", dep, "--image=nginx")
        srv.kubectl("scale", "deployment", dep, "--replicas=2")
        srv.kubectl("get", "configmaps")
        srv.kubectl("delete", "configmap", cm)
        srv.kubectl("delete", "secret", secret)
        srv.kubectl("create", "namespace", unique("ns"))
    finally:
        srv.stop()
    events = _events(log)
    assert all(e["stage"] == "ResponseComplete" for e in events)
    assert all(e["verb"] not in ("get", "list", "watch") for e in events)
    ids = [e["auditID"] for e in events]
    assert len(ids) == len(set(ids))  # each request once

    def about(name: str) -> list[dict[str, Any]]:
        return [e for e in events if e.get("objectRef", {}).get("name") == name]

    cm_events = about(cm)
    assert [e["verb"] for e in cm_events] == ["create", "patch", "delete"]
    created = cm_events[0]
    assert created["level"] == "RequestResponse"
    assert created["objectRef"] == {
        "resource": "configmaps",
        "namespace": "default",
        "name": cm,
        "apiVersion": "v1",
    }
    assert created["responseStatus"] == {"metadata": {}, "code": 201}
    assert created["requestObject"]["data"] == {"a": "1"}
    assert created["responseObject"]["metadata"]["name"] == cm
    assert "managedFields" not in created["responseObject"]["metadata"]  # omitManagedFields
    assert created["user"]["username"] == "kplane-admin"
    assert created["annotations"]["authorization.k8s.io/decision"] == "allow"
    assert created["userAgent"].startswith("kubectl")
    assert created["sourceIPs"] == ["127.0.0.1"]
    assert created["requestURI"].startswith("/api/v1/namespaces/default/configmaps")
    assert created["requestReceivedTimestamp"] <= created["stageTimestamp"]
    secret_events = about(secret)
    assert [(e["verb"], e["level"]) for e in secret_events] == [
        ("create", "Metadata"),
        ("delete", "Metadata"),
    ]
    assert all("requestObject" not in e and "responseObject" not in e for e in secret_events)
    assert b"hunter2" not in log.read_bytes() and b"aHVudGVyMg" not in log.read_bytes()
    dep_events = about(dep)
    assert [(e["verb"], e["level"]) for e in dep_events] == [("create", "Request"), ("patch", "Request")]
    assert dep_events[1]["objectRef"]["subresource"] == "scale"
    assert "requestObject" in dep_events[0] and "responseObject" not in dep_events[0]
    ns_events = [e for e in events if e.get("objectRef", {}).get("resource") == "namespaces"]
    assert [(e["verb"], e["level"]) for e in ns_events] == [("create", "Metadata")]
    assert log.stat().st_mode & 0o777 == 0o600


def test_off_without_policy_and_refused_write_logged(tmp_path: Path) -> None:
    """Without --audit-log-path nothing is written; a refused write is logged with its Status."""
    (tmp_path / "policy.yaml").write_text(
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n"
    )
    log = tmp_path / "audit.log"
    srv = start_server(
        tmp_path / "data", "--audit-policy-file", str(tmp_path / "policy.yaml"), "--audit-log-path", str(log)
    )
    try:
        res = srv.kubectl("create", "configmap", "bad_name", check=False)
        assert res.returncode != 0
    finally:
        srv.stop()
    refused = [
        e for e in _events(log) if e["verb"] == "create" and e["objectRef"]["resource"] == "configmaps"
    ]
    assert len(refused) == 2  # RequestReceived and ResponseComplete (no stage omitted)
    final = refused[1]["responseStatus"]
    assert final["code"] == 422 and final["status"] == "Failure" and final["reason"] == "Invalid"
    srv = start_server(tmp_path / "plain")
    srv.kubectl("create", "configmap", "c")
    srv.stop()
    assert not list((tmp_path / "plain").glob("**/*audit*"))
