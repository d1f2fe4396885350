"""What the storage contract's checks share: the ``Factory`` they get, Pod-shaped objects and keys,
and bounded waits on watches.

Every wait here is bounded (``WAIT`` seconds, or a number of loop iterations), so a check that a
backend fails ends with an ``AssertionError`` or ``TimeoutError`` instead of hanging. Objects are
fresh dicts on each call; helpers never modify what they are given except ``set_counter``'s
update function, which mutates the object handed to it as ``guaranteed_update`` allows.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Protocol

from kplane.server.storage import interface

PODS = "/registry/core/pods/"
WAIT = 5.0  # seconds: a safety net for reads that should complete at once


class Factory(Protocol):
    """Opens a new, empty store. ``watcher_capacity`` bounds each watcher's queue."""

    async def __call__(self, *, watcher_capacity: int = 10_000) -> interface.Storage: ...


Check = Callable[[Factory], Awaitable[None]]


def pod(name: str, *, namespace: str = "a", counter: int = 0) -> interface.Object:
    """A small Pod-shaped object with a uid derived from its name."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{namespace}-{name}"},
        "spec": {"counter": counter},
    }


def key(name: str, *, namespace: str = "a") -> str:
    """The storage key of Pod ``name`` in ``namespace``."""
    return f"{PODS}{namespace}/{name}"


def rv(obj: interface.Object) -> int:
    """The object's resourceVersion as a number."""
    return int(obj["metadata"]["resourceVersion"])


def names(result: interface.ListResult) -> list[str]:
    """The names of a list's items, in the list's order."""
    return [o["metadata"]["name"] for o in result.items]


async def take(watch: interface.Watch, n: int) -> list[interface.Event]:
    """The next ``n`` events of ``watch`` (fails if they do not come promptly)."""
    it = aiter(watch)
    out: list[interface.Event] = []
    async with asyncio.timeout(WAIT):
        while len(out) < n:
            out.append(await anext(it))
    return out


async def drain(watch: interface.Watch) -> list[interface.Event]:
    """Every event until the watch ends (fails if it does not end promptly)."""
    async with asyncio.timeout(WAIT):
        return [e async for e in watch]


def set_counter(value: int) -> Callable[[interface.Object], interface.Object]:
    """An update function that sets ``spec.counter`` to ``value``."""

    def fn(obj: interface.Object) -> interface.Object:
        obj["spec"]["counter"] = value
        return obj

    return fn


async def eventually(predicate: Callable[[], bool], *, steps: int = 2_000) -> None:
    """Yield to the loop (and briefly to threads) until ``predicate()`` holds; fail if it never does."""
    for _ in range(steps):
        if predicate():
            return
        await asyncio.sleep(0.001)
    raise AssertionError("condition not reached")
