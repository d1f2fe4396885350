"""What the simulated kubelet reports a pod and a node use, from annotations."""

from __future__ import annotations

from decimal import Decimal

from kplane.controllers import resourceusage


def _pod(annotations: dict[str, str], running: tuple[str, ...] = ("app", "side")) -> dict[str, object]:
    return {
        "metadata": {"name": "p", "namespace": "default", "uid": "u", "annotations": annotations},
        "spec": {"containers": [{"name": "app"}, {"name": "side"}]},
        "status": {
            "phase": "Running",
            "containerStatuses": [{"name": n, "state": {"running": {}}} for n in running],
        },
    }


def test_one_value_applies_to_every_container() -> None:
    """A plain quantity is every container's usage."""
    pod = _pod({"kplane.dev/cpu-usage": "250m", "kplane.dev/memory-usage": "64Mi"})
    assert resourceusage.container_usage(pod, "side", "cpu") == Decimal("0.25")
    assert resourceusage.container_usage(pod, "app", "memory") == 64 * 2**20


def test_per_container_values_and_defaults() -> None:
    """``name=value`` pairs set one container each; others and unreadable values get the default."""
    pod = _pod({"kplane.dev/cpu-usage": "app=2,side=bogus"})
    assert resourceusage.container_usage(pod, "app", "cpu") == 2
    assert resourceusage.container_usage(pod, "side", "cpu") == Decimal("0.001")
    assert resourceusage.container_usage(pod, "app", "memory") == 4 * 2**20


def test_node_report_sums_running_containers_and_system_share() -> None:
    """Only running containers of Running pods count; the node adds its own annotation."""
    pod = _pod({"kplane.dev/cpu-usage": "100m"}, running=("app",))
    pending = {**_pod({}), "status": {"phase": "Pending"}}
    node = {"metadata": {"name": "n", "annotations": {"kplane.dev/cpu-usage": "50m"}}}
    report = resourceusage.node_report(node, [pod, pending], "2026-01-01T00:00:00Z")
    assert [e["name"] for e in report["pods"]] == ["p"]
    assert report["pods"][0]["containers"] == [{"name": "app", "usage": {"cpu": "100m", "memory": "4Mi"}}]
    assert report["usage"] == {"cpu": "150m", "memory": "4Mi"}
