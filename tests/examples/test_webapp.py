"""The example WebApp operator against ``kplane.testing`` (the in-process control plane)."""

from __future__ import annotations

import ssl
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest

from examples.webapp import crd, operator
from kplane import testing
from kplane.runtime.webhook import WebhookServerOptions
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


async def test_webapp_validating_webhook_refuses(kplane: testing.ControlPlane, tmp_path: Path) -> None:
    """The operator's manager serves the WebApp validator over HTTPS; an AdmissionReview for a WebApp
    whose image pins no version is refused with upstream's Invalid Status, a good one is allowed."""
    assert kplane.config is not None
    hooks = WebhookServerOptions(host="127.0.0.1", port=0, cert_dir=tmp_path, self_signed=True)
    manager = rs.new_manager(kplane.config, field_manager=operator.FIELD_MANAGER, webhook=hooks)
    await operator.setup(manager, validating_webhook=True)
    server = manager.webhook_server()
    assert server.paths == ["/validate-example-kplane-dev-v1-webapp"]
    async with rs.running(manager):
        refused = await _review(server, webapp_scenario.webapp("bad", "default", image="nginx"))
        # As apierrors.NewInvalid(GroupKind, name, field.ErrorList) renders it (apimachinery
        # pkg/api/errors/errors.go): 422, reason Invalid, one cause per field error.
        assert refused == {
            "uid": "0e3e6f0c-1111-4b6e-9d7a-6a1f3c2b9a10",
            "allowed": False,
            "status": {
                "metadata": {},
                "status": "Failure",
                "message": 'WebApp.example.kplane.dev "bad" is invalid: spec.image: Invalid value: "nginx": '
                "must name a tag or a digest",
                "reason": "Invalid",
                "details": {
                    "name": "bad",
                    "group": "example.kplane.dev",
                    "kind": "WebApp",
                    "causes": [
                        {
                            "reason": "FieldValueInvalid",
                            "message": 'Invalid value: "nginx": must name a tag or a digest',
                            "field": "spec.image",
                        }
                    ],
                },
                "code": 422,
            },
        }
        latest = await _review(server, webapp_scenario.webapp("l", "default", image="nginx:latest"))
        assert latest["allowed"] is False and "does not pin a version" in latest["status"]["message"]
        good = await _review(
            server, webapp_scenario.webapp("ok", "default", image="registry:5000/nginx:1.27")
        )
        assert good == {
            "uid": "0e3e6f0c-1111-4b6e-9d7a-6a1f3c2b9a10",
            "allowed": True,
            "status": {"metadata": {}, "code": 200},
        }
        many = await _review(server, webapp_scenario.webapp("big", "default", replicas=30))
        assert many["allowed"] is True
        assert many["warnings"] == ["spec.replicas: 30 replicas is more than 20; is that intended?"]


async def _review(server: Any, obj: dict[str, Any]) -> Any:
    body = {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "0e3e6f0c-1111-4b6e-9d7a-6a1f3c2b9a10",
            "kind": {"group": "example.kplane.dev", "version": "v1", "kind": "WebApp"},
            "resource": {"group": "example.kplane.dev", "version": "v1", "resource": "webapps"},
            "name": obj["metadata"]["name"],
            "namespace": "default",
            "operation": "CREATE",
            "userInfo": {"username": "admin"},
            "object": obj,
            "oldObject": None,
            "dryRun": False,
        },
    }
    ctx = ssl.create_default_context(cafile=str(server.options.cert_file))
    async with (
        aiohttp.ClientSession() as session,
        session.post(
            server.url + "/validate-example-kplane-dev-v1-webapp",
            data=orjson.dumps(body),
            headers={"Content-Type": "application/json"},
            ssl=ctx,
        ) as resp,
    ):
        assert resp.status == 200
        review = orjson.loads(await resp.read())
        assert review["kind"] == "AdmissionReview"
        return review["response"]
