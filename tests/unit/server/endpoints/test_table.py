"""Tests for kplane.server.endpoints.table: Table columns and cells as kube-apiserver prints them."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from kplane.api.catalog import PrinterColumn, ResourceRecord
from kplane.server.endpoints import table
from kplane.server.endpoints.table import building

NOW = datetime.datetime(2026, 1, 1, 12, 0, 0, tzinfo=datetime.UTC)

Obj = dict[str, Any]


def ago(seconds: float) -> str:
    """An RFC 3339 timestamp ``seconds`` before NOW."""
    return (NOW - datetime.timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def record(group: str, kind: str, *, scope: str = "Namespaced", **extra: Any) -> ResourceRecord:
    plural = kind.lower() + "s"
    return ResourceRecord(
        group=group,
        version="v1",
        plural=plural,
        singular=kind.lower(),
        kind=kind,
        list_kind=kind + "List",
        scope=scope,  # type: ignore[arg-type]
        **extra,
    )


def meta(name: str, age: float = 300, **extra: Any) -> Obj:
    return {
        "name": name,
        "namespace": "default",
        "uid": f"uid-{name}",
        "creationTimestamp": ago(age),
        **extra,
    }


def row_of(rec: ResourceRecord, obj: Obj) -> dict[str, Any]:
    """The single row (cells keyed by column name) of a one-object table."""
    result = table.table(rec, [obj], now=NOW)
    names = [c["name"] for c in result["columnDefinitions"]]
    cells = result["rows"][0]["cells"]
    assert len(cells) == len(names)
    return dict(zip(names, cells, strict=True))


# -- envelope --------------------------------------------------------------------------------

CM = record("", "ConfigMap")


def test_table_envelope_and_list_metadata() -> None:
    """A Table carries kind, apiVersion, list metadata and one row per object in order."""
    objs = [{"metadata": meta("a"), "data": {"k": "v"}}, {"metadata": meta("b")}]
    result = table.table(CM, objs, resource_version="42", continue_token="tok", remaining=0, now=NOW)
    assert result["kind"] == "Table"
    assert result["apiVersion"] == "meta.k8s.io/v1"
    assert result["metadata"] == {"resourceVersion": "42", "continue": "tok", "remainingItemCount": 0}
    assert [r["cells"][0] for r in result["rows"]] == ["a", "b"]


def test_table_metadata_omits_unset_fields() -> None:
    """Empty resourceVersion/continue and a None remaining count are left out."""
    assert table.table(CM, [], now=NOW)["metadata"] == {}


def test_row_object_is_partial_object_metadata_by_default() -> None:
    """includeObject=Metadata gives each row a PartialObjectMetadata with the full metadata."""
    m = meta("a", labels={"app": "x"}, annotations={"n": "o"})
    row = table.table(CM, [{"metadata": m, "data": {}}], now=NOW)["rows"][0]
    assert row["object"] == {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": m}


def test_row_object_none_and_object() -> None:
    """includeObject=None leaves out the object; Object embeds the whole object."""
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta("a"), "data": {"k": "v"}}
    assert "object" not in table.table(CM, [obj], include_object="None", now=NOW)["rows"][0]
    assert table.table(CM, [obj], include_object="Object", now=NOW)["rows"][0]["object"] == obj


def test_no_headers_empties_column_definitions() -> None:
    """no_headers drops the column definitions but keeps the cells."""
    result = table.table(CM, [{"metadata": meta("a")}], no_headers=True, now=NOW)
    assert result["columnDefinitions"] == []
    assert result["rows"][0]["cells"] == ["a", 0, "5m"]


def test_table_does_not_mutate_objects() -> None:
    """Building a table leaves the objects exactly as they were."""
    obj = {"metadata": meta("a"), "data": {"k": "v"}}
    before = repr(obj)
    table.table(CM, [obj], include_object="Object", now=NOW)
    assert repr(obj) == before


def test_column_definitions_have_every_field() -> None:
    """Each definition has name/type/format/description/priority; Name has format name."""
    cols = table.column_definitions(record("", "Pod"))
    assert [c["name"] for c in cols] == [
        "Name", "Ready", "Status", "Restarts", "Age", "IP", "Node", "Nominated Node", "Readiness Gates"
    ]  # fmt: skip
    assert all(set(c) == {"name", "type", "format", "description", "priority"} for c in cols)
    assert cols[0]["format"] == "name"
    assert [c["priority"] for c in cols] == [0, 0, 0, 0, 0, 1, 1, 1, 1]
    assert all(c["description"] for c in cols)


def test_column_definitions_are_fresh_copies() -> None:
    """Mutating returned definitions does not change later tables."""
    table.column_definitions(CM)[0]["name"] = "changed"
    assert table.column_definitions(CM)[0]["name"] == "Name"


@pytest.mark.parametrize("key", sorted(building._BUILTIN), ids=lambda k: f"{k[0] or 'core'}/{k[1]}")
def test_every_builtin_printer_survives_an_empty_object(key: tuple[str, str]) -> None:
    """Each built-in printer yields one cell per column even for an object with no fields."""
    rec = record(key[0], key[1])
    result = table.table(rec, [{}, {"metadata": None, "spec": None, "status": None}], now=NOW)
    for row in result["rows"]:
        assert len(row["cells"]) == len(result["columnDefinitions"])


# -- Pod -------------------------------------------------------------------------------------

POD = record("", "Pod")


def running(name: str, ready: bool = True, restarts: int = 0, last_finished: str | None = None) -> Obj:
    status: Obj = {"name": name, "ready": ready, "restartCount": restarts, "state": {"running": {}}}
    if last_finished:
        status["lastState"] = {"terminated": {"exitCode": 1, "finishedAt": last_finished}}
    return status


def pod(containers: int = 1, **status: Any) -> Obj:
    return {
        "metadata": meta("web-1", 600),
        "spec": {"containers": [{"name": f"c{i}", "image": "nginx"} for i in range(containers)]},
        "status": {"phase": "Running", **status},
    }


def test_pod_multi_container_one_not_ready() -> None:
    """Ready counts ready running containers out of all; restarts sum over containers."""
    obj = pod(2, containerStatuses=[running("c0", restarts=2), running("c1", ready=False, restarts=1)])
    row = row_of(POD, obj)
    assert (row["Name"], row["Ready"], row["Status"], row["Restarts"], row["Age"]) == (
        "web-1",
        "1/2",
        "Running",
        "3",
        "10m",
    )


def test_pod_crash_loop_with_last_restart_time() -> None:
    """A waiting reason becomes the status; restarts show how long ago the last one ended."""
    cs = {
        "name": "c0",
        "ready": False,
        "restartCount": 5,
        "state": {"waiting": {"reason": "CrashLoopBackOff"}},
        "lastState": {"terminated": {"exitCode": 1, "finishedAt": ago(120)}},
    }
    row = row_of(POD, pod(containerStatuses=[cs]))
    assert (row["Ready"], row["Status"], row["Restarts"]) == ("0/1", "CrashLoopBackOff", "5 (2m ago)")


def test_pod_latest_restart_wins() -> None:
    """The restart suffix uses the most recent finishedAt over all containers."""
    statuses = [
        running("c0", restarts=1, last_finished=ago(3600)),
        running("c1", restarts=1, last_finished=ago(30)),
    ]
    obj = pod(2, containerStatuses=statuses)
    assert row_of(POD, obj)["Restarts"] == "2 (30s ago)"


def test_pod_terminating() -> None:
    """A pod being deleted that has not finished shows Terminating."""
    obj = pod(containerStatuses=[running("c0")])
    obj["metadata"]["deletionTimestamp"] = ago(1)
    assert row_of(POD, obj)["Status"] == "Terminating"


def test_pod_deleted_after_success_keeps_completed() -> None:
    """Deletion does not hide a terminal phase."""
    obj = pod(
        containerStatuses=[{"name": "c0", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]
    )
    obj["status"]["phase"] = "Succeeded"
    obj["metadata"]["deletionTimestamp"] = ago(1)
    assert row_of(POD, obj)["Status"] == "Completed"


def test_pod_node_lost_is_unknown() -> None:
    """A deleted pod whose node was lost shows Unknown."""
    obj = pod(reason="NodeLost", containerStatuses=[running("c0")])
    obj["metadata"]["deletionTimestamp"] = ago(1)
    assert row_of(POD, obj)["Status"] == "Unknown"


def test_pod_completed_has_row_condition() -> None:
    """A succeeded pod shows Completed and its row carries a Completed condition."""
    obj = pod(
        containerStatuses=[{"name": "c0", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]
    )
    obj["status"]["phase"] = "Succeeded"
    result = table.table(POD, [obj], now=NOW)
    assert result["rows"][0]["cells"][2] == "Completed"
    assert result["rows"][0]["conditions"][0]["type"] == "Completed"
    assert result["rows"][0]["conditions"][0]["reason"] == "Succeeded"


def test_pod_completed_container_with_running_sibling() -> None:
    """Completed turns back into Running (Ready) or NotReady while another container runs."""
    statuses = [
        {"name": "c0", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}},
        running("c1"),
    ]
    ready = pod(2, containerStatuses=statuses, conditions=[{"type": "Ready", "status": "True"}])
    assert row_of(POD, ready)["Status"] == "Running"
    assert row_of(POD, pod(2, containerStatuses=statuses))["Status"] == "NotReady"


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        pytest.param({"terminated": {"exitCode": 2}}, "ExitCode:2", id="exit-code"),
        pytest.param({"terminated": {"exitCode": 137, "signal": 9}}, "Signal:9", id="signal"),
        pytest.param({"terminated": {"exitCode": 1, "reason": "Error"}}, "Error", id="reason"),
        pytest.param({"waiting": {"reason": "ImagePullBackOff"}}, "ImagePullBackOff", id="waiting"),
    ],
)
def test_pod_container_state_reasons(state: Obj, expected: str) -> None:
    """Terminated containers without a reason show ExitCode:N or Signal:N."""
    assert row_of(POD, pod(containerStatuses=[{"name": "c0", "state": state}]))["Status"] == expected


def test_pod_first_container_reason_wins() -> None:
    """With several failing containers, the first one's reason is shown."""
    statuses = [
        {"name": "c0", "state": {"waiting": {"reason": "ErrImagePull"}}},
        {"name": "c1", "state": {"waiting": {"reason": "CrashLoopBackOff"}}},
    ]
    assert row_of(POD, pod(2, containerStatuses=statuses))["Status"] == "ErrImagePull"


def init_pod(*init_states: Obj, sidecar: bool = False) -> Obj:
    obj = pod(phase="Pending")
    obj["status"]["phase"] = "Pending"
    obj["spec"]["initContainers"] = [
        {"name": f"i{i}", **({"restartPolicy": "Always"} if sidecar and i == 0 else {})}
        for i in range(len(init_states))
    ]
    obj["status"]["initContainerStatuses"] = [
        {"name": f"i{i}", "restartCount": 1, "state": s} for i, s in enumerate(init_states)
    ]
    obj["status"]["containerStatuses"] = [{"name": "c0", "state": {"waiting": {"reason": "PodInitializing"}}}]
    return obj


@pytest.mark.parametrize(
    ("states", "expected", "restarts"),
    [
        pytest.param(({"running": {}}, {"waiting": {}}), "Init:0/2", "1", id="first-running"),
        pytest.param(
            ({"terminated": {"exitCode": 0}}, {"running": {}}), "Init:1/2", "2", id="second-running"
        ),
        pytest.param(
            ({"waiting": {"reason": "CrashLoopBackOff"}},), "Init:CrashLoopBackOff", "1", id="waiting"
        ),
        pytest.param(({"terminated": {"exitCode": 1}},), "Init:ExitCode:1", "1", id="failed"),
        pytest.param(
            ({"terminated": {"exitCode": 1, "reason": "Error"}},), "Init:Error", "1", id="failed-reason"
        ),
    ],
)
def test_pod_initializing(states: tuple[Obj, ...], expected: str, restarts: str) -> None:
    """While init containers run, status is Init:<done>/<total> or Init:<reason>.

    Restarts then count only init containers up to the one that is not done.
    """
    row = row_of(POD, init_pod(*states))
    assert (row["Status"], row["Restarts"], row["Ready"]) == (expected, restarts, "0/1")


def test_pod_sidecar_counts_toward_ready_and_total() -> None:
    """A started restartable init container (sidecar) is counted in Ready and total."""
    obj = pod(containerStatuses=[running("c0")])
    obj["spec"]["initContainers"] = [{"name": "proxy", "restartPolicy": "Always"}]
    obj["status"]["initContainerStatuses"] = [
        {"name": "proxy", "started": True, "ready": True, "restartCount": 2, "state": {"running": {}}}
    ]
    row = row_of(POD, obj)
    assert (row["Ready"], row["Status"], row["Restarts"]) == ("2/2", "Running", "2")


def test_pod_scheduling_gated() -> None:
    """A pod held by scheduling gates shows SchedulingGated."""
    obj = pod(
        phase="Pending", conditions=[{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}]
    )
    obj["status"]["phase"] = "Pending"
    assert row_of(POD, obj)["Status"] == "SchedulingGated"


def test_pod_wide_columns() -> None:
    """IP, Node, Nominated Node and Readiness Gates, with <none> for the unset ones."""
    obj = pod(
        containerStatuses=[running("c0")],
        podIPs=[{"ip": "10.0.0.7"}, {"ip": "fd00::7"}],
        conditions=[
            {"type": "example.com/lb", "status": "True"},
            {"type": "example.com/dns", "status": "False"},
        ],
    )
    obj["spec"]["nodeName"] = "node-1"
    obj["spec"]["readinessGates"] = [
        {"conditionType": "example.com/lb"},
        {"conditionType": "example.com/dns"},
    ]
    row = row_of(POD, obj)
    assert (row["IP"], row["Node"], row["Nominated Node"], row["Readiness Gates"]) == (
        "10.0.0.7",
        "node-1",
        "<none>",
        "1/2",
    )
    bare = row_of(POD, pod())
    assert (bare["IP"], bare["Node"], bare["Readiness Gates"]) == ("<none>", "<none>", "<none>")


# -- apps ------------------------------------------------------------------------------------

TEMPLATE = {
    "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}, {"name": "log", "image": "busybox"}]}
}


def test_deployment_cells() -> None:
    """Deployment: Ready ready/desired, Up-to-date, Available, wide containers/images/selector."""
    obj = {
        "metadata": meta("web", 3 * 86400 + 7200),
        "spec": {
            "replicas": 3,
            "selector": {
                "matchLabels": {"app": "web"},
                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["fe", "be"]}],
            },
            "template": TEMPLATE,
        },
        "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2},
    }
    row = row_of(record("apps", "Deployment"), obj)
    assert row == {
        "Name": "web",
        "Ready": "2/3",
        "Up-to-date": 3,
        "Available": 2,
        "Age": "3d2h",
        "Containers": "web,log",
        "Images": "nginx:1.27,busybox",
        "Selector": "app=web,tier in (be,fe)",
    }


def test_deployment_defaults_replicas_and_empty_selector() -> None:
    """Missing spec.replicas reads as 1 (the API default); an empty selector prints ''."""
    row = row_of(record("apps", "Deployment"), {"metadata": meta("web"), "spec": {"selector": {}}})
    assert (row["Ready"], row["Selector"]) == ("0/1", "")


def test_replica_set_cells() -> None:
    """ReplicaSet: integer Desired/Current/Ready and a formatted selector."""
    obj = {
        "metadata": meta("web-abc"),
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}, "template": TEMPLATE},
        "status": {"replicas": 2, "readyReplicas": 1},
    }
    row = row_of(record("apps", "ReplicaSet"), obj)
    assert [row[c] for c in ("Desired", "Current", "Ready", "Selector")] == [2, 2, 1, "app=web"]


def test_stateful_set_and_daemon_set_cells() -> None:
    """StatefulSet Ready is ready/desired; DaemonSet prints counts and its node selector."""
    sts = {
        "metadata": meta("db"),
        "spec": {"replicas": 3, "template": TEMPLATE},
        "status": {"readyReplicas": 3},
    }
    assert row_of(record("apps", "StatefulSet"), sts)["Ready"] == "3/3"
    ds = {
        "metadata": meta("agent"),
        "spec": {
            "selector": {"matchExpressions": [{"key": "app", "operator": "Exists"}]},
            "template": {"spec": {**TEMPLATE["spec"], "nodeSelector": {"kubernetes.io/os": "linux"}}},
        },
        "status": {
            "desiredNumberScheduled": 3,
            "currentNumberScheduled": 3,
            "numberReady": 2,
            "updatedNumberScheduled": 3,
            "numberAvailable": 2,
        },
    }
    row = row_of(record("apps", "DaemonSet"), ds)
    assert [row[c] for c in ("Desired", "Current", "Ready", "Up-to-date", "Available")] == [3, 3, 2, 3, 2]
    assert (row["Node Selector"], row["Selector"]) == ("kubernetes.io/os=linux", "app")


# -- core ------------------------------------------------------------------------------------

SVC = record("", "Service")


def test_service_node_port() -> None:
    """Ports show port:nodePort/protocol; no external IPs prints <none>; wide selector."""
    obj = {
        "metadata": meta("web"),
        "spec": {
            "type": "NodePort",
            "clusterIP": "10.96.0.10",
            "clusterIPs": ["10.96.0.10"],
            "ports": [{"port": 80, "protocol": "TCP"}, {"port": 443, "nodePort": 30443}],
            "selector": {"app": "web"},
        },
    }
    row = row_of(SVC, obj)
    assert row == {
        "Name": "web",
        "Type": "NodePort",
        "Cluster-IP": "10.96.0.10",
        "External-IP": "<none>",
        "Port(s)": "80/TCP,443:30443/TCP",
        "Age": "5m",
        "Selector": "app=web",
    }


@pytest.mark.parametrize(
    ("spec", "status", "external"),
    [
        pytest.param({"type": "LoadBalancer"}, {}, "<pending>", id="lb-pending"),
        pytest.param(
            {"type": "LoadBalancer", "externalIPs": ["1.1.1.1"]},
            {"loadBalancer": {"ingress": [{"ip": "9.9.9.9"}, {"hostname": "lb.example.com"}]}},
            "9.9.9.9,lb.example.com,1.1.1.1",
            id="lb-ingress-and-external",
        ),
        pytest.param(
            {"type": "ExternalName", "externalName": "db.example.com"}, {}, "db.example.com", id="extname"
        ),
        pytest.param({"externalIPs": ["1.2.3.4", "5.6.7.8"]}, {}, "1.2.3.4,5.6.7.8", id="clusterip-external"),
    ],
)
def test_service_external_ip(spec: Obj, status: Obj, external: str) -> None:
    """External-IP follows the service type: pending LBs, LB ingress, ExternalName, externalIPs."""
    assert row_of(SVC, {"metadata": meta("s"), "spec": spec, "status": status})["External-IP"] == external


def test_headless_service_without_ports() -> None:
    """A headless service shows Cluster-IP None, Port(s) <none>, Selector <none>, type ClusterIP."""
    row = row_of(SVC, {"metadata": meta("h"), "spec": {"clusterIP": "None"}})
    cells = (row["Type"], row["Cluster-IP"], row["Port(s)"], row["Selector"])
    assert cells == ("ClusterIP", "None", "<none>", "<none>")


NODE = record("", "Node", scope="Cluster")


def test_node_roles_and_scheduling_disabled() -> None:
    """Node status Ready,SchedulingDisabled; roles sorted from role labels; wide node info."""
    obj = {
        "metadata": meta(
            "cp-1",
            400 * 86400,
            labels={
                "node-role.kubernetes.io/control-plane": "",
                "node-role.kubernetes.io/etcd": "",
                "kubernetes.io/role": "master",
                "node-role.kubernetes.io/": "",
            },
        ),
        "spec": {"unschedulable": True},
        "status": {
            "conditions": [
                {"type": "MemoryPressure", "status": "False"},
                {"type": "Ready", "status": "True"},
            ],
            "addresses": [
                {"type": "Hostname", "address": "cp-1"},
                {"type": "InternalIP", "address": "10.0.0.1"},
            ],
            "nodeInfo": {
                "kubeletVersion": "v1.32.0",
                "osImage": "Debian GNU/Linux 12",
                "kernelVersion": "6.1.0",
                "containerRuntimeVersion": "containerd://1.7.0",
            },
        },
    }
    row = row_of(NODE, obj)
    assert row == {
        "Name": "cp-1",
        "Status": "Ready,SchedulingDisabled",
        "Roles": "control-plane,etcd,master",
        "Age": "400d",
        "Version": "v1.32.0",
        "Internal-IP": "10.0.0.1",
        "External-IP": "<none>",
        "OS-Image": "Debian GNU/Linux 12",
        "Kernel-Version": "6.1.0",
        "Container-Runtime": "containerd://1.7.0",
    }


@pytest.mark.parametrize(
    ("conditions", "expected"),
    [
        pytest.param([{"type": "Ready", "status": "False"}], "NotReady", id="not-ready"),
        pytest.param([{"type": "Ready", "status": "Unknown"}], "NotReady", id="ready-unknown"),
        pytest.param([], "Unknown", id="no-conditions"),
    ],
)
def test_node_status(conditions: list[Obj], expected: str) -> None:
    """Without a True Ready condition a node is NotReady; without one at all, Unknown."""
    row = row_of(NODE, {"metadata": meta("n"), "status": {"conditions": conditions}})
    assert (row["Status"], row["Roles"], row["OS-Image"]) == (expected, "<none>", "<unknown>")


def test_namespace_configmap_secret_serviceaccount() -> None:
    """Simple kinds: namespace phase, key counts (data + binaryData), secret type, secret refs."""
    ns = row_of(
        record("", "Namespace", scope="Cluster"), {"metadata": meta("dev"), "status": {"phase": "Active"}}
    )
    assert (ns["Status"], ns["Age"]) == ("Active", "5m")
    cm = row_of(CM, {"metadata": meta("c"), "data": {"a": "1", "b": "2"}, "binaryData": {"c": "AA=="}})
    assert cm["Data"] == 3
    tls = {"metadata": meta("s"), "type": "kubernetes.io/tls", "data": {"tls.crt": "", "tls.key": ""}}
    secret = row_of(record("", "Secret"), tls)
    assert (secret["Type"], secret["Data"]) == ("kubernetes.io/tls", 2)
    sa = row_of(record("", "ServiceAccount"), {"metadata": meta("default"), "secrets": [{"name": "tok"}]})
    assert sa["Secrets"] == 1


def test_missing_creation_timestamp_is_unknown_age() -> None:
    """An object without creationTimestamp has Age <unknown>."""
    assert row_of(CM, {"metadata": {"name": "x"}})["Age"] == "<unknown>"


EVENT = record("", "Event")


def test_core_event_cells() -> None:
    """Event: Last Seen, Type, Reason, kind/name, trimmed Message, wide source/count/name."""
    obj = {
        "metadata": meta("web-1.17a", 600),
        "involvedObject": {"kind": "Pod", "name": "web-1", "fieldPath": "spec.containers{web}"},
        "reason": "BackOff",
        "message": "Back-off restarting failed container\n",
        "type": "Warning",
        "source": {"component": "kubelet", "host": "node-1"},
        "firstTimestamp": ago(600),
        "lastTimestamp": ago(65),
        "count": 7,
    }
    assert row_of(EVENT, obj) == {
        "Last Seen": "65s",
        "Type": "Warning",
        "Reason": "BackOff",
        "Object": "pod/web-1",
        "Subobject": "spec.containers{web}",
        "Source": "kubelet, node-1",
        "Message": "Back-off restarting failed container",
        "First Seen": "10m",
        "Count": 7,
        "Name": "web-1.17a",
    }


def test_core_event_new_style_fields() -> None:
    """eventTime fills First/Last Seen, reporting controller fills Source, count defaults to 1."""
    obj = {
        "metadata": meta("e"),
        "involvedObject": {"kind": "Node"},
        "eventTime": "2026-01-01T11:59:00.000000Z",
        "reportingController": "kplane-scheduler",
        "type": "Normal",
    }
    row = row_of(EVENT, obj)
    assert (row["Last Seen"], row["First Seen"], row["Object"], row["Source"], row["Count"]) == (
        "60s",
        "60s",
        "node",
        "kplane-scheduler",
        1,
    )


def test_events_v1_event_uses_series() -> None:
    """events.k8s.io/v1: regarding/note map to Object/Message; series sets Last Seen and Count."""
    obj = {
        "metadata": meta("e"),
        "regarding": {"kind": "Deployment", "name": "web"},
        "note": "Scaled up replica set web-abc to 3",
        "reason": "ScalingReplicaSet",
        "type": "Normal",
        "eventTime": "2026-01-01T11:00:00.000000Z",
        "series": {"count": 4, "lastObservedTime": "2026-01-01T11:58:00.000000Z"},
        "reportingController": "deployment-controller",
        "reportingInstance": "kplane-1",
    }
    row = row_of(record("events.k8s.io", "Event"), obj)
    assert (row["Last Seen"], row["First Seen"], row["Count"], row["Object"], row["Source"]) == (
        "2m",
        "60m",
        4,
        "deployment/web",
        "deployment-controller, kplane-1",
    )
    assert row["Message"] == "Scaled up replica set web-abc to 3"


ENDPOINTS = record("", "Endpoints")


@pytest.mark.parametrize(
    ("subsets", "expected"),
    [
        pytest.param(None, "<none>", id="none"),
        pytest.param(
            [{"addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}], "ports": [{"port": 80}]}],
            "10.0.0.1:80,10.0.0.2:80",
            id="two",
        ),
        pytest.param(
            [
                {
                    "addresses": [{"ip": f"10.0.0.{i}"} for i in range(1, 4)],
                    "ports": [{"port": 80}, {"port": 443}],
                }
            ],
            "10.0.0.1:80,10.0.0.2:80,10.0.0.3:80 + 3 more...",
            id="more",
        ),
        pytest.param(
            [{"addresses": [{"ip": "fd00::1"}], "ports": [{"port": 53}]}], "[fd00::1]:53", id="ipv6"
        ),
        pytest.param([{"addresses": [{"ip": "10.0.0.9"}]}], "10.0.0.9", id="headless"),
    ],
)
def test_endpoints_cell(subsets: Any, expected: str) -> None:
    """Endpoints shows up to three ip:port pairs and how many more there are."""
    assert row_of(ENDPOINTS, {"metadata": meta("e"), "subsets": subsets})["Endpoints"] == expected


# -- batch -----------------------------------------------------------------------------------

JOB = record("batch", "Job")


def job(conditions: list[Obj] | None = None, **status: Any) -> Obj:
    return {
        "metadata": meta("pi", 900),
        "spec": {"completions": 1, "selector": {"matchLabels": {"job-name": "pi"}}, "template": TEMPLATE},
        "status": {"conditions": conditions or [], **status},
    }


def test_job_completed() -> None:
    """A completed job: Complete, n/m completions, duration start→completion."""
    obj = job(
        [{"type": "Complete", "status": "True"}], succeeded=1, startTime=ago(900), completionTime=ago(780)
    )
    row = row_of(JOB, obj)
    assert (row["Status"], row["Completions"], row["Duration"], row["Age"]) == (
        "Complete",
        "1/1",
        "2m",
        "15m",
    )
    assert row["Selector"] == "job-name=pi"


def test_job_running_with_parallelism() -> None:
    """Without completions, parallelism > 1 prints n/1 of P; duration runs until now."""
    obj = job(startTime=ago(30))
    obj["spec"] = {"parallelism": 3, "template": TEMPLATE}
    row = row_of(JOB, obj)
    assert (row["Status"], row["Completions"], row["Duration"]) == ("Running", "0/1 of 3", "30s")


@pytest.mark.parametrize(
    ("conditions", "deleting", "expected"),
    [
        pytest.param([{"type": "Failed", "status": "True"}], False, "Failed", id="failed"),
        pytest.param([{"type": "Suspended", "status": "True"}], False, "Suspended", id="suspended"),
        pytest.param(
            [{"type": "FailureTarget", "status": "True"}], False, "FailureTarget", id="failure-target"
        ),
        pytest.param([{"type": "Suspended", "status": "True"}], True, "Terminating", id="terminating"),
        pytest.param([{"type": "Complete", "status": "False"}], False, "Running", id="false-condition"),
    ],
)
def test_job_status(conditions: list[Obj], deleting: bool, expected: str) -> None:
    """Job status follows condition precedence; Terminating comes before Suspended."""
    obj = job(conditions)
    if deleting:
        obj["metadata"]["deletionTimestamp"] = ago(1)
    row = row_of(JOB, obj)
    assert (row["Status"], row["Duration"]) == (expected, "")


def test_cron_job_cells() -> None:
    """CronJob: schedule, <none> timezone, False suspend, active count, last schedule age."""
    obj = {
        "metadata": meta("backup", 86400),
        "spec": {
            "schedule": "*/5 * * * *",
            "jobTemplate": {"spec": {"template": TEMPLATE}},
        },
        "status": {"active": [{"name": "backup-1"}], "lastScheduleTime": ago(240)},
    }
    row = row_of(record("batch", "CronJob"), obj)
    assert row == {
        "Name": "backup",
        "Schedule": "*/5 * * * *",
        "Timezone": "<none>",
        "Suspend": "False",
        "Active": 1,
        "Last Schedule": "4m",
        "Age": "24h",
        "Containers": "web,log",
        "Images": "nginx:1.27,busybox",
        "Selector": "<none>",
    }
    obj["spec"].update(timeZone="Etc/UTC", suspend=True)
    del obj["status"]["lastScheduleTime"]
    row = row_of(record("batch", "CronJob"), obj)
    assert (row["Timezone"], row["Suspend"], row["Last Schedule"]) == ("Etc/UTC", "True", "<none>")


# -- other built-ins -------------------------------------------------------------------------


def test_lease_holder() -> None:
    """Lease prints its holder identity (empty when free)."""
    rec = record("coordination.k8s.io", "Lease")
    assert (
        row_of(rec, {"metadata": meta("l"), "spec": {"holderIdentity": "kplane-1_abc"}})["Holder"]
        == "kplane-1_abc"
    )
    assert row_of(rec, {"metadata": meta("l"), "spec": {}})["Holder"] == ""


def test_role_binding_wide_subjects() -> None:
    """RoleBinding prints Kind/name of the role and its subjects by kind."""
    obj = {
        "metadata": meta("rb"),
        "roleRef": {"kind": "ClusterRole", "name": "view"},
        "subjects": [
            {"kind": "User", "name": "alice"},
            {"kind": "ServiceAccount", "name": "bot", "namespace": "ci"},
            {"kind": "Group", "name": "devs"},
        ],
    }
    row = row_of(record("rbac.authorization.k8s.io", "RoleBinding"), obj)
    assert [row[c] for c in ("Role", "Users", "Groups", "ServiceAccounts")] == [
        "ClusterRole/view",
        "alice",
        "devs",
        "ci:bot",
    ]


def test_builtin_without_printer_shows_created_at() -> None:
    """A built-in kind without a printer gets Name and Created At (RFC 3339), like upstream."""
    rec = record("rbac.authorization.k8s.io", "Role")
    result = table.table(rec, [{"metadata": meta("r", 60)}], now=NOW)
    columns = [(c["name"], c["type"]) for c in result["columnDefinitions"]]
    assert columns == [("Name", "string"), ("Created At", "date")]
    assert result["rows"][0]["cells"] == ["r", "2026-01-01T11:59:00Z"]


# -- custom resources ------------------------------------------------------------------------


def crd_record(*columns: PrinterColumn) -> ResourceRecord:
    return record("example.com", "Widget", custom=True, printer_columns=columns)


def test_custom_resource_without_columns_has_name_and_age() -> None:
    """A CR without printer columns gets Name and an Age date column with the age as cell."""
    result = table.table(crd_record(), [{"metadata": meta("w", 7200)}], now=NOW)
    assert [(c["name"], c["type"]) for c in result["columnDefinitions"]] == [
        ("Name", "string"),
        ("Age", "date"),
    ]
    assert result["rows"][0]["cells"] == ["w", "120m"]


def test_custom_resource_printer_columns() -> None:
    """Declared columns follow Name in order, with typed cells and null for missing values."""
    rec = crd_record(
        PrinterColumn("Replicas", "integer", ".spec.replicas"),
        PrinterColumn("Ratio", "number", ".spec.ratio", description="How much."),
        PrinterColumn("Paused", "boolean", ".spec.paused", priority=1),
        PrinterColumn("Ready", "string", '.status.conditions[?(@.type=="Ready")].status'),
        PrinterColumn("Labels", "string", ".metadata.labels"),
        PrinterColumn("Started", "date", ".status.startedAt"),
        PrinterColumn("Bad", "date", ".status.bad"),
        PrinterColumn("Missing", "string", ".status.nothing"),
        PrinterColumn("WrongType", "integer", ".spec.paused"),
    )
    obj = {
        "metadata": meta("w", labels={"a": "1"}),
        "spec": {"replicas": 2.0, "ratio": 3, "paused": True},
        "status": {
            "conditions": [{"type": "Ready", "status": "True"}],
            "startedAt": ago(3 * 3600),
            "bad": "not a time",
        },
    }
    result = table.table(rec, [obj], now=NOW)
    cols = result["columnDefinitions"]
    assert [c["name"] for c in cols][:2] == ["Name", "Replicas"]
    assert cols[1]["description"] == "Custom resource definition column (in JSONPath format): .spec.replicas"
    assert cols[2]["description"] == "How much."
    assert cols[3]["priority"] == 1
    cells = result["rows"][0]["cells"]
    assert cells == ["w", 2, 3.0, True, "True", "map[a:1]", "3h", "<invalid>", None, None]
    assert type(cells[1]) is int and type(cells[2]) is float


# -- watch -----------------------------------------------------------------------------------


def test_watch_event_headers_only_first() -> None:
    """The first watch event's Table has column definitions; later ones have none."""
    obj = {"metadata": {**meta("c"), "resourceVersion": "17"}, "data": {"k": "v"}}
    first = table.watch_table_event(CM, "ADDED", obj, first=True, now=NOW)
    later = table.watch_table_event(CM, "MODIFIED", obj, first=False, now=NOW)
    assert first["type"] == "ADDED"
    assert [c["name"] for c in first["object"]["columnDefinitions"]] == ["Name", "Data", "Age"]
    assert later["object"]["columnDefinitions"] == []
    for event in (first, later):
        assert event["object"]["kind"] == "Table"
        assert event["object"]["metadata"] == {"resourceVersion": "17"}
        assert [r["cells"] for r in event["object"]["rows"]] == [["c", 1, "5m"]]
        assert event["object"]["rows"][0]["object"]["kind"] == "PartialObjectMetadata"


def test_watch_error_and_bookmark_events() -> None:
    """ERROR events pass their Status through; BOOKMARK becomes a row-less Table with the RV."""
    status = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 410, "reason": "Expired"}
    assert table.watch_table_event(CM, "ERROR", status, first=True) == {"type": "ERROR", "object": status}
    bookmark = {"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"resourceVersion": "99"}}
    event = table.watch_table_event(CM, "BOOKMARK", bookmark, first=False, now=NOW)
    assert event["object"]["rows"] == []
    assert event["object"]["metadata"] == {"resourceVersion": "99"}
