"""ControllerRevision data, hashes and names, and StatefulSet identity, against upstream's
``pkg/controller/history`` and ``pkg/controller/statefulset/stateful_set_utils.go``."""

from __future__ import annotations

import datetime

from kplane.controllers import history, stsutil


def test_fnv32_is_fnv1_not_fnv1a() -> None:
    """Go's ``fnv.New32`` (FNV-1): the published test vectors for "" and "a"."""
    assert history.fnv32(b"") == 0x811C9DC5
    assert history.fnv32(b"a") == 0x050C5D7E


def _sts(**spec: object) -> dict[str, object]:
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "web", "namespace": "ns", "uid": "u1", "generation": 2},
        "spec": {
            "replicas": 2,
            "serviceName": "svc",
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c"}]}},
            **spec,
        },
    }


def test_revision_data_replaces_the_template_and_hash_depends_on_collisions() -> None:
    """data is the template under spec with ``$patch: replace``; the collision count changes the hash."""
    data = history.revision_data(_sts())
    assert data["spec"]["template"]["$patch"] == "replace"
    assert history.template_of({"data": data}) == _sts()["spec"]["template"]  # type: ignore[index]
    plain, bumped = history.revision_hash(data, None), history.revision_hash(data, 1)
    assert plain != bumped and set(plain) <= set("bcdfghjklmnpqrstvwxz2456789")
    assert history.revision_name("x" * 300, plain) == "x" * 223 + "-" + plain


def test_pod_identity_and_claims() -> None:
    """Pod ``web-1``: identity labels, hostname, subdomain, the claim volume ``data-web-1``."""
    sts = _sts(volumeClaimTemplates=[{"metadata": {"name": "data"}, "spec": {}}])
    revision = {"metadata": {"name": "web-abc"}, "data": history.revision_data(sts)}
    pod = stsutil.new_pod(sts, revision, 1)
    assert pod["metadata"]["labels"] == {
        "app": "web",
        "statefulset.kubernetes.io/pod-name": "web-1",
        "apps.kubernetes.io/pod-index": "1",
        "controller-revision-hash": "web-abc",
    }
    assert pod["spec"]["hostname"] == "web-1" and pod["spec"]["subdomain"] == "svc"
    assert pod["spec"]["volumes"] == [{"name": "data", "persistentVolumeClaim": {"claimName": "data-web-1"}}]
    assert stsutil.ordinal_of(sts, pod) == 1
    assert stsutil.ordinal_of(sts, {"metadata": {"name": "webx-1"}}) is None


def test_status_completes_the_rolling_update() -> None:
    """Once every pod is updated and ready, currentRevision becomes the update revision."""
    now = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    ready = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    pods = [
        {"metadata": {"name": f"web-{i}", "labels": {"controller-revision-hash": "new"}}, "status": ready}
        for i in range(2)
    ]
    status, _ = stsutil.status(_sts(), pods, "old", "new", now)
    assert status["currentRevision"] == "new" and status["currentReplicas"] == 2
    pods[0]["metadata"]["labels"] = {"controller-revision-hash": "old"}
    status, _ = stsutil.status(_sts(), pods, "old", "new", now)
    assert (status["currentRevision"], status["currentReplicas"], status["updatedReplicas"]) == ("old", 1, 1)
    assert status["observedGeneration"] == 2 and status["readyReplicas"] == 2
