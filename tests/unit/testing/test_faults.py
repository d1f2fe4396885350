"""Fault plans: each fault happens inside the real server, and a seed replays the same faults."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from kplane.api import errors
from kplane.client import Backoff, WatchEvent, dynamic, rest, retry_on_conflict
from kplane.client.models import core_v1
from kplane.client.options import ListOptions
from kplane.client.watch import EventType
from kplane.informers import SharedInformerFactory
from kplane.testing import (
    AutoAdvancingClock,
    Conflicts,
    ControlPlane,
    DropWatches,
    ExpireOnResume,
    FaultPlan,
    Match,
    SlowWrites,
    eventually,
    faults,
)

CONFIGMAPS = Match(verbs=("update",), resources=("configmaps",))


async def _updates(seed: int, rounds: int = 20) -> tuple[list[str], int]:
    """Update one ConfigMap ``rounds`` times under a 50% conflict storm; the outcomes and injections."""
    plan = FaultPlan(Conflicts(probability=0.5, match=CONFIGMAPS), seed=seed)
    outcomes: list[str] = []
    async with ControlPlane(faults=plan) as cp:
        cms = cp.client.resource("configmaps", namespace="default")
        cm = await cms.create({"metadata": {"name": "c"}, "data": {"n": "0"}})
        for i in range(rounds):
            cm["data"]["n"] = str(i)
            try:
                cm = await cms.update(cm)
                outcomes.append("ok")
            except errors.Conflict as e:
                outcomes.append("conflict")
                # Upstream: apimachinery errors.NewConflict with registry's OptimisticLockErrorMsg.
                assert str(e) == (
                    'Operation cannot be fulfilled on configmaps "c": the object has been modified; '
                    "please apply your changes to the latest version and try again"
                )
    return outcomes, len(plan.log)


async def test_conflict_storm_is_replayed_by_its_seed() -> None:
    """The same seed injects the same conflicts at the same requests; another seed differs."""
    first, injected = await _updates(seed=7)
    again, _ = await _updates(seed=7)
    other, _ = await _updates(seed=8)
    assert first == again
    assert first != other
    assert injected == first.count("conflict") > 0
    assert "ok" in first


async def test_retry_on_conflict_survives_a_storm() -> None:
    """A read-modify-write inside retry_on_conflict lands despite injected conflicts."""
    plan = FaultPlan(Conflicts(probability=0.7, match=CONFIGMAPS), seed=3)
    async with ControlPlane(faults=plan) as cp:
        cms = cp.client.resource("configmaps", namespace="default")
        await cms.create({"metadata": {"name": "c"}, "data": {"n": "0"}})
        for i in range(5):

            async def bump(i: int = i) -> None:
                cm = await cms.get("c")
                cm["data"]["n"] = str(i + 1)
                await cms.update(cm)

            await retry_on_conflict(bump, backoff=Backoff(duration=0.001, steps=50))
        assert (await cms.get("c"))["data"] == {"n": "5"}
        assert plan.count(Conflicts) > 0


async def test_paused_plan_injects_nothing() -> None:
    """Inside ``paused()`` requests pass untouched and consume no draw."""
    plan = FaultPlan(Conflicts(probability=1.0, match=CONFIGMAPS), seed=1)
    async with ControlPlane(faults=plan) as cp:
        cms = cp.client.resource("configmaps", namespace="default")
        cm = await cms.create({"metadata": {"name": "c"}})
        with plan.paused():
            cm = await cms.update(cm)
        assert plan.log == []
        with pytest.raises(errors.Conflict):
            await cms.update(cm)
        assert [i.detail for i in plan.log] == ["409 Conflict"]


async def test_dropped_watch_is_cut_after_the_planned_lines() -> None:
    """A watch is cut (connection closed) after the number of lines the plan drew."""
    plan = FaultPlan(DropWatches(after_lines=(2, 2), match=Match(verbs=("watch",))), seed=0)
    async with ControlPlane(faults=plan) as cp:
        cms = cp.client.resource("configmaps", namespace="default")
        for n in range(5):
            await cms.create({"metadata": {"name": f"c{n}"}})
        seen: list[Any] = []
        with pytest.raises((aiohttp.ClientError, ConnectionError)):
            async for event in cms.watch(ListOptions(resource_version="0", allow_bookmarks=False)):
                seen.append(event)
        assert len(seen) == 2
        assert [i.detail for i in plan.log] == ["cut after 2 lines"]


async def test_watch_resumed_from_a_resource_version_expires() -> None:
    """A resumed watch gets upstream's in-stream ERROR 410 (raised as Gone); a watch from "0" is untouched."""
    plan = FaultPlan(ExpireOnResume(), seed=0)
    async with ControlPlane(faults=plan) as cp:
        cms = cp.client.resource("configmaps", namespace="default")
        cm = await cms.create({"metadata": {"name": "c"}})
        rv = cm["metadata"]["resourceVersion"]
        with pytest.raises(errors.Gone) as gone:
            async for _ in cms.watch(ListOptions(resource_version=rv, timeout_seconds=1)):
                pass
        assert (gone.value.code, gone.value.reason) == (410, "Expired")
        assert str(gone.value) == f"too old resource version: {rv} ({int(rv) + 1})"
        async for event in cms.watch(ListOptions(resource_version="0", timeout_seconds=1)):
            assert event.type == "ADDED"
            break


async def test_slow_writes_are_delayed_and_recorded() -> None:
    """Writes wait the drawn delay; reads are not touched."""
    plan = FaultPlan(SlowWrites(delay=(0.01, 0.02)), seed=0)
    async with ControlPlane(faults=plan) as cp:
        cms = cp.client.resource("configmaps", namespace="default")
        await cms.create({"metadata": {"name": "c"}})
        await cms.get("c")
        assert [(i.rule, i.verb) for i in plan.log] == [("SlowWrites", "create")]
        assert plan.log[0].detail.startswith("delayed 0.01")
    assert "seed=0" in str(plan)


async def test_dynamic_and_typed_watches_share_one_event_type_and_error_rule() -> None:
    """Both clients yield kplane.client.WatchEvent and raise Gone for an in-stream ERROR 410."""
    plan = FaultPlan(ExpireOnResume(), seed=0)
    async with ControlPlane(faults=plan) as cp:
        dyn = cp.client.resource("configmaps", namespace="default")
        typ = cp.client.resource(core_v1.ConfigMap, namespace="default")
        rv = (await dyn.create({"metadata": {"name": "c"}}))["metadata"]["resourceVersion"]
        for client in (dyn, typ):
            async for event in client.watch(ListOptions(resource_version="0", timeout_seconds=1)):
                assert isinstance(event, WatchEvent) and event.type is EventType.ADDED
                assert event.resource_version == rv
                break
            with pytest.raises(errors.Gone, match="too old resource version"):
                async for _ in client.watch(ListOptions(resource_version=rv, timeout_seconds=1)):
                    pass


async def test_an_informer_converges_under_cut_watches_and_expiry(kplane_clock: AutoAdvancingClock) -> None:
    """Watches cut every few lines and resumes answered 410: the informer's cache still equals the server."""
    plan = FaultPlan(
        ExpireOnResume(probability=0.5),  # first: a watch that is not expired may still be cut
        DropWatches(after_lines=(1, 4)),
        Conflicts(probability=0.3, match=CONFIGMAPS),
        seed=5,
    )
    async with (
        ControlPlane(faults=plan) as cp,
        rest.RESTClient(cp.config, _clock=kplane_clock) as rc,
    ):
        dc = dynamic.DynamicClient(rc, cp.client.mapper)
        factory = SharedInformerFactory(dc, clock=kplane_clock)
        inf = await factory.informer("configmaps")
        factory.start()
        cms = dc.resource("configmaps", "default")
        for i in range(20):
            await cms.create({"metadata": {"name": f"c{i}"}, "data": {"v": "0"}})
        for i in range(0, 20, 2):

            async def bump(i: int = i) -> None:
                cm = await cms.get(f"c{i}")
                cm["data"]["v"] = "1"
                await cms.update(cm)

            await retry_on_conflict(bump, backoff=Backoff(duration=0.001, steps=50))
        for i in range(0, 20, 5):
            await cms.delete(f"c{i}")
        items, _ = await cms.list_all()
        server = {o["metadata"]["name"]: o["metadata"]["resourceVersion"] for o in items}

        def cached() -> dict[str, str]:
            return {o["metadata"]["name"]: o["metadata"]["resourceVersion"] for o in inf.store.list()}

        await eventually(lambda: cached() == server, timeout=20)
        await factory.shutdown()
    assert plan.count(DropWatches) > 0 and plan.count(ExpireOnResume) > 0 and plan.count(Conflicts) > 0


def test_a_chunk_of_several_events_counts_each() -> None:
    """The server writes a burst of watch events as one chunk: JSON lines and protobuf frames in it
    are counted one by one."""
    frame = (5).to_bytes(4, "big") + b"abcde"
    assert faults._events(b'{"a":1}\n{"b":2}\n') == [b'{"a":1}\n', b'{"b":2}\n']
    assert faults._events(frame + frame) == [frame, frame]
    assert faults._events(frame) == [frame]
