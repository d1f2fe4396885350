"""A fake clock that advances itself when the event loop has nothing else to do.

Design note. ``FakeClock`` (``kplane._util.clock``) moves only when a test steps it, which suits
code with one timer but not a reconciler whose requeues, resyncs, backoffs and lease renewals all
sleep on the clock. ``AutoAdvancingClock`` adds a driver task (trio's ``MockClock`` with
``autojump_threshold=0`` is the prior art): whenever something sleeps on the clock and every other
task in the loop is blocked, it jumps straight to the earliest deadline and wakes those sleepers, so
an hour of controller time passes in milliseconds and in the same order every run.

"Every other task is blocked" is read from asyncio's ready queue: the loop is idle when, for
``settle`` consecutive iterations, the driver is the only callback ready. Each such iteration
polls sockets without waiting, so a request to an in-loop ``ControlPlane`` (loopback delivers at
once) keeps the loop busy and is answered before time moves; work done in other threads (the
``ThreadedControlPlane``, ``asyncio.to_thread``) is not seen, hence ``settle_time``: the loop
must also have stayed idle for that much real time. On an event loop without an inspectable ready
queue (uvloop) only ``settle_time`` is used; give it a few milliseconds there.

Time does not advance while nothing sleeps on the clock, and real-time waits (``asyncio.sleep``,
``asyncio.timeout``) are untouched: they are not on this clock.
"""

from __future__ import annotations

import asyncio
import datetime
from types import TracebackType
from typing import Any

from kplane._util import clock as clock_mod


class AutoAdvancingClock(clock_mod.FakeClock):
    """A ``FakeClock`` that jumps to the next deadline when the loop is idle; ``async with`` starts it.

    ``start()`` (inside a running loop) begins auto-advancing, ``aclose()`` stops it; ``step``
    and ``set`` still work. ``jumps`` counts the automatic advances.
    """

    def __init__(
        self,
        start: datetime.datetime | None = None,
        *,
        settle: int = 3,
        settle_time: float = 0.0,
    ) -> None:
        super().__init__(start)
        self.settle = max(1, settle)
        self.settle_time = settle_time
        self.jumps = 0
        self._driver: asyncio.Task[None] | None = None
        self._wake: asyncio.Event | None = None

    async def sleep(self, seconds: float) -> None:
        if seconds > 0 and self._wake is not None:
            self._wake.set()
        await super().sleep(seconds)

    def start(self) -> None:
        """Start the driver in the running loop (idempotent)."""
        if self._driver is None:
            self._wake = asyncio.Event()
            self._driver = asyncio.get_running_loop().create_task(self._drive(), name="kplane-clock")

    async def aclose(self) -> None:
        """Stop auto-advancing; sleepers stay asleep until stepped."""
        driver, self._driver, self._wake = self._driver, None, None
        if driver is not None:
            driver.cancel()
            await asyncio.gather(driver, return_exceptions=True)

    async def __aenter__(self) -> AutoAdvancingClock:
        self.start()
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    def next_deadline(self) -> float | None:
        """The earliest monotonic time someone sleeps until, or None."""
        pending = [deadline for deadline, _, fut in self._sleepers if not fut.done()]
        return min(pending) if pending else None

    async def _drive(self) -> None:
        assert self._wake is not None
        loop = asyncio.get_running_loop()
        while True:
            if not self.has_waiters():
                self._wake.clear()
                await self._wake.wait()
                continue
            if await self._idle(loop):
                deadline = self.next_deadline()
                if deadline is not None:
                    self.jumps += 1
                    self.set(deadline)

    async def _idle(self, loop: asyncio.AbstractEventLoop) -> bool:
        """True when nothing but this driver ran for ``settle`` iterations (after ``settle_time``)."""
        if self.settle_time > 0:
            await asyncio.sleep(self.settle_time)
        ready: Any = getattr(loop, "_ready", None)  # asyncio's ready deque; absent on uvloop
        for _ in range(self.settle):
            await asyncio.sleep(0)
            if ready is not None and len(ready) > 0:
                return False
        return True
