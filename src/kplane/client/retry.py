"""Retrying a read-modify-write that lost a race: client-go's ``util/retry``.

``on_error(fn, retriable=...)`` runs ``fn`` up to ``backoff.steps`` times, sleeping
``backoff``'s next delay between attempts (never after the last). It returns ``fn``'s result on
success, re-raises at once an error ``retriable`` rejects, and when attempts run out re-raises the
last retriable error itself (not a timeout). ``retry_on_conflict`` retries ``errors.Conflict``
(409), which is what a stale ``resourceVersion`` produces. ``fn`` must re-read the object on every
attempt: retrying a write with the same stale object can never succeed.

    async def bump() -> dict:
        cm = await cms.get("settings")
        cm["data"]["n"] = str(int(cm["data"]["n"]) + 1)
        return await cms.update(cm)

    await retry.retry_on_conflict(bump)
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from typing import TypeVar

from kplane._util import backoff as backoff_mod
from kplane._util import clock as clock_mod
from kplane.api import errors

T = TypeVar("T")

DEFAULT_RETRY = backoff_mod.DEFAULT_RETRY
"""For conflicts between competing writers: 5 attempts about 10 ms apart."""

DEFAULT_BACKOFF = backoff_mod.DEFAULT_BACKOFF
"""For an unrelated change racing a controller: 4 attempts, sleeps of about 10, 50 and 250 ms."""


def is_conflict(err: BaseException) -> bool:
    """True for a 409 Conflict (including AlreadyExists, as client-go's ``IsConflict`` is by code)."""
    return isinstance(err, errors.Conflict)


async def on_error(
    fn: Callable[[], Awaitable[T]],
    *,
    retriable: Callable[[BaseException], bool],
    backoff: backoff_mod.Backoff = DEFAULT_BACKOFF,
    clock: clock_mod.Clock | None = None,
    _rand: backoff_mod.Rand = random.random,
) -> T:
    """Run ``fn`` until it succeeds, fails with a non-retriable error, or ``backoff.steps`` attempts ran."""
    sleeper: clock_mod.Clock = clock or clock_mod.RealClock()
    delays = backoff.delays(rand=_rand)
    attempts = max(1, backoff.steps)
    for attempt in range(1, attempts + 1):
        try:
            return await fn()
        except Exception as err:
            if attempt == attempts or not retriable(err):
                raise
        await sleeper.sleep(next(delays))
    raise AssertionError("unreachable: the last attempt returns or raises")


async def retry_on_conflict(
    fn: Callable[[], Awaitable[T]],
    *,
    backoff: backoff_mod.Backoff = DEFAULT_RETRY,
    clock: clock_mod.Clock | None = None,
    _rand: backoff_mod.Rand = random.random,
) -> T:
    """``on_error`` retrying only ``errors.Conflict``, with ``DEFAULT_RETRY`` unless told otherwise."""
    return await on_error(fn, retriable=is_conflict, backoff=backoff, clock=clock, _rand=_rand)
