"""``kplane compact``: give a stopped server's disk space back.

A running server does this by itself when its disk fills (see the README, "Disk full"); this
command is for a stopped one: it removes all history (watch resume and paginated lists at old
revisions; current objects are kept), truncates the WAL and returns free pages to the file system,
converting a store created before incremental auto-vacuum with one ``VACUUM`` (which needs free
space for a copy of the live data).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path
from typing import Any


def add_parser(sub: Any) -> None:
    p = sub.add_parser("compact", help="remove history and return free space to the disk (server stopped)")
    p.add_argument("--data-dir", type=Path, default=Path(".kplane"), help="the server's data directory")
    p.set_defaults(func=run)


def _bytes(path: Path) -> int:
    return sum(os.path.getsize(p) for p in (path, Path(f"{path}-wal")) if p.exists())


def run(args: argparse.Namespace) -> int:
    from kplane.server import storage
    from kplane.server.storage.sqlite import SQLiteStorage

    path = args.data_dir / "state.db"
    if not path.exists():
        print(f"kplane: no store at {path}", file=sys.stderr)
        return 1

    async def main() -> int:
        try:
            store = SQLiteStorage(str(path), compaction_interval=0)
        except storage.StorageError as err:
            print(f"kplane: cannot compact: {err}", file=sys.stderr)
            return 1
        try:
            before = _bytes(path)
            await store.reclaim(convert=True)
            revision = store.current_revision()
        except storage.StorageError as err:
            print(f"kplane: cannot compact {path}: {err}", file=sys.stderr)
            return 1
        finally:
            await store.close()
        after = _bytes(path)
        print(
            f"kplane: compacted {path} at revision {revision}: {before} -> {after} bytes"
            f" ({max(0, before - after)} returned to the disk)"
        )
        return 0

    return asyncio.run(main())
