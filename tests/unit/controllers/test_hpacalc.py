"""The HPA's replica arithmetic, case by case against upstream's replica_calculator.go rules."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from kplane.controllers import hpacalc

NOW = datetime.datetime(2026, 1, 1, 12, 0, tzinfo=datetime.UTC)
LONG_AGO = "2026-01-01T11:00:00Z"  # started and ready an hour ago: past the CPU initialization period


def _pod(name: str, *, phase: str = "Running", ready: str = "True", since: str = LONG_AGO) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]},
        "status": {
            "phase": phase,
            "startTime": since,
            "conditions": [{"type": "Ready", "status": ready, "lastTransitionTime": since}],
        },
    }


def _metric(milli: int) -> hpacalc.PodMetric:
    return hpacalc.PodMetric(milli, NOW, 15.0)


def test_within_tolerance_keeps_current() -> None:
    """Utilization 54% against 50% is a ratio of 1.08: within 0.1, no change."""
    pods = [_pod("a"), _pod("b")]
    replicas, util, raw = hpacalc.resource_replicas(
        2, 50, "cpu", pods, {"a": _metric(54), "b": _metric(54)}, NOW
    )
    assert (replicas, util, raw) == (2, 54, 54)


def test_scale_up_is_ceil_of_ratio_times_ready() -> None:
    """250% against 50%: ceil(5 * 2) = 10."""
    pods = [_pod("a"), _pod("b")]
    replicas, util, _ = hpacalc.resource_replicas(
        2, 50, "cpu", pods, {"a": _metric(250), "b": _metric(250)}, NOW
    )
    assert (replicas, util) == (10, 250)


def test_missing_pods_count_as_target_when_scaling_down() -> None:
    """A pod without metrics counts as 100% of its request when the others are below target, which
    can cancel the scale-down (upstream: 'missing pods ... assume 100%')."""
    pods = [_pod("a"), _pod("b"), _pod("c")]
    metrics = {"a": _metric(10), "b": _metric(10)}
    replicas, _, _ = hpacalc.resource_replicas(3, 50, "cpu", pods, metrics, NOW)
    # (10 + 10 + 100) / 300 = 40% → ratio 0.8 → ceil(0.8 * 3) = 3: no change
    assert replicas == 3


def test_unready_pods_count_as_zero_when_scaling_up() -> None:
    """A not-ready pod is treated as using nothing when the ready ones are over target."""
    pods = [_pod("a"), _pod("b", ready="False")]
    metrics = {"a": _metric(200), "b": _metric(200)}
    replicas, util, _ = hpacalc.resource_replicas(2, 50, "cpu", pods, metrics, NOW)
    # ready only: 200% → ratio 4; with b at 0: 100% → ratio 2 → ceil(2 * 2) = 4
    assert (replicas, util) == (4, 200)


def test_pending_pods_are_ignored_and_no_metrics_is_an_error() -> None:
    pods = [_pod("a", phase="Pending")]
    with pytest.raises(hpacalc.MetricError, match="did not receive metrics for targeted pods"):
        hpacalc.resource_replicas(1, 50, "cpu", pods, {"a": _metric(100)}, NOW)
    with pytest.raises(hpacalc.MetricError, match="no pods returned by selector"):
        hpacalc.resource_replicas(1, 50, "cpu", [], {}, NOW)


def test_average_value_target() -> None:
    """AverageValue 100m with pods averaging 300m: ceil(3 * 2) = 6."""
    pods = [_pod("a"), _pod("b")]
    assert hpacalc.plain_replicas(2, 100, "cpu", pods, {"a": _metric(300), "b": _metric(300)}, NOW) == (
        6,
        300,
    )


def test_legacy_stabilization_keeps_highest_recent_recommendation() -> None:
    """Without behavior, a lower recommendation waits for the 300 s window."""
    rec = hpacalc.Recommender()
    rec.record_initial("k", 5, NOW)
    first = rec.normalize("k", None, 5, 2, 1, 10, NOW)
    assert first.replicas == 5 and first.able_to_scale[0] == "ScaleDownStabilized"
    later = rec.normalize("k", None, 5, 2, 1, 10, NOW + datetime.timedelta(seconds=301))
    assert later.replicas == 2 and later.able_to_scale[0] == "ReadyForNewScale"


def test_behavior_pods_policy_limits_the_rate() -> None:
    """scaleUp Pods 2 per 60 s: from 2 at most 4; after a scale of +2, no more within the period."""
    behavior = {
        "scaleUp": {
            "stabilizationWindowSeconds": 0,
            "selectPolicy": "Max",
            "policies": [{"type": "Pods", "value": 2, "periodSeconds": 60}],
        },
        "scaleDown": {
            "selectPolicy": "Max",
            "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}],
        },
    }
    rec = hpacalc.Recommender()
    d = rec.normalize("k", behavior, 2, 9, 1, 10, NOW)
    assert d.replicas == 4 and d.limited == (
        "True",
        "ScaleUpLimit",
        "the desired replica count is increasing faster than the maximum scale rate",
    )
    rec.record_scale("k", behavior, 2, 4, NOW)
    again = rec.normalize("k", behavior, 4, 9, 1, 10, NOW + datetime.timedelta(seconds=30))
    assert again.replicas == 4
    after = rec.normalize("k", behavior, 4, 9, 1, 10, NOW + datetime.timedelta(seconds=61))
    assert after.replicas == 6
