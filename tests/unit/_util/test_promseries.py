"""Lean metric families: the same exposition as prometheus_client's own metrics, minus ``_created``."""

from __future__ import annotations

import prometheus_client
import pytest

from kplane._util import promseries

BUCKETS = (0.005, 0.1, 1, 2.5)
VALUES = (0.0, 0.005, 0.0050001, 0.1, 0.7, 2.5, 3.0, 100.0)


def _text(registry: prometheus_client.CollectorRegistry) -> list[str]:
    out = prometheus_client.generate_latest(registry).decode().splitlines()
    return [line for line in out if "_created" not in line]


def test_exposition_matches_prometheus_client() -> None:
    """Counters, gauges (set, moved, read through a function) and histograms (values on, between
    and past the bounds) print exactly what prometheus_client prints for the same updates."""
    theirs, ours = prometheus_client.CollectorRegistry(), prometheus_client.CollectorRegistry()
    labels = ["controller", "result"]
    c1 = prometheus_client.Counter("things", "Things done", labels, registry=theirs)
    c2 = promseries.Counter("things", "Things done", labels, ours)
    g1 = prometheus_client.Gauge("depth", "Items waiting", ["name"], registry=theirs)
    g2 = promseries.Gauge("depth", "Items waiting", ["name"], ours)
    h1 = prometheus_client.Histogram("took_seconds", "Time taken", ["name"], buckets=BUCKETS, registry=theirs)
    h2 = promseries.Histogram("took_seconds", "Time taken", ["name"], ours, buckets=BUCKETS)
    for c in (c1, c2):
        c.labels("a", "success").inc()
        c.labels("a", "success").inc(2.5)
        c.labels("b", "error")  # a series that exists at zero
    for g in (g1, g2):
        g.labels("q").inc()
        g.labels("q").inc()
        g.labels("q").dec()
        g.labels("fixed").set(7)
        g.labels("computed").set_function(lambda: 42.0)
    for h in (h1, h2):
        for v in VALUES:
            h.labels("x").observe(v)
    assert _text(ours) == _text(theirs)
    assert ours.get_sample_value("took_seconds_bucket", {"name": "x", "le": "0.005"}) == 2
    assert ours.get_sample_value("things_total", {"controller": "a", "result": "success"}) == 3.5


def test_labels_are_checked_and_series_shared() -> None:
    reg = prometheus_client.CollectorRegistry()
    counter = promseries.Counter("hits", "Hits", ["path"], reg)
    assert counter.labels("/a") is counter.labels("/a")
    with pytest.raises(ValueError, match="expected 1 label values"):
        counter.labels("/a", "extra")
    with pytest.raises(ValueError, match="non-negative"):
        counter.labels("/a").inc(-1)
    with pytest.raises(ValueError, match="Duplicated timeseries"):
        promseries.Counter("hits", "Hits again", ["path"], reg)  # the registry refuses a clash
