"""The HorizontalPodAutoscaler controller (autoscaling/v2), as upstream's
``pkg/controller/podautoscaler/horizontal.go``: every ``SYNC_PERIOD`` (15 s) per autoscaler, read
the target's ``scale`` subresource, compute a replica count from resource metrics
(``metrics.k8s.io`` PodMetrics of the pods the scale's selector picks; ``hpacalc``), normalize it
(min/max, behavior policies and stabilization windows), write the scale when it changes, and
write the status (``currentReplicas``, ``desiredReplicas``, ``currentMetrics``,
``lastScaleTime``, conditions AbleToScale / ScalingActive / ScalingLimited with upstream's reasons
and messages) when it differs. Events are upstream's: ``SuccessfulRescale`` (``New size: N;
reason: ...``), ``FailedGetScale``, ``FailedGetResourceMetric``, ``FailedComputeMetricsReplicas``,
``FailedRescale``.

Only ``Resource`` metrics (cpu, memory; Utilization or AverageValue) are computed; other metric
types report ``ScalingActive`` False with the error an unavailable custom/external metrics API
gives. Recommendations and scale events live in memory, as upstream's (a restart starts afresh).
"""

from __future__ import annotations

import copy
import datetime
from typing import Any

from kplane import runtime
from kplane.api import errors, labels
from kplane.api.gvk import GroupVersion, GroupVersionKind
from kplane.client import dynamic, events
from kplane.client.options import ListOptions
from kplane.controllers import common, hpacalc
from kplane.controllers.common import Object

COMPONENT = "horizontal-pod-autoscaler"
SYNC_PERIOD = 15.0
HPAS = dynamic.Resource(
    "autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler", namespaced=True
)
POD_METRICS = dynamic.Resource("metrics.k8s.io", "v1beta1", "pods", "PodMetrics", namespaced=True)


class _Failed(Exception):
    """A step failed: the status (already set on the autoscaler) is written, then retried later."""


class _MetricFailure(Exception):
    """One metric could not be computed: ``reason`` and ``cause`` make the ScalingActive condition
    (and the event already recorded), ``error`` is what ``FailedComputeMetricsReplicas`` quotes."""

    def __init__(self, reason: str, cause: str, error: str) -> None:
        super().__init__(error)
        self.reason, self.cause, self.error = reason, cause, error


def _set_condition(hpa: Object, kind: str, status: str, reason: str, message: str, now: str) -> None:
    """upstream ``setCondition``: the transition time changes only when the status does."""
    conditions = hpa.setdefault("status", {}).setdefault("conditions", [])
    for c in conditions:
        if c.get("type") == kind:
            if c.get("status") != status:
                c["lastTransitionTime"] = now
            c.update(status=status, reason=reason, message=message)
            return
    conditions.append(
        {"type": kind, "status": status, "lastTransitionTime": now, "reason": reason, "message": message}
    )


def _seconds(window: Any) -> float:
    """A metrics window (``15s``, ``10.5s``) in seconds; 0 when unreadable."""
    text = str(window or "")
    try:
        return float(text[:-1]) if text.endswith("s") else 0.0
    except ValueError:
        return 0.0


def _milli_text(value: int) -> str:
    """``resource.NewMilliQuantity(value, DecimalSI).String()``."""
    from decimal import Decimal

    from kplane.api import quantity

    return quantity.canonical(Decimal(value).scaleb(-3))


class HorizontalPodAutoscalerController:
    """Reconciles HorizontalPodAutoscalers (module docstring)."""

    def __init__(self, manager: runtime.Manager, *, tolerance: float = hpacalc.TOLERANCE) -> None:
        self.manager = manager
        self.clock = manager.clock
        self.api = manager.api
        self.tolerance = tolerance
        self.recorder: events.EventRecorder = manager.event_recorder(COMPONENT)
        self.recommender = hpacalc.Recommender()
        self._hpas: Any = None
        self._pods: Any = None

    async def setup(self) -> runtime.Controller:
        self._hpas = await self.manager.cache.informer(HPAS)
        self._pods = await self.manager.cache.informer(common.PODS)
        return await (
            runtime.Builder(self.manager)
            .named("horizontalpodautoscaler")
            .for_(HPAS, predicates=[runtime.predicate.GenerationChanged()])
            .complete(self)
        )

    async def reconcile(self, request: runtime.Request) -> runtime.Result:
        key = f"{request.namespace}/{request.name}"
        cached = self._hpas.store.get_by_key(key)
        if cached is None:
            self.recommender.forget(key)
            return runtime.Result()
        hpa: Object = copy.deepcopy(cached)
        original = copy.deepcopy(hpa.get("status") or {})
        try:
            await self._autoscale(hpa, key)
        except _Failed:
            pass
        await self._write_status(hpa, original)
        return runtime.Result(requeue_after=SYNC_PERIOD)

    def _now(self) -> str:
        return common.rfc3339(self.clock)

    # -- one sync ----------------------------------------------------------------------------------

    async def _target(self, hpa: Object) -> tuple[dynamic.ResourceClient[Any, Any], Object]:
        """The target's scale client and its current Scale; FailedGetScale otherwise."""
        ref = hpa["spec"].get("scaleTargetRef") or {}
        try:
            gv = GroupVersion.parse(ref.get("apiVersion") or "")
            resource = await self.api.mapper.resolve(
                GroupVersionKind(gv.group, gv.version, ref.get("kind", ""))
            )
            client = self.api.dynamic.resource(resource, hpa["metadata"]["namespace"])
            scale: Object = await client.get_subresource(ref.get("name", ""), "scale")
        except (errors.APIError, LookupError, ValueError) as err:
            self.recorder.event(hpa, "Warning", "FailedGetScale", str(err))
            _set_condition(
                hpa,
                "AbleToScale",
                "False",
                "FailedGetScale",
                f"the HPA controller was unable to get the target's current scale: {err}",
                self._now(),
            )
            raise _Failed from None
        _set_condition(
            hpa,
            "AbleToScale",
            "True",
            "SucceededGetScale",
            "the HPA controller was able to get the target's current scale",
            self._now(),
        )
        return client, scale

    async def _autoscale(self, hpa: Object, key: str) -> None:
        spec = hpa["spec"]
        client, scale = await self._target(hpa)
        current = int((scale.get("spec") or {}).get("replicas") or 0)
        now = self.clock.now()
        self.recommender.record_initial(key, current, now)
        min_replicas = spec.get("minReplicas")
        min_replicas = 1 if min_replicas is None else int(min_replicas)
        max_replicas = int(spec.get("maxReplicas") or 0)
        statuses: list[Object] | None = None
        reason = ""
        if current == 0 and min_replicas != 0:
            desired, rescale = 0, False
            _set_condition(
                hpa,
                "ScalingActive",
                "False",
                "ScalingDisabled",
                "scaling is disabled since the replica count of the target is zero",
                self._now(),
            )
        elif current > max_replicas:
            desired, rescale, reason = max_replicas, True, "Current number of replicas above Spec.MaxReplicas"
        elif current < min_replicas:
            desired, rescale, reason = min_replicas, True, "Current number of replicas below Spec.MinReplicas"
        else:
            try:
                proposal, metric, statuses = await self._replicas_for_metrics(hpa, scale, current, now)
            except _Failed:
                self._set_status(
                    hpa, current, hpa["status"].get("desiredReplicas", 0), None, keep_metrics=True
                )
                raise
            desired = proposal
            if desired > current:
                reason = f"{metric} above target"
            elif desired < current:
                reason = "All metrics below target"
            decision = self.recommender.normalize(
                key, spec.get("behavior"), current, desired, min_replicas, max_replicas, now
            )
            _set_condition(hpa, "AbleToScale", "True", *decision.able_to_scale, self._now())
            _set_condition(hpa, "ScalingLimited", *decision.limited, self._now())
            desired = decision.replicas
            rescale = desired != current
        if rescale:
            scale.setdefault("spec", {})["replicas"] = desired
            try:
                await client.update(scale, subresource="scale")
            except errors.APIError as err:
                self.recorder.event(
                    hpa, "Warning", "FailedRescale", f"New size: {desired}; reason: {reason}; error: {err}"
                )
                _set_condition(
                    hpa,
                    "AbleToScale",
                    "False",
                    "FailedUpdateScale",
                    f"the HPA controller was unable to update the target scale: {err}",
                    self._now(),
                )
                self._set_status(
                    hpa, current, hpa["status"].get("desiredReplicas", 0), None, keep_metrics=True
                )
                raise _Failed from None
            _set_condition(
                hpa,
                "AbleToScale",
                "True",
                "SucceededRescale",
                f"the HPA controller was able to update the target scale to {desired}",
                self._now(),
            )
            self.recorder.event(hpa, "Normal", "SuccessfulRescale", f"New size: {desired}; reason: {reason}")
            self.recommender.record_scale(key, spec.get("behavior"), current, desired, now)
        else:
            desired = current
        self._set_status(hpa, current, desired, statuses, rescaled=rescale)

    def _set_status(
        self,
        hpa: Object,
        current: int,
        desired: int,
        statuses: list[Object] | None,
        *,
        rescaled: bool = False,
        keep_metrics: bool = False,
    ) -> None:
        status = hpa.setdefault("status", {})
        status["currentReplicas"] = current
        status["desiredReplicas"] = desired
        if not keep_metrics:
            if statuses:
                status["currentMetrics"] = statuses
            else:
                status.pop("currentMetrics", None)
        if rescaled:
            status["lastScaleTime"] = self._now()

    async def _write_status(self, hpa: Object, original: Object) -> None:
        if hpa.get("status") == original:
            return
        try:
            await self.api.dynamic.resource(HPAS, hpa["metadata"]["namespace"]).update(
                hpa, subresource="status"
            )
        except errors.APIError as err:
            self.recorder.event(hpa, "Warning", "FailedUpdateStatus", str(err))

    # -- metrics -----------------------------------------------------------------------------------

    async def _replicas_for_metrics(
        self, hpa: Object, scale: Object, current: int, now: datetime.datetime
    ) -> tuple[int, str, list[Object]]:
        """upstream ``computeReplicasForMetrics``: the largest proposal over the metrics."""
        text = (scale.get("status") or {}).get("selector") or ""
        if not text:
            self.recorder.event(hpa, "Warning", "SelectorRequired", "selector is required")
            _set_condition(
                hpa,
                "ScalingActive",
                "False",
                "InvalidSelector",
                "the HPA target's scale is missing a selector",
                self._now(),
            )
            raise _Failed
        try:
            selector = labels.parse(text)
        except ValueError as err:
            message = f"couldn't convert selector into a corresponding internal selector object: {err}"
            self.recorder.event(hpa, "Warning", "InvalidSelector", message)
            _set_condition(hpa, "ScalingActive", "False", "InvalidSelector", message, self._now())
            raise _Failed from None
        specs = hpa["spec"].get("metrics") or []
        statuses: list[Object] = [{} for _ in specs]
        best, best_metric = 0, ""
        invalid: list[_MetricFailure] = []
        for i, metric in enumerate(specs):
            try:
                proposal, name, statuses[i] = await self._metric(hpa, metric, text, selector, current, now)
            except _MetricFailure as failure:
                invalid.append(failure)
                continue
            if best == 0 or proposal > best:
                best, best_metric = proposal, name
        if len(invalid) >= len(specs):
            first = invalid[0] if invalid else _MetricFailure("", "", "no metrics")
            message = f"the HPA was unable to compute the replica count: {first.cause}"
            _set_condition(hpa, "ScalingActive", "False", first.reason, message, self._now())
            self.recorder.event(
                hpa,
                "Warning",
                "FailedComputeMetricsReplicas",
                f"invalid metrics ({len(invalid)} invalid out of {len(specs)}), "
                f"first error is: {first.error}",
            )
            raise _Failed
        _set_condition(
            hpa,
            "ScalingActive",
            "True",
            "ValidMetricFound",
            f"the HPA was able to successfully calculate a replica count from {best_metric}",
            self._now(),
        )
        return best, best_metric, [m for m in statuses if m]

    def _unable(self, hpa: Object, reason: str, cause: str, error: str | None = None) -> _MetricFailure:
        """upstream ``getUnableComputeReplicaCountCondition``: a Warning event with the cause."""
        self.recorder.event(hpa, "Warning", reason, cause)
        return _MetricFailure(reason, cause, cause if error is None else error)

    async def _metric(
        self,
        hpa: Object,
        metric: Object,
        selector_text: str,
        selector: labels.Selector,
        current: int,
        now: datetime.datetime,
    ) -> tuple[int, str, Object]:
        kind = metric.get("type")
        if kind != "Resource":
            source = {"Pods": "pods", "Object": "object", "External": "external"}.get(str(kind))
            if source is None:
                raise self._unable(hpa, "InvalidMetricSourceType", f'unknown metric source type "{kind}"')
            reason = {"pods": "FailedGetPodsMetric", "object": "FailedGetObjectMetric"}.get(
                source, "FailedGetExternalMetric"
            )
            api = "external.metrics.k8s.io" if source == "external" else "custom.metrics.k8s.io"
            cause = f"the server could not find the requested resource ({api})"
            raise self._unable(hpa, reason, cause, f"failed to get {source} metric value: {cause}")
        spec = metric.get("resource") or {}
        resource = str(spec.get("name") or "")
        target = spec.get("target") or {}
        utilization = target.get("averageUtilization")
        average = target.get("averageValue")
        what = "utilization" if utilization is not None else "usage"
        try:
            pods = self._pods_matching(hpa["metadata"]["namespace"], selector)
            samples = await self._pod_metrics(hpa["metadata"]["namespace"], selector_text, resource)
            if average is not None:
                target_milli = round(common.quantity(average) * 1000)
                proposal, usage = hpacalc.plain_replicas(
                    current, target_milli, resource, pods, samples, now, self.tolerance
                )
                status = {
                    "type": "Resource",
                    "resource": {"name": resource, "current": {"averageValue": _milli_text(usage)}},
                }
                return proposal, f"{resource} resource", status
            if utilization is None:
                raise self._unable(
                    hpa,
                    "FailedGetResourceMetric",
                    "invalid resource metric source: neither an average utilization target nor an "
                    "average value (usage) target was set",
                )
            proposal, percent, raw = hpacalc.resource_replicas(
                current, int(utilization), resource, pods, samples, now, self.tolerance
            )
        except hpacalc.MetricError as err:
            error = f"failed to get {resource} {what}: {err}"
            raise self._unable(hpa, "FailedGetResourceMetric", str(err), error) from None
        status = {
            "type": "Resource",
            "resource": {
                "name": resource,
                "current": {"averageUtilization": percent, "averageValue": _milli_text(raw)},
            },
        }
        return proposal, f"{resource} resource utilization (percentage of request)", status

    def _pods_matching(self, namespace: str, selector: labels.Selector) -> list[Object]:
        return [
            p
            for p in self._pods.store.list()
            if p["metadata"].get("namespace") == namespace and selector.matches(p["metadata"].get("labels"))
        ]

    async def _pod_metrics(
        self, namespace: str, selector: str, resource: str
    ) -> dict[str, hpacalc.PodMetric]:
        """upstream's resource metrics client: each pod's usage summed over its containers; a pod
        missing the resource in any container is left out."""
        try:
            page = await self.api.dynamic.resource(POD_METRICS, namespace).list(
                ListOptions(label_selector=selector)
            )
        except errors.APIError as err:
            raise hpacalc.MetricError(
                f"unable to get metrics for resource {resource}: unable to fetch metrics from resource "
                f"metrics API: {err}"
            ) from None
        items = page.get("items") or []
        if not items:
            raise hpacalc.MetricError(
                f"unable to get metrics for resource {resource}: "
                "no metrics returned from resource metrics API"
            )
        out: dict[str, hpacalc.PodMetric] = {}
        for item in items:
            total, complete = 0, True
            for c in item.get("containers") or []:
                value = (c.get("usage") or {}).get(resource)
                if value is None:
                    complete = False
                    break
                total += round(common.quantity(value) * 1000)
            when = common.parse_time(item.get("timestamp"))
            if not complete or when is None:
                continue
            window = str(item.get("window") or "0s")
            seconds = (
                float(window[:-1])
                if window.endswith("s") and window[:-1].replace(".", "", 1).isdigit()
                else 0.0
            )
            out[item["metadata"]["name"]] = hpacalc.PodMetric(total, when, seconds)
        return out
