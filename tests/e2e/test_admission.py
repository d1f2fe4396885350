"""The admission chain seen through the real kubectl: what upstream's default plugins add to a Pod,
ResourceQuota refusals, PodSecurity enforce and warn, NamespaceLifecycle, and the plugin flags."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import Server, requires_kubectl, start_server
from tests.e2e.helpers import Kube, poll, unique

pytestmark = requires_kubectl


@pytest.fixture
def ns(api: Kube) -> str:
    name = unique("adm")
    api.ok(
        "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    )
    return name


def _pod(server: Server, ns: str, name: str) -> dict[str, Any]:
    return dict(json.loads(server.kubectl("get", "pod", name, "-n", ns, "-o", "json").stdout))


def test_kubectl_run_pod_has_upstream_admission_defaults(server: Server, ns: str) -> None:
    """A Pod from ``kubectl run`` gets the default ServiceAccount, its projected token volume and
    mount, priority 0, PreemptLowerPriority and the two 300 s tolerations, as on a stock 1.32
    (plugin/pkg/admission/{serviceaccount,priority,defaulttolerationseconds})."""
    server.kubectl("run", "p", "--image=nginx", "-n", ns)
    spec = _pod(server, ns, "p")["spec"]
    assert spec["serviceAccountName"] == "default"
    assert spec["serviceAccount"] == "default"
    assert spec["priority"] == 0
    assert spec["preemptionPolicy"] == "PreemptLowerPriority"
    assert spec["tolerations"] == [
        {
            "key": "node.kubernetes.io/not-ready",
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": 300,
        },
        {
            "key": "node.kubernetes.io/unreachable",
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": 300,
        },
    ]
    (volume,) = spec["volumes"]
    assert re.fullmatch(r"kube-api-access-[bcdfghjklmnpqrstvwxz2456789]{5}", volume["name"])
    assert volume["projected"] == {
        "defaultMode": 420,
        "sources": [
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {
                "downwardAPI": {
                    "items": [
                        {
                            "path": "namespace",
                            "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                        }
                    ]
                }
            },
        ],
    }
    assert spec["containers"][0]["volumeMounts"] == [
        {
            "name": volume["name"],
            "readOnly": True,
            "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
        }
    ]


def test_automount_false_and_missing_service_account(server: Server, ns: str) -> None:
    """``automountServiceAccountToken: false`` leaves the pod without the volume; naming a missing
    ServiceAccount is refused with upstream's 403."""
    over = {"spec": {"automountServiceAccountToken": False}}
    server.kubectl("run", "q", "--image=nginx", "-n", ns, f"--overrides={json.dumps(over)}")
    assert "volumes" not in _pod(server, ns, "q")["spec"]
    over = {"spec": {"serviceAccountName": "ghost"}}
    res = server.kubectl(
        "run", "r", "--image=nginx", "-n", ns, f"--overrides={json.dumps(over)}", check=False
    )
    assert res.returncode != 0
    assert (
        f'pods "r" is forbidden: error looking up service account {ns}/ghost: '
        'serviceaccount "ghost" not found' in res.stderr
    )


def test_priority_classes(server: Server, ns: str) -> None:
    """The system PriorityClasses exist; a pod naming one gets its value; an unknown one is refused
    (plugin/pkg/admission/priority)."""
    out = server.kubectl("get", "priorityclass", "-o", "name").stdout.split()
    assert {
        "priorityclass.scheduling.k8s.io/system-cluster-critical",
        "priorityclass.scheduling.k8s.io/system-node-critical",
    } <= set(out)
    over = {"spec": {"priorityClassName": "system-node-critical"}}
    server.kubectl("run", "crit", "--image=nginx", "-n", ns, f"--overrides={json.dumps(over)}")
    assert _pod(server, ns, "crit")["spec"]["priority"] == 2000001000
    over = {"spec": {"priorityClassName": "nope"}}
    res = server.kubectl(
        "run", "x", "--image=nginx", "-n", ns, f"--overrides={json.dumps(over)}", check=False
    )
    assert 'pods "x" is forbidden: no PriorityClass with name nope was found' in res.stderr


def test_resource_quota_refuses_the_third_pod(server: Server, ns: str) -> None:
    """A quota of 2 pods refuses the third with upstream's message; ``kubectl describe quota``
    shows used/hard (apiserver pkg/admission/plugin/resourcequota/controller.go)."""
    server.kubectl("create", "quota", "q", "--hard=pods=2,configmaps=5", "-n", ns)
    poll(
        lambda: (
            "used"
            in json.loads(server.kubectl("get", "quota", "q", "-n", ns, "-o", "json").stdout).get(
                "status", {}
            )
        )
    )
    server.kubectl("run", "a", "--image=nginx", "-n", ns)
    server.kubectl("run", "b", "--image=nginx", "-n", ns)
    res = server.kubectl("run", "c", "--image=nginx", "-n", ns, check=False)
    assert res.returncode != 0
    assert (
        'Error from server (Forbidden): pods "c" is forbidden: exceeded quota: q, requested: pods=1, '
        "used: pods=2, limited: pods=2" in res.stderr
    )
    described = server.kubectl("describe", "quota", "q", "-n", ns).stdout
    rows = {
        line.split()[0]: line.split()[1:]
        for line in described.splitlines()
        if line.startswith(("pods", "configmaps"))
    }
    assert rows["pods"] == ["2", "2"]
    server.kubectl("delete", "pod", "a", "-n", ns, "--wait=false")
    poll(
        lambda: "pods  1" in re.sub(r" +", "  ", server.kubectl("describe", "quota", "q", "-n", ns).stdout),
        timeout=15,
    )


def _privileged(name: str) -> str:
    return json.dumps(
        {"spec": {"containers": [{"name": name, "image": "nginx", "securityContext": {"privileged": True}}]}}
    )


def test_pod_security_enforce_refuses_and_warn_warns(server: Server, api: Kube) -> None:
    """``enforce=restricted`` refuses a privileged pod with upstream's message; ``warn=restricted``
    admits it with the warning (pod-security-admission admission/response.go)."""
    enforced, warned = unique("pse"), unique("psw")
    for name in (enforced, warned):
        api.ok(
            "POST",
            "/api/v1/namespaces",
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
        )
    server.kubectl("label", "ns", enforced, "pod-security.kubernetes.io/enforce=restricted")
    server.kubectl("label", "ns", warned, "pod-security.kubernetes.io/warn=restricted")
    detail = (
        'PodSecurity "restricted:latest": '
        'privileged (container "c" must not set securityContext.privileged=true), '
        "allowPrivilegeEscalation != false "
        '(container "c" must set securityContext.allowPrivilegeEscalation=false), '
        'unrestricted capabilities (container "c" must set securityContext.capabilities.drop=["ALL"]), '
        'runAsNonRoot != true (pod or container "c" must set securityContext.runAsNonRoot=true), '
        'seccompProfile (pod or container "c" must set securityContext.seccompProfile.type to '
        '"RuntimeDefault" or "Localhost")'
    )
    res = server.kubectl(
        "run", "p", "--image=nginx", "-n", enforced, f"--overrides={_privileged('c')}", check=False
    )
    assert res.returncode != 0
    assert f'Error from server (Forbidden): pods "p" is forbidden: violates {detail}' in res.stderr
    res = server.kubectl("run", "p", "--image=nginx", "-n", warned, f"--overrides={_privileged('c')}")
    assert f"Warning: would violate {detail}" in res.stderr
    assert "pod/p created" in res.stdout
    res = server.kubectl("label", "ns", warned, "pod-security.kubernetes.io/enforce=strict", check=False)
    assert (
        f'The Namespace "{warned}" is invalid: metadata.labels[pod-security.kubernetes.io/enforce]: '
        'Invalid value: "strict": must be one of privileged, baseline, restricted' in res.stderr
    )


def test_system_namespace_may_not_be_deleted_nor_used_when_missing(server: Server) -> None:
    """NamespaceLifecycle: 403 for deleting kube-system, 404 for creating in a missing namespace."""
    res = server.kubectl("delete", "ns", "kube-system", check=False)
    assert 'namespaces "kube-system" is forbidden: this namespace may not be deleted' in res.stderr
    res = server.kubectl("create", "configmap", "x", "-n", "nowhere", check=False)
    assert 'namespaces "nowhere" not found' in res.stderr


def test_disable_admission_plugins_flag(tmp_path: Path) -> None:
    """``--disable-admission-plugins`` turns plugins off: the pod keeps what the client sent."""
    srv = start_server(
        tmp_path / "off",
        "--disable-admission-plugins=ServiceAccount,DefaultTolerationSeconds",
        storage="memory",
    )
    try:
        srv.kubectl("run", "p", "--image=nginx")
        spec = dict(json.loads(srv.kubectl("get", "pod", "p", "-o", "json").stdout))["spec"]
        assert "volumes" not in spec and "tolerations" not in spec
        assert spec["priority"] == 0
    finally:
        srv.stop()


def test_unknown_admission_plugin_refused_at_start(tmp_path: Path) -> None:
    """An unknown plugin name stops the server at start-up with a one-line reason."""
    with pytest.raises(RuntimeError, match="Bogus"):
        start_server(tmp_path / "bad", "--enable-admission-plugins=Bogus", storage="memory")


def test_default_storage_class_and_runtime_class(server: Server, ns: str) -> None:
    """DefaultStorageClass names the default class on a claim without one; RuntimeClass copies
    the class's overhead and node selector, and refuses an unknown class (plugin/pkg/admission/
    storage/storageclass/setdefault, plugin/pkg/admission/runtimeclass)."""
    sc = unique("sc")
    server.kubectl(
        "apply",
        "-f",
        "-",
        input=json.dumps(
            {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "StorageClass",
                "metadata": {
                    "name": sc,
                    "annotations": {"storageclass.kubernetes.io/is-default-class": "true"},
                },
                "provisioner": "example.com/none",
            }
        ),
    )
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "c"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }
    server.kubectl("apply", "-n", ns, "-f", "-", input=json.dumps(claim))
    got = json.loads(server.kubectl("get", "pvc", "c", "-n", ns, "-o", "json").stdout)
    assert got["spec"]["storageClassName"] == sc
    server.kubectl("delete", "storageclass", sc)
    rc = unique("rc")
    server.kubectl(
        "apply",
        "-f",
        "-",
        input=json.dumps(
            {
                "apiVersion": "node.k8s.io/v1",
                "kind": "RuntimeClass",
                "metadata": {"name": rc},
                "handler": "runc",
                "overhead": {"podFixed": {"cpu": "250m"}},
                "scheduling": {"nodeSelector": {"sandbox": "yes"}},
            }
        ),
    )
    server.kubectl(
        "run",
        "rt",
        "--image=nginx",
        "-n",
        ns,
        f"--overrides={json.dumps({'spec': {'runtimeClassName': rc}})}",
    )
    spec = _pod(server, ns, "rt")["spec"]
    assert spec["overhead"] == {"cpu": "250m"}
    assert spec["nodeSelector"] == {"sandbox": "yes"}
    over = json.dumps({"spec": {"runtimeClassName": "gvisor-nope"}})
    res = server.kubectl("run", "bad", "--image=nginx", "-n", ns, f"--overrides={over}", check=False)
    assert 'pods "bad" is forbidden: pod rejected: RuntimeClass "gvisor-nope" not found' in res.stderr


def test_limit_ranger_defaults_and_bounds(server: Server, ns: str) -> None:
    """A LimitRange's defaults fill a container's resources (with upstream's annotation) and its
    max refuses a bigger limit (plugin/pkg/admission/limitranger)."""
    server.kubectl(
        "apply",
        "-n",
        ns,
        "-f",
        "-",
        input=json.dumps(
            {
                "apiVersion": "v1",
                "kind": "LimitRange",
                "metadata": {"name": "lr"},
                "spec": {
                    "limits": [
                        {
                            "type": "Container",
                            "default": {"cpu": "500m"},
                            "defaultRequest": {"cpu": "200m"},
                            "max": {"cpu": "1"},
                        }
                    ]
                },
            }
        ),
    )
    server.kubectl("run", "d", "--image=nginx", "-n", ns)
    pod = _pod(server, ns, "d")
    assert pod["spec"]["containers"][0]["resources"] == {
        "requests": {"cpu": "200m"},
        "limits": {"cpu": "500m"},
    }
    assert pod["metadata"]["annotations"]["kubernetes.io/limit-ranger"] == (
        "LimitRanger plugin set: cpu request for container d; cpu limit for container d"
    )
    big = {"spec": {"containers": [{"name": "b", "image": "nginx", "resources": {"limits": {"cpu": "2"}}}]}}
    res = server.kubectl("run", "b", "--image=nginx", "-n", ns, f"--overrides={json.dumps(big)}", check=False)
    assert 'pods "b" is forbidden: maximum cpu usage per Container is 1, but limit is 2' in res.stderr
