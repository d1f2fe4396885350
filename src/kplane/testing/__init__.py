"""``kplane.testing``: an in-process control plane and helpers for testing operators.

Beside ``kplane.cli``, the one other place where the server and client stacks meet.

* ``ControlPlane`` / ``ThreadedControlPlane``: the real kplane server with memory storage on a free
  loopback port (HTTPS, admin credentials), ready in milliseconds, with a client, a kubeconfig and
  CRDs installed (``controlplane``);
* ``eventually`` / ``consistently``: poll a condition, as Gomega does (``polling``);
* ``AutoAdvancingClock``: a fake clock that jumps to the next timer when the loop is idle (``clock``);
* ``FaultPlan``: seeded, replayable 409 storms, dropped watches, 410 on resume and slow writes
  injected inside the server (``faults``);
* pytest fixtures ``kplane``, ``kplane_client``, ``kplane_clock``, ``kplane_session``
  (``pytest_plugin``, registered through the ``pytest11`` entry point).

Only this package's ``__all__`` carries compatibility promises.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kplane.testing.clock import AutoAdvancingClock
    from kplane.testing.controlplane import ControlPlane, CrdSource, ThreadedControlPlane
    from kplane.testing.faults import (
        Conflicts,
        DropWatches,
        ExpireOnResume,
        FaultPlan,
        Injection,
        Match,
        SlowWrites,
    )
    from kplane.testing.polling import consistently, eventually, eventually_blocking

# Where each public name lives. Names load on first use so that importing the pytest plugin (done by
# every pytest run in an environment with kplane installed) does not import the client and server.
_HOMES = {
    "AutoAdvancingClock": "clock",
    "ControlPlane": "controlplane",
    "CrdSource": "controlplane",
    "ThreadedControlPlane": "controlplane",
    "consistently": "polling",
    "eventually": "polling",
    "eventually_blocking": "polling",
    "Conflicts": "faults",
    "DropWatches": "faults",
    "ExpireOnResume": "faults",
    "FaultPlan": "faults",
    "Injection": "faults",
    "Match": "faults",
    "SlowWrites": "faults",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'kplane.testing' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"kplane.testing.{home}"), name)
    globals()[name] = value
    return value


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
