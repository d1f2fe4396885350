"""EventRecorder: Events on a real server, deduplication into count, aggregation and spam filtering."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest

from kplane._util import clock as clock_mod
from kplane.api import errors
from kplane.client import events as events_mod
from kplane.client.models import core_v1, meta_v1
from tests.unit.informers import _live

POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "default", "uid": "u-1"}}


@pytest.fixture(scope="module")
def srv() -> Iterator[_live.Server]:
    yield from _live.module_server()


async def test_identical_events_become_one_event_with_a_count(srv: _live.Server) -> None:
    """Three identical events are one core/v1 Event with count 3; a different reason is a new Event."""
    async with _live.clients(srv) as dc:
        rec = events_mod.EventRecorder(dc.resource(_live.EVENTS), events_mod.EventSource("test-ctl"))
        for _ in range(3):
            rec.event(POD, "Warning", "FailedSync", "could not sync")
        rec.event(POD, "Normal", "Synced", "ok")
        await rec.aclose()
        listed, _ = await dc.resource(_live.EVENTS, "default").list_all()
    by_reason = {e["reason"]: e for e in listed if e["involvedObject"].get("uid") == "u-1"}
    assert by_reason["FailedSync"]["count"] == 3 and by_reason["Synced"]["count"] == 1
    failed = by_reason["FailedSync"]
    assert failed["type"] == "Warning" and failed["source"] == {"component": "test-ctl"}
    assert failed["involvedObject"]["kind"] == "Pod" and failed["metadata"]["name"].startswith("web.")


class FakeEvents:
    """Records creates and patches instead of talking to a server."""

    def __init__(self) -> None:
        self.created: list[dict[str, Any]] = []
        self.patched: list[tuple[str, Any]] = []

    async def create(self, obj: dict[str, Any], *, namespace: str | None = None) -> dict[str, Any]:
        self.created.append(obj)
        return obj

    async def patch(
        self, name: str, patch: Any, *, patch_type: str = "merge", namespace: str | None = None
    ) -> Any:
        self.patched.append((name, patch))
        return {}


async def test_similar_events_are_combined_after_ten() -> None:
    """From the 10th distinct message with the same reason on, events fold into one combined Event."""
    fake = FakeEvents()
    rec = events_mod.EventRecorder(fake, events_mod.EventSource("c"), clock=clock_mod.FakeClock())
    for i in range(12):
        rec.event(POD, "Normal", "Scaled", f"scaled to {i}")
    await rec.aclose()
    assert len(fake.created) == 10
    assert fake.created[-1]["message"] == events_mod.COMBINED_PREFIX + "scaled to 9"
    assert [p[1]["count"] for p in fake.patched] == [2, 3]


async def test_spam_filter_allows_a_burst_of_25_per_object() -> None:
    """More than 25 events about one object in a burst are dropped; time refills the bucket."""
    fake = FakeEvents()
    clock = clock_mod.FakeClock()
    rec = events_mod.EventRecorder(fake, events_mod.EventSource("c"), clock=clock)
    for i in range(30):
        rec.event(POD, "Normal", f"R{i}", "m")
    await rec.flush()
    assert len(fake.created) == 25
    clock.step(300.0)
    rec.event(POD, "Normal", "Later", "m")
    await rec.aclose()
    assert len(fake.created) == 26


def test_object_reference_keeps_identity_fields() -> None:
    """object_reference keeps identity fields only."""
    ref = events_mod.object_reference(POD)
    assert ref == {"kind": "Pod", "apiVersion": "v1", "namespace": "default", "name": "web", "uid": "u-1"}


def test_object_reference_to_a_model() -> None:
    """A typed model is referred to as its JSON form, kind and apiVersion from its class when unset."""
    pod = core_v1.Pod(metadata=meta_v1.ObjectMeta(name="web", namespace="default", uid="u-1"))
    ref = events_mod.object_reference(pod)
    assert ref == {"kind": "Pod", "apiVersion": "v1", "namespace": "default", "name": "web", "uid": "u-1"}


class RefusingEvents(FakeEvents):
    """Refuses every create with ``error``."""

    def __init__(self, error: Exception) -> None:
        super().__init__()
        self.error = error

    async def create(self, obj: dict[str, Any], *, namespace: str | None = None) -> dict[str, Any]:
        raise self.error


@pytest.mark.parametrize(
    ("error", "level"),
    [
        pytest.param(
            # namespace_lifecycle's refusal of a create in a namespace being deleted
            errors.Forbidden(
                'events "web.1" is forbidden: unable to create new content in namespace default'
                " because it is being terminated",
                details={"causes": [{"reason": "NamespaceTerminating", "message": "namespace default"}]},
            ),
            logging.DEBUG,
            id="namespace-terminating",
        ),
        pytest.param(errors.AlreadyExists('events "web.1" already exists'), logging.DEBUG, id="exists"),
        pytest.param(errors.Forbidden("denied"), logging.WARNING, id="other"),
    ],
)
async def test_expected_refusals_are_not_warned_about(
    error: Exception, level: int, caplog: pytest.LogCaptureFixture
) -> None:
    """As client-go's recordEvent, an event refused because its namespace is terminating or it
    already exists is logged quietly (V(5)); other refusals are reported."""
    rec = events_mod.EventRecorder(
        RefusingEvents(error), events_mod.EventSource("c"), clock=clock_mod.FakeClock()
    )
    with caplog.at_level(logging.DEBUG, logger="kplane.client.events"):
        rec.event(POD, "Normal", "Started", "m")
        await rec.aclose()
    assert [r.levelno for r in caplog.records if "could not write event" in r.getMessage()] == [level]
