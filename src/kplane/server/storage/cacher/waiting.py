"""Waiting until the watch cache has applied a revision: the bounded waits behind its consistent reads.

``Waiters`` is a heap of futures, each completed by ``wake`` once the cache's revision reaches the
revision it waits for (woken in revision order) or failed by ``fail`` when the cache closes. The
cache owns the heap and calls ``wake`` after applying events only while the heap is non-empty, so
an event with nobody waiting costs one truth test.

Both waits are bounded and measured on the injected clock (``asyncio.timeout`` cannot use it): a
caller that gives up finds its future cancelled and removed from consideration at the next
``wake``; it then decides what to do (read the backend, raise ``TooLargeRevision``).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Callable

from kplane._util import clock as clock_
from kplane.server.storage import interface

_FRESH_TIMEOUT = 3.0  # seconds a consistent read waits for the cache (upstream's 3 s)
_PROGRESS_STEP = 0.05  # seconds between two progress requests while waiting
# Steps, not elapsed time: an event loop blocked for a while must not use up the wait by itself.
_FRESH_STEPS = round(_FRESH_TIMEOUT / _PROGRESS_STEP)

Waiters = list[tuple[int, int, "asyncio.Future[None]"]]
"""A heap of (revision, tie-breaker, future)."""

_seq = itertools.count()  # tie-breaker: futures are not ordered


def add(waiters: Waiters, revision: int) -> asyncio.Future[None]:
    """A future that ``wake`` completes once the revision reaches ``revision``."""
    fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    heapq.heappush(waiters, (revision, next(_seq), fut))
    return fut


def wake(waiters: Waiters, revision: int) -> None:
    """Complete (and drop) every waiter for ``revision`` or older."""
    while waiters and waiters[0][0] <= revision:
        fut = heapq.heappop(waiters)[2]
        if not fut.done():
            fut.set_result(None)


def fail(waiters: Waiters, error: interface.StorageError) -> None:
    """Fail every waiter with ``error`` and empty the heap."""
    for _, _, fut in waiters:
        if not fut.done():
            fut.set_exception(error)
            fut.exception()  # mark retrieved: a waiter that gave up must not log a warning
    waiters.clear()


async def wait(waiters: Waiters, revision: int, clock: clock_.Clock, timeout: float) -> None:  # noqa: ASYNC109
    """Return once woken for ``revision`` or after ``timeout`` seconds, whichever comes first
    (the caller checks which)."""
    fut = add(waiters, revision)
    sleeper = asyncio.ensure_future(clock.sleep(timeout))
    try:
        await asyncio.wait((fut, sleeper), return_when=asyncio.FIRST_COMPLETED)
    finally:
        sleeper.cancel()
        if not fut.done():
            fut.cancel()


async def wait_asking(
    waiters: Waiters, revision: int, clock: clock_.Clock, ask: Callable[[], None] | None
) -> None:
    """Return once woken for ``revision`` or after 3 s (counted in steps of 50 ms),
    calling ``ask`` (a progress request to the backend watch) at every step but the first: the
    writes up to ``revision`` may have been outside the cache's key space, and only a progress
    notification then moves the cache's revision."""
    fut = add(waiters, revision)
    try:
        for step in range(_FRESH_STEPS):
            if fut.done():
                break
            # Ask only after a first step without asking: the events normally arrive by then,
            # and etcd before 3.4.24 may answer a progress request ahead of events still queued
            # for the watch (etcd issue 15220), which would make this read stale.
            if ask is not None and step:
                ask()
            sleeper = asyncio.ensure_future(clock.sleep(_PROGRESS_STEP))
            try:
                await asyncio.wait((fut, sleeper), return_when=asyncio.FIRST_COMPLETED)
            finally:
                sleeper.cancel()
    finally:
        if not fut.done():
            fut.cancel()
