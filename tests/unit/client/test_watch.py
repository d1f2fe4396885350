"""RetryWatcher: resumes across stream ends without loss or duplicates, backs off, raises Gone."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from kplane._util import backoff as backoff_mod
from kplane._util import clock as clock_mod
from kplane.api import errors
from kplane.client import dynamic, rest
from kplane.client import watch as watch_mod
from kplane.client.options import ListOptions
from kplane.testing import AutoAdvancingClock, ControlPlane, DropWatches, FaultPlan, eventually
from tests.unit.informers import _fake, _live


def test_random_watch_timeout_spans_five_to_ten_minutes() -> None:
    """Per-request timeouts are drawn from [300, 600] seconds."""
    assert watch_mod.random_watch_timeout(lambda: 0.0) == 300
    assert watch_mod.random_watch_timeout(lambda: 0.999) == 599


def test_error_event_raises_its_typed_error() -> None:
    """An ERROR event with a 410 Status raises errors.Gone; other events decode to WatchEvent."""
    with pytest.raises(errors.Gone):
        watch_mod.decode({"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired"}})
    ev = watch_mod.decode({"type": "ADDED", "object": {"metadata": {"resourceVersion": "7"}}})
    assert ev.type is watch_mod.EventType.ADDED and ev.resource_version == "7"


class Failing:
    """A ListerWatcher whose watches fail ``failures`` times, then serve ``inner``."""

    def __init__(self, inner: _fake.FakeListerWatcher, failures: int) -> None:
        self.inner = inner
        self.failures = failures

    async def list(self, options: ListOptions) -> dict[str, Any]:
        return await self.inner.list(options)

    def watch(self, options: ListOptions) -> AsyncIterator[watch_mod.WatchEvent[dict[str, Any]]]:
        if self.failures > 0:
            self.failures -= 1
            raise ConnectionRefusedError("down")
        return self.inner.watch(options)


class RecordingClock(clock_mod.FakeClock):
    def __init__(self) -> None:
        super().__init__()
        self.sleeps: list[float] = []

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        await super().sleep(seconds)


async def test_errors_back_off_with_the_reflector_numbers() -> None:
    """Failed watches wait 0.8, 1.6, 3.2 s (jitter 0 here) before reopening at the same version."""
    lw = _fake.FakeListerWatcher()
    lw.upsert("a")
    clock = RecordingClock()
    w = watch_mod.RetryWatcher(Failing(lw, 3), "1", clock=clock, _rand=lambda: 0.0)
    it = aiter(w)
    first = asyncio.ensure_future(anext(it))
    await _fake.until(first.done, clock, step=0.5)
    assert first.result().object["metadata"]["name"] == "a"
    assert clock.sleeps == pytest.approx([0.8, 1.6, 3.2])
    assert w.failing_since is None  # an event came through: not failing any more
    await it.aclose()  # type: ignore[attr-defined]


async def test_failing_since_is_the_first_failure_of_the_run() -> None:
    """``failing_since`` is when the current run of failed watch requests began (readiness reads it)."""
    lw = _fake.FakeListerWatcher()
    lw.upsert("a")
    clock = RecordingClock()
    w = watch_mod.RetryWatcher(Failing(lw, 3), "1", clock=clock, _rand=lambda: 0.0)
    assert w.failing_since is None
    it = aiter(w)
    first = asyncio.ensure_future(anext(it))
    await _fake.until(lambda: len(clock.sleeps) >= 1, clock)
    began = w.failing_since
    assert began is not None
    await _fake.until(lambda: len(clock.sleeps) >= 3, clock)
    assert w.failing_since == began and clock.monotonic() >= began + 2.4  # still the first failure's time
    await _fake.until(first.done, clock, step=0.5)
    assert w.failing_since is None
    await it.aclose()  # type: ignore[attr-defined]


async def test_very_short_empty_watch_counts_as_an_error() -> None:
    """A stream that ends at once with no event is followed by a backoff, not a hot loop."""

    class Empty:
        calls = 0

        async def list(self, options: ListOptions) -> dict[str, Any]:
            return {}

        async def watch(self, options: ListOptions) -> AsyncIterator[watch_mod.WatchEvent[dict[str, Any]]]:
            Empty.calls += 1
            return
            yield {}

    clock = RecordingClock()
    w = watch_mod.RetryWatcher(Empty(), "5", clock=clock, _rand=lambda: 0.0)
    task = asyncio.ensure_future(anext(aiter(w)))
    await _fake.until(lambda: len(clock.sleeps) >= 2, clock)
    task.cancel()
    assert clock.sleeps[:2] == pytest.approx([0.8, 1.6]) and Empty.calls == 2


async def test_real_server_reconnects_lose_and_repeat_nothing(kplane_clock: AutoAdvancingClock) -> None:
    """Across watches cut by the server every write is seen exactly once, in order."""
    cut = FaultPlan(DropWatches(after_lines=(1, 3)), seed=11)  # resume again and again
    async with ControlPlane(faults=cut) as cp, rest.RESTClient(cp.config, _clock=kplane_clock) as rc:
        cms = dynamic.DynamicClient(rc).resource(_live.CONFIGMAPS, "default")
        start = (await cms.list())["metadata"]["resourceVersion"]
        lw = watch_mod.ListWatch(cms)
        seen: list[tuple[str, str]] = []

        async def consume() -> None:
            async for ev in watch_mod.RetryWatcher(lw, start, clock=kplane_clock):
                seen.append((ev.type.value, ev.object["metadata"]["name"]))

        task = asyncio.ensure_future(consume())
        expected = []
        for i in range(12):
            await cms.create({"metadata": {"name": f"w-{i}"}})
            expected.append(("ADDED", f"w-{i}"))
        await eventually(lambda: len(seen) >= 12)
        task.cancel()
        assert seen == expected
        assert cut.count(DropWatches) >= 4  # 12 events, at most 3 per watch


async def test_real_server_gone_is_raised() -> None:
    """Resuming from a version older than the history window raises errors.Gone."""
    async with ControlPlane(history_window=50) as cp, _live.clients(cp) as dc:
        cms = dc.resource(_live.CONFIGMAPS, "default")
        for i in range(60):
            await cms.create({"metadata": {"name": f"g-{i}"}})
        w = watch_mod.RetryWatcher(watch_mod.ListWatch(cms), "2", backoff=backoff_mod.reflector_backoff())
        with pytest.raises(errors.Gone):
            async with asyncio.timeout(5):
                async for _ in w:
                    pass
