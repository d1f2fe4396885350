"""API Priority and Fairness end to end, on a server with 2 seats in all (``--max-requests-inflight
1 --max-mutating-requests-inflight 1``): upstream's bootstrap FlowSchemas and priority levels exist;
a custom FlowSchema routes ServiceAccounts to a small queuing level, where a flooding user gets
upstream's 429 (``Retry-After: 1``, ``Too many requests, please try again later.``: apiserver
``filters/priority-and-fairness.go`` tooManyRequests) while a second user keeps being served; a
custom FlowSchema routes a user to a Reject level; every reply names its FlowSchema and priority
level by UID (``X-Kubernetes-PF-FlowSchema-UID``, ``X-Kubernetes-PF-PriorityLevel-UID``); dangling
FlowSchemas get upstream's condition; watches take no seat."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import Server, requires_kubectl, start_server
from tests.e2e.helpers import Kube, poll

pytestmark = requires_kubectl
BASE = "/apis/flowcontrol.apiserver.k8s.io/v1"
CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
QUEUING = {"queues": 64, "handSize": 2, "queueLengthLimit": 2}
BODY = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "flood-"}}


@pytest.fixture(scope="module")
def limited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = start_server(
        tmp_path_factory.mktemp("overload"),
        "--max-requests-inflight",
        "1",
        "--max-mutating-requests-inflight",
        "1",
    )
    yield srv
    srv.stop()


def _token(server: Server, name: str, role: str) -> str:
    server.kubectl("create", "serviceaccount", name)
    server.kubectl(
        "create", "clusterrolebinding", name, f"--clusterrole={role}", f"--serviceaccount=default:{name}"
    )
    return server.kubectl("create", "token", name).stdout.strip()


def _level(name: str, response: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
        "kind": "PriorityLevelConfiguration",
        "metadata": {"name": name},
        "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 10, "limitResponse": response}},
    }


def _schema(name: str, level: str, subjects: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
        "kind": "FlowSchema",
        "metadata": {"name": name},
        "spec": {
            "priorityLevelConfiguration": {"name": level},
            "matchingPrecedence": 500,
            "distinguisherMethod": {"type": "ByUser"},
            "rules": [
                {
                    "subjects": subjects,
                    "resourceRules": [
                        {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "namespaces": ["*"]}
                    ],
                }
            ],
        },
    }


def _flood(post: Callable[[], Any], threads: int, until: Callable[[], bool]) -> list[Any]:
    replies: list[Any] = []
    stop = threading.Event()

    def loop() -> None:
        while not stop.is_set():
            replies.append(post())

    workers = [threading.Thread(target=loop) for _ in range(threads)]
    for t in workers:
        t.start()
    try:
        until()
    finally:
        stop.set()
        for t in workers:
            t.join(60)
    return replies


def test_bootstrap_configuration(limited: Server, tmp_path: Path) -> None:
    """Upstream's mandatory and suggested objects exist with the autoupdate annotation; the
    admin's requests are exempt and say so in their headers."""
    api = Kube.from_kubeconfig(limited.kubeconfig, tmp_path)
    schemas = {i["metadata"]["name"]: i for i in api.ok("GET", f"{BASE}/flowschemas")["items"]}
    levels = {i["metadata"]["name"]: i for i in api.ok("GET", f"{BASE}/prioritylevelconfigurations")["items"]}
    # kube-apiserver 1.32 bootstrap (apiserver/pkg/apis/flowcontrol/bootstrap/default.go)
    assert set(levels) >= {
        "exempt", "catch-all", "system", "node-high", "leader-election", "workload-high", "workload-low",
        "global-default",
    }  # fmt: skip
    precedence = {n: s["spec"]["matchingPrecedence"] for n, s in schemas.items()}
    assert precedence.items() >= {
        "exempt": 1, "probes": 2, "system-leader-election": 100, "endpoint-controller": 150,
        "workload-leader-election": 200, "system-node-high": 400, "system-nodes": 500,
        "kube-controller-manager": 800, "kube-scheduler": 800, "kube-system-service-accounts": 900,
        "service-accounts": 9000, "global-default": 9900, "catch-all": 10000,
    }.items()  # fmt: skip
    assert all(
        o["metadata"]["annotations"]["apf.kubernetes.io/autoupdate-spec"] == "true" for o in schemas.values()
    )
    assert levels["workload-low"]["spec"]["limited"]["nominalConcurrencyShares"] == 100
    resp = api.get(CONFIGMAPS)
    assert resp.headers["x-kubernetes-pf-flowschema-uid"] == schemas["exempt"]["metadata"]["uid"]
    assert resp.headers["x-kubernetes-pf-prioritylevel-uid"] == levels["exempt"]["metadata"]["uid"]
    out = limited.kubectl("get", "flowschemas").stdout
    assert "global-default" in out and "9900" in out


def test_flood_gets_429_and_other_user_is_served(limited: Server, tmp_path: Path) -> None:
    """ServiceAccounts routed to a one-seat level with 64 queues of 2 (hand of 2): one user flooding
    with 24 concurrent creates gets 429s with upstream's headers and body; the other user's
    sequential creates all succeed meanwhile, each naming the custom schema and level."""
    api = Kube.from_kubeconfig(limited.kubeconfig, tmp_path)
    level = api.ok(
        "POST",
        f"{BASE}/prioritylevelconfigurations",
        _level(
            "flood-test", {"type": "Queue", "queuing": {"queues": 64, "handSize": 2, "queueLengthLimit": 2}}
        ),
    )
    schema = api.ok(
        "POST",
        f"{BASE}/flowschemas",
        _schema("flood-test", "flood-test", [{"kind": "Group", "group": {"name": "system:serviceaccounts"}}]),
    )
    noisy, quiet = _token(limited, "noisy", "edit"), _token(limited, "quiet", "edit")
    quiet_replies = []

    def quiet_creates() -> bool:
        for _ in range(15):
            quiet_replies.append(api.post(CONFIGMAPS, BODY, auth=quiet, timeout=30))
        return True

    replies = _flood(lambda: api.post(CONFIGMAPS, BODY, auth=noisy, timeout=30), 24, quiet_creates)
    assert [r.status for r in quiet_replies] == [201] * 15
    assert quiet_replies[0].headers["x-kubernetes-pf-flowschema-uid"] == schema["metadata"]["uid"]
    assert quiet_replies[0].headers["x-kubernetes-pf-prioritylevel-uid"] == level["metadata"]["uid"]
    rejected = [r for r in replies if r.status == 429]
    assert rejected, f"no 429 among {len(replies)} flood requests"
    assert {r.status for r in replies} <= {201, 429}
    first = rejected[0]
    assert first.headers["retry-after"] == "1"
    assert first.headers["content-type"] == "text/plain; charset=utf-8"
    assert first.body == b"Too many requests, please try again later.\n"
    assert first.headers["x-kubernetes-pf-flowschema-uid"] == schema["metadata"]["uid"]
    metrics = api.get("/metrics").body.decode()
    assert (
        'apiserver_flowcontrol_rejected_requests_total{flow_schema="flood-test",'
        'priority_level="flood-test",reason="queue-full"}'
    ) in metrics
    assert 'apiserver_flowcontrol_dispatched_requests_total{flow_schema="flood-test"' in metrics
    assert 'apiserver_flowcontrol_nominal_limit_seats{priority_level="flood-test"} 1.0' in metrics
    assert 'code="429"' in metrics
    api.request("DELETE", f"{BASE}/flowschemas/flood-test")


def test_reject_level_and_dangling_condition(limited: Server, tmp_path: Path) -> None:
    """A FlowSchema naming a missing level is Dangling (upstream's condition) and routes nothing;
    once the Reject level exists, it is Found and the user's concurrent excess gets 429 at once."""
    api = Kube.from_kubeconfig(limited.kubeconfig, tmp_path)
    token = _token(limited, "rejected", "edit")
    sa = {"kind": "ServiceAccount", "serviceAccount": {"namespace": "default", "name": "rejected"}}
    schema = _schema("reject-test", "reject-test", [sa])
    schema["spec"]["matchingPrecedence"] = 400
    api.ok("POST", f"{BASE}/flowschemas", schema)

    def dangling() -> dict[str, Any] | None:
        got = api.ok("GET", f"{BASE}/flowschemas/reject-test")
        found = [c for c in got.get("status", {}).get("conditions", []) if c["type"] == "Dangling"]
        return found[0] if found else None

    cond = poll(lambda: (c := dangling()) is not None and c["status"] == "True" and c)
    # upstream apf_controller.go
    assert (cond["reason"], cond["message"]) == (
        "NotFound",
        'This FlowSchema references the PriorityLevelConfiguration object named "reject-test" '
        "but there is no such object",
    )
    resp = api.get(CONFIGMAPS, auth=token)
    assert resp.status == 200  # routed elsewhere meanwhile (service-accounts)
    level = api.ok("POST", f"{BASE}/prioritylevelconfigurations", _level("reject-test", {"type": "Reject"}))
    cond = poll(lambda: (c := dangling()) is not None and c["status"] == "False" and c)
    assert (cond["reason"], cond["message"]) == (
        "Found",
        'This FlowSchema references the PriorityLevelConfiguration object named "reject-test" and it exists',
    )
    done = threading.Event()
    replies = _flood(
        lambda: api.post(CONFIGMAPS, BODY, auth=token, timeout=30), 8, lambda: done.wait(3) or True
    )
    statuses = {r.status for r in replies}
    assert statuses <= {201, 429} and 429 in statuses, statuses
    rejected = next(r for r in replies if r.status == 429)
    assert rejected.headers["x-kubernetes-pf-prioritylevel-uid"] == level["metadata"]["uid"]
    metrics = api.get("/metrics").body.decode()
    assert 'priority_level="reject-test",reason="concurrency-limit"' in metrics


def test_watches_take_no_seat(limited: Server, tmp_path: Path) -> None:
    """Open watches of a user do not count against its level's seats."""
    api = Kube.from_kubeconfig(limited.kubeconfig, tmp_path)
    token = _token(limited, "watcher", "view")
    with contextlib.ExitStack() as stack:
        for _ in range(3):
            stream = stack.enter_context(api.watch(CONFIGMAPS, {"timeoutSeconds": 30}, auth=token))
            assert stream.status == 200
        for _ in range(5):
            assert api.get(CONFIGMAPS, query={"limit": 1}, auth=token).status == 200
