"""pytest fixtures for ``kplane.testing``, registered by the ``pytest11`` entry point.

Installing kplane makes these fixtures available; ``pytest_plugins = ["kplane.testing.pytest_plugin"]``
in a ``conftest.py`` is equivalent (for environments that disable entry-point plugins).

* ``kplane`` (async, per test): a ``ControlPlane`` in the test's event loop; ``kplane.client`` is
  ready. Needs pytest-asyncio. CRDs come from the ``kplane_crds`` fixture and faults from
  ``kplane_faults``: override either in your ``conftest.py`` or test module.
* ``kplane_client``: ``kplane.client`` itself.
* ``kplane_clock`` (async, per test): a started ``AutoAdvancingClock`` to give the code under test.
* ``kplane_session`` (sync, per session): one ``ThreadedControlPlane`` shared by every test (each
  test opens its own client on ``kplane_session.config``); use fresh namespaces per test.
* ``kplane_seed``: the fault seed, from ``--kplane-seed`` or random; printed in failure reports so
  that a run can be replayed with ``--kplane-seed=N``.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:  # Loaded by fixtures only: every pytest run in an environment with kplane loads this.
    from kplane.client import typed
    from kplane.testing import clock, controlplane, faults

_SEED_KEY = pytest.StashKey[int]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--kplane-seed",
        type=int,
        default=None,
        help="seed of kplane.testing fault plans (default: random, printed on failure)",
    )


@pytest.fixture
def kplane_seed(request: pytest.FixtureRequest) -> int:
    """The seed to give a ``FaultPlan``: ``--kplane-seed`` when set, else a fresh random one."""
    given = request.config.getoption("--kplane-seed")
    seed = int(given) if given is not None else random.randrange(2**32)
    request.node.stash[_SEED_KEY] = seed
    return seed


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    seed = item.stash.get(_SEED_KEY, None)
    if seed is not None and report.failed:
        report.sections.append(("kplane.testing", f"fault seed {seed}: replay with --kplane-seed={seed}"))
    return report


@pytest.fixture
def kplane_crds() -> Sequence[controlplane.CrdSource]:
    """CRDs installed in the ``kplane`` control plane; override to add yours."""
    return ()


@pytest.fixture
def kplane_faults() -> faults.FaultPlan | None:
    """The fault plan of the ``kplane`` control plane (none); override to inject faults."""
    return None


@pytest.fixture(scope="session")
def kplane_session() -> Iterator[controlplane.ThreadedControlPlane]:
    """One control plane in a background thread for the whole session."""
    from kplane.testing import controlplane

    with controlplane.ThreadedControlPlane() as cp:
        yield cp


try:
    import pytest_asyncio
except ImportError:  # pragma: no cover - the async fixtures need pytest-asyncio
    pass
else:

    @pytest_asyncio.fixture
    async def kplane(
        kplane_crds: Sequence[controlplane.CrdSource], kplane_faults: faults.FaultPlan | None
    ) -> AsyncIterator[controlplane.ControlPlane]:
        """A fresh control plane in this test's event loop, CRDs installed."""
        from kplane.testing import controlplane

        async with controlplane.ControlPlane(crds=kplane_crds, faults=kplane_faults) as cp:
            yield cp

    @pytest_asyncio.fixture
    async def kplane_clock() -> AsyncIterator[clock.AutoAdvancingClock]:
        """A fake clock that jumps to the next timer whenever the test's loop is idle."""
        from kplane.testing import clock

        async with clock.AutoAdvancingClock() as c:
            yield c

    @pytest_asyncio.fixture
    async def kplane_client(kplane: controlplane.ControlPlane) -> typed.Client:
        """The admin client of the ``kplane`` control plane."""
        return kplane.client
