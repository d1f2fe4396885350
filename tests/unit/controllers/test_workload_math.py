"""Deployment arithmetic and the API server's GC finalizers, against upstream's documented values."""

from __future__ import annotations

import pytest

from kplane.api.builtin import builtin_catalog
from kplane.api.catalog import ResourceRecord
from kplane.controllers import deployutil as du
from kplane.controllers import workload
from kplane.server.registry.deletion import DeleteOptions, gc_finalizers


def deployment(replicas: int, surge: object = "25%", unavailable: object = "25%") -> dict[str, object]:
    rolling = {"maxSurge": surge, "maxUnavailable": unavailable}
    return {"spec": {"replicas": replicas, "strategy": {"type": "RollingUpdate", "rollingUpdate": rolling}}}


# deployment_util.go ResolveFenceposts: surge rounded up, unavailable down (cluster.md §5.2)
@pytest.mark.parametrize(("replicas", "expected"), [(1, (1, 0)), (3, (1, 0)), (4, (1, 1)), (10, (3, 2))])
def test_fenceposts_round_as_upstream(replicas: int, expected: tuple[int, int]) -> None:
    assert du.fenceposts(deployment(replicas)) == expected


def test_both_zero_means_one_unavailable() -> None:
    assert du.fenceposts(deployment(5, 0, 0)) == (0, 1)
    assert du.max_unavailable({"spec": {"replicas": 5, "strategy": {"type": "Recreate"}}}) == 0


def test_hash_alphabet_and_collisions() -> None:
    template = {
        "metadata": {"labels": {"app": "web"}},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    }
    h0, h1 = du.compute_hash(template, None), du.compute_hash(template, 1)
    # rand.SafeEncodeString of a decimal: only these characters appear
    assert set(h0) <= set("456789bcdf") and set(h1) <= set("456789bcdf")
    assert h0 != h1 and h0 == du.compute_hash(dict(template), None)
    assert workload.safe_encode("0123456789") == "456789bcdf"


def test_fnv32a_reference_vectors() -> None:
    assert du.fnv32a(b"") == 0x811C9DC5
    assert du.fnv32a(b"a") == 0xE40C292C


def test_slow_start_batches() -> None:
    assert list(workload.slow_start_batches(10)) == [1, 2, 4, 3]
    assert list(workload.slow_start_batches(0)) == []


def test_percentages() -> None:
    assert workload.int_or_percent("25%", 10, round_up=True) == 3
    assert workload.int_or_percent("25%", 10, round_up=False) == 2
    assert workload.int_or_percent(2, 10, round_up=False) == 2


def _record(group: str, plural: str) -> ResourceRecord:
    return next(r for r in builtin_catalog() if r.group == group and r.plural == plural)


def test_gc_finalizers_as_deletion_finalizers_for_garbage_collection() -> None:
    deploys = _record("apps", "deployments")
    jobs = _record("batch", "jobs")
    assert gc_finalizers(deploys, [], DeleteOptions()) == []
    assert gc_finalizers(deploys, [], DeleteOptions(propagation_policy="Orphan")) == ["orphan"]
    assert gc_finalizers(deploys, ["x"], DeleteOptions(propagation_policy="Foreground")) == [
        "x",
        "foregroundDeletion",
    ]
    assert gc_finalizers(deploys, ["orphan"], DeleteOptions(propagation_policy="Background")) == []
    assert gc_finalizers(deploys, [], DeleteOptions(orphan_dependents=True)) == ["orphan"]
    # Jobs orphan their pods by default (pkg/registry/batch/job/strategy.go)
    assert gc_finalizers(jobs, [], DeleteOptions()) == ["orphan"]
