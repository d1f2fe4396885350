"""Runs the storage contract suite against every implementation and the cache over each."""

from __future__ import annotations

import base64
import itertools
import pathlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from kplane._util.clock import RealClock
from kplane.server.storage import interface, memory
from kplane.server.storage.cacher import CachedStorage
from kplane.server.storage.encryption import config as encryption
from kplane.server.storage.encryption.storage import EncryptedStorage
from kplane.server.storage.etcd import EtcdClient, EtcdStorage
from kplane.server.storage.instrumented import InstrumentedStorage
from kplane.server.storage.sqlite import SQLiteStorage
from kplane.server.storage.testing import contract, fixtures, history

Backend = Callable[[pathlib.Path, int], memory.MemoryStorage | SQLiteStorage]


def _memory(_: pathlib.Path, capacity: int) -> memory.MemoryStorage:
    return memory.MemoryStorage(watcher_capacity=capacity)


def _sqlite(path: pathlib.Path, capacity: int) -> SQLiteStorage:
    return SQLiteStorage(str(path), compaction_interval=0, watcher_capacity=capacity)


IMPLEMENTATIONS = [
    "memory",
    "sqlite",
    "cached-memory",
    "cached-sqlite",
    "cached-instrumented-sqlite",
    "encrypted-sqlite",
    "cached-encrypted-sqlite",
    "etcd",
    "cached-etcd",
    "cached-encrypted-etcd",
]
_stores = itertools.count()
# Every key the contract suite writes, encrypted with each provider in turn (aesgcm writes).
_ENCRYPT_ALL = encryption.parse(
    {
        "apiVersion": "apiserver.config.k8s.io/v1",
        "kind": "EncryptionConfiguration",
        "resources": [
            {
                "resources": ["*.*"],
                "providers": [
                    {"aesgcm": {"keys": [{"name": "k", "secret": base64.b64encode(b"k" * 32).decode()}]}},
                    {"secretbox": {"keys": [{"name": "s", "secret": base64.b64encode(b"s" * 32).decode()}]}},
                ],
            }
        ],
    }
)


@pytest.fixture(params=IMPLEMENTATIONS)
async def factory(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> AsyncIterator[fixtures.Factory]:
    kind: str = request.param
    opened: list[interface.Storage] = []
    counter = itertools.count()
    observed: list[str] = []

    async def make(*, watcher_capacity: int = 10_000) -> interface.Storage:
        path = tmp_path / f"store-{next(counter)}.db"
        store: interface.Storage
        if kind == "memory":
            store = _memory(path, watcher_capacity)
        elif kind == "sqlite":
            store = _sqlite(path, watcher_capacity)
        elif kind in ("etcd", "cached-etcd", "cached-encrypted-etcd"):
            # A key prefix per store: each starts empty on the session's etcd.
            etcd = EtcdStorage(
                EtcdClient(request.getfixturevalue("etcd_endpoints")),
                key_prefix=f"/contract-{next(_stores)}",
                watcher_capacity=watcher_capacity if kind == "etcd" else 10_000,
            )
            await etcd.start()
            if kind == "etcd":
                store = etcd
            else:
                under: Any = EncryptedStorage(etcd, _ENCRYPT_ALL) if "encrypted" in kind else etcd
                cached = CachedStorage(under, watcher_capacity=watcher_capacity)
                await cached.start()
                store = cached
        elif kind == "encrypted-sqlite":
            store = EncryptedStorage(_sqlite(path, watcher_capacity), _ENCRYPT_ALL)
        else:
            backend: Any = _memory(path, 10_000) if kind == "cached-memory" else _sqlite(path, 10_000)
            if kind == "cached-encrypted-sqlite":
                backend = EncryptedStorage(backend, _ENCRYPT_ALL)
            if kind == "cached-instrumented-sqlite":
                backend = InstrumentedStorage(
                    backend, lambda op, key, seconds: observed.append(op), RealClock()
                )
            cached = CachedStorage(backend, watcher_capacity=watcher_capacity)
            await cached.start()
            store = cached
        opened.append(store)
        return store

    yield make
    for store in opened:
        await store.close()


@pytest.mark.parametrize("check", contract.CHECKS, ids=contract.check_id)
async def test_contract(check: fixtures.Check, factory: fixtures.Factory) -> None:
    """Each implementation satisfies each property of the storage contract."""
    await check(factory)


@pytest.mark.parametrize("check", contract.HISTORY_CHECKS, ids=contract.check_id)
async def test_history_contract(
    check: fixtures.Check, factory: fixtures.Factory, request: pytest.FixtureRequest
) -> None:
    """Each implementation, and every decorator over it, keeps and reads history alike."""
    if check is history.check_history_writers and "etcd" in request.node.callspec.params["factory"]:
        pytest.skip("etcd keeps revisions but records neither the time nor the writer of a write")
    await check(factory)
