"""The example WebApp operator against ``kplane.testing`` (the in-process control plane)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from examples.webapp import crd, operator
from kplane import testing
from tests.e2e import runtime_support as rs
from tests.examples import webapp_scenario


@pytest.fixture
def kplane_crds() -> Sequence[testing.CrdSource]:
    return [crd.MANIFEST]


async def test_webapp_lifecycle_in_process(kplane: testing.ControlPlane) -> None:
    """Create, spec change, drift repaired, deletion through the finalizer, on kplane.testing."""
    assert kplane.config is not None
    await webapp_scenario.lifecycle(rs.new_manager(kplane.config, field_manager=operator.FIELD_MANAGER))


@pytest.mark.slow
async def test_webapp_converges_under_conflict_storm(kplane_seed: int) -> None:
    """With a fifth of the operator's writes refused with 409, the WebApp still converges.

    Only writes the test itself never makes are refused (status, ConfigMap and Service applies), so
    every failure the scenario sees would be the operator's.
    """
    operator_only = testing.Match(verbs=("update", "patch"), resources=("configmaps", "services"))
    status_only = testing.Match(
        verbs=("update",), resources=("webapps.example.kplane.dev",), subresource="status"
    )
    plan = testing.FaultPlan(
        testing.Conflicts(probability=0.2, match=operator_only),
        testing.Conflicts(probability=0.2, match=status_only),
        seed=kplane_seed,
    )
    async with testing.ControlPlane(crds=[crd.MANIFEST], faults=plan) as cp:
        assert cp.config is not None
        await webapp_scenario.lifecycle(rs.new_manager(cp.config, field_manager=operator.FIELD_MANAGER))
    assert plan.count(testing.Conflicts) > 0


@pytest.mark.slow
async def test_webapp_converges_with_cut_and_expired_watches(kplane_seed: int) -> None:
    """Watches cut every few events and resumes answered 410 Expired: the operator still converges."""
    plan = testing.FaultPlan(
        testing.DropWatches(after_lines=(2, 6)),
        testing.ExpireOnResume(probability=0.5),
        seed=kplane_seed,
    )
    async with testing.ControlPlane(crds=[crd.MANIFEST], faults=plan) as cp:
        assert cp.config is not None
        await webapp_scenario.lifecycle(rs.new_manager(cp.config, field_manager=operator.FIELD_MANAGER))
    assert plan.count(testing.DropWatches) > 0
