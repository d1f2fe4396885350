"""A delete that keeps losing races to other writers still ends: the registry re-reads and starts
over after each, as upstream's store does (its etcd3 Delete and GuaranteedUpdate retry without a
bound), instead of answering 409 "too many retries" after a few."""

from __future__ import annotations

from kplane._util import clock
from kplane.api.builtin import builtin_catalog
from kplane.server.registry import deletion, store

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
