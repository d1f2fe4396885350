"""Disk space and exclusive use of a SQLite store: the full-disk state, its reserve, the lock.

Design note. On a full disk SQLite cannot even delete: a deletion appends a row, and compaction
and vacuuming write to the WAL before anything is freed. etcd answers the same problem with its
NOSPACE alarm (only reads and deletes are accepted) and a space quota below the disk's size; kplane
keeps a reserve file instead (``<store>-reserve``, ``RESERVE_BYTES`` or an eighth of the file
system), released at the moment the disk is found full, so that deletions, compaction and
incremental vacuuming have room. ``Space`` holds that state; the backend decides what to refuse.

The lock (``<store>-lock``, ``flock``) keeps a second process, or a second ``SQLiteStorage`` in
this one, from writing the store behind the first one's in-memory state.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os

from kplane.server.storage import interface
from kplane.server.storage.sqlite import schema

RESERVE_BYTES = 8 << 20
"""Size of the space reserve, at most an eighth of the file system."""
_log = logging.getLogger("kplane.server.storage.sqlite")


def fs_bytes(path: str, *, free: bool = False) -> int:
    """The size (or the space free to us) of the file system holding ``path``; 0 if unknown."""
    try:
        st = os.statvfs(os.path.dirname(os.path.abspath(path)))
    except OSError:
        return 0
    return (st.f_bavail if free else st.f_blocks) * st.f_frsize


def lock(path: str) -> int:
    """Take the store's exclusive lock; the file descriptor to ``unlock``. Raises ``StorageError``
    when another process (or another open store in this one) holds it."""
    if path == ":memory:":
        return -1
    lock_path = f"{path}-lock"
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, schema.FILE_MODE)
    except OSError as e:
        if schema.is_full(e):
            raise interface.NoSpace(lock_path, e.strerror or str(e)) from e
        raise interface.StorageError(f"{lock_path}: cannot open ({e.strerror or e})") from e
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise interface.StorageError(f"{path} is in use by another kplane process") from None
    return fd


def unlock(fd: int) -> None:
    if fd >= 0:
        os.close(fd)  # closing the descriptor releases the flock


class Space:
    """Whether the disk holding a store is full, and its reserve (see the module docstring)."""

    def __init__(self, path: str, reserve_bytes: int = RESERVE_BYTES) -> None:
        self.path = path
        self.full: interface.NoSpace | None = None
        self._reserve_path = f"{path}-reserve"
        self._reserve_bytes = 0 if path == ":memory:" else min(reserve_bytes, fs_bytes(path) // 8)

    def prepare(self) -> None:
        """Make the reserve at start-up; only warn if there is no room for it."""
        if not self._make_reserve():
            _log.warning(
                "storage: no room for a %d-byte reserve beside %s: the disk is nearly full",
                self._reserve_bytes,
                self.path,
            )

    def check(self) -> None:
        """Raise ``NoSpace`` while the disk is full, unless space came back (then leave the full
        state, with the reserve made again)."""
        if self.full is None:
            return
        if self._space_back() and self._make_reserve():
            _log.warning("storage: space is available again for %s; writes resumed", self.path)
            self.full = None
            return
        raise self.full

    def enter_full(self, error: interface.NoSpace) -> None:
        """Note that the disk is full: release the reserve and log it, once per episode."""
        if self.full is not None:
            return
        self.full = error
        self._release_reserve()
        _log.warning(
            "storage: the disk holding %s is full (%s): creates and updates are refused until space"
            " is free again; reads and deletes still work. Released the %d-byte reserve; history is"
            " compacted and free space returned to the disk after every delete.",
            self.path,
            error.detail,
            self._reserve_bytes,
        )

    def _space_back(self) -> bool:
        """True when the file system has room for the reserve and as much again."""
        return fs_bytes(self.path, free=True) >= self._reserve_bytes + max(self._reserve_bytes, 1 << 20)

    def _make_reserve(self) -> bool:
        """Ensure the reserve file exists at full size; False when the disk has no room for it."""
        if self._reserve_bytes <= 0:
            return True
        with contextlib.suppress(OSError):
            if os.path.getsize(self._reserve_path) >= self._reserve_bytes:
                return True
        try:
            fd = os.open(self._reserve_path, os.O_WRONLY | os.O_CREAT, schema.FILE_MODE)
            try:
                os.posix_fallocate(fd, 0, self._reserve_bytes)
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError:
            self._release_reserve()
            return False
        return True

    def _release_reserve(self) -> None:
        try:
            os.unlink(self._reserve_path)
        except FileNotFoundError:
            pass
        except OSError as e:
            _log.warning("storage: cannot remove %s: %s", self._reserve_path, e)
