"""Backoff: apimachinery's wait.Backoff step rule and the reflector's reset rule."""

from __future__ import annotations

import itertools

import pytest

from kplane._util import backoff, clock


def _take(b: backoff.Backoff, n: int, rand: float = 0.0) -> list[float]:
    return list(itertools.islice(b.delays(rand=lambda: rand), n))


def test_default_retry_is_constant_10ms_with_jitter() -> None:
    """DefaultRetry: 5 steps of 10 ms, lengthened by at most 10 %."""
    assert backoff.DEFAULT_RETRY.steps == 5
    assert _take(backoff.DEFAULT_RETRY, 4) == pytest.approx([0.01] * 4)
    assert _take(backoff.DEFAULT_RETRY, 4, rand=0.999) == pytest.approx([0.010999] * 4)


def test_default_backoff_multiplies_by_five() -> None:
    """DefaultBackoff sleeps about 10, 50 and 250 ms between its 4 attempts."""
    assert backoff.DEFAULT_BACKOFF.steps == 4
    assert _take(backoff.DEFAULT_BACKOFF, 3) == pytest.approx([0.01, 0.05, 0.25])


def test_steps_exhausted_repeats_last_duration() -> None:
    """After the steps run out the duration stops growing."""
    b = backoff.Backoff(duration=1.0, factor=2.0, steps=2)
    assert _take(b, 5) == [1.0, 2.0, 4.0, 4.0, 4.0]


def test_reflector_backoff_doubles_to_the_30s_cap() -> None:
    """0.8, 1.6, ... 25.6, then the cap 30 forever; jitter 1.0 at most doubles each delay."""
    assert _take(backoff.REFLECTOR_BACKOFF, 8) == pytest.approx([0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0])
    assert _take(backoff.REFLECTOR_BACKOFF, 8, rand=0.5) == pytest.approx(
        [1.2, 2.4, 4.8, 9.6, 19.2, 38.4, 45.0, 45.0]
    )


def test_jitter_only_lengthens() -> None:
    """jittered(d, j) lies in [d, d + j*d)."""
    assert backoff.jittered(2.0, 0.5, rand=lambda: 0.0) == 2.0
    assert backoff.jittered(2.0, 0.5, rand=lambda: 0.99) == pytest.approx(2.99)
    assert backoff.jittered(2.0, 0.0, rand=lambda: 0.99) == 2.0


def test_manager_resets_after_the_interval_since_last_start() -> None:
    """The sequence restarts once more than 2 minutes passed since it last (re)started."""
    fake = clock.FakeClock()
    mgr = backoff.reflector_backoff(fake, rand=lambda: 0.0)
    assert [mgr.step() for _ in range(3)] == pytest.approx([0.8, 1.6, 3.2])
    fake.step(120.0)
    assert mgr.step() == pytest.approx(6.4)  # Exactly 2 min is not "more than".
    fake.step(0.1)
    assert mgr.step() == pytest.approx(0.8)
    mgr.reset()
    mgr.step()
    assert mgr.step() == pytest.approx(1.6)
