"""The resource metrics store: what a node report must hold, how it joins pods, when it goes stale."""

from __future__ import annotations

import orjson
import pytest

from kplane._util.clock import FakeClock
from kplane.api import errors
from kplane.server.endpoints import resourcemetrics
from kplane.server.storage.memory import MemoryStorage

NOW = "2026-01-01T00:00:00Z"


def _pod(name: str, uid: str = "u1", phase: str = "Running", node: str = "n1") -> dict[str, object]:
    return {
        "metadata": {"name": name, "namespace": "default", "uid": uid, "labels": {"app": "x"}},
        "spec": {"nodeName": node},
        "status": {"phase": phase},
    }


def _report(*pods: dict[str, object]) -> bytes:
    return orjson.dumps(
        {"timestamp": NOW, "window": "15s", "usage": {"cpu": "1", "memory": "1Gi"}, "pods": pods}
    )


async def _store() -> tuple[resourcemetrics.UsageStore, FakeClock]:
    storage = MemoryStorage()
    await storage.create("/registry/core/nodes/n1", {"metadata": {"name": "n1"}})
    clock = FakeClock()
    return resourcemetrics.UsageStore(storage, clock, stale_after=60), clock


async def test_report_joins_running_pods_of_the_same_uid() -> None:
    """A reported pod is served while Running under the reported UID; usage is canonicalized."""
    store, _ = await _store()
    usage = {"cpu": "0.25", "memory": "67108864"}
    entry = {"namespace": "default", "name": "p", "uid": "u1", "containers": [{"name": "c", "usage": usage}]}
    await store.put("n1", _report(entry))
    found = store.pod_metrics(_pod("p"), NOW)
    assert found is not None
    assert found["containers"] == [{"name": "c", "usage": {"cpu": "250m", "memory": "64Mi"}}]
    assert found["metadata"] == {
        "name": "p",
        "namespace": "default",
        "creationTimestamp": NOW,
        "labels": {"app": "x"},
    }
    assert store.pod_metrics(_pod("p", uid="u2"), NOW) is None  # a new pod of the same name
    assert store.pod_metrics(_pod("p", phase="Pending"), NOW) is None
    node = store.node_metrics({"metadata": {"name": "n1"}}, NOW)
    assert node is not None and node["usage"] == {"cpu": "1", "memory": "1Gi"}


async def test_reports_go_stale() -> None:
    """A node that stops reporting loses its metrics after ``stale_after``."""
    store, clock = await _store()
    await store.put("n1", _report())
    clock.step(59)
    assert store.node_metrics({"metadata": {"name": "n1"}}, NOW) is not None
    clock.step(2)
    assert store.node_metrics({"metadata": {"name": "n1"}}, NOW) is None


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"[", "the report is not JSON"),
        (b"[]", "must be a JSON object"),
        (orjson.dumps({"timestamp": "yesterday"}), "timestamp must be an RFC 3339 time"),
        (orjson.dumps({"timestamp": NOW, "pods": [{}] * 1001}), "at most 1000"),
        (orjson.dumps({"timestamp": NOW, "usage": {"cpu": "lots"}}), "is not a quantity"),
        (orjson.dumps({"timestamp": NOW, "usage": {"cpu": "-1"}}), "is not a quantity"),
        (orjson.dumps({"timestamp": NOW, "window": "soon"}), "window must be a duration"),
        (
            orjson.dumps({"timestamp": NOW, "pods": [{"namespace": "d", "name": "x" * 300}]}),
            "a name is required",
        ),
    ],
    ids=[
        "not-json",
        "not-object",
        "bad-time",
        "too-many-pods",
        "bad-quantity",
        "negative",
        "bad-window",
        "long-name",
    ],
)
async def test_malformed_reports_are_bad_requests(body: bytes, message: str) -> None:
    """Malformed or oversized reports are refused with 400, never stored."""
    store, _ = await _store()
    with pytest.raises(errors.BadRequest, match=message):
        await store.put("n1", body)
    assert store.node_metrics({"metadata": {"name": "n1"}}, NOW) is None


async def test_unknown_node_is_not_found() -> None:
    """Reports are accepted only for existing Nodes (memory stays bounded by the nodes)."""
    store, _ = await _store()
    with pytest.raises(errors.NotFound):
        await store.put("ghost", _report())
