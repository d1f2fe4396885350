"""The resource model as upstream serves it: OpenAPI enums, events in two versions, timestamps,
CRD defaults, managedFields placement and generated Job selectors (issue 7)."""

from __future__ import annotations

import datetime
import json
from typing import Any

import pytest

from tests.e2e.conftest import Server, requires_kubectl
from tests.e2e.helpers import Kube, assert_status, poll, unique


@pytest.fixture
def ns(api: Kube) -> str:
    """A fresh namespace."""
    name = unique("rm")
    api.ok(
        "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    )
    return name


def _deployment(name: str, strategy: dict[str, Any] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "selector": {"matchLabels": {"app": name}},
        "template": {
            "metadata": {"labels": {"app": name}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]},
        },
    }
    if strategy is not None:
        spec["strategy"] = strategy
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name}, "spec": spec}


# --- 1. OpenAPI enums --------------------------------------------------------------------------


@requires_kubectl
def test_explain_shows_upstream_enum(server: Server) -> None:
    """``kubectl explain`` lists the enum upstream's OpenAPI carries for DeploymentStrategy.type."""
    # Upstream (k8s.io/api apps/v1 types.go): `// +enum type DeploymentStrategyType string` with
    # constants "Recreate" and "RollingUpdate"; kube-apiserver 1.32's explain output shows
    #   type	<string>
    #   enum: Recreate, RollingUpdate
    out = server.kubectl("explain", "deployment.spec.strategy").stdout
    assert "enum: Recreate, RollingUpdate" in out, out
    out = server.kubectl("explain", "service.spec.type").stdout
    assert "ClusterIP\n    ExternalName\n    LoadBalancer\n    NodePort" in out, out


def test_openapi_v3_enum_values(api: Kube) -> None:
    """The v3 document carries upstream's enum values on scalars and on list items."""
    doc = api.ok("GET", "/openapi/v3/api/v1")
    schemas = doc["components"]["schemas"]
    pod_spec = schemas["io.k8s.api.core.v1.PodSpec"]["properties"]
    # Upstream: core/v1 RestartPolicy (+enum) consts Always, OnFailure, Never (sorted in the spec).
    assert pod_spec["restartPolicy"]["enum"] == ["Always", "Never", "OnFailure"]
    assert "Possible enum values:" in pod_spec["restartPolicy"]["description"]
    pvc = schemas["io.k8s.api.core.v1.PersistentVolumeClaimSpec"]["properties"]
    assert pvc["accessModes"]["items"]["enum"] == [
        "ReadOnlyMany",
        "ReadWriteMany",
        "ReadWriteOnce",
        "ReadWriteOncePod",
    ]


def test_openapi_v2_carries_the_same_enums(api: Kube) -> None:
    """/openapi/v2 (kubectl's fallback) is built from the same data: the enums are there too."""
    doc = api.ok("GET", "/openapi/v2")
    strategy = doc["definitions"]["io.k8s.api.apps.v1.DeploymentStrategy"]["properties"]
    assert strategy["type"]["enum"] == ["Recreate", "RollingUpdate"]


def test_unknown_strategy_type_refused_as_upstream(api: Kube, ns: str) -> None:
    """An unknown Deployment strategy type gets upstream's hand-written validation error."""
    path = f"/apis/apps/v1/namespaces/{ns}/deployments"
    resp = api.post(path, _deployment("bad", {"type": "Foo"}))
    body = assert_status(resp, 422, "Invalid")
    # Upstream pkg/apis/apps/validation ValidateDeploymentStrategy: field.NotSupported(fldPath,
    # strategy, validValues) prints the internal struct with %#v.
    assert body["message"] == (
        'Deployment.apps "bad" is invalid: spec.strategy: Unsupported value: '
        'apps.DeploymentStrategy{Type:"Foo", RollingUpdate:(*apps.RollingUpdateDeployment)(nil)}: '
        'supported values: "Recreate", "RollingUpdate"'
    )


def test_enforced_enums_refused_as_upstream(api: Kube, ns: str) -> None:
    """Enums upstream's hand-written validation checks at the field are refused with its message."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "nginx", "imagePullPolicy": "Sometimes"}]},
    }
    body = assert_status(api.post(f"/api/v1/namespaces/{ns}/pods", pod), 422, "Invalid")
    # pkg/apis/core/validation validatePullPolicy: field.NotSupported(fldPath, policy,
    # sets.List(supportedPullPolicies)).
    assert body["message"] == (
        'Pod "p" is invalid: spec.containers[0].imagePullPolicy: Unsupported value: "Sometimes": '
        'supported values: "Always", "IfNotPresent", "Never"'
    )
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "s"},
        "spec": {"ports": [{"port": 80, "protocol": "QUIC"}]},
    }
    body = assert_status(api.post(f"/api/v1/namespaces/{ns}/services", svc), 422, "Invalid")
    # validateServicePort: supportedPortProtocols = sets.New(TCP, UDP, SCTP), listed sorted.
    assert body["message"] == (
        'Service "s" is invalid: spec.ports[0].protocol: Unsupported value: "QUIC": '
        'supported values: "SCTP", "TCP", "UDP"'
    )
    sc = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": unique("sc")},
        "provisioner": "example.com/p",
        "volumeBindingMode": "Later",
    }
    body = assert_status(api.post("/apis/storage.k8s.io/v1/storageclasses", sc), 422, "Invalid")
    # pkg/apis/storage/validation validateVolumeBindingMode: sets.List(supportedVolumeBindingModes).
    assert body["message"].endswith(
        'volumeBindingMode: Unsupported value: "Later": supported values: "Immediate", "WaitForFirstConsumer"'
    )


# --- 5. managedFields: "." entries and server-set fields ----------------------------------------


def _managed(server: Server, *args: str) -> list[dict[str, Any]]:
    out = server.kubectl("get", *args, "-o", "json", "--show-managed-fields").stdout
    entries: list[dict[str, Any]] = json.loads(out)["metadata"]["managedFields"]
    return entries


@requires_kubectl
def test_create_deployment_managed_fields_as_upstream(server: Server, ns: str) -> None:
    """``kubectl create deployment`` records exactly upstream's field set: ``"."`` only on nodes
    absent from the Go zero value (list entries, maps, pointer structs such as rollingUpdate)."""
    server.kubectl("create", "deployment", "web", "--image=nginx", "-n", ns)
    (entry,) = _managed(server, "deployment", "web", "-n", ns)
    assert (entry["manager"], entry["operation"], entry["apiVersion"]) == (
        "kubectl-create",
        "Update",
        "apps/v1",
    )
    # kube-apiserver 1.32, `kubectl create deployment web --image=nginx`, fieldsV1 of its entry
    # (structured-merge-diff compares the request with the zero Deployment: spec, strategy,
    # template and its metadata/spec exist there, so they carry no ".").
    labels = {".": {}, "f:app": {}}
    assert entry["fieldsV1"] == {
        "f:metadata": {"f:labels": labels},
        "f:spec": {
            "f:progressDeadlineSeconds": {},
            "f:replicas": {},
            "f:revisionHistoryLimit": {},
            "f:selector": {},
            "f:strategy": {
                "f:rollingUpdate": {".": {}, "f:maxSurge": {}, "f:maxUnavailable": {}},
                "f:type": {},
            },
            "f:template": {
                "f:metadata": {"f:labels": labels},
                "f:spec": {
                    "f:containers": {
                        'k:{"name":"nginx"}': {
                            ".": {},
                            "f:image": {},
                            "f:imagePullPolicy": {},
                            "f:name": {},
                            "f:resources": {},
                            "f:terminationMessagePath": {},
                            "f:terminationMessagePolicy": {},
                        }
                    },
                    "f:dnsPolicy": {},
                    "f:restartPolicy": {},
                    "f:schedulerName": {},
                    "f:securityContext": {},
                    "f:terminationGracePeriodSeconds": {},
                },
            },
        },
    }


@requires_kubectl
def test_server_set_fields_are_not_owned_by_the_creator(server: Server, ns: str) -> None:
    """Fields the server sets after the field manager ran (pod status, a Service's cluster IP and
    IP families, a namespace's phase and finalizers) are owned by nobody, as upstream."""
    # Upstream's create handler runs the field manager before the REST create, whose strategy
    # (PrepareForCreate) and IP allocation set these; status is also a reset field.
    server.kubectl("run", "p", "--image=nginx", "-n", ns)
    (pod,) = _managed(server, "pod", "p", "-n", ns)
    assert "f:status" not in pod["fieldsV1"]
    server.kubectl("create", "service", "clusterip", "s", "--tcp=80:8080", "-n", ns)
    (svc,) = _managed(server, "service", "s", "-n", ns)
    spec = svc["fieldsV1"]["f:spec"]
    for server_set in ("f:clusterIP", "f:clusterIPs", "f:ipFamilies", "f:ipFamilyPolicy"):
        assert server_set not in spec
    # Defaults applied while decoding (SetDefaults_Service) are the requester's.
    assert {"f:internalTrafficPolicy", "f:sessionAffinity", "f:type", "f:ports"} <= set(spec)
    assert spec["f:ports"]['k:{"port":80,"protocol":"TCP"}'] == {
        ".": {},
        "f:name": {},
        "f:port": {},
        "f:protocol": {},
        "f:targetPort": {},
    }
    other = unique("rmns")
    server.kubectl("create", "namespace", other)
    (nse,) = _managed(server, "namespace", other)
    # Upstream: only the label SetDefaults_Namespace adds.
    assert nse["fieldsV1"] == {"f:metadata": {"f:labels": {".": {}, "f:kubernetes.io/metadata.name": {}}}}


# --- 6. Job selectors -----------------------------------------------------------------------------


@requires_kubectl
def test_job_gets_generated_selector_and_labels(server: Server, ns: str) -> None:
    """A Job without manualSelector gets upstream's generated selector and template labels."""
    server.kubectl("create", "job", "j", "--image=busybox", "-n", ns)
    job = json.loads(server.kubectl("get", "job", "j", "-n", ns, "-o", "json").stdout)
    uid = job["metadata"]["uid"]
    # Upstream pkg/registry/batch/job/strategy.go generateSelector: the selector matches the
    # controller uid; the template carries job name and uid, current and legacy label names.
    assert job["spec"]["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    assert job["spec"]["template"]["metadata"]["labels"] == {
        "batch.kubernetes.io/controller-uid": uid,
        "batch.kubernetes.io/job-name": "j",
        "controller-uid": uid,
        "job-name": "j",
    }
    assert "manualSelector" not in job["spec"]


def test_manual_selector_job_is_left_alone(api: Kube, ns: str) -> None:
    """With ``manualSelector: true`` the user's selector and labels are kept, nothing is added."""
    body = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "m"},
        "spec": {
            "manualSelector": True,
            "selector": {"matchLabels": {"app": "m"}},
            "template": {
                "metadata": {"labels": {"app": "m"}},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]},
            },
        },
    }
    job = api.ok("POST", f"/apis/batch/v1/namespaces/{ns}/jobs", body)
    assert job["spec"]["selector"] == {"matchLabels": {"app": "m"}}
    assert job["spec"]["template"]["metadata"]["labels"] == {"app": "m"}


# --- 4. CRDs: defaults, create response, establishment, cleanup finalizer ----------------------

CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def test_crd_defaults_create_response_and_establishment(api: Kube) -> None:
    """A CRD is defaulted as upstream, its create response holds only the reset status, the names
    are accepted and the CRD established afterwards, and the cleanup finalizer comes with delete."""
    group = unique("g") + ".example.com"
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"gadgets.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": "gadgets", "kind": "Gadget"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object"}},
                }
            ],
        },
    }
    created = api.ok("POST", CRD_PATH + "?fieldManager=e2e", crd)
    # apiextensions-apiserver pkg/apis/apiextensions/v1/defaults.go SetDefaults_CustomResourceDefinitionSpec.
    names = {"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"}
    assert created["spec"]["names"] == names
    assert created["spec"]["conversion"] == {"strategy": "None"}
    # pkg/registry/customresourcedefinition/strategy.go PrepareForCreate resets status to the stored
    # version; the zero CustomResourceDefinitionNames prints its two required names.
    assert created["status"] == {"acceptedNames": {"plural": "", "kind": ""}, "storedVersions": ["v1"]}
    assert "finalizers" not in created["metadata"]

    path = f"{CRD_PATH}/gadgets.{group}"
    done = poll(lambda: (lambda o: o if _established(o) else None)(api.ok("GET", path)))
    # The naming controller (NamesAccepted, "NoConflicts") then the establishing controller
    # (Established, "InitialNamesAccepted").
    assert [(c["type"], c["status"], c["reason"], c["message"]) for c in done["status"]["conditions"]] == [
        ("NamesAccepted", "True", "NoConflicts", "no conflicts found"),
        ("Established", "True", "InitialNamesAccepted", "the initial names have been accepted"),
    ]
    assert done["status"]["acceptedNames"] == names
    # The creator's field set: spec and names are Go value structs (no "."), conversion a pointer.
    creator = next(m for m in done["metadata"]["managedFields"] if m["manager"] == "e2e")
    assert creator["fieldsV1"] == {
        "f:spec": {
            "f:conversion": {".": {}, "f:strategy": {}},
            "f:group": {},
            "f:names": {"f:kind": {}, "f:listKind": {}, "f:plural": {}, "f:singular": {}},
            "f:scope": {},
            "f:versions": {},
        }
    }

    # registry/customresourcedefinition/etcd.go Delete: "upon first request to delete, add our
    # finalizer and then delegate".
    deleting = api.ok("DELETE", path)
    assert deleting["metadata"]["finalizers"] == ["customresourcecleanup.apiextensions.k8s.io"]
    assert deleting["metadata"]["deletionTimestamp"]
    poll(lambda: api.get(path).status == 404)


def _established(obj: dict[str, Any]) -> bool:
    return any(
        c["type"] == "Established" and c["status"] == "True"
        for c in obj.get("status", {}).get("conditions", [])
    )


# --- 3. Timestamps --------------------------------------------------------------------------------


def test_time_and_micro_time_are_normalized(api: Kube, ns: str) -> None:
    """Offsets and fractions are stored as Go re-encodes metav1.Time (whole seconds, UTC) and
    MicroTime (six fractional digits, UTC)."""
    # apimachinery pkg/apis/meta/v1 time.go: time.Parse(time.RFC3339) then MarshalJSON
    # t.UTC().Format(time.RFC3339); micro_time.go: time.Parse(RFC3339Micro) and
    # t.UTC().Format(RFC3339Micro), RFC3339Micro = "2006-01-02T15:04:05.000000Z07:00".
    lease = api.ok(
        "POST",
        f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases",
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "l"},
            "spec": {"holderIdentity": "me", "renewTime": "2024-05-01T10:00:00.500000+02:00"},
        },
    )
    assert lease["spec"]["renewTime"] == "2024-05-01T08:00:00.500000Z"
    event = api.ok(
        "POST",
        f"/api/v1/namespaces/{ns}/events",
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": "e"},
            "involvedObject": {"kind": "Pod", "name": "p", "namespace": ns},
            "reason": "R",
            "message": "m",
            "firstTimestamp": "2024-05-01T10:00:00.75+02:00",
            "lastTimestamp": "2024-05-01T07:59:59.999-00:30",
            "eventTime": "2024-05-01T08:30:00.123456+00:30",
            # An Event with eventTime must name its reporter (events.go legacyValidateEvent).
            "reportingComponent": "kubelet",
            "reportingInstance": "node-1",
            "action": "Start",
        },
    )
    assert event["firstTimestamp"] == "2024-05-01T08:00:00Z"
    assert event["lastTimestamp"] == "2024-05-01T08:29:59Z"
    assert event["eventTime"] == "2024-05-01T08:00:00.123456Z"
    assert api.ok("GET", f"/api/v1/namespaces/{ns}/events/e")["firstTimestamp"] == "2024-05-01T08:00:00Z"


@pytest.mark.parametrize(
    ("field", "value", "why"),
    [
        (
            "acquireTime",
            "2024-05-01T08:00:00Z",
            'parsing time "2024-05-01T08:00:00Z" as "2006-01-02T15:04:05.000000Z07:00": '
            'cannot parse "Z" as ".000000"',
        ),
        (
            "renewTime",
            "2024-13-01T00:00:00.000000Z",
            'parsing time "2024-13-01T00:00:00.000000Z": month out of range',
        ),
    ],
    ids=["micro-without-fraction", "month"],
)
def test_unparsable_micro_time_is_a_decode_error(
    api: Kube, ns: str, field: str, value: str, why: str
) -> None:
    """A MicroTime Go cannot parse fails the body's decode: 400 with time.Parse's error."""
    lease = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": unique("bad")},
        "spec": {field: value},
    }
    body = assert_status(
        api.post(f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases", lease), 400, "BadRequest"
    )
    # handlers/rest.go transformDecodeError around MicroTime.UnmarshalJSON's time.Parse error.
    assert body["message"] == f'Lease in version "v1" cannot be handled as a Lease: {why}'


# --- 2. Events: one object, two versions --------------------------------------------------------


def test_core_event_read_as_events_k8s_io(api: Kube, ns: str) -> None:
    """A core/v1 Event is listed and read through events.k8s.io/v1, mapped field by field."""
    api.ok(
        "POST",
        f"/api/v1/namespaces/{ns}/events",
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": "core"},
            "involvedObject": {"kind": "Pod", "name": "web", "namespace": ns},
            "reason": "Started",
            "message": "Started container",
            "source": {"component": "kubelet"},
            "firstTimestamp": "2024-05-01T08:00:00Z",
            "lastTimestamp": "2024-05-01T08:05:00Z",
            "count": 3,
            "type": "Normal",
            "reportingComponent": "kubelet",
        },
    )
    got = api.ok("GET", f"/apis/events.k8s.io/v1/namespaces/{ns}/events/core")
    # kubernetes pkg/apis/events/v1/conversion.go Convert_core_Event_To_v1_Event: note = message,
    # regarding = involvedObject, deprecatedSource/FirstTimestamp/LastTimestamp/Count.
    assert got["apiVersion"] == "events.k8s.io/v1"
    assert {k: v for k, v in got.items() if k not in ("metadata", "apiVersion", "kind")} == {
        "reportingController": "kubelet",
        "reason": "Started",
        "regarding": {"kind": "Pod", "name": "web", "namespace": ns},
        "note": "Started container",
        "type": "Normal",
        "deprecatedSource": {"component": "kubelet"},
        "deprecatedFirstTimestamp": "2024-05-01T08:00:00Z",
        "deprecatedLastTimestamp": "2024-05-01T08:05:00Z",
        "deprecatedCount": 3,
    }
    listed = api.ok("GET", f"/apis/events.k8s.io/v1/namespaces/{ns}/events")
    assert [i["metadata"]["name"] for i in listed["items"]] == ["core"]
    assert listed["items"][0]["note"] == "Started container"


def test_events_k8s_io_event_read_as_core_and_selected(api: Kube, ns: str) -> None:
    """An events.k8s.io/v1 Event is a core/v1 Event too; field selectors work in both vocabularies."""
    base = f"/apis/events.k8s.io/v1/namespaces/{ns}/events"
    created = api.ok(
        "POST",
        base,
        {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": "new"},
            "eventTime": "2024-05-01T08:00:00.250000Z",
            "reportingController": "example.com/ctl",
            "reportingInstance": "ctl-1",
            "action": "Reconcile",
            "reason": "Synced",
            "regarding": {"kind": "Deployment", "name": "web", "namespace": ns},
            "note": "all good",
            "type": "Normal",
        },
    )
    assert created["note"] == "all good"
    core = api.ok("GET", f"/api/v1/namespaces/{ns}/events/new")
    # Convert_v1_Event_To_core_Event: message = note, involvedObject = regarding; core/v1's JSON
    # name of ReportingController is reportingComponent.
    assert core["message"] == "all good"
    assert core["involvedObject"] == {"kind": "Deployment", "name": "web", "namespace": ns}
    assert core["reportingComponent"] == "example.com/ctl"
    assert core["eventTime"] == "2024-05-01T08:00:00.250000Z"
    assert "note" not in core and "regarding" not in core

    # AddFieldLabelConversionsForEvent: regarding.* and reportingController map to the core
    # fields; a core label is "field label not supported" in events.k8s.io/v1.
    def names(path: str, selector: str) -> list[str]:
        return [i["metadata"]["name"] for i in api.ok("GET", f"{path}?fieldSelector={selector}")["items"]]

    assert names(base, "regarding.kind%3DDeployment") == ["new"]
    assert names(base, "reportingController%3Dexample.com%2Fctl") == ["new"]
    assert names(f"/api/v1/namespaces/{ns}/events", "involvedObject.kind%3DDeployment") == ["new"]
    bad = api.get(f"{base}?fieldSelector=involvedObject.kind%3DDeployment")
    assert assert_status(bad, 400, "BadRequest")["message"].endswith(
        "field label not supported: involvedObject.kind"
    )


def test_events_k8s_io_create_is_validated_strictly(api: Kube, ns: str) -> None:
    """A create through events.k8s.io/v1 gets upstream's strict checks; core/v1 only the legacy ones."""
    body = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "strict"},
        "regarding": {"kind": "Pod", "name": "p", "namespace": ns},
        "reason": "R",
        "type": "Normal",
        "eventTime": "2024-05-01T08:00:00.000000Z",
        "reportingController": "example.com/ctl",
        "reportingInstance": "i",
        "action": "A",
        "deprecatedCount": 2,
        "deprecatedSource": {"component": "kubelet"},
    }
    path = f"/apis/events.k8s.io/v1/namespaces/{ns}/events"
    st = assert_status(api.post(path, body), 422, "Invalid")
    # pkg/apis/core/validation/events.go ValidateEventCreate: paths name the internal fields.
    assert st["message"] == (
        'Event.events.k8s.io "strict" is invalid: [count: Invalid value: "": needs to be unset, '
        'source: Invalid value: "": needs to be unset]'
    )
    no_time = {k: v for k, v in body.items() if k not in ("eventTime", "deprecatedCount", "deprecatedSource")}
    st = assert_status(api.post(path, no_time), 422, "Invalid")
    assert st["message"] == 'Event.events.k8s.io "strict" is invalid: eventTime: Required value'
    # Through core/v1 only the legacy checks apply: count and source are fine there.
    core = {k: v for k, v in body.items() if not k.startswith(("deprecated", "regarding", "reporting"))}
    core.update(
        apiVersion="v1",
        involvedObject=body["regarding"],
        count=2,
        source={"component": "kubelet"},
        reportingComponent="example.com/ctl",
        reportingInstance="i",
    )
    assert api.post(f"/api/v1/namespaces/{ns}/events", core).status == 201


def test_watch_through_either_group(api: Kube, ns: str) -> None:
    """A watch on events.k8s.io/v1 sees an Event written through core/v1, in its own form."""
    with api.watch(f"/apis/events.k8s.io/v1/namespaces/{ns}/events") as stream:
        api.ok(
            "POST",
            f"/api/v1/namespaces/{ns}/events",
            {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"name": "w"},
                "involvedObject": {"kind": "Pod", "name": "p", "namespace": ns},
                "reason": "R",
                "message": "watched",
            },
        )
        ev = stream.until(lambda e: e["object"]["metadata"]["name"] == "w")
        assert ev["type"] == "ADDED"
        assert ev["object"]["apiVersion"] == "events.k8s.io/v1"
        assert ev["object"]["note"] == "watched"


def test_python_client_events_v1(k8s: Any, ns: str) -> None:
    """The official client's EventsV1Api lists core Events with their note and regarding."""
    from kubernetes import client as k8s_client

    core = k8s_client.CoreV1Api(k8s)
    core.create_namespaced_event(
        ns,
        k8s_client.CoreV1Event(
            metadata=k8s_client.V1ObjectMeta(name="py"),
            involved_object=k8s_client.V1ObjectReference(kind="Pod", name="p", namespace=ns),
            reason="Pulled",
            message="pulled image",
            # The client's EventsV1Event requires eventTime (as upstream's v1 validation does).
            event_time=datetime.datetime(2024, 5, 1, 8, 0, 0, 500000, tzinfo=datetime.UTC),
            reporting_component="kubelet",
            reporting_instance="node-1",
            action="Pull",
        ),
    )
    events = k8s_client.EventsV1Api(k8s).list_namespaced_event(ns, field_selector="reason=Pulled")
    assert [(e.metadata.name, e.note, e.regarding.name) for e in events.items] == [
        ("py", "pulled image", "p")
    ]


def test_events_share_storage_version_hash(api: Kube) -> None:
    """Discovery gives events.k8s.io/v1 events the storage version hash of core/v1 events."""
    # kube-apiserver 1.32 discovery: both report storageVersionHash "r2yiGXH7wu8=" (sha256 of "/v1/Event").
    core = next(r for r in api.ok("GET", "/api/v1")["resources"] if r["name"] == "events")
    new = next(r for r in api.ok("GET", "/apis/events.k8s.io/v1")["resources"] if r["name"] == "events")
    assert core["storageVersionHash"] == new["storageVersionHash"] == "r2yiGXH7wu8="
