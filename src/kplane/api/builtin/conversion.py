"""Conversion of built-in kinds served in more than one version.

One kind so far: HorizontalPodAutoscaler, stored as ``autoscaling/v2`` and served as ``v1`` too.
The rules are upstream's (``pkg/apis/autoscaling/v1/conversion.go``, 1.32): ``v1`` has room for
one CPU utilization target only, so every other metric, the scaling ``behavior``, the current
metrics and the status conditions travel in ``autoscaling.alpha.kubernetes.io/*`` annotations on
the ``v1`` form, and are taken back out of them when a ``v1`` object is converted to ``v2``. An
object written in either version therefore reads back in the other without loss.

The annotation payloads keep upstream's shapes: metrics and conditions in the ``v1`` Go types'
JSON (``targetAverageUtilization``...), ``behavior`` in the JSON of the *internal* Go type, whose
fields have no JSON tags (``{"ScaleUp":{"StabilizationWindowSeconds":...}}``); Go reads those
case-insensitively, and so does this module.

Functions are pure: they never mutate their argument and return a new object.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import orjson

Object = dict[str, Any]

METRICS_ANNOTATION = "autoscaling.alpha.kubernetes.io/metrics"
CURRENT_METRICS_ANNOTATION = "autoscaling.alpha.kubernetes.io/current-metrics"
CONDITIONS_ANNOTATION = "autoscaling.alpha.kubernetes.io/conditions"
BEHAVIOR_ANNOTATION = "autoscaling.alpha.kubernetes.io/behavior"
_ROUND_TRIP = (METRICS_ANNOTATION, BEHAVIOR_ANNOTATION, CURRENT_METRICS_ANNOTATION, CONDITIONS_ANNOTATION)
DEFAULT_CPU_UTILIZATION = 80


def _dumps(value: Any) -> str:
    return orjson.dumps(value).decode()


def _loads(text: Any) -> Any:
    """A JSON annotation value, or None when it does not parse (upstream ignores such values)."""
    if not isinstance(text, str):
        return None
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return None


def _d(value: Any) -> Object:
    return value if isinstance(value, dict) else {}


def _put(out: Object, key: str, value: Any) -> None:
    if value is not None:
        out[key] = value


def _is_cpu(metric: Object) -> bool:
    return metric.get("type") == "Resource" and _d(metric.get("resource")).get("name") == "cpu"


# --- metrics: v2 <-> the v1 annotation shape -------------------------------------------------------
#
# Per metric source: (v1 field, dotted v2 path) pairs, in the v1 Go type's field order. Specs keep
# their targets under ``target``, statuses their readings under ``current``.

_SOURCES = ("object", "pods", "resource", "containerResource", "external")


def _fields(value: str) -> dict[str, tuple[tuple[str, str], ...]]:
    average, plain = f"{value}.averageValue", f"{value}.value"
    prefix = "target" if value == "target" else "current"
    return {
        "object": (
            ("target", "describedObject"),
            ("metricName", "metric.name"),
            (f"{prefix}Value", plain),
            ("selector", "metric.selector"),
            ("averageValue", average),
        ),
        "pods": (
            ("metricName", "metric.name"),
            (f"{prefix}AverageValue", average),
            ("selector", "metric.selector"),
        ),
        "resource": (
            ("name", "name"),
            (f"{prefix}AverageUtilization", f"{value}.averageUtilization"),
            (f"{prefix}AverageValue", average),
        ),
        "containerResource": (
            ("name", "name"),
            (f"{prefix}AverageUtilization", f"{value}.averageUtilization"),
            (f"{prefix}AverageValue", average),
            ("container", "container"),
        ),
        "external": (
            ("metricName", "metric.name"),
            ("metricSelector", "metric.selector"),
            (f"{prefix}Value", plain),
            (f"{prefix}AverageValue", average),
        ),
    }


_SPEC_FIELDS = _fields("target")
_STATUS_FIELDS = _fields("current")


def _get_path(obj: Object, path: str) -> Any:
    value: Any = obj
    for part in path.split("."):
        value = _d(value).get(part)
    return value


def _set_path(obj: Object, path: str, value: Any) -> None:
    *parents, last = path.split(".")
    for part in parents:
        obj = obj.setdefault(part, {})
    obj[last] = value


def _metric_to_v1(metric: Object, table: dict[str, tuple[tuple[str, str], ...]]) -> Object:
    out: Object = {"type": metric.get("type")}
    for key in _SOURCES:
        source = metric.get(key)
        if isinstance(source, dict):
            converted: Object = {}
            for v1_name, path in table[key]:
                _put(converted, v1_name, _get_path(source, path))
            out[key] = converted
    return out


def _metric_from_v1(metric: Object, table: dict[str, tuple[tuple[str, str], ...]]) -> Object:
    out: Object = {"type": metric.get("type")}
    for key in _SOURCES:
        source = metric.get(key)
        if not isinstance(source, dict):
            continue
        converted: Object = {}
        if table is _SPEC_FIELDS:
            converted["target"] = {"type": _target_type(key, source)}
        for v1_name, path in table[key]:
            value = source.get(v1_name)
            if value is not None or path == "metric.name":
                _set_path(converted, path, value)
        out[key] = converted
    return out


def _target_type(key: str, source: Object) -> str:
    """The v2 target type upstream infers from which v1 target fields are set."""
    match key:
        case "object":
            return "Value" if source.get("averageValue") is None else "AverageValue"
        case "resource" | "containerResource":
            return "AverageValue" if source.get("targetAverageUtilization") is None else "Utilization"
        case "external":
            return "AverageValue" if source.get("targetValue") is None else "Value"
        case _:
            return "AverageValue"


# --- behavior: v2 JSON <-> the internal Go type's JSON (untagged fields) ---------------------------

_RULES_FIELDS = (
    ("StabilizationWindowSeconds", "stabilizationWindowSeconds"),
    ("SelectPolicy", "selectPolicy"),
)
_POLICY_FIELDS = (("Type", "type"), ("Value", "value"), ("PeriodSeconds", "periodSeconds"))


def _rules_to_internal(rules: Any) -> Object | None:
    if not isinstance(rules, dict):
        return None
    out: Object = {go: rules.get(js) for go, js in _RULES_FIELDS}
    policies = rules.get("policies")
    out["Policies"] = (
        [{go: _d(p).get(js) for go, js in _POLICY_FIELDS} for p in policies]
        if isinstance(policies, list)
        else None
    )
    return out


def _get_folded(obj: Object, name: str) -> Any:
    """``obj[name]`` matched case-insensitively, as Go's encoding/json matches field names."""
    if name in obj:
        return obj[name]
    lower = name.lower()
    for key, value in obj.items():
        if key.lower() == lower:
            return value
    return None


def _rules_from_internal(rules: Any) -> Object | None:
    if not isinstance(rules, dict):
        return None
    out: Object = {}
    for go, js in _RULES_FIELDS:
        _put(out, js, _get_folded(rules, go))
    policies = _get_folded(rules, "Policies")
    if isinstance(policies, list):
        converted = []
        for p in policies:
            item: Object = {}
            for go, js in _POLICY_FIELDS:
                _put(item, js, _get_folded(_d(p), go))
            converted.append(item)
        out["policies"] = converted
    return out


# --- whole objects ---------------------------------------------------------------------------------


def _without_round_trip(annotations: Any) -> dict[str, Any]:
    return {k: v for k, v in _d(annotations).items() if k not in _ROUND_TRIP}


def hpa_v2_to_v1(obj: Object) -> Object:
    """An ``autoscaling/v2`` HorizontalPodAutoscaler as ``autoscaling/v1``."""
    spec, status = _d(obj.get("spec")), _d(obj.get("status"))
    metrics = [m for m in spec.get("metrics") or () if isinstance(m, dict)]
    meta = dict(_d(obj.get("metadata")))
    annotations = _without_round_trip(meta.get("annotations"))

    v1_spec: Object = {}
    _put(v1_spec, "scaleTargetRef", spec.get("scaleTargetRef"))
    _put(v1_spec, "minReplicas", spec.get("minReplicas"))
    _put(v1_spec, "maxReplicas", spec.get("maxReplicas"))
    for metric in metrics:
        if _is_cpu(metric):
            utilization = _d(_d(metric.get("resource")).get("target")).get("averageUtilization")
            _put(v1_spec, "targetCPUUtilizationPercentage", utilization)
            break
    others = [
        _metric_to_v1(m, _SPEC_FIELDS)
        for m in metrics
        if not (_is_cpu(m) and _d(_d(m.get("resource")).get("target")).get("averageUtilization") is not None)
    ]
    current = [m for m in status.get("currentMetrics") or () if isinstance(m, dict)]
    conditions = [c for c in status.get("conditions") or () if isinstance(c, dict)]
    if others:
        annotations[METRICS_ANNOTATION] = _dumps(others)
    if current:
        annotations[CURRENT_METRICS_ANNOTATION] = _dumps([_metric_to_v1(m, _STATUS_FIELDS) for m in current])
    behavior = spec.get("behavior")
    if isinstance(behavior, dict):
        internal = {
            "ScaleUp": _rules_to_internal(behavior.get("scaleUp")),
            "ScaleDown": _rules_to_internal(behavior.get("scaleDown")),
        }
        annotations[BEHAVIOR_ANNOTATION] = _dumps(internal)
    if conditions:
        annotations[CONDITIONS_ANNOTATION] = _dumps(conditions)
    if annotations:
        meta["annotations"] = annotations
    else:
        meta.pop("annotations", None)

    out: Object = {"apiVersion": "autoscaling/v1", "kind": obj.get("kind", "HorizontalPodAutoscaler")}
    out["metadata"] = meta
    out["spec"] = v1_spec
    if "status" in obj:
        v1_status: Object = {}
        for key in ("observedGeneration", "lastScaleTime", "currentReplicas", "desiredReplicas"):
            _put(v1_status, key, status.get(key))
        for metric in current:
            if _is_cpu(metric):
                utilization = _d(_d(metric.get("resource")).get("current")).get("averageUtilization")
                _put(v1_status, "currentCPUUtilizationPercentage", utilization)
        out["status"] = v1_status
    return out


def hpa_v1_to_v2(obj: Object) -> Object:
    """An ``autoscaling/v1`` HorizontalPodAutoscaler as ``autoscaling/v2``; the round-trip
    annotations are consumed (and removed)."""
    spec, status = _d(obj.get("spec")), _d(obj.get("status"))
    meta = dict(_d(obj.get("metadata")))
    raw = _d(meta.get("annotations"))

    metrics: list[Object] = []
    cpu = spec.get("targetCPUUtilizationPercentage")
    if cpu is not None:
        metrics.append(_cpu_metric(cpu))
    others = _loads(raw.get(METRICS_ANNOTATION))
    if isinstance(others, list):
        metrics = [_metric_from_v1(_d(m), _SPEC_FIELDS) for m in others] + metrics
    if not metrics:
        metrics = [_cpu_metric(DEFAULT_CPU_UTILIZATION)]

    v2_spec: Object = {}
    _put(v2_spec, "scaleTargetRef", spec.get("scaleTargetRef"))
    _put(v2_spec, "minReplicas", spec.get("minReplicas"))
    _put(v2_spec, "maxReplicas", spec.get("maxReplicas"))
    v2_spec["metrics"] = metrics
    internal = _loads(raw.get(BEHAVIOR_ANNOTATION))
    if isinstance(internal, dict):
        behavior: Object = {}
        _put(behavior, "scaleUp", _rules_from_internal(_get_folded(internal, "ScaleUp")))
        _put(behavior, "scaleDown", _rules_from_internal(_get_folded(internal, "ScaleDown")))
        if behavior:
            v2_spec["behavior"] = behavior

    annotations = _without_round_trip(raw)
    if annotations:
        meta["annotations"] = annotations
    else:
        meta.pop("annotations", None)
    out: Object = {"apiVersion": "autoscaling/v2", "kind": obj.get("kind", "HorizontalPodAutoscaler")}
    out["metadata"] = meta
    out["spec"] = v2_spec
    if "status" in obj or CURRENT_METRICS_ANNOTATION in raw or CONDITIONS_ANNOTATION in raw:
        v2_status: Object = {}
        for key in ("observedGeneration", "lastScaleTime", "currentReplicas", "desiredReplicas"):
            _put(v2_status, key, status.get(key))
        current_cpu = status.get("currentCPUUtilizationPercentage")
        if current_cpu is not None:
            v2_status["currentMetrics"] = [
                {
                    "type": "Resource",
                    "resource": {"name": "cpu", "current": {"averageUtilization": current_cpu}},
                }
            ]
        current = _loads(raw.get(CURRENT_METRICS_ANNOTATION))
        if isinstance(current, list):
            v2_status["currentMetrics"] = [_metric_from_v1(_d(m), _STATUS_FIELDS) for m in current]
        conditions = _loads(raw.get(CONDITIONS_ANNOTATION))
        if isinstance(conditions, list):
            v2_status["conditions"] = [_d(c) for c in conditions]
        out["status"] = v2_status
    return out


def _cpu_metric(utilization: Any) -> Object:
    return {
        "type": "Resource",
        "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": utilization}},
    }


Converter = Callable[[Object], Object]

_CONVERTERS: dict[tuple[str, str, str, str], Converter] = {
    ("autoscaling", "HorizontalPodAutoscaler", "v2", "v1"): hpa_v2_to_v1,
    ("autoscaling", "HorizontalPodAutoscaler", "v1", "v2"): hpa_v1_to_v2,
}


def convert(group: str, kind: str, obj: Object, to_version: str) -> Object:
    """``obj`` (a built-in kind of ``group``) at ``to_version``; unchanged when it is already there.

    Raises KeyError when the kind has no conversion between the two versions (a catalog bug).
    """
    api_version = obj.get("apiVersion")
    from_version = api_version.rpartition("/")[2] if isinstance(api_version, str) else ""
    if from_version == to_version:
        return obj
    return _CONVERTERS[(group, kind, from_version, to_version)](copy.copy(obj))
