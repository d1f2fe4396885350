"""``kplane.testing``: an in-process control plane and helpers for testing operators.

Beside ``kplane.cli``, the one other place where the server and client stacks meet.

* ``ControlPlane`` / ``ThreadedControlPlane``: the real kplane server with memory storage on a free
  loopback port (HTTPS, admin credentials), ready in milliseconds, with a client, a kubeconfig and
  CRDs installed (``controlplane``);
* ``eventually`` / ``consistently``: poll a condition, as Gomega does (``eventually``);
* ``AutoAdvancingClock``: a fake clock that jumps to the next timer when the loop is idle (``clock``);
* ``FaultPlan``: seeded, replayable 409 storms, dropped watches, 410 on resume and slow writes
  injected inside the server (``faults``);
* pytest fixtures ``kplane``, ``kplane_client``, ``kplane_clock``, ``kplane_session``
  (``pytest_plugin``, registered through the ``pytest11`` entry point).

Only this package's ``__all__`` carries compatibility promises.
"""

from kplane.testing.clock import AutoAdvancingClock
from kplane.testing.controlplane import ControlPlane, CrdSource, ThreadedControlPlane
from kplane.testing.eventually import consistently, eventually, eventually_blocking
from kplane.testing.faults import (
    Conflicts,
    DropWatches,
    ExpireOnResume,
    FaultPlan,
    Injection,
    Match,
    SlowWrites,
)

__all__ = [
    "AutoAdvancingClock",
    "Conflicts",
    "ControlPlane",
    "CrdSource",
    "DropWatches",
    "ExpireOnResume",
    "FaultPlan",
    "Injection",
    "Match",
    "SlowWrites",
    "ThreadedControlPlane",
    "consistently",
    "eventually",
    "eventually_blocking",
]
