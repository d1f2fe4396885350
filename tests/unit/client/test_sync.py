"""The sync facade over the async client, against a real kplane server."""

from __future__ import annotations

import threading

import pytest

from kplane.api import errors
from kplane.client import Config, sync
from kplane.client.models import core_v1, meta_v1
from kplane.client.options import ListOptions


def test_sync_verbs_errors_and_watch(config: Config, name: str) -> None:
    """Blocking calls return what the async API returns, raise its errors, and watch iterates."""
    with sync.Client(config) as c:
        c.resource("namespaces").create({"metadata": {"name": name}})
        cms = c.resource("configmaps", namespace=name)
        created = cms.create({"metadata": {"name": "s"}, "data": {"a": "1"}})
        assert created["data"] == {"a": "1"}
        assert cms.get("s")["metadata"]["name"] == "s"
        with pytest.raises(errors.NotFound):
            cms.get("absent")
        items, _rv = cms.list_all()
        assert "s" in [i["metadata"]["name"] for i in items]
        events = cms.watch(ListOptions(resource_version="0", timeout_seconds=1))
        first = next(iter(events))
        assert first.type in {"ADDED", "BOOKMARK"}
        events.close()
        typed_cms = c.resource(core_v1.ConfigMap, namespace=name)
        got = typed_cms.create(core_v1.ConfigMap(metadata=meta_v1.ObjectMeta(name="t")))
        assert isinstance(got, core_v1.ConfigMap)
        assert c.mapper.resolve("cm").plural == "configmaps"
    assert not c._runner.loop.is_running() and c._runner.loop.is_closed()


def test_sync_refuses_calls_from_its_own_loop(config: Config) -> None:
    """Calling the facade from its own loop thread raises instead of deadlocking."""
    with sync.Client(config) as c:
        errors_seen: list[BaseException] = []

        def inside() -> None:
            try:
                c._runner.run(c._target.close())
            except RuntimeError as e:
                errors_seen.append(e)

        done = threading.Event()
        c._runner.loop.call_soon_threadsafe(lambda: (inside(), done.set()))
        assert done.wait(5)
    assert errors_seen and "own event loop" in str(errors_seen[0])
