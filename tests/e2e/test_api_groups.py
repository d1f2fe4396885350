"""The API groups and core resources a 1.32 kube-apiserver serves, through real kubectl and the
official Python client: apiregistration, certificates, node, flowcontrol, autoscaling/v1 beside v2,
the CSI kinds of storage.k8s.io, and core bindings, componentstatuses and connect subresources."""

from __future__ import annotations

import base64
import json
import time

import pytest
from kubernetes import client as k8s_client

from tests.e2e import helpers
from tests.e2e.conftest import Server, requires_kubectl

NS = "default"

# What `kubectl api-versions` prints against kube-apiserver 1.32 with default flags, minus the
# groups other issues own (admissionregistration, authentication, authorization).
UPSTREAM_VERSIONS = {
    "apiextensions.k8s.io/v1",
    "apiregistration.k8s.io/v1",
    "apps/v1",
    "autoscaling/v1",
    "autoscaling/v2",
    "batch/v1",
    "certificates.k8s.io/v1",
    "coordination.k8s.io/v1",
    "discovery.k8s.io/v1",
    "events.k8s.io/v1",
    "flowcontrol.apiserver.k8s.io/v1",
    "networking.k8s.io/v1",
    "node.k8s.io/v1",
    "policy/v1",
    "rbac.authorization.k8s.io/v1",
    "scheduling.k8s.io/v1",
    "storage.k8s.io/v1",
    "v1",
}


@requires_kubectl
def test_api_versions_lists_upstream_groups(server: Server) -> None:
    """kubectl api-versions shows every group-version upstream serves (of those kplane owns)."""
    out = set(server.kubectl("api-versions").stdout.split())
    assert out >= UPSTREAM_VERSIONS


@requires_kubectl
@pytest.mark.parametrize(
    ("name", "line"),
    [
        # `kubectl api-resources` rows of kube-apiserver 1.32 (NAME SHORTNAMES APIVERSION NAMESPACED KIND)
        ("apiservices", ["apiservices", "apiregistration.k8s.io/v1", "false", "APIService"]),
        ("bindings", ["bindings", "v1", "true", "Binding"]),
        (
            "certificatesigningrequests",
            ["certificatesigningrequests", "csr", "certificates.k8s.io/v1", "false"],
        ),
        ("componentstatuses", ["componentstatuses", "cs", "v1", "false", "ComponentStatus"]),
        ("csidrivers", ["csidrivers", "storage.k8s.io/v1", "false", "CSIDriver"]),
        ("csinodes", ["csinodes", "storage.k8s.io/v1", "false", "CSINode"]),
        ("csistoragecapacities", ["csistoragecapacities", "storage.k8s.io/v1", "true", "CSIStorageCapacity"]),
        ("flowschemas", ["flowschemas", "flowcontrol.apiserver.k8s.io/v1", "false", "FlowSchema"]),
        ("horizontalpodautoscalers", ["horizontalpodautoscalers", "hpa", "autoscaling/v2", "true"]),
        (
            "prioritylevelconfigurations",
            ["prioritylevelconfigurations", "flowcontrol.apiserver.k8s.io/v1", "false"],
        ),
        ("runtimeclasses", ["runtimeclasses", "node.k8s.io/v1", "false", "RuntimeClass"]),
        ("volumeattachments", ["volumeattachments", "storage.k8s.io/v1", "false", "VolumeAttachment"]),
    ],
)
def test_api_resources_rows(server: Server, name: str, line: list[str]) -> None:
    """Each new resource appears in kubectl api-resources as upstream lists it."""
    rows = [r.split() for r in server.kubectl("api-resources", "--no-headers").stdout.splitlines()]
    row = next(r for r in rows if r[0] == name)
    assert row[: len(line)] == line


def test_pod_subresources_in_discovery(api: helpers.Kube) -> None:
    """/api/v1 lists exactly upstream's pod, node and service subresources with upstream's verbs
    (kube-apiserver 1.32 /api/v1, default feature gates)."""
    res = {r["name"]: r for r in api.ok("GET", "/api/v1")["resources"]}
    connect = ["create", "get"]
    proxy = ["create", "delete", "get", "patch", "update"]
    expected = {
        "pods/attach": ("PodAttachOptions", connect),
        "pods/binding": ("Binding", ["create"]),
        "pods/ephemeralcontainers": ("Pod", ["get", "patch", "update"]),
        "pods/eviction": ("Eviction", ["create"]),
        "pods/exec": ("PodExecOptions", connect),
        "pods/log": ("Pod", ["get"]),
        "pods/portforward": ("PodPortForwardOptions", connect),
        "pods/proxy": ("PodProxyOptions", proxy),
        "pods/status": ("Pod", ["get", "patch", "update"]),
        "nodes/proxy": ("NodeProxyOptions", proxy),
        "nodes/status": ("Node", ["get", "patch", "update"]),
        "services/proxy": ("ServiceProxyOptions", proxy),
        "services/status": ("Service", ["get", "patch", "update"]),
    }
    for name, (kind, verbs) in expected.items():
        assert (res[name]["kind"], res[name]["verbs"]) == (kind, verbs), name
    assert sorted(n for n in res if n.startswith("pods/")) == sorted(
        n for n in expected if n.startswith("pods/")
    )
    assert "storageVersionHash" not in res["bindings"] and "storageVersionHash" in res["pods"]


@requires_kubectl
def test_local_apiservices_and_api_extensions(server: Server) -> None:
    """Every built-in group-version has a local APIService, Available with upstream's reason;
    `kubectl get api-extensions` lists APIServices and CRDs."""
    items = json.loads(server.kubectl("get", "apiservices", "-o", "json").stdout)["items"]
    by_name = {i["metadata"]["name"]: i for i in items}
    assert {"v1.", "v1.apps", "v2.autoscaling", "v1.autoscaling", "v1.node.k8s.io"} <= set(by_name)
    apps = by_name["v1.apps"]
    # upstream cmd/kube-apiserver/app/aggregator.go: apps/v1 priorities 17800/15
    assert apps["spec"] == {
        "group": "apps",
        "version": "v1",
        "groupPriorityMinimum": 17800,
        "versionPriority": 15,
    }
    (available,) = apps["status"]["conditions"]
    # upstream kube-aggregator: NewLocalAvailableAPIServiceCondition
    assert (available["type"], available["status"], available["reason"], available["message"]) == (
        "Available",
        "True",
        "Local",
        "Local APIServices are always available",
    )
    out = server.kubectl("get", "api-extensions", "-o", "name").stdout.split()
    assert "apiservice.apiregistration.k8s.io/v1.apps" in out


def test_service_backed_apiservice_is_unavailable(api: helpers.Kube) -> None:
    """An APIService naming a Service is stored but reported unavailable: kplane does not proxy."""
    svc = {
        "apiVersion": "apiregistration.k8s.io/v1",
        "kind": "APIService",
        "metadata": {"name": "v1beta2.custom.metrics.k8s.io"},
        "spec": {
            "group": "custom.metrics.k8s.io",
            "version": "v1beta2",
            "service": {"name": "custom-metrics-apiserver", "namespace": "kube-system", "port": 443},
            "groupPriorityMinimum": 100,
            "versionPriority": 100,
            "insecureSkipTLSVerify": True,
        },
    }
    created = api.ok("POST", "/apis/apiregistration.k8s.io/v1/apiservices", svc)
    (cond,) = created["status"]["conditions"]
    assert (cond["type"], cond["status"], cond["reason"]) == ("Available", "False", "FailedDiscoveryCheck")
    bad = dict(svc, metadata={"name": "wrong.custom.metrics.k8s.io"})
    resp = api.post("/apis/apiregistration.k8s.io/v1/apiservices", bad)
    # upstream kube-aggregator validation: the name must be version.group
    assert (
        'must be `spec.version+"."+spec.group`: "v1beta2.custom.metrics.k8s.io"'
        in helpers.assert_status(resp, 422, "Invalid")["message"]
    )


def test_mandatory_flowcontrol_objects(api: helpers.Kube) -> None:
    """Upstream's mandatory exempt and catch-all FlowSchemas and priority levels exist at start."""
    base = "/apis/flowcontrol.apiserver.k8s.io/v1"
    fs = {i["metadata"]["name"]: i for i in api.ok("GET", f"{base}/flowschemas")["items"]}
    assert {"exempt", "catch-all"} <= set(fs)
    assert fs["catch-all"]["spec"]["matchingPrecedence"] == 10000
    assert fs["exempt"]["spec"]["priorityLevelConfiguration"] == {"name": "exempt"}
    pl = {i["metadata"]["name"]: i for i in api.ok("GET", f"{base}/prioritylevelconfigurations")["items"]}
    assert pl["exempt"]["spec"]["type"] == "Exempt"
    assert pl["catch-all"]["spec"]["limited"]["limitResponse"] == {"type": "Reject"}
    status = api.patch(
        f"{base}/flowschemas/catch-all/status",
        {
            "status": {
                "conditions": [{"type": "Dangling", "status": "False", "reason": "Found", "message": "ok"}]
            }
        },
    )
    assert status.status == 200 and status.json()["status"]["conditions"][0]["type"] == "Dangling"


_HPA_V2 = {
    "apiVersion": "autoscaling/v2",
    "kind": "HorizontalPodAutoscaler",
    "spec": {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "minReplicas": 1,
        "maxReplicas": 5,
        "metrics": [
            {
                "type": "Resource",
                "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}},
            },
            {
                "type": "Pods",
                "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "1k"}},
            },
        ],
        "behavior": {
            "scaleDown": {
                "stabilizationWindowSeconds": 60,
                "policies": [{"type": "Pods", "value": 1, "periodSeconds": 15}],
            }
        },
    },
}


def test_hpa_v2_only_fields_survive_a_v1_round_trip(api: helpers.Kube) -> None:
    """An HPA created as autoscaling/v2 reads as v1 with its v2-only fields in upstream's
    annotations, and a v1 write-back keeps them (upstream pkg/apis/autoscaling/v1/conversion.go)."""
    name = helpers.unique("hpa")
    body = dict(_HPA_V2, metadata={"name": name})
    api.ok("POST", f"/apis/autoscaling/v2/namespaces/{NS}/horizontalpodautoscalers", body)
    v1 = api.ok("GET", f"/apis/autoscaling/v1/namespaces/{NS}/horizontalpodautoscalers/{name}")
    assert v1["apiVersion"] == "autoscaling/v1"
    assert v1["spec"]["targetCPUUtilizationPercentage"] == 50
    notes = v1["metadata"]["annotations"]
    assert json.loads(notes["autoscaling.alpha.kubernetes.io/metrics"]) == [
        {"type": "Pods", "pods": {"metricName": "qps", "targetAverageValue": "1k"}}
    ]
    # the internal Go type's JSON: untagged field names
    behavior = json.loads(notes["autoscaling.alpha.kubernetes.io/behavior"])
    assert behavior["ScaleDown"]["StabilizationWindowSeconds"] == 60
    v1["spec"]["maxReplicas"] = 9
    api.ok("PUT", f"/apis/autoscaling/v1/namespaces/{NS}/horizontalpodautoscalers/{name}", v1)
    v2 = api.ok("GET", f"/apis/autoscaling/v2/namespaces/{NS}/horizontalpodautoscalers/{name}")
    assert v2["spec"]["maxReplicas"] == 9
    assert {m["type"] for m in v2["spec"]["metrics"]} == {"Resource", "Pods"}
    assert v2["spec"]["behavior"]["scaleDown"]["policies"] == [
        {"type": "Pods", "value": 1, "periodSeconds": 15}
    ]
    assert "annotations" not in v2["metadata"]
    listed = api.ok("GET", f"/apis/autoscaling/v1/namespaces/{NS}/horizontalpodautoscalers")
    assert listed["apiVersion"] == "autoscaling/v1"
    # items of a typed list carry no apiVersion/kind upstream; their shape is v1's (no metrics)
    assert all("apiVersion" not in i and "metrics" not in i["spec"] for i in listed["items"])


def test_hpa_v1_written_reads_as_v2(k8s: k8s_client.ApiClient) -> None:
    """An HPA created with the official client's autoscaling/v1 API reads back through v2 with the
    CPU target as a Utilization metric."""
    name = helpers.unique("hpa1")
    v1api = k8s_client.AutoscalingV1Api(k8s)
    v1api.create_namespaced_horizontal_pod_autoscaler(
        NS,
        {
            "apiVersion": "autoscaling/v1",
            "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": name},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "maxReplicas": 3,
                "targetCPUUtilizationPercentage": 70,
            },
        },
    )
    got = k8s_client.AutoscalingV2Api(k8s).read_namespaced_horizontal_pod_autoscaler(name, NS)
    (metric,) = got.spec.metrics
    assert (metric.type, metric.resource.name, metric.resource.target.average_utilization) == (
        "Resource",
        "cpu",
        70,
    )
    names = [h.metadata.name for h in v1api.list_namespaced_horizontal_pod_autoscaler(NS).items]
    assert name in names


def _csr_pem() -> str:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    csr = (
        x509.CertificateSigningRequestBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "alice")]))
        .sign(key, hashes.SHA256())
    )
    return base64.b64encode(csr.public_bytes(serialization.Encoding.PEM)).decode()


@requires_kubectl
def test_kubectl_certificate_approve(server: Server, api: helpers.Kube) -> None:
    """kubectl certificate approve adds the Approved condition through /approval; a status write
    cannot remove it."""
    name = helpers.unique("csr")
    csr = {
        "apiVersion": "certificates.k8s.io/v1",
        "kind": "CertificateSigningRequest",
        "metadata": {"name": name},
        "spec": {
            "request": _csr_pem(),
            "signerName": "kubernetes.io/kube-apiserver-client",
            "usages": ["client auth"],
            "expirationSeconds": 86400,
        },
        "status": {"conditions": [{"type": "Approved", "status": "True", "reason": "Self"}]},
    }
    csr["spec"]["username"] = "someone-else"  # type: ignore[index]
    created = api.ok("POST", "/apis/certificates.k8s.io/v1/certificatesigningrequests", csr)
    assert "conditions" not in created.get("status", {})  # no pre-approved requests (upstream strategy.go)
    # upstream strategy.go: the requester's identity replaces what the client sent
    assert created["spec"]["username"] == "kplane-admin"
    assert "system:masters" in created["spec"]["groups"]
    out = server.kubectl("certificate", "approve", name).stdout
    assert out.strip() == f"certificatesigningrequest.certificates.k8s.io/{name} approved"
    got = api.ok("GET", f"/apis/certificates.k8s.io/v1/certificatesigningrequests/{name}")
    (cond,) = got["status"]["conditions"]
    assert (cond["type"], cond["status"], cond["reason"]) == ("Approved", "True", "KubectlApprove")
    row = server.kubectl("get", "csr", name, "--no-headers").stdout.split()
    assert row[2:4] == ["kubernetes.io/kube-apiserver-client", "kplane-admin"] and row[-1] == "Approved"
    api.ok(
        "PUT",
        f"/apis/certificates.k8s.io/v1/certificatesigningrequests/{name}/status",
        {**got, "status": {"certificate": base64.b64encode(b"not checked").decode()}},
    )
    after = api.ok("GET", f"/apis/certificates.k8s.io/v1/certificatesigningrequests/{name}")
    assert [c["type"] for c in after["status"]["conditions"]] == ["Approved"]
    assert "certificate" in after["status"]


def test_storage_and_node_kinds_round_trip(api: helpers.Kube) -> None:
    """CSIDriver, CSINode, CSIStorageCapacity, VolumeAttachment and RuntimeClass are stored and listed."""
    objs = [
        ("/apis/storage.k8s.io/v1/csidrivers", {"kind": "CSIDriver", "spec": {"attachRequired": True}}),
        ("/apis/storage.k8s.io/v1/csinodes", {"kind": "CSINode", "spec": {"drivers": []}}),
        (
            f"/apis/storage.k8s.io/v1/namespaces/{NS}/csistoragecapacities",
            {"kind": "CSIStorageCapacity", "storageClassName": "fast", "capacity": "10Gi"},
        ),
        (
            "/apis/storage.k8s.io/v1/volumeattachments",
            {
                "kind": "VolumeAttachment",
                "spec": {
                    "attacher": "csi.example.com",
                    "nodeName": "n1",
                    "source": {"persistentVolumeName": "pv1"},
                },
            },
        ),
        ("/apis/node.k8s.io/v1/runtimeclasses", {"kind": "RuntimeClass", "handler": "runc"}),
    ]
    for path, obj in objs:
        name = helpers.unique("k")
        group_version = path.split("/")[2] + "/" + path.split("/")[3]
        body = {"apiVersion": group_version, "metadata": {"name": name}, **obj}
        api.ok("POST", path, body)
        assert name in [i["metadata"]["name"] for i in api.ok("GET", path)["items"]]


def _pod(api: helpers.Kube, name: str, containers: tuple[str, ...] = ("app",), node: str = "") -> None:
    spec: dict[str, object] = {"containers": [{"name": c, "image": "busybox"} for c in containers]}
    if node:
        spec["nodeName"] = node
    api.ok(
        "POST",
        f"/api/v1/namespaces/{NS}/pods",
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec},
    )


@pytest.mark.parametrize("sub", ["exec", "attach", "portforward"])
def test_connect_subresources_answer_upstream_errors(api: helpers.Kube, sub: str) -> None:
    """exec/attach/portforward: 404 `pods "x" not found`, then 400 "pod x does not have a host
    assigned" (upstream pkg/registry/core/pod/strategy.go streamLocation/PortForwardLocation)."""
    missing = api.post(f"/api/v1/namespaces/{NS}/pods/nope/{sub}?command=ls&stdout=true", None)
    assert helpers.assert_status(missing, 404, "NotFound")["message"] == 'pods "nope" not found'
    name = helpers.unique(sub)
    _pod(api, name)
    resp = api.post(f"/api/v1/namespaces/{NS}/pods/{name}/{sub}?command=ls&stdout=true", None)
    assert (
        helpers.assert_status(resp, 400, "BadRequest")["message"]
        == f"pod {name} does not have a host assigned"
    )


def test_exec_container_choice(api: helpers.Kube) -> None:
    """exec without a container on a two-container pod names the choices; an unknown one is 400."""
    name = helpers.unique("two")
    _pod(api, name, ("a", "b"))
    resp = api.get(f"/api/v1/namespaces/{NS}/pods/{name}/exec?command=ls&stdout=true")
    assert helpers.assert_status(resp, 400)["message"] == (
        f"a container name must be specified for pod {name}, choose one of: [a b]"
    )
    resp = api.get(f"/api/v1/namespaces/{NS}/pods/{name}/exec?command=ls&container=zz")
    assert helpers.assert_status(resp, 400)["message"] == f"container zz is not valid for pod {name}"


def test_pod_and_service_proxy_errors(api: helpers.Kube) -> None:
    """pods/proxy without a pod IP: 400 "address not allowed"; services/proxy without endpoints:
    503 `no endpoints available for service "x"` (upstream pod/strategy.go, service/storage/rest.go)."""
    name = helpers.unique("px")
    _pod(api, name)
    resp = api.get(f"/api/v1/namespaces/{NS}/pods/{name}/proxy")
    assert helpers.assert_status(resp, 400)["message"] == "address not allowed"
    svc = helpers.unique("svc")
    api.ok(
        "POST",
        f"/api/v1/namespaces/{NS}/services",
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": svc}, "spec": {"ports": [{"port": 80}]}},
    )
    for sub in ("proxy", "proxy/healthz/deeper"):
        resp = api.get(f"/api/v1/namespaces/{NS}/services/{svc}/{sub}")
        assert helpers.assert_status(resp, 503)["message"] == f'no endpoints available for service "{svc}"'
    resp = api.get(f"/api/v1/namespaces/{NS}/pods/{name}/proxy/some/path")
    assert helpers.assert_status(resp, 400)["message"] == "address not allowed"
    assert api.get(f"/api/v1/namespaces/{NS}/pods/{name}/status/deeper").status == 404
    resp = api.get("/api/v1/nodes/nowhere/proxy")
    assert helpers.assert_status(resp, 404)["message"] == 'nodes "nowhere" not found'


def test_bindings_collection_and_ephemeral_containers(api: helpers.Kube) -> None:
    """POST namespaces/ns/bindings binds the pod named in the body; pods/ephemeralcontainers
    changes only spec.ephemeralContainers."""
    name = helpers.unique("eb")
    _pod(api, name)
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": name},
        "target": {"kind": "Node", "name": "n1"},
    }
    resp = api.post(f"/api/v1/namespaces/{NS}/bindings", binding)
    assert resp.status == 201 and resp.json()["status"] == "Success"
    pod = api.ok("GET", f"/api/v1/namespaces/{NS}/pods/{name}/ephemeralcontainers")
    assert pod["spec"]["nodeName"] == "n1"
    debug = [{"name": "debugger", "image": "busybox", "targetContainerName": "app"}]
    patched = api.patch(
        f"/api/v1/namespaces/{NS}/pods/{name}/ephemeralcontainers",
        {"spec": {"ephemeralContainers": debug, "nodeName": "elsewhere"}},
    )
    assert patched.status == 200, patched.body
    spec = patched.json()["spec"]
    assert [c["name"] for c in spec["ephemeralContainers"]] == ["debugger"] and spec["nodeName"] == "n1"


@requires_kubectl
def test_componentstatuses(server: Server) -> None:
    """kubectl get cs lists the storage as etcd-0 with upstream's shape and deprecation warning."""
    res = server.kubectl("get", "componentstatuses", "-o", "json")
    # upstream pkg/registry/core/componentstatus: "v1 ComponentStatus is deprecated in v1.19+"
    assert "v1 ComponentStatus is deprecated in v1.19+" in res.stderr
    (item,) = json.loads(res.stdout)["items"]
    assert item["metadata"]["name"] == "etcd-0"
    assert item["conditions"] == [{"type": "Healthy", "status": "True", "message": "ok"}]


@requires_kubectl
def test_kubectl_get_columns(server: Server) -> None:
    """kubectl get shows upstream's Table columns for the new kinds (printers.go, kube-aggregator)."""
    header = server.kubectl("get", "apiservices").stdout.splitlines()[0].split()
    assert header == ["NAME", "SERVICE", "AVAILABLE", "AGE"]
    row = next(
        r.split()
        for r in server.kubectl("get", "apiservices").stdout.splitlines()
        if r.startswith("v1.apps ")
    )
    assert row[1:3] == ["Local", "True"]
    out = server.kubectl("get", "prioritylevelconfigurations", "exempt").stdout.splitlines()
    assert out[0].split() == [
        "NAME",
        "TYPE",
        "NOMINALCONCURRENCYSHARES",
        "QUEUES",
        "HANDSIZE",
        "QUEUELENGTHLIMIT",
        "AGE",
    ]
    assert out[1].split()[:6] == ["exempt", "Exempt", "<none>", "<none>", "<none>", "<none>"]
    cs = server.kubectl("get", "componentstatuses").stdout.splitlines()
    assert cs[0].split() == ["NAME", "STATUS", "MESSAGE", "ERROR"] and cs[1].split() == [
        "etcd-0",
        "Healthy",
        "ok",
    ]
    fs = server.kubectl("get", "flowschemas", "catch-all").stdout.splitlines()
    assert fs[0].split()[:4] == ["NAME", "PRIORITYLEVEL", "MATCHINGPRECEDENCE", "DISTINGUISHERMETHOD"]
    assert fs[1].split()[:4] == ["catch-all", "catch-all", "10000", "ByUser"]


def test_hpa_watch_in_either_version(api: helpers.Kube) -> None:
    """A watch at autoscaling/v1 sees objects written through v2 as v1 (and v2 watchers as v2)."""
    name = helpers.unique("hpaw")
    path = f"/apis/autoscaling/{{}}/namespaces/{NS}/horizontalpodautoscalers"
    with api.watch(path.format("v1"), {"timeoutSeconds": 10, "fieldSelector": f"metadata.name={name}"}) as w1:
        api.ok("POST", path.format("v2"), dict(_HPA_V2, metadata={"name": name}))
        ev = w1.until(lambda e: e["type"] == "ADDED")
    obj = ev["object"]
    assert obj["apiVersion"] == "autoscaling/v1" and obj["spec"]["targetCPUUtilizationPercentage"] == 50
    assert "autoscaling.alpha.kubernetes.io/metrics" in obj["metadata"]["annotations"]
    with api.watch(path.format("v2"), {"timeoutSeconds": 10, "fieldSelector": f"metadata.name={name}"}) as w2:
        ev = w2.until(lambda e: e["type"] == "ADDED")
    assert ev["object"]["apiVersion"] == "autoscaling/v2" and len(ev["object"]["spec"]["metrics"]) == 2


def test_hpa_v2_defaults(api: helpers.Kube) -> None:
    """autoscaling/v2 defaults (upstream pkg/apis/autoscaling/v2/defaults.go): minReplicas 1, a CPU
    utilization metric of 80 % when none is given, and a given behavior completed with upstream's
    scale-up and scale-down rules (scale-down stabilization left unset)."""
    name = helpers.unique("hpad")
    body = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "maxReplicas": 4,
            "behavior": {"scaleDown": {"stabilizationWindowSeconds": 30}},
        },
    }
    spec = api.ok("POST", f"/apis/autoscaling/v2/namespaces/{NS}/horizontalpodautoscalers", body)["spec"]
    assert spec["minReplicas"] == 1
    assert spec["metrics"] == [
        {
            "type": "Resource",
            "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}},
        }
    ]
    assert spec["behavior"]["scaleUp"] == {
        "stabilizationWindowSeconds": 0,
        "selectPolicy": "Max",
        "policies": [
            {"type": "Pods", "value": 4, "periodSeconds": 15},
            {"type": "Percent", "value": 100, "periodSeconds": 15},
        ],
    }
    assert spec["behavior"]["scaleDown"] == {
        "stabilizationWindowSeconds": 30,
        "selectPolicy": "Max",
        "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}],
    }


def test_csi_driver_and_flowcontrol_defaults(api: helpers.Kube) -> None:
    """storage/v1 and flowcontrol/v1 defaults.go: a bare CSIDriver, FlowSchema and Limited priority
    level come back with upstream's defaults."""
    name = helpers.unique("drv")
    spec = api.ok(
        "POST",
        "/apis/storage.k8s.io/v1/csidrivers",
        {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": name}, "spec": {}},
    )["spec"]
    assert spec == {
        "attachRequired": True,
        "podInfoOnMount": False,
        "storageCapacity": False,
        "fsGroupPolicy": "ReadWriteOnceWithFSType",
        "requiresRepublish": False,
        "seLinuxMount": False,
        "volumeLifecycleModes": ["Persistent"],
    }
    base = "/apis/flowcontrol.apiserver.k8s.io/v1"
    pl = helpers.unique("pl")
    limited = api.ok(
        "POST",
        f"{base}/prioritylevelconfigurations",
        {
            "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
            "kind": "PriorityLevelConfiguration",
            "metadata": {"name": pl},
            "spec": {"type": "Limited", "limited": {"limitResponse": {"type": "Queue", "queuing": {}}}},
        },
    )["spec"]["limited"]
    assert (limited["nominalConcurrencyShares"], limited["lendablePercent"]) == (30, 0)
    assert limited["limitResponse"]["queuing"] == {"handSize": 8, "queues": 64, "queueLengthLimit": 50}
    fs = api.ok(
        "POST",
        f"{base}/flowschemas",
        {
            "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
            "kind": "FlowSchema",
            "metadata": {"name": helpers.unique("fs")},
            "spec": {"priorityLevelConfiguration": {"name": pl}},
        },
    )
    assert fs["spec"]["matchingPrecedence"] == 1000


def test_crd_group_versions_get_apiservices(api: helpers.Kube) -> None:
    """Each CRD group-version gets a local APIService (upstream's CRD registration controller:
    priorities 1000/100); it goes when the last CRD serving it goes."""
    group = "apisvc.example.com"
    crd = helpers.open_crd(group, "Thing")
    api.ok("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    path = f"/apis/apiregistration.k8s.io/v1/apiservices/v1.{group}"
    deadline = time.monotonic() + 10
    while api.get(path).status != 200 and time.monotonic() < deadline:
        time.sleep(0.05)
    got = api.ok("GET", path)
    assert (got["spec"]["groupPriorityMinimum"], got["spec"]["versionPriority"]) == (1000, 100)
    assert got["status"]["conditions"][0]["reason"] == "Local"
    api.ok("DELETE", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/things.{group}")
    deadline = time.monotonic() + 10
    while api.get(path).status != 404 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert api.get(path).status == 404
