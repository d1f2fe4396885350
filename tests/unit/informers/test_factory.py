"""SharedInformerFactory: one informer per resource whatever the ref, start/sync/shutdown."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from kplane.client import dynamic
from kplane.informers import factory as factory_mod
from kplane.informers import informer as informer_mod
from kplane.testing import ControlPlane
from tests.unit.informers import _fake, _live


async def test_factory_shares_informers_and_strips_managed_fields(tmp_path: Path) -> None:
    """Two requests for the same resource share one informer; cached objects lack managedFields."""
    async with ControlPlane() as srv, _live.clients(srv) as dc:
        await _live.make_namespace(dc, "fac")
        cms = dc.resource(_live.CONFIGMAPS, "fac")
        await cms.create({"metadata": {"name": "one"}, "data": {"k": "v"}})
        factory = factory_mod.SharedInformerFactory(dc, factory_mod.FactoryOptions(namespace="fac"))
        first = await factory.informer(_live.CONFIGMAPS)
        again = await factory.informer(dynamic.Resource("", "v1", "configmaps", "ConfigMap", True))
        other = await factory.informer(_live.LEASES)
        assert first is again and first is not other
        factory.start()
        async with asyncio.timeout(10):
            await factory.wait_for_cache_sync()
        obj = (await factory.lister(_live.CONFIGMAPS)).namespaced("fac").get("one")
        assert obj["data"] == {"k": "v"} and "managedFields" not in obj["metadata"]
        await cms.create({"metadata": {"name": "two"}})
        await _fake.until(lambda: len(first.store) == 2)
        await factory.shutdown()
        with pytest.raises(informer_mod.InformerStateError):
            await factory.informer(_live.EVENTS)
