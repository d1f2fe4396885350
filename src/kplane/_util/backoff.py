"""Exponential backoff with jitter, as apimachinery's ``wait.Backoff`` computes it.

``Backoff`` is an immutable description (initial duration, factor, jitter, steps, cap);
``Backoff.delays()`` yields the delays its ``Step()`` would return, one per call, forever.
``BackoffManager`` adds the reset rule the client-go reflector uses between watch reconnections:
when more than ``reset_interval`` has passed since the sequence last (re)started, it starts again
from the initial duration.

The step rule (apimachinery ``pkg/util/wait/backoff.go``): the delay returned is the current
duration, jittered to ``d + rand[0,1) * jitter * d`` (jitter only lengthens); then the duration is
multiplied by ``factor``; if it exceeds ``cap`` it becomes ``cap`` and the remaining steps drop to
zero. Once no steps remain, every further delay is the (capped) duration, jittered.
"""

from __future__ import annotations

import dataclasses
import math
import random
from collections.abc import Callable, Iterator

from kplane._util import clock as clock_mod

Rand = Callable[[], float]
"""A source of uniform floats in ``[0, 1)``; ``random.random`` unless a test injects one."""


@dataclasses.dataclass(frozen=True, slots=True)
class Backoff:
    """Parameters of an exponential backoff; all times are seconds.

    ``steps`` bounds how many times the duration grows; callers that retry use it as the number of
    attempts (``retry.on_error`` runs ``steps`` attempts with ``steps - 1`` sleeps between them).
    ``cap`` of 0 means no cap. ``factor`` of 0 (or 1) means a constant duration.
    """

    duration: float
    factor: float = 1.0
    jitter: float = 0.0
    steps: int = 1
    cap: float = 0.0

    def delays(self, *, rand: Rand = random.random) -> Iterator[float]:
        """Yield the delays of successive ``Step()`` calls; the iterator never ends."""
        duration, steps = self.duration, self.steps
        while True:
            current = duration
            if steps >= 1:
                steps -= 1
                if self.factor != 0:
                    duration = duration * self.factor
                    if self.cap > 0 and duration > self.cap:
                        duration, steps = self.cap, 0
            yield jittered(current, self.jitter, rand=rand)


def jittered(duration: float, jitter: float, *, rand: Rand = random.random) -> float:
    """``duration`` lengthened by up to ``jitter * duration`` (no change when ``jitter <= 0``)."""
    if jitter <= 0:
        return duration
    return duration + rand() * jitter * duration


DEFAULT_RETRY = Backoff(duration=0.010, factor=1.0, jitter=0.1, steps=5)
"""client-go ``retry.DefaultRetry``: for conflicts between competing writers (5 attempts, ~10 ms apart)."""

DEFAULT_BACKOFF = Backoff(duration=0.010, factor=5.0, jitter=0.1, steps=4)
"""client-go ``retry.DefaultBackoff``: for an unrelated change racing a controller (~10, 50, 250 ms)."""

REFLECTOR_BACKOFF = Backoff(duration=0.8, factor=2.0, jitter=1.0, steps=math.ceil(30.0 / 0.8), cap=30.0)
"""The client-go reflector's error backoff: [0.8, 1.6) s, [1.6, 3.2) s, ... then [30, 60) s forever."""

REFLECTOR_BACKOFF_RESET = 120.0
"""Seconds after which the reflector's backoff sequence starts again from its initial duration."""


class BackoffManager:
    """A stateful backoff whose sequence restarts when it has run longer than ``reset_interval``.

    ``step()`` returns the next delay. If ``reset_interval`` is 0 every call restarts the sequence;
    otherwise the sequence restarts on the first call and on any call made more than
    ``reset_interval`` seconds (on ``clock``) after the last restart. Not thread-safe: use it from
    one task, as the reflector does.
    """

    def __init__(
        self,
        backoff: Backoff,
        *,
        reset_interval: float,
        clock: clock_mod.Clock | None = None,
        rand: Rand = random.random,
    ) -> None:
        self._backoff = backoff
        self._reset_interval = reset_interval
        self._clock: clock_mod.Clock = clock or clock_mod.RealClock()
        self._rand = rand
        self._delays = backoff.delays(rand=rand)
        self._last_start: float | None = None

    def step(self) -> float:
        """The next delay in seconds, restarting the sequence first if it is due for a reset."""
        now = self._clock.monotonic()
        if (
            self._reset_interval == 0
            or self._last_start is None
            or now - self._last_start > self._reset_interval
        ):
            self._delays = self._backoff.delays(rand=self._rand)
            self._last_start = now
        return next(self._delays)

    def reset(self) -> None:
        """Restart the sequence from the initial duration on the next ``step()``."""
        self._last_start = None


def reflector_backoff(clock: clock_mod.Clock | None = None, *, rand: Rand = random.random) -> BackoffManager:
    """The reflector's watch-reconnection backoff: 800 ms doubling to 30 s, jitter 1.0, reset after 2 min."""
    return BackoffManager(REFLECTOR_BACKOFF, reset_interval=REFLECTOR_BACKOFF_RESET, clock=clock, rand=rand)
