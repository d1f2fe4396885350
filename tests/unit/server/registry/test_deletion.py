"""A delete that keeps losing races to other writers still ends: the registry re-reads and starts
over after each, as upstream's store does (its etcd3 Delete and GuaranteedUpdate retry without a
bound), instead of answering 409 "too many retries" after a few."""

from __future__ import annotations

from kplane._util import clock
from kplane.api.builtin import builtin_catalog
from kplane.server.registry import deletion, store
from kplane.server.storage import memory

from .racing import RacedDeletes

RACES = 40  # more than the 16 the registry used to allow


async def test_a_delete_outlasts_many_racing_writers() -> None:
    storage = RacedDeletes()
    registry = store.Registry(storage, clock.FakeClock())
    record = builtin_catalog().lookup("", "v1", "configmaps")
    assert record is not None
    await registry.create(record, "default", {"metadata": {"name": "c"}, "data": {"k": "v"}})
    storage.touches = RACES
    last, deleted_now = await registry.delete(record, "default", "c", deletion.DeleteOptions())
    assert deleted_now and storage.touches == 0
    assert last["metadata"]["annotations"] == {"touched": str(RACES)}  # the last racing write's state
    assert not (await registry.list_current(record))


async def test_a_dry_run_answers_what_the_first_delete_would_store() -> None:
    """A dry-run delete of a namespace answers it Terminating, as the first delete stores it (upstream's
    namespace REST runs the same update in a dry run), and leaves the stored namespace alone."""
    registry = store.Registry(memory.MemoryStorage(), clock.FakeClock())
    record = builtin_catalog().lookup("", "v1", "namespaces")
    assert record is not None
    await registry.create(record, "", {"metadata": {"name": "n"}})
    rehearsed, deleted_now = await registry.delete(record, "", "n", deletion.DeleteOptions(dry_run=True))
    assert not deleted_now
    assert rehearsed["metadata"]["deletionTimestamp"] and rehearsed["status"]["phase"] == "Terminating"
    stored = await registry.get(record, "", "n")
    assert "deletionTimestamp" not in stored["metadata"] and stored["status"]["phase"] == "Active"
    marked, _ = await registry.delete(record, "", "n", deletion.DeleteOptions())
    assert marked["status"]["phase"] == "Terminating"
