"""A delete that keeps losing races to other writers still ends: the registry re-reads and starts
over after each, as upstream's store does (its etcd3 Delete and GuaranteedUpdate retry without a
bound), instead of answering 409 "too many retries" after a few."""

from __future__ import annotations

from kplane._util import clock
from kplane.api.builtin import builtin_catalog
from kplane.server.registry import deletion, store
from kplane.server.storage import interface, memory

RACES = 40  # more than the 16 the registry used to allow


class _Raced(memory.MemoryStorage):
    """Another writer updates the object between every read of it and its conditional delete,
    ``races`` times in all: each such delete fails its resourceVersion precondition."""

    def __init__(self, races: int) -> None:
        super().__init__()
        self.races = races

    async def delete(
        self, key: str, *, preconditions: interface.Preconditions | None = None
    ) -> interface.Object:
        if self.races > 0:
            self.races -= 1
            await self.guaranteed_update(key, _touch)
        return await super().delete(key, preconditions=preconditions)


def _touch(obj: interface.Object) -> interface.Object:
    labels = obj["metadata"].setdefault("labels", {})
    labels["touched"] = str(int(labels.get("touched", "0")) + 1)
    return obj


async def test_a_delete_outlasts_many_racing_writers() -> None:
    storage = _Raced(0)
    registry = store.Registry(storage, clock.FakeClock())
    record = builtin_catalog().lookup("", "v1", "configmaps")
    assert record is not None
    await registry.create(record, "default", {"metadata": {"name": "c"}, "data": {"k": "v"}})
    storage.races = RACES
    last, deleted_now = await registry.delete(record, "default", "c", deletion.DeleteOptions())
    assert deleted_now and storage.races == 0
    assert last["metadata"]["labels"] == {"touched": str(RACES)}  # the last racing write's state
    assert not (await registry.list_current(record))
