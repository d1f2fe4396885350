"""Level-based behaviour of a controller on the in-process control plane (``kplane.testing``)."""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Sequence

import pytest

from examples.webapp import crd
from kplane import runtime, testing
from tests.e2e import runtime_support as rs
from tests.examples.webapp_scenario import webapp


@pytest.fixture
def kplane_crds() -> Sequence[testing.CrdSource]:
    return [crd.MANIFEST]


async def test_every_existing_object_reconciled_once_at_start(kplane: testing.ControlPlane) -> None:
    """Objects that exist before the manager starts are each reconciled exactly once."""
    apps = kplane.client.dynamic.resource(crd.WEBAPPS, "default")
    for i in range(5):
        await apps.create(webapp(f"pre-{i}", "default"))
    assert kplane.config is not None
    manager = rs.new_manager(kplane.config)
    calls: collections.Counter[str] = collections.Counter()

    async def count(req: runtime.Request) -> None:
        calls[req.name] += 1

    await runtime.Builder(manager).for_(crd.WEBAPPS).complete(count)
    async with rs.running(manager):
        await testing.eventually(lambda: len(calls) == 5)
        await testing.consistently(lambda: all(n == 1 for n in calls.values()), duration=0.3)


async def test_generation_changed_ignores_status_and_label_writes(kplane: testing.ControlPlane) -> None:
    """With GenerationChanged, status-only and label writes cause no reconcile; a spec change does."""
    assert kplane.config is not None
    manager = rs.new_manager(kplane.config)
    calls: list[str] = []

    async def count(req: runtime.Request) -> None:
        calls.append(req.name)

    await runtime.Builder(manager).for_(crd.WEBAPPS, predicates=[runtime.GenerationChanged()]).complete(count)
    apps = kplane.client.dynamic.resource(crd.WEBAPPS, "default")
    async with rs.running(manager):
        await apps.create(webapp("g", "default"))
        await testing.eventually(lambda: calls == ["g"])
        for i in range(3):
            await apps.patch("g", {"status": {"observedGeneration": i}}, subresource="status")
        await apps.patch("g", {"metadata": {"labels": {"team": "a"}}})
        await testing.consistently(lambda: calls == ["g"], duration=0.3)
        await apps.patch("g", {"spec": {"replicas": 4}})
        await testing.eventually(lambda: calls == ["g", "g"])


async def test_events_during_reconcile_cause_exactly_one_more(kplane: testing.ControlPlane) -> None:
    """Five spec changes while a reconcile runs lead to exactly one more reconcile, of the latest state."""
    assert kplane.config is not None
    manager = rs.new_manager(kplane.config)
    seen: list[int] = []
    entered, release = asyncio.Event(), asyncio.Event()

    async def slow(req: runtime.Request) -> None:
        app = await manager.client.get(crd.WEBAPPS, req.name, req.namespace)
        seen.append(app["spec"]["replicas"])
        entered.set()
        await release.wait()

    await runtime.Builder(manager).for_(crd.WEBAPPS).complete(slow)
    apps = kplane.client.dynamic.resource(crd.WEBAPPS, "default")
    async with rs.running(manager):
        await apps.create(webapp("busy", "default", replicas=0))
        await entered.wait()
        for replicas in range(1, 6):
            await apps.patch("busy", {"spec": {"replicas": replicas}})
        informer = await manager.cache.informer(crd.WEBAPPS)

        def cache_current() -> bool:
            return bool(informer.store.get_by_key("default/busy")["spec"]["replicas"] == 5)

        await testing.eventually(cache_current)
        await asyncio.sleep(0.05)  # let the handler queue the last events
        release.set()
        await testing.eventually(lambda: len(seen) == 2)
        await testing.consistently(lambda: len(seen) == 2, duration=0.3)
    assert seen == [0, 5]
