"""The HorizontalPodAutoscaler controller on a fake clock against a real in-process server with the
built-in controllers: scale up on simulated CPU, status and events as upstream writes them, scale
down only after the 300 s stabilization window, min/max and behavior policies."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kplane.client import dynamic
from kplane.controllers import common, hpa
from kplane.testing import AutoAdvancingClock, ControlPlane, eventually
from tests.unit.controllers import _support

DEPLOYMENTS = dynamic.Resource("apps", "v1", "deployments", "Deployment", namespaced=True)


_cluster = _support.cluster
# Each test runs the whole simulated cluster through minutes of fake time (the 300 s scale-down
# window): seconds on an idle machine, but well past the default 60 s bound on a loaded one.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def _deployment(name: str, replicas: int, cpu_usage: str) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels, "annotations": {common.CPU_USAGE: cpu_usage}},
                "spec": {
                    "containers": [
                        {"name": "app", "image": "nginx", "resources": {"requests": {"cpu": "100m"}}}
                    ]
                },
            },
        },
    }


def _hpa(name: str, *, min_replicas: int = 1, max_replicas: int = 10, behavior: Any = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
        "minReplicas": min_replicas,
        "maxReplicas": max_replicas,
        "metrics": [
            {
                "type": "Resource",
                "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}},
            }
        ],
    }
    if behavior is not None:
        spec["behavior"] = behavior
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


async def _replicas(dc: dynamic.DynamicClient, name: str) -> int:
    d = await dc.resource(DEPLOYMENTS, "default").get(name)
    return int(d["spec"]["replicas"])


async def _events(dc: dynamic.DynamicClient, name: str) -> list[tuple[str, str]]:
    page = await dc.resource(common.EVENTS, "default").list()
    return [
        (e["reason"], e["message"])
        for e in page["items"]
        if e["involvedObject"]["kind"] == "HorizontalPodAutoscaler" and e["involvedObject"]["name"] == name
    ]


async def test_scales_up_on_cpu_then_down_after_stabilization(
    kplane: ControlPlane, kplane_clock: AutoAdvancingClock, tmp_path: Path
) -> None:
    """2 pods at 250% of a 50% target want 10: without behavior, upstream's legacy limit allows
    max(2 * 2, 4) = 4 first, then the max of 6; back down only once 300 s of higher
    recommendations have passed."""
    async with _cluster(kplane, kplane_clock, tmp_path) as dc:
        await dc.resource(DEPLOYMENTS, "default").create(_deployment("web", 2, "250m"))
        hpas = dc.resource(hpa.HPAS, "default")
        await hpas.create(_hpa("web", max_replicas=6))

        async def scaled_to(n: int) -> bool:
            assert await _replicas(dc, "web") == n
            return True

        await eventually(lambda: scaled_to(6), clock=kplane_clock, timeout=120)
        obj = await hpas.get("web")
        status = obj["status"]
        assert status["currentReplicas"] in (4, 6)
        conditions = {c["type"]: (c["status"], c["reason"]) for c in status["conditions"]}
        assert conditions["ScalingActive"] == ("True", "ValidMetricFound")
        messages = [m for r, m in await _events(dc, "web") if r == "SuccessfulRescale"]
        # pkg/controller/podautoscaler/horizontal.go: "New size: %d; reason: %s above target"
        assert (
            "New size: 4; reason: cpu resource utilization (percentage of request) above target" in messages
        )

        async def limited() -> dict[str, Any]:
            o = await hpas.get("web")
            c = {c["type"]: c for c in o["status"]["conditions"]}
            assert c["ScalingLimited"]["reason"] == "TooManyReplicas"
            assert o["status"]["currentMetrics"][0]["resource"]["current"]["averageUtilization"] == 250
            return o

        limited_obj = await eventually(limited, clock=kplane_clock, timeout=120)
        limit = next(c for c in limited_obj["status"]["conditions"] if c["type"] == "ScalingLimited")
        assert (limit["status"], limit["message"]) == (
            "True",
            "the desired replica count is more than the maximum replica count",
        )

        # Load drops to 10% of the request: the recommendation is 2 (ceil(6 * 10/50)), applied only
        # once the 300 s window of higher recommendations has passed.
        d = await dc.resource(DEPLOYMENTS, "default").get("web")
        d["spec"]["template"]["metadata"]["annotations"][common.CPU_USAGE] = "10m"
        await dc.resource(DEPLOYMENTS, "default").update(d)
        start = kplane_clock.monotonic()

        async def stabilized() -> bool:
            o = await hpas.get("web")
            c = {c["type"]: c for c in o["status"]["conditions"]}
            assert c["AbleToScale"]["reason"] == "ScaleDownStabilized"
            return True

        await eventually(stabilized, clock=kplane_clock, timeout=300)
        await eventually(lambda: scaled_to(2), clock=kplane_clock, timeout=900)
        assert kplane_clock.monotonic() - start >= 300
        messages = [m for r, m in await _events(dc, "web") if r == "SuccessfulRescale"]
        assert "New size: 2; reason: All metrics below target" in messages


async def test_behavior_policies_limit_scale_up(
    kplane: ControlPlane, kplane_clock: AutoAdvancingClock, tmp_path: Path
) -> None:
    """A scaleUp policy of 1 pod per 60 s: the target grows one replica a minute (ScaleUpLimit)."""
    behavior = {"scaleUp": {"policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}]}}
    async with _cluster(kplane, kplane_clock, tmp_path) as dc:
        await dc.resource(DEPLOYMENTS, "default").create(_deployment("api", 1, "500m"))
        hpas = dc.resource(hpa.HPAS, "default")
        await hpas.create(_hpa("api", behavior=behavior))
        created = await hpas.get("api")
        # the API server's defaults (pkg/apis/autoscaling/v2/defaults.go): scaleUp window 0
        assert created["spec"]["behavior"]["scaleUp"]["stabilizationWindowSeconds"] == 0

        async def at(n: int) -> bool:
            assert await _replicas(dc, "api") == n
            return True

        await eventually(lambda: at(2), clock=kplane_clock, timeout=120)
        first = kplane_clock.monotonic()

        async def limited() -> bool:
            o = await hpas.get("api")
            c = {c["type"]: c for c in o["status"]["conditions"]}
            assert (c["ScalingLimited"]["status"], c["ScalingLimited"]["reason"]) == ("True", "ScaleUpLimit")
            return True

        await eventually(limited, clock=kplane_clock, timeout=60)
        await eventually(lambda: at(3), clock=kplane_clock, timeout=120)
        assert kplane_clock.monotonic() - first >= 60


async def test_missing_metrics_reports_scaling_inactive(
    kplane: ControlPlane, kplane_clock: AutoAdvancingClock, tmp_path: Path
) -> None:
    """A target whose pods have no CPU request: ScalingActive False, FailedGetResourceMetric."""
    async with _cluster(kplane, kplane_clock, tmp_path) as dc:
        d = _deployment("norequest", 1, "100m")
        d["spec"]["template"]["spec"]["containers"][0].pop("resources")
        await dc.resource(DEPLOYMENTS, "default").create(d)
        hpas = dc.resource(hpa.HPAS, "default")
        await hpas.create(_hpa("norequest"))

        async def inactive() -> dict[str, Any]:
            o = await hpas.get("norequest")
            c = {c["type"]: c for c in o["status"]["conditions"]}
            assert c["ScalingActive"]["status"] == "False"
            assert "missing request for cpu" in c["ScalingActive"]["message"]
            return c["ScalingActive"]

        condition = await eventually(inactive, clock=kplane_clock, timeout=120)
        assert condition["reason"] == "FailedGetResourceMetric"
        assert condition["message"].startswith("the HPA was unable to compute the replica count: ")
        assert "missing request for cpu in container app of Pod norequest-" in condition["message"]
