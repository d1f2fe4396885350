"""The official ``kubernetes`` Python client against a real server: CRUD, patches, errors, subresources."""

from __future__ import annotations

import datetime
import json
from typing import Any

import pytest
from kubernetes import client as k8s_client
from kubernetes import watch as k8s_watch
from kubernetes.client.rest import ApiException

from tests.e2e.helpers import Kube, cm_path, configmap, deployment, poll, unique


@pytest.fixture(scope="module")
def core(k8s: k8s_client.ApiClient) -> k8s_client.CoreV1Api:
    return k8s_client.CoreV1Api(k8s)


@pytest.fixture(scope="module")
def apps(k8s: k8s_client.ApiClient) -> k8s_client.AppsV1Api:
    return k8s_client.AppsV1Api(k8s)


@pytest.fixture
def ns(api: Kube) -> str:
    """A fresh namespace (created over raw HTTP so a client bug cannot hide the test's subject)."""
    name = unique("py")
    api.ok(
        "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    )
    return name


def _status(err: ApiException) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(err.body)
    assert body["kind"] == "Status", body
    return body


# --- CRUD -----------------------------------------------------------------------------------------


def test_create_read_replace_delete(core: k8s_client.CoreV1Api, ns: str) -> None:
    """create → read → replace → delete round-trips through typed models."""
    created = core.create_namespaced_config_map(ns, configmap("crud", ns, data={"a": "1"}))
    assert created.metadata.uid and created.metadata.resource_version
    assert isinstance(created.metadata.creation_timestamp, datetime.datetime)
    read = core.read_namespaced_config_map("crud", ns)
    assert read.data == {"a": "1"} and read.metadata.uid == created.metadata.uid
    read.data["b"] = "2"
    replaced = core.replace_namespaced_config_map("crud", ns, read)
    assert replaced.data == {"a": "1", "b": "2"}
    assert int(replaced.metadata.resource_version) > int(created.metadata.resource_version)
    core.delete_namespaced_config_map("crud", ns)
    with pytest.raises(ApiException) as err:
        core.read_namespaced_config_map("crud", ns)
    assert err.value.status == 404


def test_patch_strategic_dict_body(core: k8s_client.CoreV1Api, apps: k8s_client.AppsV1Api, ns: str) -> None:
    """A dict body is a strategic merge patch: containers merge by name (new ones go first, as upstream)."""
    apps.create_namespaced_deployment(ns, deployment("smp", ns))
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "side", "image": "busybox"}]}}}}
    out = apps.patch_namespaced_deployment("smp", ns, patch)
    assert [c.name for c in out.spec.template.spec.containers] == ["side", "main"]
    out = apps.patch_namespaced_deployment(
        "smp", ns, {"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "nginx:2"}]}}}}
    )
    images = {c.name: c.image for c in out.spec.template.spec.containers}
    assert images == {"main": "nginx:2", "side": "busybox"}


def test_patch_json_patch_list_body(core: k8s_client.CoreV1Api, ns: str) -> None:
    """A list body is sent as a JSON patch (add, replace, remove, test)."""
    core.create_namespaced_config_map(ns, configmap("jp", ns, data={"a": "1", "b": "2"}))
    out = core.patch_namespaced_config_map(
        "jp",
        ns,
        [
            {"op": "test", "path": "/data/a", "value": "1"},
            {"op": "replace", "path": "/data/a", "value": "10"},
            {"op": "remove", "path": "/data/b"},
            {"op": "add", "path": "/data/c", "value": "3"},
        ],
    )
    assert out.data == {"a": "10", "c": "3"}
    with pytest.raises(ApiException) as err:
        core.patch_namespaced_config_map("jp", ns, [{"op": "test", "path": "/data/a", "value": "nope"}])
    assert err.value.status in (422, 409, 400)
    assert core.read_namespaced_config_map("jp", ns).data == {"a": "10", "c": "3"}


def test_list_pods_for_all_namespaces(core: k8s_client.CoreV1Api, api: Kube, ns: str) -> None:
    """list_pod_for_all_namespaces returns pods from several namespaces."""
    other = unique("py2")
    core.create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": other}})
    for n in (ns, other):
        core.create_namespaced_pod(
            n,
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "p", "labels": {"mark": ns}},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]},
            },
        )
    pods = core.list_pod_for_all_namespaces(label_selector=f"mark={ns}")
    assert {(p.metadata.namespace, p.metadata.name) for p in pods.items} == {(ns, "p"), (other, "p")}
    assert pods.metadata.resource_version


def test_generate_name(core: k8s_client.CoreV1Api, ns: str) -> None:
    """generateName produces prefix + 5 random characters from the upstream alphabet."""
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "gen-"}}
    names = {core.create_namespaced_config_map(ns, body).metadata.name for _ in range(3)}
    assert len(names) == 3
    for name in names:
        assert name.startswith("gen-") and len(name) == 9
        assert set(name[4:]) <= set("bcdfghjklmnpqrstvwxz2456789")


def test_labels_annotations_owner_references(core: k8s_client.CoreV1Api, ns: str) -> None:
    """Labels, annotations and ownerReferences round-trip unchanged."""
    owner = core.create_namespaced_config_map(ns, configmap("owner", ns))
    ref = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": "owner",
        "uid": owner.metadata.uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }
    body = configmap("child", ns, labels={"a": "b"}, annotations={"note": "x y z"})
    body["metadata"]["ownerReferences"] = [ref]
    core.create_namespaced_config_map(ns, body)
    got = core.read_namespaced_config_map("child", ns)
    assert got.metadata.labels == {"a": "b"} and got.metadata.annotations == {"note": "x y z"}
    (oref,) = got.metadata.owner_references
    assert (oref.api_version, oref.kind, oref.name, oref.uid) == (
        "v1",
        "ConfigMap",
        "owner",
        owner.metadata.uid,
    )
    assert oref.controller is True and oref.block_owner_deletion is True


# --- errors ---------------------------------------------------------------------------------------


def test_conflict_on_stale_resource_version(core: k8s_client.CoreV1Api, ns: str) -> None:
    """A replace with a stale resourceVersion is 409 Conflict with upstream's exact message."""
    core.create_namespaced_config_map(ns, configmap("x", ns))
    stale = core.read_namespaced_config_map("x", ns)
    fresh = core.read_namespaced_config_map("x", ns)
    fresh.data = {"k": "fresh"}
    core.replace_namespaced_config_map("x", ns, fresh)
    stale.data = {"k": "stale"}
    with pytest.raises(ApiException) as err:
        core.replace_namespaced_config_map("x", ns, stale)
    assert err.value.status == 409
    st = _status(err.value)
    assert st["reason"] == "Conflict"
    assert st["message"] == (
        'Operation cannot be fulfilled on configmaps "x": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )
    assert st["details"]["name"] == "x" and st["details"]["kind"] == "configmaps"
    assert core.read_namespaced_config_map("x", ns).data == {"k": "fresh"}


def test_already_exists(core: k8s_client.CoreV1Api, ns: str) -> None:
    """Creating an existing name is 409 AlreadyExists."""
    core.create_namespaced_config_map(ns, configmap("dup", ns))
    with pytest.raises(ApiException) as err:
        core.create_namespaced_config_map(ns, configmap("dup", ns, data={"other": "x"}))
    st = _status(err.value)
    assert err.value.status == 409 and st["reason"] == "AlreadyExists"
    assert st["message"] == 'configmaps "dup" already exists'
    assert core.read_namespaced_config_map("dup", ns).data == {"k": "v"}


def test_not_found(core: k8s_client.CoreV1Api, ns: str) -> None:
    """Reading a missing object is 404 NotFound with message 'configmaps "nope" not found'."""
    with pytest.raises(ApiException) as err:
        core.read_namespaced_config_map("nope", ns)
    st = _status(err.value)
    assert err.value.status == 404 and st["reason"] == "NotFound"
    assert st["message"] == 'configmaps "nope" not found'
    assert st["details"] == {"name": "nope", "kind": "configmaps"}


def test_deployment_not_found_message_has_group(apps: k8s_client.AppsV1Api, ns: str) -> None:
    """NotFound for a grouped resource names it resource.group."""
    with pytest.raises(ApiException) as err:
        apps.read_namespaced_deployment("nope", ns)
    st = _status(err.value)
    assert st["message"] == 'deployments.apps "nope" not found'
    assert st["details"] == {"name": "nope", "group": "apps", "kind": "deployments"}


def test_create_in_missing_namespace(core: k8s_client.CoreV1Api) -> None:
    """Creating into a namespace that does not exist is 404 'namespaces "x" not found'."""
    missing = unique("missing")
    with pytest.raises(ApiException) as err:
        core.create_namespaced_config_map(missing, configmap("x", missing))
    st = _status(err.value)
    assert err.value.status == 404 and st["reason"] == "NotFound"
    assert st["message"] == f'namespaces "{missing}" not found'


# --- finalizers and namespaces ---------------------------------------------------------------------


def test_finalizers_block_deletion_until_removed(core: k8s_client.CoreV1Api, ns: str) -> None:
    """Delete with a finalizer sets deletionTimestamp; removing the last finalizer deletes (DELETED event)."""
    core.create_namespaced_config_map(ns, configmap("fin", ns, finalizers=["example.com/hold"]))
    core.delete_namespaced_config_map("fin", ns)
    held = core.read_namespaced_config_map("fin", ns)
    assert held.metadata.deletion_timestamp is not None
    assert held.metadata.finalizers == ["example.com/hold"]
    rv = held.metadata.resource_version
    core.patch_namespaced_config_map("fin", ns, [{"op": "remove", "path": "/metadata/finalizers"}])
    events = []
    w = k8s_watch.Watch()
    for ev in w.stream(core.list_namespaced_config_map, ns, resource_version=rv, timeout_seconds=3):
        events.append((ev["type"], ev["object"].metadata.name))
        if ev["type"] == "DELETED":
            w.stop()
    assert ("DELETED", "fin") in events
    with pytest.raises(ApiException) as err:
        core.read_namespaced_config_map("fin", ns)
    assert err.value.status == 404


def test_no_new_finalizers_while_deleting(core: k8s_client.CoreV1Api, ns: str) -> None:
    """Once deletionTimestamp is set, adding a finalizer is 422."""
    core.create_namespaced_config_map(ns, configmap("fin2", ns, finalizers=["example.com/a"]))
    core.delete_namespaced_config_map("fin2", ns)
    with pytest.raises(ApiException) as err:
        core.patch_namespaced_config_map(
            "fin2", ns, {"metadata": {"finalizers": ["example.com/a", "example.com/b"]}}
        )
    assert err.value.status == 422
    core.patch_namespaced_config_map("fin2", ns, {"metadata": {"finalizers": None}})


def test_namespace_deletion_without_controllers(
    core: k8s_client.CoreV1Api, apps: k8s_client.AppsV1Api, api: Kube
) -> None:
    """Namespace deletion on the bare API server: Terminating, creates in it are 403, nothing empties
    it (no namespace controller, as a cluster without kube-controller-manager); ``/finalize`` without
    the ``kubernetes`` finalizer then removes it."""
    name = unique("doomed")
    api.ok(
        "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    )
    apps.create_namespaced_deployment(name, deployment("d", name))
    core.delete_namespace(name)
    nsobj = core.read_namespace(name)
    assert nsobj.status.phase == "Terminating" and nsobj.metadata.deletion_timestamp is not None
    assert nsobj.spec.finalizers == ["kubernetes"]
    with pytest.raises(ApiException) as err:
        core.create_namespaced_config_map(name, configmap("late", name))
    st = _status(err.value)
    assert err.value.status == 403 and st["reason"] == "Forbidden"
    # upstream admission/plugin/namespace/lifecycle: the message for content in a terminating namespace
    assert st["message"] == f"unable to create new content in namespace {name} because it is being terminated"
    assert apps.list_namespaced_deployment(name).items  # nobody empties it
    nsobj = api.ok("GET", f"/api/v1/namespaces/{name}")
    nsobj["spec"]["finalizers"] = []
    api.ok("PUT", f"/api/v1/namespaces/{name}/finalize", nsobj)

    def gone() -> bool:
        try:
            core.read_namespace(name)
        except ApiException as exc:
            return exc.status == 404
        return False

    poll(gone, timeout=10)


# --- generation, status and scale ------------------------------------------------------------------


def test_generation_and_status_subresource(apps: k8s_client.AppsV1Api, ns: str) -> None:
    """Spec changes bump generation; status writes do not; each endpoint ignores the other's half."""
    body = deployment("gen", ns)
    body["status"] = {"replicas": 42}
    created = apps.create_namespaced_deployment(ns, body)
    assert created.metadata.generation == 1
    assert not created.status or created.status.replicas != 42
    out = apps.patch_namespaced_deployment_status(
        "gen", ns, {"status": {"observedGeneration": 1, "replicas": 7}, "spec": {"replicas": 5}}
    )
    assert out.metadata.generation == 1 and out.status.replicas == 7 and out.spec.replicas == 1
    out = apps.patch_namespaced_deployment("gen", ns, {"spec": {"replicas": 3}, "status": {"replicas": 99}})
    assert out.metadata.generation == 2 and out.spec.replicas == 3
    assert out.status.replicas != 99
    out = apps.patch_namespaced_deployment("gen", ns, {"metadata": {"labels": {"extra": "label"}}})
    assert out.metadata.generation == 2


def test_scale_subresource(apps: k8s_client.AppsV1Api, ns: str) -> None:
    """read/patch_namespaced_deployment_scale read and change spec.replicas through autoscaling/v1 Scale."""
    apps.create_namespaced_deployment(ns, deployment("sc", ns, replicas=2))
    scale = apps.read_namespaced_deployment_scale("sc", ns)
    assert scale.kind == "Scale" and scale.api_version == "autoscaling/v1"
    assert scale.spec.replicas == 2 and scale.status.selector == "app=sc"
    dep = apps.read_namespaced_deployment("sc", ns)
    assert scale.metadata.uid == dep.metadata.uid
    out = apps.patch_namespaced_deployment_scale("sc", ns, {"spec": {"replicas": 6}})
    assert out.spec.replicas == 6
    assert apps.read_namespaced_deployment("sc", ns).spec.replicas == 6


def test_delete_collection(core: k8s_client.CoreV1Api, ns: str) -> None:
    """deletecollection with a label selector deletes exactly the matching objects."""
    for i in range(3):
        core.create_namespaced_config_map(ns, configmap(f"dc{i}", ns, labels={"batch": "yes"}))
    core.create_namespaced_config_map(ns, configmap("keep", ns))
    core.delete_collection_namespaced_config_map(ns, label_selector="batch=yes")
    assert [c.metadata.name for c in core.list_namespaced_config_map(ns).items] == ["keep"]


# --- dry run ---------------------------------------------------------------------------------------


def test_dry_run_stores_nothing(core: k8s_client.CoreV1Api, api: Kube, ns: str) -> None:
    """dryRun=All on create, replace, patch and delete returns a result but changes nothing stored."""
    out = core.create_namespaced_config_map(ns, configmap("dry", ns), dry_run="All")
    assert out.metadata.name == "dry" and not out.metadata.resource_version
    assert api.get(cm_path(ns, "dry")).status == 404
    real = core.create_namespaced_config_map(ns, configmap("dry", ns))
    rv = real.metadata.resource_version
    real.data = {"k": "changed"}
    assert core.replace_namespaced_config_map("dry", ns, real, dry_run="All").data == {"k": "changed"}
    assert core.patch_namespaced_config_map("dry", ns, {"data": {"k": "p"}}, dry_run="All").data == {"k": "p"}
    core.delete_namespaced_config_map("dry", ns, dry_run="All")
    stored = core.read_namespaced_config_map("dry", ns)
    assert stored.data == {"k": "v"} and stored.metadata.resource_version == rv


# --- assorted kinds --------------------------------------------------------------------------------


def test_core_and_events_api_events(k8s: k8s_client.ApiClient, ns: str) -> None:
    """Events are served by core/v1 and events.k8s.io/v1 (MicroTime eventTime round-trips)."""
    core = k8s_client.CoreV1Api(k8s)
    core.create_namespaced_event(
        ns,
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": "e1"},
            "involvedObject": {"kind": "Pod", "name": "p", "namespace": ns},
            "reason": "Started",
            "message": "hello",
            "type": "Normal",
            "count": 1,
            # Listed through events.k8s.io/v1 below too (one object, two views); the client's
            # EventsV1Event refuses a null eventTime, which upstream sends for a core Event without.
            "eventTime": "2026-01-02T03:04:05.000003Z",
            "reportingComponent": "kubelet",
            "reportingInstance": "node-1",
            "action": "Start",
        },
    )
    assert core.read_namespaced_event("e1", ns).reason == "Started"
    ev_api = k8s_client.EventsV1Api(k8s)
    ev_api.create_namespaced_event(
        ns,
        {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": "e2"},
            "eventTime": "2026-01-02T03:04:05.123456Z",
            "reportingController": "example.com/ctl",
            "reportingInstance": "ctl-1",
            "action": "Sync",
            "reason": "Synced",
            "type": "Normal",
            "regarding": {"kind": "Pod", "name": "p", "namespace": ns},
            "note": "done",
        },
    )
    got = ev_api.read_namespaced_event("e2", ns)
    assert got.reason == "Synced" and got.event_time.microsecond == 123456
    names = {e.metadata.name for e in ev_api.list_namespaced_event(ns).items}
    assert {"e1", "e2"} <= names


def test_leases(k8s: k8s_client.ApiClient, ns: str) -> None:
    """coordination.k8s.io Leases store holderIdentity and MicroTime renewTime."""
    coord = k8s_client.CoordinationV1Api(k8s)
    coord.create_namespaced_lease(
        ns,
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "leader"},
            "spec": {
                "holderIdentity": "me",
                "leaseDurationSeconds": 15,
                "renewTime": "2026-01-02T03:04:05.000001Z",
                # Not .000000: the client re-sends a datetime with no microseconds without a
                # fraction, which MicroTime's layout refuses (upstream answers that with 400 too).
                "acquireTime": "2026-01-02T03:04:05.000002Z",
            },
        },
    )
    lease = coord.read_namespaced_lease("leader", ns)
    assert lease.spec.holder_identity == "me" and lease.spec.lease_duration_seconds == 15
    lease.spec.holder_identity = "you"
    assert coord.replace_namespaced_lease("leader", ns, lease).spec.holder_identity == "you"


def test_jobs_and_cronjobs(k8s: k8s_client.ApiClient, ns: str) -> None:
    """batch/v1 Jobs and CronJobs can be created, read and listed."""
    batch = k8s_client.BatchV1Api(k8s)
    template = {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}
    batch.create_namespaced_job(
        ns,
        {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}, "spec": {"template": template}},
    )
    batch.create_namespaced_cron_job(
        ns,
        {
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "metadata": {"name": "cj"},
            "spec": {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template": template}}},
        },
    )
    assert batch.read_namespaced_job("j", ns).spec.template.spec.restart_policy == "Never"
    assert batch.read_namespaced_cron_job("cj", ns).spec.schedule == "*/5 * * * *"
    assert [j.metadata.name for j in batch.list_namespaced_job(ns).items] == ["j"]


def test_nodes_cluster_scoped(core: k8s_client.CoreV1Api) -> None:
    """Nodes are cluster-scoped: created and read without a namespace."""
    name = unique("node")
    created = core.create_node(
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"role": "e2e"}}}
    )
    assert created.metadata.namespace in (None, "")
    assert core.read_node(name).metadata.labels["role"] == "e2e"
    assert name in {n.metadata.name for n in core.list_node(label_selector="role=e2e").items}
    core.delete_node(name)


def test_serviceaccounts_and_secrets(core: k8s_client.CoreV1Api, ns: str) -> None:
    """ServiceAccounts and Secrets (stringData is folded into base64 data) round-trip."""
    core.create_namespaced_service_account(
        ns, {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "robot"}}
    )
    assert core.read_namespaced_service_account("robot", ns).metadata.name == "robot"
    core.create_namespaced_secret(
        ns,
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "s"},
            "type": "Opaque",
            "stringData": {"password": "hunter2"},
        },
    )
    sec = core.read_namespaced_secret("s", ns)
    assert sec.data == {"password": "aHVudGVyMg=="} and sec.type == "Opaque"
    assert not sec.string_data
