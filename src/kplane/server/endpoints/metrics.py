"""The API server's metrics, under kube-apiserver's names, and the ``/metrics`` text.

Recording sits on every request's path, so it is plain arithmetic on dicts keyed by label tuples
(about a microsecond per request); ``prometheus_client`` objects are made only when ``/metrics``
is scraped, by a custom collector over those dicts, and serialized by ``generate_latest`` with the
process collector (``process_*``). Names, labels, help text and buckets are upstream's (1.32):

- ``apiserver_request_total`` {verb, dry_run, group, version, resource, subresource, scope,
  component, code}; ``apiserver_request_duration_seconds`` (same labels but code; not for WATCH
  and CONNECT, as upstream) — ``k8s.io/apiserver/pkg/endpoints/metrics/metrics.go``;
- ``apiserver_current_inflight_requests`` {request_kind: readOnly|mutating}: the highest number
  of requests in flight since the previous scrape (upstream: in the last second), long-running
  requests (watches) excluded;
- ``apiserver_flowcontrol_rejected_requests_total`` {flow_schema, priority_level, reason}:
  requests refused with 429 by API Priority and Fairness (``filters/flowcontrol``), and
  ``apiserver_flowcontrol_dispatched_requests_total`` {flow_schema, priority_level}: those served;
  per Limited priority level at scrape time ``apiserver_flowcontrol_current_executing_requests``,
  ``apiserver_flowcontrol_current_inqueue_requests`` and ``apiserver_flowcontrol_nominal_limit_seats``
  (labelled by ``priority_level`` only: kplane does not split them by schema);
- ``apiserver_storage_objects`` {resource}: objects held per resource, at scrape time;
- ``apiserver_watch_events_total`` {group, version, resource}: events sent to watchers;
- ``etcd_request_duration_seconds`` {operation, type}: latency of the storage backend (kplane's
  stand-in for etcd), the name kube-apiserver uses for its storage.

One ``APIMetrics`` per process (``DEFAULT``), as upstream's legacy registry: servers started in
one process share it.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, ProcessCollector, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily

# upstream's requestLatencies / etcd_request_duration_seconds buckets
BUCKETS = (
    0.005,
    0.025,
    0.05,
    0.1,
    0.2,
    0.4,
    0.6,
    0.8,
    1.0,
    1.25,
    1.5,
    2,
    3,
    4,
    5,
    6,
    8,
    10,
    15,
    20,
    30,
    45,
    60,
)
REQUEST_LABELS = ("verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component")
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

_REQUEST_TOTAL_HELP = (
    "[STABLE] Counter of apiserver requests broken out for each verb, dry run value, group, version, "
    "resource, scope, component, and HTTP response code."
)
_REQUEST_DURATION_HELP = (
    "[STABLE] Response latency distribution in seconds for each verb, dry run value, group, version, "
    "resource, subresource, scope and component."
)


class _Histogram:
    """Bucket counts (non-cumulative) and a sum, per label tuple."""

    __slots__ = ("series",)

    def __init__(self) -> None:
        self.series: dict[tuple[str, ...], list[float]] = {}

    def observe(self, labels: tuple[str, ...], value: float) -> None:
        row = self.series.get(labels)
        if row is None:
            row = self.series[labels] = [0.0] * (len(BUCKETS) + 2)  # buckets, +Inf, sum
        row[bisect.bisect_left(BUCKETS, value)] += 1
        row[-1] += value

    def families(self, name: str, help_text: str, label_names: tuple[str, ...]) -> HistogramMetricFamily:
        family = HistogramMetricFamily(name, help_text, labels=label_names)
        for labels, row in sorted(self.series.items()):
            running, buckets = 0.0, []
            for bound, count in zip((*(format(b, "g") for b in BUCKETS), "+Inf"), row[:-1], strict=True):
                running += count
                buckets.append((bound, running))
            family.add_metric(list(labels), buckets, row[-1])
        return family


class APIMetrics:
    """Counters the filter, the watch endpoint and the storage decorator feed; rendered on scrape.

    Every method runs on the event loop (recording is not thread-safe).
    """

    def __init__(self) -> None:
        self.requests: dict[tuple[str, ...], dict[int, int]] = {}
        self.durations = _Histogram()
        self.inflight = {"readOnly": 0, "mutating": 0}
        self.inflight_peak = {"readOnly": 0, "mutating": 0}
        self.watch_events: dict[tuple[str, str, str], int] = {}
        self.rejections: dict[tuple[str, str, str], int] = {}
        self.dispatches: dict[tuple[str, str], int] = {}
        self.flowcontrol_levels: Callable[[], list[tuple[str, int, int, int]]] = list
        """(priority level, executing, waiting, nominal seats) per Limited level, at scrape."""
        self.storage = _Histogram()
        self.object_counts: Callable[[], dict[str, int]] = dict

    # -- recording ---------------------------------------------------------------------------------

    def started(self, kind: str) -> None:
        """A short-running request of ``kind`` (readOnly or mutating) began."""
        now = self.inflight[kind] = self.inflight[kind] + 1
        if now > self.inflight_peak[kind]:
            self.inflight_peak[kind] = now

    def request(
        self, labels: tuple[str, ...], code: int, seconds: float | None, *, leaving: str | None = None
    ) -> None:
        """One answered request: ``labels`` in ``REQUEST_LABELS`` order; ``seconds`` None for
        requests whose latency upstream does not observe (WATCH, CONNECT); ``leaving``: the
        in-flight kind the request counted in since ``started`` (one call for both, per request)."""
        if leaving is not None:
            self.inflight[leaving] -= 1
        codes = self.requests.get(labels)
        if codes is None:
            codes = self.requests[labels] = {}
        codes[code] = codes.get(code, 0) + 1
        if seconds is not None:
            self.durations.observe(labels, seconds)

    def rejected(self, schema: str, level: str, reason: str) -> None:
        """A request refused by APF (``queue-full``, ``time-out``, ``concurrency-limit``)."""
        key = (schema, level, reason)
        self.rejections[key] = self.rejections.get(key, 0) + 1

    def dispatched(self, schema: str, level: str) -> None:
        """A request APF let through."""
        key = (schema, level)
        self.dispatches[key] = self.dispatches.get(key, 0) + 1

    def watch_event(self, group: str, version: str, resource: str) -> None:
        key = (group, version, resource)
        self.watch_events[key] = self.watch_events.get(key, 0) + 1

    def storage_request(self, operation: str, key: str, seconds: float) -> None:
        """One backend operation on ``key`` (its resource is the ``type`` label) took ``seconds``."""
        self.storage.observe((operation, resource_of_key(key)), seconds)

    # -- rendering ---------------------------------------------------------------------------------

    def _level_gauges(self) -> Iterator[Any]:
        executing = GaugeMetricFamily(
            "apiserver_flowcontrol_current_executing_requests",
            "[BETA] Number of requests in initial (for a WATCH) or any (for a non-WATCH) execution "
            "stage in the API Priority and Fairness subsystem",
            labels=("priority_level",),
        )
        waiting = GaugeMetricFamily(
            "apiserver_flowcontrol_current_inqueue_requests",
            "[BETA] Number of requests currently pending in queues of the API Priority and Fairness "
            "subsystem",
            labels=("priority_level",),
        )
        seats = GaugeMetricFamily(
            "apiserver_flowcontrol_nominal_limit_seats",
            "[BETA] Nominal number of execution seats configured for each priority level",
            labels=("priority_level",),
        )
        for level, running, queued, nominal in sorted(self.flowcontrol_levels()):
            executing.add_metric([level], running)
            waiting.add_metric([level], queued)
            seats.add_metric([level], nominal)
        yield executing
        yield waiting
        yield seats

    def collect(self) -> Iterator[Any]:
        """The metric families (``prometheus_client`` collector protocol)."""
        total = CounterMetricFamily(
            "apiserver_request", _REQUEST_TOTAL_HELP, labels=(*REQUEST_LABELS, "code")
        )
        for labels, codes in sorted(self.requests.items()):
            for code, count in sorted(codes.items()):
                total.add_metric([*labels, str(code)], count)
        yield total
        yield self.durations.families(
            "apiserver_request_duration_seconds", _REQUEST_DURATION_HELP, REQUEST_LABELS
        )
        inflight = GaugeMetricFamily(
            "apiserver_current_inflight_requests",
            "[STABLE] Maximal number of currently used inflight request limit of this apiserver per "
            "request kind in last second.",
            labels=("request_kind",),
        )
        for kind in ("mutating", "readOnly"):
            inflight.add_metric([kind], max(self.inflight_peak[kind], self.inflight[kind]))
            self.inflight_peak[kind] = self.inflight[kind]
        yield inflight
        rejected = CounterMetricFamily(
            "apiserver_flowcontrol_rejected_requests",
            "[BETA] Number of requests rejected by API Priority and Fairness subsystem",
            labels=("flow_schema", "priority_level", "reason"),
        )
        for labels, count in sorted(self.rejections.items()):
            rejected.add_metric(list(labels), count)
        yield rejected
        dispatched = CounterMetricFamily(
            "apiserver_flowcontrol_dispatched_requests",
            "[BETA] Number of requests executed by API Priority and Fairness subsystem",
            labels=("flow_schema", "priority_level"),
        )
        for pair, count in sorted(self.dispatches.items()):
            dispatched.add_metric(list(pair), count)
        yield dispatched
        yield from self._level_gauges()
        stored = GaugeMetricFamily(
            "apiserver_storage_objects",
            "[STABLE] Number of stored objects at the time of last check split by kind. In case of a "
            "fetching error, the value will be -1.",
            labels=("resource",),
        )
        for resource, count in sorted(self.object_counts().items()):
            stored.add_metric([resource], count)
        yield stored
        events = CounterMetricFamily(
            "apiserver_watch_events",
            "[ALPHA] Number of events sent in watch clients",
            labels=("group", "version", "resource"),
        )
        for labels, count in sorted(self.watch_events.items()):
            events.add_metric(list(labels), count)
        yield events
        yield self.storage.families(
            "etcd_request_duration_seconds",
            "[ALPHA] Etcd request latency in seconds for each operation and object type.",
            ("operation", "type"),
        )

    def render(self) -> bytes:
        """The Prometheus text exposition of these metrics and the process collector's."""
        registry = CollectorRegistry(auto_describe=False)
        registry.register(self)
        ProcessCollector(registry=registry)
        return generate_latest(registry)


DEFAULT = APIMetrics()


def resource_of_key(key: str) -> str:
    """Upstream's ``type``/``resource`` label of a storage key: ``configmaps``, ``deployments.apps``."""
    parts = key.split("/", 4)  # "", "registry", group|core, plural, rest
    if len(parts) < 4:
        return ""
    group, plural = parts[2], parts[3]
    return plural if group == "core" else f"{plural}.{group}"
