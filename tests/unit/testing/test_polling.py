"""eventually/consistently: polling semantics and failure messages, on a fake clock (no sleeping)."""

from __future__ import annotations

import asyncio

import pytest

from kplane._util.clock import FakeClock
from kplane.testing import consistently, eventually, eventually_blocking


async def _drive(clock: FakeClock, coro: asyncio.Future[object] | asyncio.Task[object]) -> None:
    """Step ``clock`` whenever something sleeps on it, until ``coro`` is done."""
    while not coro.done():
        await asyncio.sleep(0)
        if clock.has_waiters():
            clock.step(0.01)


async def test_returns_the_first_truthy_result_of_an_async_condition() -> None:
    """The condition is polled until it returns a truthy value, which eventually returns."""
    clock = FakeClock()
    calls: list[int] = []

    async def ready() -> int:
        calls.append(1)
        return len(calls) if len(calls) >= 3 else 0

    task = asyncio.ensure_future(eventually(ready, clock=clock))
    await _drive(clock, task)
    assert task.result() == 3
    assert clock.monotonic() == pytest.approx(0.02)


async def test_assertion_errors_are_retried_and_reported() -> None:
    """A failing assertion is retried; at the deadline its message is in the failure, chained."""
    clock = FakeClock()

    def check() -> bool:
        assert 1 + 1 == 3, "arithmetic"
        return True

    task = asyncio.ensure_future(eventually(check, timeout=0.05, interval=0.01, clock=clock, message="sum"))
    await _drive(clock, task)
    with pytest.raises(AssertionError) as info:
        task.result()
    assert str(info.value).startswith("sum: test_assertion_errors_are_retried_and_reported.<locals>.check()")
    assert "did not hold within 0.05s (6 attempts); last error: AssertionError: arithmetic" in str(info.value)
    assert isinstance(info.value.__cause__, AssertionError)


async def test_falsy_result_is_reported() -> None:
    """Without an exception, the last falsy result is shown."""
    clock = FakeClock()
    task = asyncio.ensure_future(eventually(lambda: [], timeout=0.02, clock=clock))
    await _drive(clock, task)
    expected = r"lambda at test_polling.py:\d+ did not hold within 0.02s \(3 attempts\); last result: \[\]"
    with pytest.raises(AssertionError, match=expected):
        task.result()


async def test_other_exceptions_propagate_at_once() -> None:
    """An exception outside ``retry_on`` ends the wait immediately."""

    def boom() -> bool:
        raise KeyError("x")

    with pytest.raises(KeyError):
        await eventually(boom, retry_on=(AssertionError,))


async def test_consistently_fails_when_the_condition_stops_holding() -> None:
    """consistently reports the attempt at which the condition broke."""
    clock = FakeClock()
    values = iter([True, True, False])
    task = asyncio.ensure_future(consistently(lambda: next(values), duration=1.0, clock=clock))
    await _drive(clock, task)
    expected = r"lambda at test_polling.py:\d+ stopped holding at attempt 3: it returned False"
    with pytest.raises(AssertionError, match=expected):
        task.result()


async def test_consistently_passes_for_the_whole_duration() -> None:
    """A condition that always holds passes after ``duration``."""
    clock = FakeClock()
    task = asyncio.ensure_future(consistently(lambda: True, duration=0.1, clock=clock))
    await _drive(clock, task)
    task.result()
    assert 0.1 <= clock.monotonic() < 0.12


def test_blocking_variant_for_sync_tests() -> None:
    """eventually_blocking polls a plain function from a synchronous test."""
    seen: list[int] = []
    assert eventually_blocking(lambda: seen.append(1) or len(seen) >= 2, interval=0.001) is True
