"""EtcdStorage beyond the shared contract: the compactor shared by servers, Event leases, start-up
errors. On a real etcd (skipped, saying so, where it is not installed)."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from kplane._util.clock import FakeClock
from kplane.server.storage import interface
from kplane.server.storage.etcd import EtcdClient, EtcdStorage, wire
from kplane.server.storage.testing import fixtures

_prefixes = itertools.count()


def _store(endpoints: list[str], **kw: Any) -> EtcdStorage:
    return EtcdStorage(EtcdClient(endpoints), key_prefix=f"/unit-{next(_prefixes)}", **kw)


async def _until(predicate: Callable[[], Awaitable[bool]]) -> None:
    for _ in range(500):
        if await predicate():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition not reached")


async def test_two_servers_compact_once_per_interval(etcd_endpoints: list[str]) -> None:
    """Two stores sharing a prefix and a clock: each interval, one of them compacts to the revision
    of the interval before (upstream's compact_rev_key scheme); history after it stays readable."""
    clock = FakeClock()
    prefix = f"/compact-{next(_prefixes)}"
    a = EtcdStorage(EtcdClient(etcd_endpoints), key_prefix=prefix, compaction_interval=60, clock=clock)
    b = EtcdStorage(EtcdClient(etcd_endpoints), key_prefix=prefix, compaction_interval=60, clock=clock)
    try:
        await a.start()
        await b.start()
        first = await a.create(fixtures.key("x"), fixtures.pod("x"))
        await a.guaranteed_update(fixtures.key("x"), fixtures.set_counter(1))
        clock.step(60)  # first tick: the key records this revision; nothing compacted yet
        await asyncio.sleep(0.3)
        mark = await a.fresh_revision()
        await a.guaranteed_update(fixtures.key("x"), fixtures.set_counter(2))
        clock.step(60)  # second tick: compact up to the first tick's revision

        async def compacted() -> bool:
            try:
                await a.list(fixtures.PODS, revision=fixtures.rv(first))
            except interface.Expired:
                return True
            return False

        await _until(compacted)
        at_mark = await b.list(fixtures.PODS, revision=mark)
        assert [o["spec"]["counter"] for o in at_mark.items] == [1]
    finally:
        await a.close()
        await b.close()


async def test_events_get_one_lease_per_minute(etcd_endpoints: list[str]) -> None:
    """Events carry a lease of event_ttl plus the reuse minute, shared by the Events of a minute."""
    clock = FakeClock()
    s = _store(etcd_endpoints, event_ttl=120, compaction_interval=0, clock=clock)
    await s.start()
    try:
        ev = "/registry/core/events/ns/"

        async def lease_of(name: str) -> int:
            kvs = await s.range_at(f"{ev}{name}", 0)
            return kvs[0].lease

        await s.create(f"{ev}a", {"metadata": {"name": "a"}})
        await s.create(f"{ev}b", {"metadata": {"name": "b"}})
        clock.step(61)
        await s.create(f"{ev}c", {"metadata": {"name": "c"}})
        la, lb, lc = await lease_of("a"), await lease_of("b"), await lease_of("c")
        assert la == lb != 0 and lc not in (0, la)
        raw = await s.client.call("Lease/LeaseTimeToLive", wire.int_field(1, la))
        assert 120 < wire.lease_grant_response(raw).ttl <= 180
        await s.create("/registry/core/configmaps/ns/plain", {"metadata": {"name": "plain"}})
        assert (await s.range_at("/registry/core/configmaps/ns/plain", 0))[0].lease == 0
    finally:
        await s.close()


async def test_start_against_no_etcd_fails_fast_and_says_where() -> None:
    """A store whose endpoints do not answer fails at start with a StorageError naming them."""
    s = EtcdStorage(EtcdClient(["127.0.0.1:1"], timeout=0.5), compaction_interval=0)
    with pytest.raises(interface.StorageError, match=r"etcd at 127.0.0.1:1 did not answer within 0.5s"):
        await s.start()
    await s.close()
