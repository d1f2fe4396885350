"""The audit log file: one ``audit.k8s.io/v1`` Event per line, rotated by size.

As upstream's log backend (lumberjack underneath): ``max_size_mb`` (0: lumberjack's 100 MB) bounds a
file; when a line would pass it, the file is renamed ``<name>-<UTC time>.<ext>`` and a new one is
started; ``max_backups`` (0: keep all) old files are kept, the oldest removed first. Files are 0600.
``-`` writes to standard output, never rotated. Writes happen on the event loop, one ``write`` of a
whole line each (so a crash never leaves half an event), flushed at once.
"""

from __future__ import annotations

import datetime
import os
import sys
from pathlib import Path
from typing import IO, Any

import orjson

from kplane._util.clock import Clock

_MB = 1024 * 1024
_DEFAULT_MB = 100


class AuditLog:
    """Appends events to ``path``; ``close`` when done."""

    def __init__(self, path: str, clock: Clock, *, max_size_mb: int = 0, max_backups: int = 0) -> None:
        self._clock = clock
        self._max = (max_size_mb or _DEFAULT_MB) * _MB
        self._backups = max_backups
        self._path = None if path == "-" else Path(path)
        self._file: IO[bytes] = sys.stdout.buffer if self._path is None else self._open()
        self._size = 0 if self._path is None else self._path.stat().st_size

    def _open(self) -> IO[bytes]:
        assert self._path is not None
        self._path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self._path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        return os.fdopen(fd, "ab", buffering=0)

    def write(self, event: dict[str, Any]) -> None:
        line = orjson.dumps(event) + b"\n"
        if self._path is not None and self._size and self._size + len(line) > self._max:
            self._rotate()
        self._file.write(line)
        self._size += len(line)

    def _rotate(self) -> None:
        assert self._path is not None
        self._file.close()
        stamp = self._clock.now().astimezone(datetime.UTC).strftime("%Y-%m-%dT%H-%M-%S.%f")[:-3]
        suffix = self._path.suffix
        backup = self._path.with_name(f"{self._path.name.removesuffix(suffix)}-{stamp}{suffix}")
        os.replace(self._path, backup)
        if self._backups:
            stem = self._path.name.removesuffix(suffix) + "-"
            old = sorted(
                p for p in self._path.parent.iterdir() if p.name.startswith(stem) and p.name.endswith(suffix)
            )
            for p in old[: max(0, len(old) - self._backups)]:
                p.unlink(missing_ok=True)
        self._file = self._open()
        self._size = 0

    def close(self) -> None:
        if self._path is not None:
            self._file.close()
