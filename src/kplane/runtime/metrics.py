"""controller-runtime's Prometheus metrics, with its names, labels and buckets.

One ``Metrics`` object owns one ``CollectorRegistry`` (the manager's; ``/metrics`` serves it) and
registers there: the controller families (``controller_runtime_reconcile_total{controller,result}``
and friends, reference/controllers.md §6.5), the work queue families with controller-runtime's
labels (``workqueue_depth{name,controller}``...), and the REST client families
(``rest_client_requests_total{code,method,host}``, ``rest_client_request_duration_seconds{verb,host}``).
A private registry per manager keeps two managers in one process (tests) from colliding.
"""

from __future__ import annotations

import dataclasses

import prometheus_client

from kplane._util import promseries
from kplane.workqueue import metrics as workqueue_metrics

RESULTS = ("success", "error", "requeue", "requeue_after")

RECONCILE_BUCKETS = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0,
    1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60,
)  # fmt: skip

# client-go's rest_client_request_duration_seconds buckets (component-base restclient metrics).
REQUEST_BUCKETS = (0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0)


@dataclasses.dataclass(frozen=True)
class ControllerMetrics:
    """The series of one controller, resolved once so the reconcile loop does no label lookups."""

    total: dict[str, promseries.CounterSeries]
    errors: promseries.CounterSeries
    terminal_errors: promseries.CounterSeries
    panics: promseries.CounterSeries
    timeouts: promseries.CounterSeries
    time: promseries.HistogramSeries
    active_workers: promseries.GaugeSeries
    max_concurrent: promseries.GaugeSeries


class Metrics:
    """The manager's registry and every metric family it serves."""

    def __init__(
        self, registry: prometheus_client.CollectorRegistry | None = None, *, process: bool = True
    ) -> None:
        """``process`` adds the ``process_*`` families (off where another process's ``/metrics``
        already has them and merges this registry's into it)."""
        reg = self.registry = registry or prometheus_client.CollectorRegistry()

        def counter(name: str, doc: str, labels: list[str]) -> promseries.Counter:
            return promseries.Counter(name, doc, labels, reg)

        def gauge(name: str, doc: str, labels: list[str]) -> promseries.Gauge:
            return promseries.Gauge(name, doc, labels, reg)

        def histogram(
            name: str, doc: str, labels: list[str], buckets: tuple[float, ...]
        ) -> promseries.Histogram:
            return promseries.Histogram(name, doc, labels, reg, buckets=buckets)

        ctl = ["controller"]
        prefix = "controller_runtime_"
        self._total = counter(prefix + "reconcile", "Reconciles by controller and result", [*ctl, "result"])
        self._errors = counter(
            prefix + "reconcile_errors", "Reconciles that failed, terminal ones included", ctl
        )
        self._terminal = counter(prefix + "terminal_reconcile_errors", "Reconciles that failed for good", ctl)
        self._panics = counter(prefix + "reconcile_panics", "Reconciles that crashed the worker", ctl)
        self._timeouts = counter(
            prefix + "reconcile_timeouts", "Reconciles cut by reconciliation_timeout", ctl
        )
        self._time = histogram(
            prefix + "reconcile_time_seconds", "Seconds per reconcile", ctl, RECONCILE_BUCKETS
        )
        self._workers = gauge(prefix + "active_workers", "Workers reconciling right now", ctl)
        self._max = gauge(prefix + "max_concurrent_reconciles", "Workers a controller may run at once", ctl)
        self.requests = counter(
            "rest_client_requests", "HTTP requests to the API server by code, method and host",
            ["code", "method", "host"],
        )  # fmt: skip
        self.request_duration = histogram(
            "rest_client_request_duration_seconds", "API request latency by verb and host",
            ["verb", "host"], REQUEST_BUCKETS,
        )  # fmt: skip
        hook = ["webhook"]
        self.webhook_requests = counter(
            prefix + "webhook_requests", "Webhook requests by path and HTTP status", [*hook, "code"]
        )
        self.webhook_latency = histogram(
            prefix + "webhook_latency_seconds",
            "Seconds per webhook request",
            hook,
            prometheus_client.Histogram.DEFAULT_BUCKETS[:-1],  # +Inf is every histogram's own
        )
        self.webhook_in_flight = gauge(
            prefix + "webhook_requests_in_flight", "Webhook requests being served", hook
        )
        # Unlabelled series created now, so each is exposed at 0 from the start as upstream's are.
        self.webhook_panics = counter(
            prefix + "webhook_panics", "Total number of webhook panics", []
        ).labels()
        self.conversion_panics = counter(
            prefix + "conversion_webhook_panics", "Total number of conversion webhook panics", []
        ).labels()
        self.leader = gauge("leader_election_master_status", "1 while this process holds the lease", ["name"])
        self._request_series: dict[
            tuple[str, str, str], tuple[promseries.CounterSeries, promseries.HistogramSeries]
        ] = {}
        self.queue_provider = workqueue_metrics.PrometheusMetricsProvider(reg, controller_label=True)
        # process_cpu_seconds_total, process_resident_memory_bytes, process_open_fds... : the names
        # of client_golang's process collector, which controller-runtime registers. Its Go runtime
        # collector (go_*) has no Python counterpart of the same names and is left out.
        if process:
            prometheus_client.ProcessCollector(registry=reg)

    def controller(self, name: str, max_concurrent_reconciles: int) -> ControllerMetrics:
        """The series of controller ``name``, every result pre-set to 0 as upstream does at start."""
        out = ControllerMetrics(
            total={result: self._total.labels(name, result) for result in RESULTS},
            errors=self._errors.labels(name),
            terminal_errors=self._terminal.labels(name),
            panics=self._panics.labels(name),
            timeouts=self._timeouts.labels(name),
            time=self._time.labels(name),
            active_workers=self._workers.labels(name),
            max_concurrent=self._max.labels(name),
        )
        out.max_concurrent.set(max_concurrent_reconciles)
        return out

    def observe_request(self, method: str, host: str, code: str, seconds: float) -> None:
        """Record one REST request (``code`` is the HTTP status, or ``<error>`` without a reply)."""
        series = self._request_series.get((code, method, host))
        if series is None:  # resolved once per (code, method, host): a few dozen at most
            series = self._request_series[(code, method, host)] = (
                self.requests.labels(code, method, host),
                self.request_duration.labels(method, host),
            )
        series[0].inc()
        series[1].observe(seconds)

    def exposition(self) -> bytes:
        """The registry in the Prometheus text format."""
        return prometheus_client.generate_latest(self.registry)
