"""The manager's client and the create-or-update helpers against a real ``kplane serve``."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from kplane import runtime
from kplane.client import dynamic
from kplane.client.models import core_v1
from tests.e2e import conftest as e2e
from tests.e2e import runtime_support as rs

CONFIGMAPS = dynamic.Resource("", "v1", "configmaps", "ConfigMap", namespaced=True)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[e2e.Server]:
    srv = e2e.start_server(tmp_path_factory.mktemp("kplane"), storage="memory")
    yield srv
    srv.stop()


def _cm(ns: str, **data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "cfg", "namespace": ns},
        "data": data,
    }


async def test_create_or_update_results(server: e2e.Server) -> None:
    """created, then unchanged when the mutation changes nothing, then updated."""
    manager = rs.new_manager(server)
    try:
        ns = f"c-{uuid.uuid4().hex[:6]}"
        await manager.api.dynamic.resource("namespaces").create({"metadata": {"name": ns}})
        obj = _cm(ns)

        def set_a(o: dict[str, Any]) -> None:
            o["data"] = {"a": "1"}

        assert await runtime.create_or_update(manager.client, obj, set_a) == runtime.OperationResult.CREATED
        assert obj["metadata"]["uid"]

        async def cached() -> None:
            assert (await manager.client.get(CONFIGMAPS, "cfg", ns))["data"] == {"a": "1"}

        await rs.eventually(cached)
        obj = _cm(ns)
        assert await runtime.create_or_update(manager.client, obj, set_a) == runtime.OperationResult.NONE

        def set_b(o: dict[str, Any]) -> None:
            o["data"]["b"] = "2"

        assert await runtime.create_or_update(manager.client, obj, set_b) == runtime.OperationResult.UPDATED
        live = await manager.api.dynamic.resource(CONFIGMAPS, ns).get("cfg")
        assert live["data"] == {"a": "1", "b": "2"}

        def rename(o: dict[str, Any]) -> None:
            o["metadata"]["name"] = "other"

        with pytest.raises(ValueError, match="MutateFn cannot mutate object name"):
            await runtime.create_or_update(manager.client, _cm(ns), rename)

        # create_or_patch: a merge patch removing one key.
        async def cached_b() -> None:
            assert "b" in (await manager.client.get(CONFIGMAPS, "cfg", ns))["data"]

        await rs.eventually(cached_b)

        def drop_a(o: dict[str, Any]) -> None:
            del o["data"]["a"]

        assert (
            await runtime.create_or_patch(manager.client, _cm(ns), drop_a) == runtime.OperationResult.UPDATED
        )
        assert (await manager.api.dynamic.resource(CONFIGMAPS, ns).get("cfg"))["data"] == {"b": "2"}

        # Typed reads: a model class gives model instances.
        async def typed_read() -> None:
            cm = await manager.client.get(core_v1.ConfigMap, "cfg", ns)
            assert isinstance(cm, core_v1.ConfigMap) and cm.data == {"b": "2"}

        await rs.eventually(typed_read)
    finally:
        await manager.cache.stop()
        await manager.api.close()


async def test_cached_reads_end_with_the_cache(server: e2e.Server) -> None:
    """Reads of a synced resource are served from its informer until the cache stops; after
    that a read is refused, as the informer factory refuses it, not answered from stale memory."""
    from kplane.informers import informer as informer_mod

    manager = rs.new_manager(server)
    try:
        ns = f"c-{uuid.uuid4().hex[:6]}"
        await manager.api.dynamic.resource("namespaces").create({"metadata": {"name": ns}})
        await manager.api.dynamic.resource(CONFIGMAPS, ns).create(_cm(ns, a="1"))
        await manager.cache.informer(CONFIGMAPS)
        await manager.cache.start()  # as a running manager's cache

        async def cached() -> None:
            assert (await manager.client.get(CONFIGMAPS, "cfg", ns))["data"] == {"a": "1"}

        await rs.eventually(cached)
        first = await manager.client.get(CONFIGMAPS, "cfg", ns)
        first["data"]["a"] = "changed"  # a deep copy: the cache keeps its own
        assert (await manager.client.get(CONFIGMAPS, "cfg", ns))["data"] == {"a": "1"}
        await manager.cache.stop()
        with pytest.raises(informer_mod.InformerStateError, match="shut down"):
            await manager.client.get(CONFIGMAPS, "cfg", ns)
    finally:
        await manager.cache.stop()
        await manager.api.close()
