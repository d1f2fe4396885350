"""Storage throughput and cache list latency; prints one JSON line.

creates/s with 16 concurrent writers for memory, SQLite (group commit, synchronous=FULL) and the
cache over SQLite (what the server runs); the latency of listing 2,000 objects through the cache;
the cost of one SQLite point read inline on the loop versus on the reader thread (the reason
``get`` runs inline); and SQLite creates/s with each write's writer and time recorded (object
history) versus not, alternated over ``--rounds`` rounds in fresh stores (medians and the cost).

    python benchmarks/storage_bench.py [--creates N] [--dir DIR]

``--dir`` picks where the SQLite files go (the default temporary directory may be a RAM disk,
where fsync is free).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import pathlib
import statistics
import sys
import tempfile
import time
from typing import Any

from kplane.server.storage import interface, memory
from kplane.server.storage.cacher import CachedStorage
from kplane.server.storage.sqlite import SQLiteStorage, queries

WRITERS = 16


def _pod(i: int) -> interface.Object:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"pod-{i:06}", "namespace": "bench", "uid": f"uid-{i}", "labels": {"app": "x"}},
        "spec": {"containers": [{"name": "c", "image": "nginx:1.27", "ports": [{"containerPort": 80}]}]},
    }


async def _creates_per_second(store: interface.Storage, total: int, offset: int = 0) -> float:
    per_writer = total // WRITERS

    async def writer(w: int) -> None:
        for j in range(per_writer):
            i = offset + w * per_writer + j
            await store.create(f"/registry/core/pods/bench/pod-{i:06}", _pod(i))

    start = time.perf_counter()
    await asyncio.gather(*(writer(w) for w in range(WRITERS)))
    return per_writer * WRITERS / (time.perf_counter() - start)


async def _list_latency_ms(store: CachedStorage, rounds: int = 200) -> float:
    start = time.perf_counter()
    for _ in range(rounds):
        result = await store.list("/registry/core/pods/bench/")
        assert len(result.items) >= 2_000
    return (time.perf_counter() - start) / rounds * 1000


async def _point_read_us(store: SQLiteStorage, rounds: int = 2_000) -> dict[str, float]:
    key = "/registry/core/pods/bench/pod-000001"
    conn = store._loop_conn
    start = time.perf_counter()
    for _ in range(rounds):
        queries.latest(conn, key)
    inline = (time.perf_counter() - start) / rounds * 1e6
    loop = asyncio.get_running_loop()
    start = time.perf_counter()
    for _ in range(rounds):
        await loop.run_in_executor(store._pool, queries.latest, store._pool_conn, key)
    threaded = (time.perf_counter() - start) / rounds * 1e6
    return {"get_inline_us": round(inline, 1), "get_thread_us": round(threaded, 1)}


async def _history_cost(directory: str, creates: int, rounds: int) -> dict[str, Any]:
    """Medians of SQLite creates/s recording writer and time vs not, alternated per round."""
    on: list[float] = []
    off: list[float] = []
    for r in range(rounds):
        for record in (True, False) if r % 2 == 0 else (False, True):
            store = SQLiteStorage(
                str(pathlib.Path(directory) / f"h-{r}-{record}.db"),
                compaction_interval=0,
                record_writes=record,
            )
            token = interface.WRITER.set("system:serviceaccount:bench:writer" if record else "")
            try:
                (on if record else off).append(await _creates_per_second(store, creates))
            finally:
                interface.WRITER.reset(token)
                await store.close()
    m_on, m_off = statistics.median(on), statistics.median(off)
    return {
        "sqlite_creates_per_s_history_on": round(m_on),
        "sqlite_creates_per_s_history_off": round(m_off),
        "history_cost_pct": round(100 * (m_off - m_on) / m_off, 1),
    }


async def main(creates: int, directory: str | None, rounds: int = 6) -> dict[str, Any]:
    out: dict[str, Any] = {"writers": WRITERS, "creates": creates}
    mem = memory.MemoryStorage()
    out["memory_creates_per_s"] = round(await _creates_per_second(mem, creates))
    await mem.close()
    with tempfile.TemporaryDirectory(dir=directory) as tmp:
        sq = SQLiteStorage(str(pathlib.Path(tmp) / "a.db"), compaction_interval=0)
        commits = sq._commits
        out["sqlite_creates_per_s"] = round(await _creates_per_second(sq, creates))
        out["sqlite_writes_per_commit"] = round(creates / max(1, sq._commits - commits), 1)
        out.update(await _point_read_us(sq))
        await sq.close()
        cached = CachedStorage(SQLiteStorage(str(pathlib.Path(tmp) / "b.db"), compaction_interval=0))
        await cached.start()
        out["cached_sqlite_creates_per_s"] = round(await _creates_per_second(cached, max(creates, 2_000)))
        out["cache_list_2000_ms"] = round(await _list_latency_ms(cached), 3)
        await cached.close()
        if rounds:
            out.update(await _history_cost(tmp, creates, rounds))
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--creates", type=int, default=8_000)
    parser.add_argument("--dir", default=None, help="directory for the SQLite files")
    parser.add_argument("--rounds", type=int, default=6, help="history on/off rounds (0: skip)")
    args = parser.parse_args()
    try:
        import uvloop

        runner: Any = uvloop.run
        loop_name = "uvloop"
    except ImportError:
        runner, loop_name = asyncio.run, "asyncio"
    result = runner(main(args.creates, args.dir, args.rounds))
    result["loop"] = loop_name
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")
