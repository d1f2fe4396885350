"""HorizontalPodAutoscaler conversion between autoscaling/v2 and v1 (upstream
pkg/apis/autoscaling/v1/conversion.go): nothing is lost either way."""

from __future__ import annotations

import orjson

from kplane.api.builtin import conversion

V2 = {
    "apiVersion": "autoscaling/v2",
    "kind": "HorizontalPodAutoscaler",
    "metadata": {"name": "h", "annotations": {"keep": "me"}},
    "spec": {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"},
        "minReplicas": 2,
        "maxReplicas": 5,
        "metrics": [
            {
                "type": "External",
                "external": {
                    "metric": {"name": "queue", "selector": {"matchLabels": {"q": "a"}}},
                    "target": {"type": "Value", "value": "30"},
                },
            },
            {
                "type": "Resource",
                "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}},
            },
        ],
        "behavior": {
            "scaleUp": {
                "selectPolicy": "Max",
                "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}],
            }
        },
    },
    "status": {
        "currentReplicas": 2,
        "desiredReplicas": 3,
        "currentMetrics": [
            {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 40}}}
        ],
        "conditions": [{"type": "AbleToScale", "status": "True", "reason": "ReadyForNewScale"}],
    },
}


def test_v2_to_v1_to_v2_is_lossless() -> None:
    """Every v2 field survives a trip through v1 (metric order: others first, CPU last, as upstream)."""
    v1 = conversion.convert("autoscaling", "HorizontalPodAutoscaler", V2, "v1")
    assert v1["spec"]["targetCPUUtilizationPercentage"] == 60
    assert v1["status"]["currentCPUUtilizationPercentage"] == 40
    notes = v1["metadata"]["annotations"]
    assert orjson.loads(notes[conversion.METRICS_ANNOTATION]) == [
        {
            "type": "External",
            "external": {
                "metricName": "queue",
                "metricSelector": {"matchLabels": {"q": "a"}},
                "targetValue": "30",
            },
        }
    ]
    back = conversion.convert("autoscaling", "HorizontalPodAutoscaler", v1, "v2")
    assert back == V2


def test_v1_without_target_gets_upstream_default() -> None:
    """A v1 HPA without a CPU target converts to upstream's implicit 80 % CPU utilization metric."""
    v1 = {
        "apiVersion": "autoscaling/v1",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "x"},
        "spec": {"maxReplicas": 2},
    }
    v2 = conversion.convert("autoscaling", "HorizontalPodAutoscaler", v1, "v2")
    assert v2["spec"]["metrics"] == [
        {
            "type": "Resource",
            "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}},
        }
    ]


def test_unparsable_annotation_is_ignored() -> None:
    """A round-trip annotation that is not JSON is dropped, as upstream ignores it."""
    v1 = {
        "apiVersion": "autoscaling/v1",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "x", "annotations": {conversion.METRICS_ANNOTATION: "{nope"}},
        "spec": {"maxReplicas": 2, "targetCPUUtilizationPercentage": 10},
    }
    v2 = conversion.convert("autoscaling", "HorizontalPodAutoscaler", v1, "v2")
    assert len(v2["spec"]["metrics"]) == 1 and "annotations" not in v2["metadata"]
