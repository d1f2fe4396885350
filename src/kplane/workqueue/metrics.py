"""Work queue metrics: a provider seam, a Prometheus implementation and the per-queue recorder.

A queue reports through a ``QueueMetrics`` recorder. Unnamed queues, and named queues while the
provider is the no-op default, get ``NOOP_RECORDER``, so an unobserved queue pays one empty method
call per operation. ``set_provider(prometheus_provider())`` turns on the upstream metric names
(controller-runtime's ``pkg/metrics/workqueue.go``), all labelled ``name``:

==============================================  =========  ==========================================
``workqueue_depth``                             gauge      dirty items not yet handed out by ``get``
``workqueue_adds_total``                        counter    adds that made an item dirty (no dedups)
``workqueue_queue_duration_seconds``            histogram  first add (since the last get) to get
``workqueue_work_duration_seconds``             histogram  get to done
``workqueue_unfinished_work_seconds``           gauge      sum of the ages of in-flight items
``workqueue_longest_running_processor_seconds`` gauge      age of the oldest in-flight item
``workqueue_retries_total``                     counter    every ``add_after`` call
==============================================  =========  ==========================================

The two in-flight gauges are computed when scraped (a callback gauge) rather than refreshed by a
timer every 500 ms as client-go does: the value is never stale and no task has to run.
"""

from __future__ import annotations

import dataclasses
import threading
import weakref
from collections.abc import Callable, Hashable
from typing import Any, Protocol

from kplane._util import clock as clock_mod


class Gauge(Protocol):
    """A value that goes up and down."""

    def inc(self) -> None: ...

    def dec(self) -> None: ...


class CallbackGauge(Protocol):
    """A gauge whose value is computed by ``fn`` whenever it is read."""

    def set_function(self, fn: Callable[[], float]) -> None: ...


class Counter(Protocol):
    """A monotonically increasing count."""

    def inc(self) -> None: ...


class Histogram(Protocol):
    """A distribution of observed values."""

    def observe(self, amount: float) -> None: ...


@dataclasses.dataclass(frozen=True, slots=True)
class QueueMetricSet:
    """The seven metrics of one named queue."""

    depth: Gauge
    adds: Counter
    queue_duration: Histogram
    work_duration: Histogram
    unfinished_work_seconds: CallbackGauge
    longest_running_processor_seconds: CallbackGauge
    retries: Counter


class MetricsProvider(Protocol):
    """Creates the metrics of a named queue (client-go ``workqueue.MetricsProvider``)."""

    def metrics_for(self, name: str) -> QueueMetricSet | None:
        """The metrics for the queue called ``name``, or ``None`` to leave it unobserved.

        Called once per queue construction; two queues with the same name share one set.
        """
        ...


class NoopMetricsProvider:
    """The default provider: no queue is observed."""

    def metrics_for(self, name: str) -> QueueMetricSet | None:
        return None


# Upstream ExponentialBuckets(10e-9, 10, 12): 10 ns to 1000 s.
DURATION_BUCKETS = tuple(1e-8 * 10**i for i in range(12))


class PrometheusMetricsProvider:
    """Registers the upstream work queue metric families in ``registry`` (once, at construction).

    ``controller_label`` adds controller-runtime's ``controller`` label, set to the queue's name as
    controller-runtime does (its queues are named after their controller).
    """

    def __init__(self, registry: Any = None, *, controller_label: bool = False) -> None:
        import prometheus_client

        from kplane._util import promseries

        reg = prometheus_client.REGISTRY if registry is None else registry
        self._controller_label = controller_label
        labels = ["name", "controller"] if controller_label else ["name"]
        self._depth = promseries.Gauge("workqueue_depth", "Current depth of workqueue", labels, reg)
        self._adds = promseries.Counter(
            "workqueue_adds", "Total number of adds handled by workqueue", labels, reg
        )
        self._queue_duration = promseries.Histogram(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            labels,
            reg,
            buckets=DURATION_BUCKETS,
        )
        self._work_duration = promseries.Histogram(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes.",
            labels,
            reg,
            buckets=DURATION_BUCKETS,
        )
        self._unfinished = promseries.Gauge(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has been done that is in progress and hasn't been "
            "observed by work_duration. Large values indicate stuck threads. One can deduce "
            "the number of stuck threads by observing the rate at which this increases.",
            labels,
            reg,
        )
        self._longest = promseries.Gauge(
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running.",
            labels,
            reg,
        )
        self._retries = promseries.Counter(
            "workqueue_retries", "Total number of retries handled by workqueue", labels, reg
        )

    def metrics_for(self, name: str) -> QueueMetricSet | None:
        values = (name, name) if self._controller_label else (name,)
        return QueueMetricSet(
            depth=self._depth.labels(*values),
            adds=self._adds.labels(*values),
            queue_duration=self._queue_duration.labels(*values),
            work_duration=self._work_duration.labels(*values),
            unfinished_work_seconds=self._unfinished.labels(*values),
            longest_running_processor_seconds=self._longest.labels(*values),
            retries=self._retries.labels(*values),
        )


_provider_lock = threading.Lock()
_provider: MetricsProvider = NoopMetricsProvider()
_prometheus_providers: dict[int, PrometheusMetricsProvider] = {}


def set_provider(provider: MetricsProvider) -> None:
    """Make ``provider`` observe every named queue constructed from now on."""
    global _provider
    with _provider_lock:
        _provider = provider


def get_provider() -> MetricsProvider:
    """The provider new named queues use (``NoopMetricsProvider`` until ``set_provider``)."""
    return _provider


def prometheus_provider(registry: Any = None) -> PrometheusMetricsProvider:
    """The one ``PrometheusMetricsProvider`` for ``registry`` (default: the global registry)."""
    with _provider_lock:
        key = id(registry)
        provider = _prometheus_providers.get(key)
        if provider is None:
            provider = _prometheus_providers[key] = PrometheusMetricsProvider(registry)
        return provider


class QueueMetrics:
    """Records one queue's operations into a ``QueueMetricSet``; the queue calls it on every step.

    ``add`` is called when an item becomes dirty, ``get`` when it is handed out, ``done`` when it
    is finished, ``retry`` on every ``add_after``. Not thread-safe, like the queue that owns it.
    """

    __slots__ = ("__weakref__", "_added_at", "_clock", "_metrics", "_started_at")

    def __init__(self, metrics: QueueMetricSet, clock: clock_mod.Clock) -> None:
        self._metrics = metrics
        self._clock = clock
        self._added_at: dict[Hashable, float] = {}
        self._started_at: dict[Hashable, float] = {}
        ref = weakref.ref(self)
        metrics.unfinished_work_seconds.set_function(lambda: _read(ref, unfinished=True))
        metrics.longest_running_processor_seconds.set_function(lambda: _read(ref, unfinished=False))

    def add(self, item: Hashable) -> None:
        self._metrics.adds.inc()
        self._metrics.depth.inc()
        if item not in self._added_at:
            self._added_at[item] = self._clock.monotonic()

    def get(self, item: Hashable) -> None:
        self._metrics.depth.dec()
        now = self._clock.monotonic()
        self._started_at[item] = now
        added = self._added_at.pop(item, None)
        if added is not None:
            self._metrics.queue_duration.observe(now - added)

    def done(self, item: Hashable) -> None:
        started = self._started_at.pop(item, None)
        if started is not None:
            self._metrics.work_duration.observe(self._clock.monotonic() - started)

    def retry(self) -> None:
        self._metrics.retries.inc()

    def unfinished_work_seconds(self) -> float:
        """Sum of the ages of the items handed out and not yet done."""
        now = self._clock.monotonic()
        return sum(now - t for t in self._started_at.values())

    def longest_running_processor_seconds(self) -> float:
        """Age of the oldest item handed out and not yet done (0 when none)."""
        if not self._started_at:
            return 0.0
        return self._clock.monotonic() - min(self._started_at.values())


def _read(ref: weakref.ref[QueueMetrics], *, unfinished: bool) -> float:
    recorder = ref()
    if recorder is None:
        return 0.0
    if unfinished:
        return recorder.unfinished_work_seconds()
    return recorder.longest_running_processor_seconds()


class NoopQueueMetrics:
    """The recorder of an unobserved queue: every method does nothing."""

    __slots__ = ()

    def add(self, item: Hashable) -> None:
        pass

    def get(self, item: Hashable) -> None:
        pass

    def done(self, item: Hashable) -> None:
        pass

    def retry(self) -> None:
        pass


Recorder = QueueMetrics | NoopQueueMetrics
NOOP_RECORDER = NoopQueueMetrics()


def recorder_for(name: str, *, clock: clock_mod.Clock, provider: MetricsProvider | None = None) -> Recorder:
    """The recorder for a queue called ``name``: no-op for ``""`` or when the provider declines."""
    if not name:
        return NOOP_RECORDER
    metrics = (provider or get_provider()).metrics_for(name)
    if metrics is None:
        return NOOP_RECORDER
    return QueueMetrics(metrics, clock)
