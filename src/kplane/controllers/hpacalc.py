"""The HorizontalPodAutoscaler's arithmetic, as upstream's ``pkg/controller/podautoscaler``
(``replica_calculator.go`` and the normalization half of ``horizontal.go``): pure functions of pods,
metrics and time, so they are tested without a server.

``resource_replicas`` (an ``averageUtilization`` target) and ``plain_replicas`` (an
``averageValue`` target) turn pod metrics into a replica proposal: pods being deleted, failed,
finished or pending are ignored; for CPU, pods not yet ready (or ready so recently that their sample
predates readiness, within the 5-minute initialization period) are unready; pods without metrics
are missing. With no unready pod to worry about and none missing, the proposal is
``ceil(ratio * ready pods)`` unless the ratio is within ``tolerance`` of 1. Otherwise missing pods
count as using the target (when scaling down) or nothing (when scaling up), unready pods count as
nothing when scaling up, and the proposal is dropped if that flips or flattens the direction.

``Recommender`` keeps per autoscaler the recent recommendations and scale events and applies
stabilization windows and scaling policies (``behavior``), or the legacy rule without one (scale
down stabilized over ``downscale_window``, scale up at most ``max(2 * current, 4)``).
"""

from __future__ import annotations

import dataclasses
import datetime
import math
from collections.abc import Callable, Mapping
from typing import Any

from kplane.controllers.common import Object, parse_time, quantity

TOLERANCE = 0.1
CPU_INITIALIZATION_PERIOD = 300.0
INITIAL_READINESS_DELAY = 30.0
DOWNSCALE_STABILIZATION = 300.0


class MetricError(Exception):
    """A replica count cannot be computed from the metrics (upstream's error text)."""


@dataclasses.dataclass(frozen=True, slots=True)
class PodMetric:
    """One pod's usage of a resource in milli-units (summed over containers), and when it was sampled."""

    value: int
    timestamp: datetime.datetime
    window: float


def _ready_condition(pod: Object) -> Object | None:
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready":
            return dict(c)
    return None


def group_pods(
    pods: list[Object],
    metrics: Mapping[str, PodMetric],
    resource: str,
    now: datetime.datetime,
) -> tuple[int, set[str], set[str], set[str]]:
    """(ready count, unready, missing, ignored) pod names, as upstream's ``groupPods``."""
    ready = 0
    unready: set[str] = set()
    missing: set[str] = set()
    ignored: set[str] = set()
    for pod in pods:
        name = pod["metadata"]["name"]
        phase = (pod.get("status") or {}).get("phase")
        if pod["metadata"].get("deletionTimestamp") or phase in ("Failed", "Succeeded", "Pending"):
            ignored.add(name)
            continue
        metric = metrics.get(name)
        if metric is None:
            missing.add(name)
            continue
        if resource == "cpu":
            condition = _ready_condition(pod)
            started = parse_time((pod.get("status") or {}).get("startTime"))
            transition = parse_time((condition or {}).get("lastTransitionTime"))
            if condition is None or started is None or transition is None:
                is_unready = True
            elif started + datetime.timedelta(seconds=CPU_INITIALIZATION_PERIOD) > now:
                window = datetime.timedelta(seconds=metric.window)
                is_unready = condition.get("status") == "False" or metric.timestamp < transition + window
            else:
                delay = datetime.timedelta(seconds=INITIAL_READINESS_DELAY)
                is_unready = condition.get("status") == "False" and started + delay > transition
            if is_unready:
                unready.add(name)
                continue
        ready += 1
    return ready, unready, missing, ignored


def pod_requests(pods: list[Object], resource: str) -> dict[str, int]:
    """Each pod's request of ``resource`` in milli-units; raises when a container has none."""
    out: dict[str, int] = {}
    for pod in pods:
        total = 0
        for c in (pod.get("spec") or {}).get("containers") or []:
            value = ((c.get("resources") or {}).get("requests") or {}).get(resource)
            if value is None:
                container, name = c.get("name"), pod["metadata"]["name"]
                raise MetricError(f"missing request for {resource} in container {container} of Pod {name}")
            total += round(quantity(value) * 1000)
        out[pod["metadata"]["name"]] = total
    return out


def utilization_ratio(
    metrics: Mapping[str, int], requests: Mapping[str, int], target: int
) -> tuple[float, int, int]:
    """(usage ratio, utilization %, average usage in milli-units) over pods with both a metric and
    a request, as upstream's ``GetResourceUtilizationRatio``."""
    metrics_total = requests_total = entries = 0
    for name, value in metrics.items():
        if name in requests:
            metrics_total += value
            requests_total += requests[name]
            entries += 1
    if requests_total == 0:
        raise MetricError("no metrics returned matched known pods")
    utilization = metrics_total * 100 // requests_total
    return utilization / target, utilization, metrics_total // entries


def _prepared(
    pods: list[Object], metrics: Mapping[str, PodMetric], resource: str, now: datetime.datetime
) -> tuple[int, set[str], set[str], dict[str, int]]:
    if not pods:
        raise MetricError("no pods returned by selector while calculating replica count")
    ready, unready, missing, ignored = group_pods(pods, metrics, resource, now)
    values = {n: m.value for n, m in metrics.items() if n not in ignored and n not in unready}
    if not values:
        raise MetricError("did not receive metrics for targeted pods (pods might be unready)")
    return ready, unready, missing, values


def resource_replicas(
    current: int,
    target_utilization: int,
    resource: str,
    pods: list[Object],
    metrics: Mapping[str, PodMetric],
    now: datetime.datetime,
    tolerance: float = TOLERANCE,
) -> tuple[int, int, int]:
    """(proposed replicas, utilization %, average usage in milli-units) for a Utilization target."""
    ready, unready, missing, values = _prepared(pods, metrics, resource, now)
    counted = values.keys() | missing | unready
    requests = pod_requests([p for p in pods if p["metadata"]["name"] in counted], resource)
    _, utilization, raw = utilization_ratio(values, requests, target_utilization)

    def ratio_of(v: dict[str, int]) -> float:
        return utilization_ratio(v, requests, target_utilization)[0]

    proposal = _propose(current, ready, unready, missing, values, ratio_of, requests.__getitem__, tolerance)
    return proposal, utilization, raw


def plain_replicas(
    current: int,
    target_milli: int,
    resource: str,
    pods: list[Object],
    metrics: Mapping[str, PodMetric],
    now: datetime.datetime,
    tolerance: float = TOLERANCE,
) -> tuple[int, int]:
    """(proposed replicas, average usage in milli-units) for an AverageValue target
    (upstream's ``calcPlainMetricReplicas``)."""
    ready, unready, missing, values = _prepared(pods, metrics, resource, now)
    usage = sum(values.values()) // len(values)

    def ratio_of(v: dict[str, int]) -> float:
        return (sum(v.values()) // len(v)) / target_milli

    proposal = _propose(current, ready, unready, missing, values, ratio_of, lambda _: target_milli, tolerance)
    return proposal, usage


def _propose(
    current: int,
    ready: int,
    unready: set[str],
    missing: set[str],
    values: dict[str, int],
    ratio_of: Callable[[dict[str, int]], float],
    at_target: Callable[[str], int],
    tolerance: float,
) -> int:
    """upstream's decision once pods are grouped: ``ceil(ratio * ready)`` when no pod is missing
    and none unready matters; else missing pods count as at target (scaling down) or idle
    (scaling up), unready ones as idle when scaling up, and the result is re-checked."""
    ratio = ratio_of(values)
    with_unready = bool(unready) and ratio > 1.0
    if not with_unready and not missing:
        if abs(1.0 - ratio) <= tolerance:
            return current
        return math.ceil(ratio * ready)
    for name in missing:
        values[name] = at_target(name) if ratio < 1.0 else 0
    if with_unready:
        for name in unready:
            values[name] = 0
    return _settle(current, ratio, ratio_of(values), len(values), tolerance)


def _settle(current: int, ratio: float, new_ratio: float, count: int, tolerance: float) -> int:
    """The proposal once missing/unready pods are filled in: none if it flipped direction or lands
    within tolerance, nor if it would move against the direction of the ratio."""
    if abs(1.0 - new_ratio) <= tolerance or (ratio < 1.0 < new_ratio) or (ratio > 1.0 > new_ratio):
        return current
    proposal = math.ceil(new_ratio * count)
    if (new_ratio < 1.0 and proposal > current) or (new_ratio > 1.0 and proposal < current):
        return current
    return proposal


# -- normalization ------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class Decision:
    """A normalized replica count and the conditions it implies (type → (status, reason, message))."""

    replicas: int
    able_to_scale: tuple[str, str]
    limited: tuple[str, str, str]


_STABILIZED_DOWN = (
    "ScaleDownStabilized",
    "recent recommendations were higher than current one, applying the highest recent recommendation",
)
_STABILIZED_UP = (
    "ScaleUpStabilized",
    "recent recommendations were lower than current one, applying the lowest recent recommendation",
)
_READY = ("ReadyForNewScale", "recommended size matches current size")
_WITHIN = ("DesiredWithinRange", "the desired count is within the acceptable range")
_UP_LIMIT = ("ScaleUpLimit", "the desired replica count is increasing faster than the maximum scale rate")
_DOWN_LIMIT = ("ScaleDownLimit", "the desired replica count is decreasing faster than the maximum scale rate")
_TOO_MANY = ("TooManyReplicas", "the desired replica count is more than the maximum replica count")
_TOO_FEW = ("TooFewReplicas", "the desired replica count is less than the minimum replica count")


@dataclasses.dataclass
class _Event:
    change: int
    at: datetime.datetime
    outdated: bool = False


class Recommender:
    """Per-autoscaler memory of recommendations and scale events (module docstring). Keys are
    ``namespace/name``; ``forget`` drops one when its autoscaler is deleted."""

    def __init__(self, downscale_window: float = DOWNSCALE_STABILIZATION) -> None:
        self.downscale_window = downscale_window
        self._recommendations: dict[str, list[list[Any]]] = {}
        self._up: dict[str, list[_Event]] = {}
        self._down: dict[str, list[_Event]] = {}

    def record_initial(self, key: str, current: int, now: datetime.datetime) -> None:
        if key not in self._recommendations:
            self._recommendations[key] = [[current, now]]

    def forget(self, key: str) -> None:
        for table in (self._recommendations, self._up, self._down):
            table.pop(key, None)

    def normalize(
        self,
        key: str,
        behavior: Object | None,
        current: int,
        desired: int,
        min_replicas: int,
        max_replicas: int,
        now: datetime.datetime,
    ) -> Decision:
        """The replica count to scale to, given the metrics' ``desired``."""
        if behavior is None:
            return self._legacy(key, current, desired, min_replicas, max_replicas, now)
        up = dict(behavior.get("scaleUp") or {})
        down = dict(behavior.get("scaleDown") or {})
        if down.get("stabilizationWindowSeconds") is None:
            down["stabilizationWindowSeconds"] = int(self.downscale_window)
        stabilized, reason = self._stabilize(key, up, down, current, desired, now)
        able = reason if stabilized != desired else _READY
        bounds = (min_replicas, max_replicas)
        replicas, limit = self._rate_limited(key, up, down, current, stabilized, bounds, now)
        status = "False" if replicas == stabilized else "True"
        return Decision(replicas, able, (status, *limit))

    def _legacy(
        self, key: str, current: int, desired: int, min_r: int, max_r: int, now: datetime.datetime
    ) -> Decision:
        recs = self._recommendations.setdefault(key, [])
        cutoff = now - datetime.timedelta(seconds=self.downscale_window)
        best, old_index = desired, None
        for i, (value, at) in enumerate(recs):
            if at < cutoff:
                old_index = i
            elif value > best:
                best = value
        if old_index is not None:
            recs[old_index] = [desired, now]
        else:
            recs.append([desired, now])
        able = _STABILIZED_DOWN if best != desired else _READY
        up_limit = max(2 * current, 4)
        ceiling, over = (up_limit, _UP_LIMIT) if max_r > up_limit else (max_r, _TOO_MANY)
        if best < min_r:
            replicas, limit = min_r, _TOO_FEW
        elif best > ceiling:
            replicas, limit = ceiling, over
        else:
            replicas, limit = best, _WITHIN
        return Decision(replicas, able, ("False" if replicas == best else "True", *limit))

    def _stabilize(
        self, key: str, up: Object, down: Object, current: int, desired: int, now: datetime.datetime
    ) -> tuple[int, tuple[str, str]]:
        up_window = int(up.get("stabilizationWindowSeconds") or 0)
        down_window = int(down.get("stabilizationWindowSeconds") or 0)
        if desired >= current:
            window, better, reason = up_window, min, _STABILIZED_UP
        else:
            window, better, reason = down_window, max, _STABILIZED_DOWN
        obsolete = now - datetime.timedelta(seconds=max(up_window, down_window))
        cutoff = now - datetime.timedelta(seconds=window)
        recs = self._recommendations.setdefault(key, [])
        result, old_index = desired, None
        for i, (value, at) in enumerate(recs):
            if at > cutoff:
                result = better(value, result)
            if at < obsolete:
                old_index = i
        if old_index is not None:
            recs[old_index] = [desired, now]
        else:
            recs.append([desired, now])
        return result, reason

    def _rate_limited(
        self,
        key: str,
        up: Object,
        down: Object,
        current: int,
        desired: int,
        bounds: tuple[int, int],
        now: datetime.datetime,
    ) -> tuple[int, tuple[str, str]]:
        min_r, max_r = bounds
        if desired > current:
            ups, downs = self._up.get(key, []), self._down.get(key, [])
            limit = max(_scale_up_limit(current, ups, downs, up, now), current)
            allowed, reason = (limit, _UP_LIMIT) if max_r > limit else (max_r, _TOO_MANY)
            if desired > allowed:
                return allowed, reason
        elif desired < current:
            ups, downs = self._up.get(key, []), self._down.get(key, [])
            limit = min(_scale_down_limit(current, ups, downs, down, now), current)
            allowed, reason = (limit, _DOWN_LIMIT) if min_r < limit else (min_r, _TOO_FEW)
            if desired < allowed:
                return allowed, reason
        return desired, _WITHIN

    def record_scale(
        self, key: str, behavior: Object | None, previous: int, new: int, now: datetime.datetime
    ) -> None:
        """Remember a rescale, for the policies' periods (upstream's ``storeScaleEvent``)."""
        if behavior is None:
            return
        rules = (behavior.get("scaleUp") if new > previous else behavior.get("scaleDown")) or {}
        events = (self._up if new > previous else self._down).setdefault(key, [])
        longest = max((int(p.get("periodSeconds") or 0) for p in rules.get("policies") or []), default=0)
        cutoff = now - datetime.timedelta(seconds=longest)
        reuse = None
        for i, e in enumerate(events):
            if e.at < cutoff:
                e.outdated = True
            if e.outdated:
                reuse = i
        event = _Event(abs(new - previous), now)
        if reuse is not None:
            events[reuse] = event
        else:
            events.append(event)


def _changed_in_period(period: int, events: list[_Event], now: datetime.datetime) -> int:
    cutoff = now - datetime.timedelta(seconds=period)
    return sum(e.change for e in events if e.at > cutoff)


def _scale_up_limit(
    current: int, ups: list[_Event], downs: list[_Event], rules: Object, now: datetime.datetime
) -> int:
    """The most replicas the scale-up policies allow now (1.32's fold: Max over policies by default,
    Min with ``selectPolicy: Min``; the period starts from what it began with)."""
    select = rules.get("selectPolicy") or "Max"
    if select == "Disabled":
        return current
    proposals = []
    for policy in rules.get("policies") or []:
        period = int(policy.get("periodSeconds") or 0)
        start = current - _changed_in_period(period, ups, now) + _changed_in_period(period, downs, now)
        value = int(policy.get("value") or 0)
        if policy.get("type") == "Pods":
            proposals.append(start + value)
        else:
            proposals.append(math.ceil(start * (1 + value / 100)))
    if not proposals:
        return 2**31 - 1 if select == "Min" else -(2**31)
    return min(proposals) if select == "Min" else max(proposals)


def _scale_down_limit(
    current: int, ups: list[_Event], downs: list[_Event], rules: Object, now: datetime.datetime
) -> int:
    """The fewest replicas the scale-down policies allow now (Min over policies by default, Max
    with ``selectPolicy: Min``)."""
    select = rules.get("selectPolicy") or "Max"
    if select == "Disabled":
        return current
    proposals = []
    for policy in rules.get("policies") or []:
        period = int(policy.get("periodSeconds") or 0)
        start = current + _changed_in_period(period, downs, now) - _changed_in_period(period, ups, now)
        value = int(policy.get("value") or 0)
        if policy.get("type") == "Pods":
            proposals.append(start - value)
        else:
            proposals.append(int(start * (1 - value / 100)))
    if not proposals:
        return -(2**31) if select == "Min" else 2**31 - 1
    return max(proposals) if select == "Min" else min(proposals)
