"""Finishing a CRD deletion while other writers touch its objects: the custom objects, then the CRD
go, and the catalog (what discovery serves) drops the resource, however many races are lost."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from kplane._util import clock
from kplane.api import errors
from kplane.api.builtin import builtin_catalog
from kplane.api.catalog import Catalog, ResourceRecord
from kplane.api.gvk import GroupResource
from kplane.server.registry import admitting, crdconditions, crdfinalizer, crds, deletion, store
from kplane.server.storage import memory

from .racing import RacedDeletes

GROUP = "unit.kplane.dev"
GR = GroupResource(GROUP, "gizmos")
CRD_NAME = f"gizmos.{GROUP}"
CRD_KEY = "/registry/apiextensions.k8s.io/customresourcedefinitions/" + CRD_NAME
OBJECTS = 3


def _crd() -> dict[str, Any]:
    schema = {
        "type": "object",
        "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": CRD_NAME},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo"},
            "versions": [
                {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": schema}}
            ],
        },
    }


class _Server:
    """A registry with the CRD controller on a fake clock, and a way to run it until a condition."""

    def __init__(
        self, storage: memory.MemoryStorage, admission: admitting.Admission = admitting.NONE
    ) -> None:
        self.clock = clock.FakeClock()
        self.catalog: Catalog = builtin_catalog()
        self.registry = store.Registry(
            storage, self.clock, admission=admission, strategies=crds.strategies(self.clock)
        )
        self.controller = crds.CRDController(self.registry, self.catalog, self.clock)
        self.crd_gone = self.when("customresourcedefinitions", lambda _obj, deleted: deleted)
        self.crd_established = self.when(
            "customresourcedefinitions", lambda obj, deleted: not deleted and crds.established(obj)
        )

    def when(self, plural: str, happened: Callable[[dict[str, Any], bool], bool]) -> asyncio.Event:
        """An event set once a write of ``plural`` stored by the registry satisfies ``happened``."""
        event = asyncio.Event()
        group = "apiextensions.k8s.io" if plural == "customresourcedefinitions" else GROUP

        def hook(_record: ResourceRecord, obj: dict[str, Any], deleted: bool) -> None:
            if happened(obj, deleted):
                event.set()

        self.registry.after_write(hook, resource=(group, plural))
        return event

    def crd_record(self) -> ResourceRecord:
        return self.controller.crd_record()

    def gizmos(self) -> ResourceRecord:
        record = self.catalog.lookup(GROUP, "v1", "gizmos")
        assert record is not None
        return record

    async def run_until(self, done: asyncio.Event) -> None:
        """Run the controller's tasks, moving the fake clock on whenever all of them sleep on it."""
        for _ in range(10_000):
            if done.is_set():
                return
            await asyncio.sleep(0)
            if self.clock.has_waiters():
                self.clock.step(crdfinalizer.MAX_BACKOFF)
        raise AssertionError("the CRD deletion did not finish")


@pytest.fixture
async def meddled() -> AsyncIterator[tuple[_Server, RacedDeletes]]:
    storage = RacedDeletes("", 0)
    server = _Server(storage)
    await server.controller.start()
    try:
        yield server, storage
    finally:
        await server.controller.close()
        await storage.close()


async def _install_with_objects(server: _Server) -> None:
    await server.registry.create(server.crd_record(), "", _crd())
    await server.run_until(server.crd_established)
    for i in range(OBJECTS):
        obj = {
            "apiVersion": f"{GROUP}/v1",
            "kind": "Gizmo",
            "metadata": {"name": f"g{i}", "namespace": "default"},
        }
        await server.registry.create(server.gizmos(), "default", obj)


@pytest.mark.parametrize(
    "target",
    [
        # 40 lost races: more than two deletes' worth of the registry's retries (two 409s "too many
        # retries"), then the deletes go through.
        pytest.param("objects", id="writers-on-the-custom-objects"),
        # The same on the CRD itself, when removing the cleanup finalizer deletes it (each lost race
        # is also a CRD event, which hands the CRD to the finalizer again).
        pytest.param("crd", id="writers-on-the-crd"),
    ],
)
async def test_crd_deletion_completes_while_other_writers_race_it(
    meddled: tuple[_Server, RacedDeletes], target: str
) -> None:
    """Conflicts past the registry's retry bound do not stop the deletion: the objects go, the CRD
    goes, and the catalog (discovery) no longer serves the resource."""
    server, storage = meddled
    await _install_with_objects(server)
    gizmos = server.gizmos()
    storage.prefix = gizmos.key_prefix if target == "objects" else CRD_KEY
    storage.touches = 40

    _, deleted_now = await server.registry.delete(server.crd_record(), "", CRD_NAME, deletion.DeleteOptions())
    assert not deleted_now  # held by the cleanup finalizer
    await server.run_until(server.crd_gone)

    assert storage.touches == 0  # every race was provoked, and lost by the deleter
    assert (await storage.list(gizmos.key_prefix)).items == []
    with pytest.raises(errors.NotFound):
        await server.registry.get(server.crd_record(), "", CRD_NAME)
    assert [r for r in server.catalog if r.group_resource == GR] == []


async def test_objects_held_by_their_finalizers_keep_the_crd_until_released(
    meddled: tuple[_Server, RacedDeletes],
) -> None:
    """A custom object with its own finalizer holds the CRD while the others go; once another writer
    removes that finalizer, the deletion finishes."""
    server, _ = meddled
    await _install_with_objects(server)
    gizmos = server.gizmos()

    def hold(obj: dict[str, Any]) -> dict[str, Any]:
        return {**obj, "metadata": {**obj["metadata"], "finalizers": ["unit.kplane.dev/hold"]}}

    def release(obj: dict[str, Any]) -> dict[str, Any]:
        return {**obj, "metadata": {**obj["metadata"], "finalizers": []}}

    await server.registry.update(gizmos, "default", "g0", hold)
    deleted: set[str] = set()

    def others_deleted(obj: dict[str, Any], gone: bool) -> bool:
        if gone:
            deleted.add(obj["metadata"]["name"])
        return deleted == {"g1", "g2"}

    others_gone = server.when("gizmos", others_deleted)
    await server.registry.delete(server.crd_record(), "", CRD_NAME, deletion.DeleteOptions())
    await server.run_until(others_gone)
    assert deleted == {"g1", "g2"}
    assert not server.crd_gone.is_set()
    g0 = await server.registry.get(gizmos, "default", "g0")
    assert g0["metadata"].get("deletionTimestamp")

    await server.registry.update(gizmos, "default", "g0", release)
    await server.run_until(server.crd_gone)
    assert (await server.registry.storage.list(gizmos.key_prefix)).items == []
    assert [r for r in server.catalog if r.group_resource == GR] == []


# The Terminating condition's words, as upstream writes them: the first delete's in
# apiextensions-apiserver pkg/registry/customresourcedefinition/etcd.go, the others in
# pkg/controller/finalizer/crd_finalizer.go.
PENDING = (
    "True",
    "InstanceDeletionPending",
    "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
)
IN_PROGRESS = ("True", "InstanceDeletionInProgress", "CustomResource deletion is in progress")
COMPLETED = ("False", "InstanceDeletionCompleted", "removed all instances")
NEVER_ESTABLISHED = ("False", "NeverEstablished", "resource was never established")
CHECK = (
    "True",
    "InstanceDeletionCheck",
    "could not confirm zero CustomResources remaining: timed out waiting for the condition",
)


def _terminating(crd: dict[str, Any]) -> tuple[str, str, str] | None:
    found = crdconditions.find(crd, "Terminating")
    return None if found is None else (found["status"], found["reason"], found["message"])


def _reports(server: _Server) -> list[tuple[str, str, str]]:
    """Every change of the CRD's Terminating condition the registry stores, in order."""
    seen: list[tuple[str, str, str]] = []

    def note(obj: dict[str, Any], _deleted: bool) -> bool:
        now = _terminating(obj)
        if now is not None and (not seen or seen[-1] != now):
            seen.append(now)
        return False

    server.when("customresourcedefinitions", note)
    return seen


async def test_the_terminating_condition_reports_each_step(
    meddled: tuple[_Server, RacedDeletes],
) -> None:
    """Pending on the first delete, in progress while objects go, completed before the CRD goes."""
    server, _ = meddled
    await _install_with_objects(server)
    reports = _reports(server)
    marked, _ = await server.registry.delete(server.crd_record(), "", CRD_NAME, deletion.DeleteOptions())
    assert _terminating(marked) == PENDING
    await server.run_until(server.crd_gone)
    assert reports == [PENDING, IN_PROGRESS, COMPLETED]


async def test_objects_held_past_a_minute_are_reported_then_the_deletion_resumes(
    meddled: tuple[_Server, RacedDeletes],
) -> None:
    """An object held by its finalizer for a minute after the deletes turns the condition to
    InstanceDeletionCheck; the next pass says in progress again, and the deletion completes once
    the object is released."""
    server, _ = meddled
    await _install_with_objects(server)
    gizmos = server.gizmos()

    def hold(obj: dict[str, Any]) -> dict[str, Any]:
        return {**obj, "metadata": {**obj["metadata"], "finalizers": ["unit.kplane.dev/hold"]}}

    await server.registry.update(gizmos, "default", "g0", hold)
    reports = _reports(server)
    checked = server.when("customresourcedefinitions", lambda obj, _gone: _terminating(obj) == CHECK)
    await server.registry.delete(server.crd_record(), "", CRD_NAME, deletion.DeleteOptions())
    await server.run_until(checked)
    assert server.clock.monotonic() >= crdfinalizer.CHECK_TIMEOUT
    resumed = server.when("customresourcedefinitions", lambda obj, _gone: _terminating(obj) == IN_PROGRESS)
    await server.run_until(resumed)

    def release(obj: dict[str, Any]) -> dict[str, Any]:
        return {**obj, "metadata": {**obj["metadata"], "finalizers": []}}

    await server.registry.update(gizmos, "default", "g0", release)
    await server.run_until(server.crd_gone)
    assert reports == [PENDING, IN_PROGRESS, CHECK, IN_PROGRESS, COMPLETED]


async def test_failed_deletes_are_reported_and_retried() -> None:
    """Deletes refused by admission are reported once, as upstream aggregates them, and retried;
    the deletion completes once they are allowed."""
    refusing = True

    def refuse(attrs: admitting.Attributes) -> None:
        if refusing and attrs.operation == "DELETE" and attrs.record.plural == "gizmos":
            raise errors.Forbidden("deleting gizmos is not allowed today")

    storage = memory.MemoryStorage()
    server = _Server(storage, admitting.Admission(validate=refuse))
    await server.controller.start()
    try:
        await _install_with_objects(server)
        prefix = server.gizmos().key_prefix
        reports = _reports(server)
        failed = (
            "True",
            "InstanceDeletionFailed",
            "could not issue all deletes: deleting gizmos is not allowed today",
        )
        reported = server.when("customresourcedefinitions", lambda obj, _gone: _terminating(obj) == failed)
        await server.registry.delete(server.crd_record(), "", CRD_NAME, deletion.DeleteOptions())
        await server.run_until(reported)
        refusing = False
        await server.run_until(server.crd_gone)
        assert reports[:3] == [PENDING, IN_PROGRESS, failed]
        assert reports[-2:] == [IN_PROGRESS, COMPLETED]
        assert (await storage.list(prefix)).items == []
    finally:
        await server.controller.close()
        await storage.close()


async def test_a_crd_deleted_before_it_was_established_deletes_no_instances(
    meddled: tuple[_Server, RacedDeletes],
) -> None:
    """Without Established the finalizer only reports NeverEstablished and lets the CRD go."""
    server, _ = meddled
    reports = _reports(server)
    await server.registry.create(server.crd_record(), "", _crd())
    await server.registry.delete(server.crd_record(), "", CRD_NAME, deletion.DeleteOptions())
    await server.run_until(server.crd_gone)
    assert not server.crd_established.is_set()
    assert reports == [PENDING, IN_PROGRESS, NEVER_ESTABLISHED]
