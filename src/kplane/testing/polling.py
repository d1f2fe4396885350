"""``eventually`` and ``consistently``: poll a condition, as Gomega's ``Eventually``/``Consistently``.

A condition is a function of no arguments, plain or async. It *holds* when it returns without
raising and its result is truthy. ``eventually`` polls until it holds and returns that result;
``consistently`` checks that it holds at every poll for a duration. Polling and deadlines use the
given clock (default: real time), so a ``FakeClock`` with auto-advance makes long waits instant.
On failure the ``AssertionError`` names the condition, the time waited, the number of attempts and
the last result or exception (chained as ``__cause__``).
"""

from __future__ import annotations

import asyncio
import inspect
import os
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, overload

from kplane._util import clock as clock_mod

T = TypeVar("T")

Condition = Callable[[], Awaitable[T]] | Callable[[], T]


async def _check(fn: Condition[T]) -> T:
    result = fn()
    if inspect.isawaitable(result):
        return await result
    return result


def _describe(fn: object) -> str:
    """``qualname()`` for functions; a lambda by where it is written, since its name says nothing."""
    name = getattr(fn, "__qualname__", None)
    if name is None:
        return repr(fn)
    code = getattr(fn, "__code__", None)
    if name.endswith("<lambda>") and code is not None:
        return f"lambda at {os.path.basename(code.co_filename)}:{code.co_firstlineno}"
    return f"{name}()"


@overload
async def eventually(
    fn: Callable[[], Awaitable[T]],
    *,
    timeout: float = ...,  # noqa: ASYNC109
    interval: float = ...,
    retry_on: tuple[type[BaseException], ...] = ...,
    clock: clock_mod.Clock | None = ...,
    message: str = ...,
) -> T: ...


@overload
async def eventually(
    fn: Callable[[], T],
    *,
    timeout: float = ...,  # noqa: ASYNC109
    interval: float = ...,
    retry_on: tuple[type[BaseException], ...] = ...,
    clock: clock_mod.Clock | None = ...,
    message: str = ...,
) -> T: ...


async def eventually(
    fn: Condition[Any],
    *,
    timeout: float = 5.0,  # noqa: ASYNC109 - measured on ``clock``, which asyncio.timeout cannot use
    interval: float = 0.01,
    retry_on: tuple[type[BaseException], ...] = (Exception,),
    clock: clock_mod.Clock | None = None,
    message: str = "",
) -> Any:
    """Poll ``fn`` every ``interval`` seconds until it holds; return its (truthy) result.

    Exceptions of the ``retry_on`` types count as "not yet" (the last one is reported); any other
    exception propagates at once. Raises ``AssertionError`` after ``timeout`` seconds. The first
    attempt is immediate and at least one attempt is always made.
    """
    clk = clock or clock_mod.RealClock()
    deadline = clk.monotonic() + timeout
    attempts = 0
    last_error: BaseException | None = None
    last_result: object = None
    while True:
        attempts += 1
        try:
            result = await _check(fn)
        except retry_on as e:
            last_error, last_result = e, None
        else:
            if result:
                return result
            last_error, last_result = None, result
        if clk.monotonic() >= deadline:
            break
        await clk.sleep(min(interval, max(0.0, deadline - clk.monotonic())))
    what = (
        f"last error: {type(last_error).__name__}: {last_error}"
        if last_error
        else f"last result: {last_result!r}"
    )
    prefix = f"{message}: " if message else ""
    raise AssertionError(
        f"{prefix}{_describe(fn)} did not hold within {timeout:g}s ({attempts} attempts); {what}"
    ) from last_error


async def consistently(
    fn: Condition[object],
    *,
    duration: float = 0.1,
    interval: float = 0.01,
    clock: clock_mod.Clock | None = None,
    message: str = "",
) -> None:
    """Check that ``fn`` holds at every poll for ``duration`` seconds; fail at the first time it does not."""
    clk = clock or clock_mod.RealClock()
    deadline = clk.monotonic() + duration
    attempts = 0
    while True:
        attempts += 1
        try:
            result = await _check(fn)
        except Exception as e:
            raise AssertionError(_failed(fn, message, attempts, f"raised {type(e).__name__}: {e}")) from e
        if not result:
            raise AssertionError(_failed(fn, message, attempts, f"returned {result!r}"))
        if clk.monotonic() >= deadline:
            return
        await clk.sleep(min(interval, max(0.0, deadline - clk.monotonic())))


def _failed(fn: object, message: str, attempts: int, what: str) -> str:
    prefix = f"{message}: " if message else ""
    return f"{prefix}{_describe(fn)} stopped holding at attempt {attempts}: it {what}"


def eventually_blocking(
    fn: Callable[[], T], *, timeout: float = 5.0, interval: float = 0.01, message: str = ""
) -> T:
    """``eventually`` for synchronous tests (no running event loop): polls ``fn`` in a private loop."""
    result: T = asyncio.run(eventually(fn, timeout=timeout, interval=interval, message=message))
    return result
