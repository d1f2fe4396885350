"""retry_on_conflict and on_error: client-go's attempt counts and sleeps, and real conflicts resolved."""

from __future__ import annotations

import asyncio

import pytest

from kplane._util import backoff as backoff_mod
from kplane._util import clock as clock_mod
from kplane.api import errors
from kplane.client import dynamic, retry, typed


class RecordingClock(clock_mod.RealClock):
    def __init__(self) -> None:
        self.slept: list[float] = []

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        await asyncio.sleep(0)


async def test_conflict_exhausts_default_retry_and_reraises_last() -> None:
    """DefaultRetry makes 5 attempts with 4 sleeps of 10 to 11 ms and re-raises the last Conflict."""
    clock = RecordingClock()
    calls = 0

    async def always_conflict() -> None:
        nonlocal calls
        calls += 1
        raise errors.Conflict(f"attempt {calls}")

    with pytest.raises(errors.Conflict, match="attempt 5"):
        await retry.retry_on_conflict(always_conflict, clock=clock)
    assert calls == 5
    assert len(clock.slept) == 4 and all(0.010 <= s < 0.011 for s in clock.slept)


async def test_default_backoff_delays_grow() -> None:
    """DefaultBackoff sleeps about 10, 50 and 250 ms between its 4 attempts."""
    clock = RecordingClock()

    async def fail() -> None:
        raise errors.Conflict("x")

    with pytest.raises(errors.Conflict):
        await retry.on_error(
            fail, retriable=retry.is_conflict, backoff=retry.DEFAULT_BACKOFF, clock=clock, _rand=lambda: 0.0
        )
    assert clock.slept == pytest.approx([0.010, 0.050, 0.250])


async def test_non_retriable_raises_at_once() -> None:
    """An error the predicate rejects is raised on the first attempt without sleeping."""
    clock = RecordingClock()
    with pytest.raises(errors.NotFound):
        await retry.retry_on_conflict(_raise_not_found, clock=clock)
    assert clock.slept == []


async def _raise_not_found() -> None:
    raise errors.NotFound("nope")


async def test_success_after_retries_returns_value() -> None:
    """The first successful attempt's value is returned."""
    attempts = iter([errors.Conflict("a"), errors.Conflict("b"), None])

    async def flaky() -> str:
        err = next(attempts)
        if err is not None:
            raise err
        return "done"

    out = await retry.on_error(
        flaky,
        retriable=retry.is_conflict,
        backoff=backoff_mod.Backoff(duration=0.001, steps=3),
        clock=RecordingClock(),
    )
    assert out == "done"


async def test_concurrent_writers_all_land(client: typed.Client, namespace: str) -> None:
    """Eight concurrent read-modify-write increments through retry_on_conflict all take effect."""
    cms = client.resource(dynamic.Resource("", "v1", "configmaps", "ConfigMap", True), namespace=namespace)
    await cms.create({"metadata": {"name": "counter"}, "data": {"n": "0"}})

    async def bump() -> None:
        async def once() -> dict[str, object]:
            cm = await cms.get("counter")
            cm["data"]["n"] = str(int(cm["data"]["n"]) + 1)
            return await cms.update(cm)

        await retry.retry_on_conflict(once, backoff=backoff_mod.Backoff(duration=0.001, jitter=1.0, steps=50))

    await asyncio.gather(*(bump() for _ in range(8)))
    assert (await cms.get("counter"))["data"]["n"] == "8"
