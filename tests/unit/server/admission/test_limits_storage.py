"""LimitRanger's constraints and totals, and StorageObjectInUseProtection, without a server.
Messages are upstream's (``plugin/pkg/admission/limitranger/admission.go``; aggregation as
``k8s.io/apimachinery/pkg/util/errors`` prints it)."""

from __future__ import annotations

import pytest

from kplane._util.clock import FakeClock
from kplane.api import errors
from kplane.api.builtin.records import builtin_catalog
from kplane.server.admission import limitranger, plugin, storageprotection
from kplane.server.registry import admitting
from kplane.server.storage.memory import MemoryStorage


def _ctx() -> plugin.Context:
    return plugin.Context(MemoryStorage(), builtin_catalog(), FakeClock())


@pytest.mark.parametrize(
    ("item", "requests", "limits", "expected"),
    [
        (
            {"min": {"cpu": "100m"}},
            {},
            {},
            ["minimum cpu usage per Container is 100m.  No request is specified"],
        ),
        (
            {"min": {"cpu": "100m"}},
            {"cpu": "50m"},
            {},
            ["minimum cpu usage per Container is 100m, but request is 50m"],
        ),
        (
            {"min": {"cpu": "100m"}},
            {"cpu": "200m"},
            {"cpu": "0.05"},
            ["minimum cpu usage per Container is 100m, but limit is 50m"],
        ),
        (
            {"max": {"memory": "1Gi"}},
            {},
            {},
            ["maximum memory usage per Container is 1Gi.  No limit is specified"],
        ),
        (
            {"max": {"memory": "1Gi"}},
            {},
            {"memory": "2048Mi"},
            ["maximum memory usage per Container is 1Gi, but limit is 2Gi"],
        ),
        (
            {"max": {"cpu": "1"}},
            {"cpu": "2"},
            {"cpu": "1"},
            ["maximum cpu usage per Container is 1, but request is 2"],
        ),
        (
            {"maxLimitRequestRatio": {"cpu": "2"}},
            {},
            {"cpu": "1"},
            [
                "cpu max limit to request ratio per Container is 2, "
                "but no request is specified or request is 0"
            ],
        ),
        (
            {"maxLimitRequestRatio": {"cpu": "2"}},
            {"cpu": "1"},
            {},
            ["cpu max limit to request ratio per Container is 2, but no limit is specified or limit is 0"],
        ),
        (
            {"maxLimitRequestRatio": {"cpu": "2"}},
            {"cpu": "100m"},
            {"cpu": "250m"},
            ["cpu max limit to request ratio per Container is 2, but provided ratio is 2.500000"],
        ),
        ({"min": {"cpu": "100m"}, "max": {"cpu": "1"}}, {"cpu": "500m"}, {"cpu": "1"}, []),
    ],
)
def test_container_constraints(
    item: dict[str, object], requests: dict[str, str], limits: dict[str, str], expected: list[str]
) -> None:
    assert limitranger.check("Container", item, requests, limits) == expected


def test_claim_max_is_on_the_request() -> None:
    """A claim's max bounds its request (maxRequestConstraint); its limits are not input."""
    item = {"max": {"storage": "2Gi"}}
    assert limitranger.check("PersistentVolumeClaim", item, {"storage": "5Gi"}, {}, max_on_request=True) == [
        "maximum storage usage per PersistentVolumeClaim is 2Gi, but request is 5Gi"
    ]
    assert limitranger.check("PersistentVolumeClaim", item, {}, {}, max_on_request=True) == [
        "maximum storage usage per PersistentVolumeClaim is 2Gi.  No request is specified"
    ]


def test_pod_totals() -> None:
    """Containers add up; an init container counts alone beside the sidecars before it; a sidecar
    adds to the total; a sum keeps its first term's format."""
    containers = [
        {"resources": {"requests": {"cpu": "250m", "memory": "64Mi"}}},
        {"resources": {"requests": {"cpu": "250m", "memory": "64Mi"}}},
    ]
    assert limitranger.pod_total(containers, [], "requests") == {"cpu": "500m", "memory": "128Mi"}
    big_init = [{"resources": {"requests": {"cpu": "2"}}}]
    assert limitranger.pod_total(containers, big_init, "requests")["cpu"] == "2"
    sidecar = [{"restartPolicy": "Always", "resources": {"requests": {"cpu": "100m"}}}]
    assert limitranger.pod_total(containers, sidecar, "requests")["cpu"] == "600m"


async def test_claim_update_is_checked() -> None:
    """A claim's update (a resize) is bounded too; subresources are not."""
    ctx = _ctx()
    ranges = ctx.record("", "v1", "limitranges")
    lr = {
        "apiVersion": "v1",
        "kind": "LimitRange",
        "metadata": {"name": "lr", "namespace": "ns"},
        "spec": {"limits": [{"type": "PersistentVolumeClaim", "max": {"storage": "2Gi"}}]},
    }
    await ctx.storage.create(ranges.key("ns", "lr"), lr)
    claims = ctx.record("", "v1", "persistentvolumeclaims")
    claim = {
        "metadata": {"name": "c", "namespace": "ns"},
        "spec": {"resources": {"requests": {"storage": "3Gi"}}},
    }
    ranger = limitranger.LimitRanger(ctx)
    with pytest.raises(
        errors.Forbidden, match=r'persistentvolumeclaims "c" is forbidden: maximum storage usage'
    ):
        await ranger.validate(admitting.Attributes("UPDATE", claims, "ns", "c", claim))
    await ranger.validate(admitting.Attributes("UPDATE", claims, "ns", "c", claim, subresource="status"))


@pytest.mark.parametrize(
    ("plural", "finalizer"),
    [
        ("persistentvolumeclaims", "kubernetes.io/pvc-protection"),
        ("persistentvolumes", "kubernetes.io/pv-protection"),
    ],
)
async def test_protection_finalizer_added_once(plural: str, finalizer: str) -> None:
    """Created claims and volumes get the finalizer, after any they have, once; updates do not."""
    record = _ctx().record("", "v1", plural)
    protect = storageprotection.StorageObjectInUseProtection()
    assert protect.mutates("", plural) and not protect.mutates("", "pods")
    obj: dict[str, object] = {"metadata": {"name": "x", "finalizers": ["example.com/keep"]}}
    await protect.mutate(admitting.Attributes("CREATE", record, "", "x", obj))
    await protect.mutate(admitting.Attributes("CREATE", record, "", "x", obj))
    assert obj["metadata"] == {"name": "x", "finalizers": ["example.com/keep", finalizer]}
    fresh: dict[str, object] = {"metadata": {"name": "y"}}
    await protect.mutate(admitting.Attributes("UPDATE", record, "", "y", fresh))
    assert fresh == {"metadata": {"name": "y"}}
