"""``kplane compact``: a stopped server's store loses its history and gives space back."""

from __future__ import annotations

import asyncio
import pathlib

import pytest

from kplane.cli import main
from kplane.server.storage.sqlite import SQLiteStorage
from kplane.server.storage.testing import fixtures


async def _fill(path: pathlib.Path) -> None:
    s = SQLiteStorage(str(path), compaction_interval=0, reserve_bytes=0)
    try:
        for i in range(100):
            await s.create(fixtures.key(f"p{i:03}"), {**fixtures.pod(f"p{i:03}"), "blob": "x" * 4000})
        for i in range(80):
            await s.delete(fixtures.key(f"p{i:03}"))
    finally:
        await s.close()


async def _names(path: pathlib.Path) -> list[str]:
    s = SQLiteStorage(str(path), compaction_interval=0, reserve_bytes=0)
    try:
        return fixtures.names(await s.list(fixtures.PODS))
    finally:
        await s.close()


def test_compact_shrinks_a_stopped_store(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The store's files shrink, the live objects stay, and the command says what it did."""
    path = tmp_path / "state.db"
    asyncio.run(_fill(path))
    assert main.main(["compact", "--data-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"kplane: compacted {path} at revision 180: "), out
    before, after = (int(n) for n in out.split(": ")[2].split(" bytes")[0].split(" -> "))
    assert after < before / 2, out
    assert asyncio.run(_names(path)) == [f"p{i:03}" for i in range(80, 100)]


def test_compact_refuses_a_store_in_use(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    """While a server holds the store, compact refuses with a clear message instead of racing it."""
    path = tmp_path / "state.db"
    asyncio.run(_fill(path))

    async def hold_and_compact() -> int:
        s = SQLiteStorage(str(path), compaction_interval=0, reserve_bytes=0)
        try:
            return await asyncio.to_thread(main.main, ["compact", "--data-dir", str(tmp_path)])
        finally:
            await s.close()

    assert asyncio.run(hold_and_compact()) == 1
    assert "in use by another kplane process" in capsys.readouterr().err
