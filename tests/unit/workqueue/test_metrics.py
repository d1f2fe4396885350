"""Work queue metrics: upstream names and semantics, measured on a fake clock."""

from __future__ import annotations

import asyncio

import prometheus_client
import pytest

from kplane._util import clock
from kplane.workqueue import delaying, metrics, queue


def _value(reg: prometheus_client.CollectorRegistry, metric: str, **labels: str) -> float:
    value = reg.get_sample_value(metric, {"name": "q", **labels})
    assert value is not None, metric
    return value


@pytest.fixture
def registry() -> prometheus_client.CollectorRegistry:
    return prometheus_client.CollectorRegistry()


def _queue(
    registry: prometheus_client.CollectorRegistry, fake: clock.FakeClock
) -> delaying.DelayingQueue[str]:
    provider = metrics.PrometheusMetricsProvider(registry)
    return delaying.DelayingQueue("q", clock=fake, metrics_provider=provider)


async def test_depth_and_adds_count_only_items_that_become_dirty(
    registry: prometheus_client.CollectorRegistry,
) -> None:
    """Deduplicated adds are not counted; depth falls on get."""
    q = _queue(registry, clock.FakeClock())
    q.add("a")
    q.add("a")
    q.add("b")
    assert _value(registry, "workqueue_adds_total") == 2
    assert _value(registry, "workqueue_depth") == 2
    await q.get()
    assert _value(registry, "workqueue_depth") == 1


async def test_queue_and_work_durations_use_the_clock(
    registry: prometheus_client.CollectorRegistry,
) -> None:
    """Queue duration spans first add to get; work duration spans get to done."""
    fake = clock.FakeClock()
    q = _queue(registry, fake)
    q.add("a")
    fake.step(2.0)
    q.add("a")  # A dedup does not restart the queue-duration clock.
    fake.step(1.0)
    item = await q.get()
    fake.step(4.0)
    q.done(item)
    assert _value(registry, "workqueue_queue_duration_seconds_sum") == pytest.approx(3.0)
    assert _value(registry, "workqueue_queue_duration_seconds_count") == 1
    assert _value(registry, "workqueue_work_duration_seconds_sum") == pytest.approx(4.0)
    assert _value(registry, "workqueue_work_duration_seconds_bucket", le="10.0") == 1
    assert _value(registry, "workqueue_work_duration_seconds_bucket", le="1.0") == 0


async def test_unfinished_and_longest_running_are_computed_on_scrape(
    registry: prometheus_client.CollectorRegistry,
) -> None:
    """In-flight ages are summed and maxed at read time, and drop to 0 when done."""
    fake = clock.FakeClock()
    q = _queue(registry, fake)
    q.add("a")
    q.add("b")
    a = await q.get()
    fake.step(3.0)
    b = await q.get()
    fake.step(1.0)
    assert _value(registry, "workqueue_unfinished_work_seconds") == pytest.approx(5.0)
    assert _value(registry, "workqueue_longest_running_processor_seconds") == pytest.approx(4.0)
    q.done(a)
    q.done(b)
    assert _value(registry, "workqueue_unfinished_work_seconds") == 0
    assert _value(registry, "workqueue_longest_running_processor_seconds") == 0


async def test_retries_count_every_add_after(registry: prometheus_client.CollectorRegistry) -> None:
    """Every add_after call, immediate or delayed, counts one retry."""
    q = _queue(registry, clock.FakeClock())
    q.add_after("a", 0)
    q.add_after("b", 5.0)
    q.add_after("b", 6.0)
    await asyncio.sleep(0)
    assert _value(registry, "workqueue_retries_total") == 3
    q.shutdown()


def test_unnamed_queue_is_not_observed(registry: prometheus_client.CollectorRegistry) -> None:
    """A queue without a name registers no samples."""
    provider = metrics.PrometheusMetricsProvider(registry)
    q: queue.Queue[str] = queue.Queue(metrics_provider=provider)
    q.add("a")
    assert registry.get_sample_value("workqueue_adds_total", {"name": ""}) is None


def test_global_provider_is_noop_until_set(registry: prometheus_client.CollectorRegistry) -> None:
    """Named queues use the global provider, which observes nothing until set."""
    assert isinstance(metrics.get_provider(), metrics.NoopMetricsProvider)
    provider = metrics.prometheus_provider(registry)
    assert metrics.prometheus_provider(registry) is provider
    metrics.set_provider(provider)
    try:
        q: queue.Queue[str] = queue.Queue("q")
        q.add("a")
        assert _value(registry, "workqueue_adds_total") == 1
    finally:
        metrics.set_provider(metrics.NoopMetricsProvider())


def test_duration_buckets_match_upstream() -> None:
    """Buckets are ExponentialBuckets(10e-9, 10, 12): 10 ns up to 1000 s."""
    assert len(metrics.DURATION_BUCKETS) == 12
    assert metrics.DURATION_BUCKETS[0] == pytest.approx(1e-8)
    assert metrics.DURATION_BUCKETS[-1] == pytest.approx(1e3)
