"""Upstream ``SetDefaults_*`` of built-in kinds, one function per definition."""

from __future__ import annotations

from typing import Any

import pytest

from kplane.api import schema as api_schema
from kplane.api.schema import builtin_defaults as bd


@pytest.mark.parametrize(
    ("image", "policy"),
    [
        ("nginx", "Always"),
        ("nginx:latest", "Always"),
        ("nginx:1.27", "IfNotPresent"),
        ("registry:5000/team/app", "Always"),
        ("registry:5000/team/app:v2", "IfNotPresent"),
        ("nginx@sha256:" + "a" * 64, "IfNotPresent"),
    ],
)
def test_image_pull_policy_follows_tag(image: str, policy: str) -> None:
    """Always for latest or no tag (without digest), IfNotPresent otherwise."""
    container: dict[str, Any] = {"name": "c", "image": image}
    bd.container(container)
    assert container["imagePullPolicy"] == policy


def test_explicit_values_are_kept() -> None:
    """Defaults never overwrite what the user set (including explicit zeros)."""
    obj: dict[str, Any] = {
        "spec": {"replicas": 0, "revisionHistoryLimit": 0, "strategy": {"type": "Recreate"}}
    }
    bd.deployment(obj)
    assert obj["spec"]["replicas"] == 0
    assert obj["spec"]["revisionHistoryLimit"] == 0
    assert obj["spec"]["strategy"] == {"type": "Recreate"}


def test_daemon_set_and_stateful_set() -> None:
    """DaemonSet and StatefulSet rollout defaults."""
    ds: dict[str, Any] = {"spec": {}}
    bd.daemon_set(ds)
    assert ds["spec"] == {
        "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}},
        "revisionHistoryLimit": 10,
    }
    sts: dict[str, Any] = {"spec": {}}
    bd.stateful_set(sts)
    assert sts["spec"] == {
        "podManagementPolicy": "OrderedReady",
        "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
        "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"},
        "replicas": 1,
        "revisionHistoryLimit": 10,
    }


def test_replica_set() -> None:
    """ReplicaSet replicas default to 1."""
    rs: dict[str, Any] = {}
    bd.replica_set(rs)
    assert rs == {"spec": {"replicas": 1}}


def test_job_defaults() -> None:
    """A Job gets completions/parallelism 1, backoffLimit 6, NonIndexed, suspend false and template labels."""
    obj: dict[str, Any] = {
        "metadata": {"name": "j"},
        "spec": {"template": {"metadata": {"labels": {"a": "b"}}}},
    }
    bd.job(obj)
    spec = obj["spec"]
    assert (spec["completions"], spec["parallelism"], spec["backoffLimit"]) == (1, 1, 6)
    assert spec["completionMode"] == "NonIndexed"
    assert spec["suspend"] is False
    assert spec["podReplacementPolicy"] == "TerminatingOrFailed"
    assert obj["metadata"]["labels"] == {"a": "b"}


def test_job_parallelism_alone_leaves_completions_unset() -> None:
    """With only parallelism given, completions stays unset (a work-queue job)."""
    obj: dict[str, Any] = {"spec": {"parallelism": 3}}
    bd.job(obj)
    assert "completions" not in obj["spec"]


def test_job_with_pod_failure_policy() -> None:
    """A pod failure policy switches podReplacementPolicy to Failed and defaults condition status."""
    obj: dict[str, Any] = {
        "spec": {"podFailurePolicy": {"rules": [{"onPodConditions": [{"type": "DisruptionTarget"}]}]}}
    }
    bd.job(obj)
    assert obj["spec"]["podReplacementPolicy"] == "Failed"
    assert obj["spec"]["podFailurePolicy"]["rules"][0]["onPodConditions"][0]["status"] == "True"


def test_cron_job_defaults() -> None:
    """CronJob concurrency, suspend and history limits."""
    obj: dict[str, Any] = {"spec": {"schedule": "* * * * *"}}
    bd.cron_job(obj)
    assert obj["spec"] == {
        "schedule": "* * * * *",
        "concurrencyPolicy": "Allow",
        "suspend": False,
        "successfulJobsHistoryLimit": 3,
        "failedJobsHistoryLimit": 1,
    }


def test_secret_and_namespace() -> None:
    """Secrets are Opaque; a Namespace gets its name label and phase Active."""
    sec: dict[str, Any] = {}
    bd.secret(sec)
    assert sec["type"] == "Opaque"
    ns: dict[str, Any] = {"metadata": {"name": "team"}}
    bd.namespace(ns)
    assert ns["metadata"]["labels"] == {"kubernetes.io/metadata.name": "team"}
    assert ns["status"] == {"phase": "Active"}


def test_service_variants() -> None:
    """NodePort gets externalTrafficPolicy; LoadBalancer node-port allocation; ClientIP a timeout."""
    svc: dict[str, Any] = {
        "spec": {
            "type": "LoadBalancer",
            "sessionAffinity": "ClientIP",
            "ports": [{"port": 1, "targetPort": "web"}],
        }
    }
    bd.service(svc)
    spec = svc["spec"]
    assert spec["externalTrafficPolicy"] == "Cluster"
    assert spec["allocateLoadBalancerNodePorts"] is True
    assert spec["sessionAffinityConfig"] == {"clientIP": {"timeoutSeconds": 10800}}
    assert spec["ports"] == [{"port": 1, "targetPort": "web", "protocol": "TCP"}]


def test_volume_without_source_becomes_empty_dir_and_modes_default() -> None:
    """A source-less volume is an emptyDir; configMap/secret volumes get defaultMode 0644."""
    vol: dict[str, Any] = {"name": "v"}
    bd.volume(vol)
    assert vol == {"name": "v", "emptyDir": {}}
    source: dict[str, Any] = {"name": "cm"}
    bd.default_mode(source)
    assert source["defaultMode"] == 420


def test_hooks_apply_through_the_compiled_walk_for_cron_job_templates() -> None:
    """A CronJob's pod template is defaulted by the PodSpec/Container hooks, the Job level is not."""
    compiled = api_schema.compiled_for_gvk("batch", "v1", "CronJob")
    assert compiled is not None
    obj = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "c"},
        "spec": {
            "schedule": "*/5 * * * *",
            "jobTemplate": {
                "spec": {
                    "template": {
                        "spec": {
                            "restartPolicy": "OnFailure",
                            "containers": [{"name": "c", "image": "busybox"}],
                        }
                    }
                }
            },
        },
    }
    result = compiled.process(obj)
    assert result.errors == []
    job_spec = result.obj["spec"]["jobTemplate"]["spec"]
    assert "backoffLimit" not in job_spec
    pod_spec = job_spec["template"]["spec"]
    assert pod_spec["restartPolicy"] == "OnFailure"
    assert pod_spec["containers"][0]["terminationMessagePolicy"] == "File"
    assert result.obj["spec"]["concurrencyPolicy"] == "Allow"


def test_every_hook_names_an_existing_definition() -> None:
    """No hook is keyed by a definition name that does not exist (a typo would silently never run)."""
    defs = api_schema.definitions()
    assert [name for name in bd.HOOKS if name not in defs] == []
