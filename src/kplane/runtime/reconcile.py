"""The reconcile model: what a controller asks (``Request``), what a reconciler answers (``Result``).

A reconciler is level-based: it is told *which* object to look at, never *what happened*. It reads
the current state (from the cache), moves the world toward the object's spec, writes status, and
returns. It must be idempotent: the same request may arrive again at any time (after a restart, a
resync, or because several events were folded into one request).

Outcomes, as controller-runtime's ``reconcileHandler`` treats them (the policy itself lives in one
function, ``kplane.runtime.controller.requeue_policy``):

* an exception that is not a ``TerminalError`` → retried after the rate limiter's per-item backoff;
* a ``TerminalError`` → logged and counted, not retried until a new event arrives;
* ``Result(requeue_after=d)`` → the backoff is reset and the request comes back after ``d`` seconds;
* ``Result(requeue=True)`` → retried through the rate limiter (backoff grows, no error counted);
* ``Result()`` → done; the backoff is reset.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from typing import Protocol, runtime_checkable


@dataclasses.dataclass(frozen=True, slots=True)
class Request:
    """The object to reconcile: ``namespace`` is empty for cluster-scoped objects."""

    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


@dataclasses.dataclass(frozen=True, slots=True)
class Result:
    """What the reconciler asks of the queue after a successful pass (see the module docstring)."""

    requeue_after: float = 0.0
    requeue: bool = False


class TerminalError(Exception):
    """A failure that retrying cannot fix (invalid spec, forbidden action): never requeued.

    Raise it directly, or wrap the cause (``raise TerminalError("bad spec") from err``).
    """


@runtime_checkable
class Reconciler(Protocol):
    """Moves the object named by a ``Request`` toward its desired state.

    ``reconcile`` may be called concurrently for *different* requests (``max_concurrent_reconciles``),
    never for the same one. It returns a ``Result`` (``None`` means ``Result()``) or raises.
    Cancellation means the manager is stopping: clean up and let ``CancelledError`` propagate.
    """

    async def reconcile(self, request: Request) -> Result | None: ...


ReconcileFunc = Callable[[Request], Awaitable[Result | None]]
"""A plain async function accepted wherever a ``Reconciler`` is (controller-runtime's ``reconcile.Func``)."""


def as_reconcile_func(reconciler: Reconciler | ReconcileFunc) -> ReconcileFunc:
    """The coroutine function to call for ``reconciler``, whichever form it was given in."""
    if isinstance(reconciler, Reconciler):
        return reconciler.reconcile
    if callable(reconciler):
        return reconciler
    raise TypeError(f"{reconciler!r} is neither a Reconciler nor an async function of a Request")
