"""Audit policy matching (upstream's checker.go rules) and size-based log rotation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kplane._util.clock import FakeClock
from kplane.server.audit import policy
from kplane.server.audit.log import AuditLog

POLICY = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    "omitStages": ["RequestReceived"],
    "rules": [
        {"level": "None", "users": ["system:kube-proxy"]},
        {"level": "RequestResponse", "resources": [{"group": "", "resources": ["pods/log", "*/scale"]}]},
        {
            "level": "Request",
            "resources": [{"group": "apps", "resources": ["deployments"], "resourceNames": ["web"]}],
        },
        {"level": "Metadata", "userGroups": ["devs"], "namespaces": [""], "omitStages": ["Panic"]},
        {"level": "Request", "nonResourceURLs": ["/healthz*"], "omitManagedFields": True},
        {"level": "None"},
    ],
}


def _req(**kw: object) -> policy.Request:
    base: dict[str, object] = {"user": "alice", "groups": (), "verb": "get", "resource_request": True}
    return policy.Request(**{**base, **kw})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("request_", "level"),
    [
        (_req(user="system:kube-proxy", resource="pods", subresource="log"), "None"),
        (_req(resource="pods", subresource="log"), "RequestResponse"),
        (_req(resource="pods"), "None"),
        (_req(group="apps", resource="deployments", subresource="scale"), "None"),  # group must match
        (_req(resource="replicationcontrollers", subresource="scale"), "RequestResponse"),
        (_req(group="apps", resource="deployments", name="web"), "Request"),
        (_req(group="apps", resource="deployments", name="db"), "None"),
        (_req(groups=("devs",), resource="nodes"), "Metadata"),
        (_req(groups=("devs",), resource="pods", namespace="a"), "None"),
        (_req(groups=("devs",), resource_request=False, path="/healthz"), "Request"),
        (_req(resource_request=False, path="/healthz/etcd"), "Request"),
        (_req(resource_request=False, path="/metrics"), "None"),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_first_matching_rule_decides(request_: policy.Request, level: str) -> None:
    """The first rule whose criteria all match gives the level."""
    assert policy.parse(POLICY).decide(request_).level == level


def test_stages_and_managed_fields_merge() -> None:
    """Policy-level omitStages add to the rule's; the rule's omitManagedFields wins."""
    p = policy.parse(POLICY)
    d = p.decide(_req(groups=("devs",), resource="nodes"))
    assert d.omit_stages == {"RequestReceived", "Panic"} and not d.omit_managed_fields
    assert p.decide(_req(resource_request=False, path="/healthz")).omit_managed_fields


@pytest.mark.parametrize(
    "doc",
    [
        {"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "rules": [{"level": "Everything"}]},
        {"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "omitStages": ["Later"]},
        {"apiVersion": "v1", "kind": "Policy"},
        {
            "apiVersion": "audit.k8s.io/v1",
            "kind": "Policy",
            "rules": [{"level": "None", "nonResourceURLs": ["/x"], "resources": [{"group": ""}]}],
        },
    ],
)
def test_invalid_policies_refused(doc: object) -> None:
    """Unknown levels, stages, versions and mixed rules are refused with InvalidPolicy."""
    with pytest.raises(policy.InvalidPolicy):
        policy.parse(doc)


def test_rotation_by_size_keeps_max_backups(tmp_path: Path) -> None:
    """Past max size the file is renamed with its time and a new one starts; old ones beyond the
    backup count are removed; every line is a whole event."""
    clock = FakeClock()
    log = AuditLog(str(tmp_path / "audit.log"), clock, max_size_mb=1, max_backups=2)
    event = {"kind": "Event", "pad": "x" * 100_000}
    for _ in range(45):
        log.write(event)
        clock.step(1)
    log.close()
    files = sorted(p.name for p in tmp_path.iterdir())
    assert "audit.log" in files and len(files) == 3  # current + 2 backups
    assert all(f == "audit.log" or (f.startswith("audit-2026-01-01T") and f.endswith(".log")) for f in files)
    for f in tmp_path.iterdir():
        assert f.stat().st_size <= 1024 * 1024
        assert all(json.loads(line)["kind"] == "Event" for line in f.read_text().splitlines())
