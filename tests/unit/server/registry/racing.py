"""A storage for registry tests where other writers win races: between a read of an object and
its conditional delete, another writer updates it, so the delete's precondition fails."""

from __future__ import annotations

from kplane.server.storage import interface, memory


class RacedDeletes(memory.MemoryStorage):
    """Memory storage where another writer updates an object under ``prefix`` between every read
    of it and its conditional delete, ``touches`` times in all (each bumps an annotation)."""

    def __init__(self, prefix: str = "", touches: int = 0) -> None:
        super().__init__()
        self.prefix = prefix
        self.touches = touches

    async def delete(
        self, key: str, *, preconditions: interface.Preconditions | None = None
    ) -> interface.Object:
        if key.startswith(self.prefix) and self.touches > 0:
            self.touches -= 1
            await self.guaranteed_update(key, touch)
        return await super().delete(key, preconditions=preconditions)


def touch(obj: interface.Object) -> interface.Object:
    """Count one more racing write in the ``touched`` annotation."""
    annotations = obj["metadata"].setdefault("annotations", {})
    annotations["touched"] = str(int(annotations.get("touched", "0")) + 1)
    return obj
