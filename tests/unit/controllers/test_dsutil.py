"""DaemonSet eligibility, tolerations, pinning and budgets, against upstream's
``pkg/controller/daemon/util/daemonset_util.go`` and ``daemon_controller.go``."""

from __future__ import annotations

from typing import Any

import pytest

from kplane.controllers import dsutil


def _ds(**pod_spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "agent", "namespace": "ns", "generation": 3},
        "spec": {
            "template": {
                "metadata": {"labels": {"app": "a"}},
                "spec": {"containers": [{"name": "c"}], **pod_spec},
            }
        },
    }


def _node(
    name: str = "n1", labels: dict[str, str] | None = None, taints: list[Any] | None = None
) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels or {}}, "spec": {"taints": taints or []}}


@pytest.mark.parametrize(
    ("ds", "node", "expected"),
    [
        pytest.param(_ds(), _node(), (True, True), id="plain"),
        pytest.param(_ds(nodeName="other"), _node(), (False, False), id="other-node-name"),
        pytest.param(_ds(nodeSelector={"role": "edge"}), _node(), (False, False), id="selector-misses"),
        pytest.param(
            _ds(nodeSelector={"role": "edge"}), _node(labels={"role": "edge"}), (True, True), id="selector"
        ),
        pytest.param(
            _ds(), _node(taints=[{"key": "x", "effect": "NoSchedule"}]), (False, True), id="noschedule"
        ),
        pytest.param(
            _ds(), _node(taints=[{"key": "x", "effect": "NoExecute"}]), (False, False), id="noexecute"
        ),
        pytest.param(
            _ds(),
            _node(taints=[{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}]),
            (True, True),
            id="auto-tolerated",
        ),
        pytest.param(
            _ds(),
            _node(taints=[{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]),
            (False, True),
            id="not-ready-noschedule-untolerated",
        ),
    ],
)
def test_should_run(ds: dict[str, Any], node: dict[str, Any], expected: tuple[bool, bool]) -> None:
    """NodeShouldRunDaemonPod: (should run, should continue running)."""
    assert dsutil.should_run(ds, node) == expected


def test_new_pod_is_pinned_and_tolerant() -> None:
    """The pod carries the revision labels, the automatic tolerations and a metadata.name term only."""
    ds = _ds(
        hostNetwork=True,
        affinity={
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{}]}}
        },
    )
    pod = dsutil.new_pod(ds, "n7", "abc")
    assert pod["metadata"]["labels"] == {
        "app": "a",
        "controller-revision-hash": "abc",
        "pod-template-generation": "3",
    }
    terms = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms == {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n7"]}]}]
    }
    keys = {(t["key"], t["effect"]) for t in pod["spec"]["tolerations"]}
    assert ("node.kubernetes.io/network-unavailable", "NoSchedule") in keys and len(keys) == 7
    assert dsutil.target_node(pod) == "n7"


@pytest.mark.parametrize(
    ("rolling", "desired", "expected"),
    [
        pytest.param({}, 10, (0, 1), id="defaults"),
        pytest.param({"maxUnavailable": "25%"}, 10, (0, 3), id="percent-rounds-up"),
        pytest.param({"maxSurge": "10%", "maxUnavailable": 0}, 10, (1, 0), id="surge"),
        pytest.param({"maxSurge": 0, "maxUnavailable": 0}, 10, (0, 1), id="both-zero"),
    ],
)
def test_budgets(rolling: dict[str, Any], desired: int, expected: tuple[int, int]) -> None:
    """maxSurge/maxUnavailable against the eligible nodes, rounded up; both 0 → 1 unavailable."""
    ds = {"spec": {"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": rolling}}}
    assert dsutil.budgets(ds, desired) == expected


def test_failed_pod_backoff_doubles_caps_and_starts_over() -> None:
    """flowcontrol.Backoff(1 s, 15 min): 1, 2, 4 … 900 s; idle for twice the maximum → 1 s again."""
    now = [0.0]
    backoff = dsutil.FailedPodBackoff(lambda: now[0])
    assert backoff.in_backoff("k") == 0.0
    delays = []
    for _ in range(12):
        backoff.next("k")
        delays.append(backoff.in_backoff("k"))
        now[0] += delays[-1]
    assert delays[:4] == [1.0, 2.0, 4.0, 8.0] and delays[-1] == 900.0
    now[0] += 0.5
    assert backoff.in_backoff("k") == 0.0
    now[0] += 1801
    backoff.next("k")
    assert backoff.in_backoff("k") == 1.0
