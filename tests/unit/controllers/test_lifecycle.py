"""Time-driven behaviour of the built-in node and pod controllers, on a fake clock against a real
in-process server: crash-loop back-off, graceful deletion, lost nodes and taint eviction."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pytest

from kplane.api import errors
from kplane.client import dynamic
from kplane.controllers import common
from kplane.testing import AutoAdvancingClock, ControlPlane, eventually
from tests.unit.controllers import _support

_cluster = _support.cluster


def _pod(name: str, annotations: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "annotations": annotations or {}},
        "spec": {"containers": [{"name": "app", "image": "busybox"}], **spec},
    }


def _log_files(root: Path) -> list[str]:
    return sorted(p.name for p in root.rglob("*.log"))


async def _get(dc: dynamic.DynamicClient, name: str) -> dict[str, Any]:
    result: dict[str, Any] = await dc.resource(common.PODS, "default").get(name)
    return result


async def test_crash_loop_backs_off_10s_doubling(
    kplane: ControlPlane, kplane_clock: AutoAdvancingClock, tmp_path: Path
) -> None:
    """A container exiting 1 under restartPolicy Always: restarted at once, then after 10 s, 20 s...
    (pkg/kubelet/kubelet.go backOffPeriod 10 s, MaxContainerBackOff 300 s)."""
    annotations = {common.RUN_SECONDS: "1", common.EXIT_CODE: "1", common.OUTPUT: "boom"}
    async with _cluster(kplane, kplane_clock, tmp_path) as dc:
        await dc.resource(common.PODS, "default").create(_pod("crash", annotations))
        await dc.resource(common.PODS, "default").create(_pod("quiet"))

        async def restarts(n: int) -> dict[str, Any]:
            pod = await _get(dc, "crash")
            status = pod["status"]["containerStatuses"][0]
            assert status["restartCount"] == n and "waiting" in status["state"]
            return status

        first = await eventually(lambda: restarts(1), clock=kplane_clock, timeout=60)
        assert "back-off 10s restarting failed container=app" in first["state"]["waiting"]["message"]
        assert first["lastState"]["terminated"]["reason"] == "Error"
        second = await eventually(lambda: restarts(2), clock=kplane_clock, timeout=60)
        assert "back-off 20s" in second["state"]["waiting"]["message"]
        pod = await _get(dc, "crash")
        # Only the current instance's log and the previous one's are kept; a container that
        # prints nothing has no file (pods/log reads that as an empty log).
        assert _log_files(tmp_path) == ["1.log", "2.log"]
        assert (await _get(dc, "quiet"))["status"]["phase"] == "Running"
        assert pod["status"]["phase"] == "Running"  # getPhase: Always keeps a crash-looping pod Running


async def test_never_restart_policy_fails_and_on_failure_succeeds(
    kplane: ControlPlane, kplane_clock: AutoAdvancingClock, tmp_path: Path
) -> None:
    async with _cluster(kplane, kplane_clock, tmp_path) as dc:
        pods = dc.resource(common.PODS, "default")
        await pods.create(
            _pod("fails", {common.RUN_SECONDS: "5", common.EXIT_CODE: "3"}, restartPolicy="Never")
        )
        await pods.create(_pod("works", {common.RUN_SECONDS: "5"}, restartPolicy="OnFailure"))

        async def phase(name: str, want: str) -> dict[str, Any]:
            pod = await _get(dc, name)
            assert pod["status"]["phase"] == want
            return pod

        failed = await eventually(lambda: phase("fails", "Failed"), clock=kplane_clock, timeout=60)
        assert failed["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 3
        done = await eventually(lambda: phase("works", "Succeeded"), clock=kplane_clock, timeout=60)
        terminated = done["status"]["containerStatuses"][0]["state"]["terminated"]
        assert (terminated["exitCode"], terminated["reason"]) == (0, "Completed")
        ready = next(c for c in done["status"]["conditions"] if c["type"] == "Ready")
        assert (ready["status"], ready["reason"]) == ("False", "PodCompleted")


async def test_graceful_delete_waits_for_containers_to_stop(
    kplane: ControlPlane, kplane_clock: AutoAdvancingClock, tmp_path: Path
) -> None:
    """DELETE of a bound pod marks it (deletionGracePeriodSeconds 30, upstream's default); the
    kubelet deletes it once its container has stopped (here 20 s after SIGTERM)."""
    async with _cluster(kplane, kplane_clock, tmp_path) as dc:
        pods = dc.resource(common.PODS, "default")
        await pods.create(_pod("slow", {common.TERMINATION_SECONDS: "20"}))
        await eventually(
            lambda: _running(dc, "slow"),
            clock=kplane_clock,
            timeout=30,
        )
        marked = await pods.delete("slow")
        assert marked["metadata"]["deletionGracePeriodSeconds"] == 30
        assert marked["metadata"]["deletionTimestamp"]

        async def gone() -> bool:
            try:
                await pods.get("slow")
            except errors.NotFound:
                return True
            return False

        await eventually(gone, clock=kplane_clock, timeout=60)


async def _running(dc: dynamic.DynamicClient, name: str) -> bool:
    return bool((await _get(dc, name))["status"]["phase"] == "Running")


@pytest.mark.slow
async def test_lost_node_is_tainted_and_its_pods_evicted_after_300s(
    kplane: ControlPlane, kplane_clock: AutoAdvancingClock, tmp_path: Path
) -> None:
    """A node whose heartbeat stops goes Unknown after the 50 s grace period, is tainted
    unreachable, and its pods (tolerating that for the default 300 s) are deleted afterwards."""
    async with _cluster(kplane, kplane_clock, tmp_path, nodes=1) as dc:
        pods = dc.resource(common.PODS, "default")
        await pods.create(_pod("victim"))
        await eventually(lambda: _running(dc, "victim"), clock=kplane_clock, timeout=30)
        pod = await _get(dc, "victim")
        # plugin/pkg/admission/defaulttolerationseconds: 300 s for not-ready and unreachable
        assert {
            "key": common.UNREACHABLE_TAINT,
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": 300,
        } in pod["spec"]["tolerations"]
        nodes = dc.resource(common.NODES)
        await nodes.patch("kplane-node-0", {"metadata": {"annotations": {common.HEARTBEAT: "stopped"}}})
        stopped_at = kplane_clock.monotonic()

        async def unreachable() -> dict[str, Any]:
            node: dict[str, Any] = await nodes.get("kplane-node-0")
            taints = {(t["key"], t["effect"]) for t in node["spec"].get("taints") or []}
            assert (common.UNREACHABLE_TAINT, "NoExecute") in taints
            return node

        node = await eventually(unreachable, clock=kplane_clock, timeout=120)
        assert kplane_clock.monotonic() - stopped_at >= 50
        ready = next(c for c in node["status"]["conditions"] if c["type"] == "Ready")
        # pkg/controller/nodelifecycle/node_lifecycle_controller.go tryUpdateNodeHealth
        assert (ready["status"], ready["reason"], ready["message"]) == (
            "Unknown",
            "NodeStatusUnknown",
            "Kubelet stopped posting node status.",
        )

        async def not_ready() -> bool:
            pod = await _get(dc, "victim")
            return any(c["type"] == "Ready" and c["status"] == "False" for c in pod["status"]["conditions"])

        await eventually(not_ready, clock=kplane_clock, timeout=30)  # upstream's MarkPodsNotReady
        assert "deletionTimestamp" not in (await _get(dc, "victim"))["metadata"]
        tainted_at = kplane_clock.monotonic()

        async def evicted() -> dict[str, Any]:
            pod = await _get(dc, "victim")
            assert pod["metadata"].get("deletionTimestamp")
            return pod

        pod = await eventually(evicted, clock=kplane_clock, timeout=600)
        assert kplane_clock.monotonic() - tainted_at >= 295
        disruption = next(c for c in pod["status"]["conditions"] if c["type"] == "DisruptionTarget")
        assert disruption["reason"] == "DeletionByTaintManager"

        # The node comes back: Ready again, taints gone, and its kubelet finishes the deletion.
        await nodes.patch("kplane-node-0", {"metadata": {"annotations": {common.HEARTBEAT: None}}})

        async def healed() -> bool:
            node = await nodes.get("kplane-node-0")
            assert not node["spec"].get("taints")
            with contextlib.suppress(errors.NotFound):
                await pods.get("victim")
                return False
            return True

        await eventually(healed, clock=kplane_clock, timeout=120)
