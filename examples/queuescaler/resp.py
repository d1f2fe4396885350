"""A minimal Redis client (RESP2 over asyncio streams): enough to read a list's length and, for
tests and benchmarks, to push and pop messages.

One connection per ``Redis``, opened on first use and reopened after an error; one command at a
time (a lock), so callers may share it. Replies are bounded: a line longer than ``MAX_LINE`` or a
bulk string longer than ``MAX_BULK`` is an error, so a misbehaving server cannot make the client
buffer without limit. Every command has a deadline (``timeout``, real seconds: it bounds network
waits, not the controller's own schedule).
"""

from __future__ import annotations

import asyncio
import contextlib
import urllib.parse
from typing import Any

MAX_LINE = 64 * 1024
MAX_BULK = 1024 * 1024
MAX_ITEMS = 10_000


class RedisError(Exception):
    """The server answered an error (``-ERR ...``), broke the protocol, or could not be reached."""


def parse_url(url: str) -> tuple[str, int, int]:
    """(host, port, database) of ``redis://host[:port][/db]``; raises ``ValueError``."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme != "redis" or not parts.hostname:
        raise ValueError(f"not a redis:// URL: {url!r}")
    db = parts.path.strip("/")
    return parts.hostname, parts.port or 6379, int(db) if db else 0


def encode(*args: str | int | bytes) -> bytes:
    """One command as a RESP array of bulk strings."""
    out = [b"*%d\r\n" % len(args)]
    for arg in args:
        data = arg if isinstance(arg, bytes) else str(arg).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(out)


class Redis:
    """A connection to one Redis server (module docstring)."""

    def __init__(self, url: str, *, timeout: float = 5.0) -> None:
        self.host, self.port, self.db = parse_url(url)
        self.timeout = timeout
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._lock = asyncio.Lock()

    async def command(self, *args: str | int | bytes) -> Any:
        """Send one command and return its reply (int, bytes, list, ``None`` or ``"OK"``-style str)."""
        async with self._lock:
            try:
                async with asyncio.timeout(self.timeout):
                    reader, writer = await self._connection()
                    writer.write(encode(*args))
                    await writer.drain()
                    return await _reply(reader)
            except (
                OSError,
                ValueError,
                TimeoutError,
                asyncio.IncompleteReadError,
                asyncio.LimitOverrunError,
            ) as err:
                await self.close()
                raise RedisError(f"redis {self.host}:{self.port}: {type(err).__name__}: {err}") from None
            except RedisError:
                await self.close()
                raise

    async def llen(self, key: str) -> int:
        """The length of list ``key`` (0 when it does not exist)."""
        value = await self.command("LLEN", key)
        if not isinstance(value, int):
            raise RedisError(f"LLEN answered {value!r}")
        return value

    async def _connection(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        if self._reader is None or self._writer is None:
            self._reader, self._writer = await asyncio.open_connection(self.host, self.port, limit=MAX_LINE)
            if self.db:
                self._writer.write(encode("SELECT", self.db))
                await self._writer.drain()
                await _reply(self._reader)
        return self._reader, self._writer

    async def close(self) -> None:
        writer, self._reader, self._writer = self._writer, None, None
        if writer is not None:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()


async def _reply(reader: asyncio.StreamReader) -> Any:
    line = await reader.readuntil(b"\r\n")
    kind, body = line[:1], line[1:-2]
    if kind == b"+":
        return body.decode()
    if kind == b"-":
        raise RedisError(body.decode(errors="replace"))
    if kind == b":":
        return int(body)
    if kind == b"$":
        size = int(body)
        if size < 0:
            return None
        if size > MAX_BULK:
            raise RedisError(f"bulk reply of {size} bytes exceeds {MAX_BULK}")
        data = await reader.readexactly(size + 2)
        return data[:-2]
    if kind == b"*":
        count = int(body)
        if count < 0:
            return None
        if count > MAX_ITEMS:
            raise RedisError(f"array reply of {count} items exceeds {MAX_ITEMS}")
        return [await _reply(reader) for _ in range(count)]
    raise RedisError(f"unexpected reply {line[:32]!r}")
