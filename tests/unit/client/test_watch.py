"""RetryWatcher: resumes across stream ends without loss or duplicates, backs off, raises Gone."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from kplane._util import backoff as backoff_mod
from kplane._util import clock as clock_mod
from kplane.api import errors
from kplane.client import watch as watch_mod
from tests.e2e import conftest as e2e
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

    async def list(self, **kw: Any) -> dict[str, Any]:
        return await self.inner.list(**kw)

    def watch(self, **kw: Any) -> AsyncIterator[dict[str, Any]]:
        if self.failures > 0:
            self.failures -= 1
            raise ConnectionRefusedError("down")
        return self.inner.watch(**kw)


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
    await it.aclose()  # type: ignore[attr-defined]


async def test_very_short_empty_watch_counts_as_an_error() -> None:
    """A stream that ends at once with no event is followed by a backoff, not a hot loop."""

    class Empty:
        calls = 0

        async def list(self, **kw: Any) -> dict[str, Any]:
            return {}

        async def watch(self, **kw: Any) -> AsyncIterator[dict[str, Any]]:
            Empty.calls += 1
            return
            yield {}

    clock = RecordingClock()
    w = watch_mod.RetryWatcher(Empty(), "5", clock=clock, _rand=lambda: 0.0)
    task = asyncio.ensure_future(anext(aiter(w)))
    await _fake.until(lambda: len(clock.sleeps) >= 2, clock)
    task.cancel()
    assert clock.sleeps[:2] == pytest.approx([0.8, 1.6]) and Empty.calls == 2


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[e2e.Server]:
    yield from _live.module_server(tmp_path_factory, "--history-window", "50")


class ShortWatches:
    """Forces 1 s server timeouts so the watcher has to reconnect often."""

    def __init__(self, inner: watch_mod.ListWatch) -> None:
        self.inner = inner
        self.opened: list[str | None] = []

    async def list(self, **kw: Any) -> dict[str, Any]:
        return await self.inner.list(**kw)

    def watch(self, **kw: Any) -> AsyncIterator[dict[str, Any]]:
        self.opened.append(kw.get("resource_version"))
        return self.inner.watch(**{**kw, "timeout_seconds": 1})


async def test_real_server_reconnects_lose_and_repeat_nothing(srv: e2e.Server) -> None:
    """Across server-side timeouts every write is seen exactly once, in order."""
    async with _live.clients(srv) as dc:
        await _live.make_namespace(dc, "rw")
        cms = dc.resource(_live.CONFIGMAPS, "rw")
        start = (await cms.list())["metadata"]["resourceVersion"]
        lw = ShortWatches(watch_mod.ListWatch(cms))
        seen: list[tuple[str, str]] = []

        async def consume() -> None:
            async for ev in watch_mod.RetryWatcher(lw, start):
                seen.append((ev.type.value, ev.object["metadata"]["name"]))

        task = asyncio.get_running_loop().create_task(consume())
        expected = []
        for i in range(12):
            await cms.create({"metadata": {"name": f"w-{i}"}})
            expected.append(("ADDED", f"w-{i}"))
            await asyncio.sleep(0.2)
        await _fake.until(lambda: len(seen) >= 12)
        task.cancel()
        assert seen == expected and len(lw.opened) >= 2


async def test_real_server_gone_is_raised(srv: e2e.Server) -> None:
    """Resuming from a version older than the history window raises errors.Gone."""
    async with _live.clients(srv) as dc:
        await _live.make_namespace(dc, "rg")
        cms = dc.resource(_live.CONFIGMAPS, "rg")
        for i in range(60):
            await cms.create({"metadata": {"name": f"g-{i}"}})
        w = watch_mod.RetryWatcher(watch_mod.ListWatch(cms), "2", backoff=backoff_mod.reflector_backoff())
        with pytest.raises(errors.Gone):
            async with asyncio.timeout(5):
                async for _ in w:
                    pass
