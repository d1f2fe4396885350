"""Reply encodings end to end: protobuf and YAML for objects, lists, watches and errors; 406s.

Upstream facts quoted here come from k8s.io/apiserver (v0.32) ``handlers/negotiation`` (clause
order, ``errNotAcceptable``), ``handlers/watch.go`` and ``handlers/response.go`` (watch frames:
a length-delimited ``WatchEvent`` holding the protobuf-encoded object), ``responsewriters``
(errors negotiated without transformations; indented JSON when nothing is acceptable) and
apiextensions-apiserver's ``customresource_handler.go`` (custom resources never in protobuf).
"""

from __future__ import annotations

import concurrent.futures
import json
from typing import Any

import pytest
import yaml

from kplane.api import protobuf
from kplane.api.protobuf import decoding, wire
from tests.e2e.conftest import Server, requires_kubectl
from tests.e2e.helpers import Kube, cm_path, configmap, open_crd, poll, unique

PROTOBUF = "application/vnd.kubernetes.protobuf"
CLIENT_GO_ACCEPT = "application/vnd.kubernetes.protobuf, */*"  # client-go's typed clients
NOT_ACCEPTABLE = (
    "only the following media types are accepted: "
    "application/json, application/yaml, application/vnd.kubernetes.protobuf"
)
NOT_ACCEPTABLE_STREAM = (
    "only the following media types are accepted: "
    "application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch"
)
GROUP = "encodings.example.com"


@pytest.fixture(scope="module")
def ns(api: Kube) -> str:
    name = unique("enc")
    api.ok(
        "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    )
    api.ok("POST", cm_path(name), configmap("c1", name, data={"a": "1", "b": "ü"}, labels={"app": "x"}))
    api.ok("POST", cm_path(name), configmap("c2", name, data={"a": "2"}))
    return name


def _status(body: bytes) -> dict[str, Any]:
    """A protobuf Status reply, read with the decoder's message reader (Status is reply-only)."""
    api_version, kind, raw = decoding.unwrap(body)
    assert (api_version, kind) == ("v1", "Status")
    out: dict[str, Any] = decoding.message(raw, "apis.meta.v1.Status")
    return out


def test_get_in_protobuf(api: Kube, ns: str) -> None:
    """A GET that asks protobuf first gets the object's protobuf, the same object as its JSON."""
    as_json = api.ok("GET", cm_path(ns, "c1"))
    resp = api.get(cm_path(ns, "c1"), headers={"Accept": CLIENT_GO_ACCEPT})
    assert resp.status == 200 and resp.content_type == PROTOBUF
    assert resp.body.startswith(b"k8s\x00")
    assert resp.body == protobuf.encode(as_json)
    decoded = protobuf.decode(resp.body)
    assert decoded["data"] == {"a": "1", "b": "ü"}
    assert decoded["metadata"]["resourceVersion"] == as_json["metadata"]["resourceVersion"]


def test_list_in_protobuf(api: Kube, ns: str) -> None:
    """A list in protobuf is a ConfigMapList: ListMeta with the resourceVersion, then the items."""
    resp = api.get(cm_path(ns), headers={"Accept": PROTOBUF})
    assert resp.status == 200 and resp.content_type == PROTOBUF
    api_version, kind, raw = decoding.unwrap(resp.body)
    assert (api_version, kind) == ("v1", "ConfigMapList")
    listed = decoding.message(raw, "core.v1.ConfigMapList")
    assert sorted(i["metadata"]["name"] for i in listed["items"]) == ["c1", "c2"]
    as_json = api.ok("GET", cm_path(ns))
    assert int(listed["metadata"]["resourceVersion"]) <= int(as_json["metadata"]["resourceVersion"])


def _frames(stream: Any, count: int) -> list[tuple[str, dict[str, Any]]]:
    """Read ``count`` length-prefixed WatchEvent frames; return (type, decoded object) pairs."""
    out = []
    for _ in range(count):
        size = int.from_bytes(stream.resp.read(4), "big")
        event = stream.resp.read(size)
        fields = {n: v for n, _, v in wire.fields(memoryview(event))}
        raw_ext = {n: v for n, _, v in wire.fields(fields[2])}
        out.append((bytes(fields[1]).decode(), protobuf.decode(bytes(raw_ext[1]))))
    return out


def test_watch_in_protobuf(api: Kube, ns: str) -> None:
    """A protobuf watch streams length-delimited WatchEvents whose objects are whole protobuf
    bodies (magic and envelope), with ``;stream=watch`` in the content type."""
    rv = api.ok("GET", cm_path(ns))["metadata"]["resourceVersion"]
    with api.watch(cm_path(ns), {"resourceVersion": rv}, headers={"Accept": CLIENT_GO_ACCEPT}) as w:
        assert w.status == 200
        assert w.headers["content-type"] == "application/vnd.kubernetes.protobuf;stream=watch"
        api.ok("POST", cm_path(ns), configmap("w1", ns, data={"k": "v"}))
        api.ok("DELETE", cm_path(ns, "w1"))
        (t1, o1), (t2, o2) = _frames(w, 2)
    assert (t1, o1["kind"], o1["metadata"]["name"], o1["data"]) == ("ADDED", "ConfigMap", "w1", {"k": "v"})
    assert (t2, o2["metadata"]["name"]) == ("DELETED", "w1")


def test_error_in_protobuf(api: Kube, ns: str) -> None:
    """An error asked for in protobuf is a protobuf v1 Status with the JSON Status's fields."""
    resp = api.get(cm_path(ns, "nope"), headers={"Accept": CLIENT_GO_ACCEPT})
    assert resp.status == 404 and resp.content_type == PROTOBUF
    status = _status(resp.body)
    assert status["status"] == "Failure" and status["code"] == 404 and status["reason"] == "NotFound"
    assert status["message"] == 'configmaps "nope" not found'
    assert status["details"]["name"] == "nope" and status["details"]["kind"] == "configmaps"


def test_yaml_object_list_and_error(api: Kube, ns: str) -> None:
    """YAML replies hold the same documents as JSON, keys sorted as sigs.k8s.io/yaml writes them."""
    resp = api.get(cm_path(ns, "c1"), headers={"Accept": "application/yaml"})
    assert resp.status == 200 and resp.content_type == "application/yaml"
    assert yaml.safe_load(resp.body) == api.ok("GET", cm_path(ns, "c1"))
    assert resp.body.startswith(b'apiVersion: v1\ndata:\n  a: "1"\n')  # go-yaml v2 quotes as kubectl prints
    listed = api.get(cm_path(ns), headers={"Accept": "application/yaml"})
    doc = yaml.safe_load(listed.body)
    assert doc["kind"] == "ConfigMapList" and {i["metadata"]["name"] for i in doc["items"]} >= {"c1", "c2"}
    missing = api.get(cm_path(ns, "nope"), headers={"Accept": "application/yaml"})
    assert missing.status == 404 and missing.content_type == "application/yaml"
    assert yaml.safe_load(missing.body)["message"] == 'configmaps "nope" not found'


def test_yaml_table(api: Kube, ns: str) -> None:
    """``as=Table`` is allowed in YAML too (RequestScope.AllowsMediaTypeTransform)."""
    resp = api.get(cm_path(ns), headers={"Accept": "application/yaml;as=Table;v=v1;g=meta.k8s.io"})
    assert resp.status == 200, resp.body
    assert yaml.safe_load(resp.body)["kind"] == "Table"


def test_bursts_arrive_whole_in_every_encoding(api: Kube) -> None:
    """Events a watcher gets in bursts (an initial list of more than one batch, concurrent creates
    committed together) arrive complete and well framed in JSON, protobuf and Table watches: the
    same objects at the same resourceVersions in all three, the Table's column definitions once."""
    burst_ns = unique("burst")
    api.ok(
        "POST",
        "/api/v1/namespaces",
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": burst_ns}},
    )
    before, during = 130, 40
    for i in range(before):
        api.ok("POST", cm_path(burst_ns), configmap(f"b{i}", burst_ns, data={"i": str(i)}))
    table_accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
    query = {"timeoutSeconds": 30}
    with (
        api.watch(cm_path(burst_ns), query) as as_json,
        api.watch(cm_path(burst_ns), query, headers={"Accept": CLIENT_GO_ACCEPT}) as as_pb,
        api.watch(cm_path(burst_ns), query, headers={"Accept": table_accept}) as as_table,
    ):
        # one event read from each: every watch has taken its initial list
        json_events = [as_json.next()]
        pb_events = _frames(as_pb, 1)
        table_events = [as_table.next()]
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            names = [f"d{i}" for i in range(during)]
            list(pool.map(lambda n: api.ok("POST", cm_path(burst_ns), configmap(n, burst_ns)), names))
        total = before + during
        json_events += [as_json.next() for _ in range(total - 1)]
        pb_events += _frames(as_pb, total - 1)
        table_events += [as_table.next() for _ in range(total - 1)]
    listed = api.ok("GET", cm_path(burst_ns))["items"]
    expected = {(o["metadata"]["name"], o["metadata"]["resourceVersion"]) for o in listed}
    assert len(expected) == total
    assert all(e is not None and e["type"] == "ADDED" for e in json_events + table_events)
    got_json = {
        (e["object"]["metadata"]["name"], e["object"]["metadata"]["resourceVersion"]) for e in json_events
    }
    got_pb = {(o["metadata"]["name"], o["metadata"]["resourceVersion"]) for t, o in pb_events if t == "ADDED"}
    rows = [e["object"]["rows"][0]["object"]["metadata"] for e in table_events]
    got_table = {(m["name"], m["resourceVersion"]) for m in rows}
    assert got_json == got_pb == got_table == expected
    assert [bool(e["object"].get("columnDefinitions")) for e in table_events] == [True] + [False] * (
        total - 1
    )


def test_watch_in_yaml_is_not_acceptable(api: Kube, ns: str) -> None:
    """YAML has no stream serializer: upstream picks it, then refuses the watch with 406."""
    resp = api.get(
        cm_path(ns), query={"watch": "true"}, headers={"Accept": "application/yaml, application/json"}
    )
    assert resp.status == 406 and resp.content_type == "application/yaml"  # the error itself may be YAML
    assert yaml.safe_load(resp.body)["message"] == NOT_ACCEPTABLE_STREAM


def test_unacceptable_is_406_as_indented_json(api: Kube, ns: str) -> None:
    """Nothing acceptable: 406 written as indented JSON; an error found first keeps its own code."""
    resp = api.get(cm_path(ns, "c1"), headers={"Accept": "text/html"})
    assert resp.status == 406 and resp.content_type == "application/json"
    assert resp.json() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": NOT_ACCEPTABLE,
        "reason": "NotAcceptable",
        "code": 406,
    }
    assert resp.body.startswith(b'{\n  "kind": "Status",\n')
    missing = api.get(cm_path(ns, "nope"), headers={"Accept": "text/html"})
    assert missing.status == 404 and missing.json()["reason"] == "NotFound"


def test_table_in_protobuf_falls_back(api: Kube, ns: str) -> None:
    """Tables have no protobuf form: that clause is skipped for the next one."""
    accept = f"{PROTOBUF};as=Table;v=v1;g=meta.k8s.io, application/json"
    resp = api.get(cm_path(ns), headers={"Accept": accept})
    assert resp.status == 200 and resp.json()["kind"] == "ConfigMapList"
    only = api.get(cm_path(ns), headers={"Accept": f"{PROTOBUF};as=Table;v=v1;g=meta.k8s.io"})
    assert only.status == 406 and only.json()["message"] == NOT_ACCEPTABLE


@pytest.fixture(scope="module")
def gadgets(api: Kube, ns: str) -> str:
    crd = open_crd(GROUP, "Gadget")
    api.ok("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    path = f"/apis/{GROUP}/v1/namespaces/{ns}/gadgets"
    poll(lambda: api.get(path).status == 200)
    api.ok("POST", path, {"apiVersion": f"{GROUP}/v1", "kind": "Gadget", "metadata": {"name": "g1"}})
    return path


def test_custom_resources_are_never_protobuf(api: Kube, gadgets: str) -> None:
    """Custom resources: protobuf is skipped (JSON when also accepted, else 406); their errors,
    Status objects, may still be protobuf."""
    resp = api.get(f"{gadgets}/g1", headers={"Accept": CLIENT_GO_ACCEPT})
    assert resp.status == 200 and resp.content_type == "application/json"
    assert resp.json()["metadata"]["name"] == "g1"
    only = api.get(f"{gadgets}/g1", headers={"Accept": PROTOBUF})
    assert only.status == 406
    assert _status(only.body)["message"] == NOT_ACCEPTABLE
    watch = api.get(gadgets, query={"watch": "true"}, headers={"Accept": PROTOBUF})
    assert watch.status == 406
    assert _status(watch.body)["message"] == NOT_ACCEPTABLE_STREAM


@requires_kubectl
def test_kubectl_reads_protobuf_replies(server: Server, ns: str) -> None:
    """kubectl's typed clients (create, describe) ask protobuf first and decode kplane's replies."""
    res = server.kubectl("create", "configmap", "k1", "-n", ns, "--from-literal=x=y", "-o", "json", "--v=8")
    assert "Content-Type: application/vnd.kubernetes.protobuf" in res.stderr.split("Response Status")[-1]
    created = json.loads(res.stdout)
    assert created["data"] == {"x": "y"} and created["metadata"]["uid"]
    described = server.kubectl("describe", "configmap", "k1", "-n", ns, "--v=8")
    assert "Content-Type: application/vnd.kubernetes.protobuf" in described.stderr
    assert "Name:         k1" in described.stdout and "x:\n----\ny" in described.stdout
    missing = server.kubectl("describe", "configmap", "nope", "-n", ns, check=False)
    assert 'configmaps "nope" not found' in missing.stderr


@requires_kubectl
def test_kubectl_follows_a_protobuf_watch(server: Server, api: Kube, ns: str) -> None:
    """``kubectl run --attach`` watches its pod through client-go (protobuf frames) until it is
    running and ready; a status change made meanwhile must be decoded for it to go on to attach."""
    proc = server.kubectl_popen(
        "run",
        "w1",
        "-n",
        ns,
        "--image=nginx",
        "--restart=Never",
        "--attach",
        "--pod-running-timeout=20s",
        "--v=8",
    )
    try:
        poll(lambda: api.get(f"/api/v1/namespaces/{ns}/pods/w1").status == 200, timeout=15)
        status = {"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}
        api.patch(f"/api/v1/namespaces/{ns}/pods/w1/status", status)
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert "Content-Type: application/vnd.kubernetes.protobuf;stream=watch" in err
    assert "timed out waiting" not in err
    # what attaching answers without a kubelet (upstream's pods/attach message)
    assert 'pod "w1" does not have a host assigned' in err, err[-1500:]


POM_ACCEPT = "as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
POML_ACCEPT = "as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"


def test_metadata_only_views(api: Kube, ns: str) -> None:
    """client-go's metadata client: protobuf first, then JSON; objects reduced to their metadata."""
    accept = f"{PROTOBUF};{POML_ACCEPT},application/json;{POML_ACCEPT},application/json"
    resp = api.get(cm_path(ns), headers={"Accept": accept})
    assert resp.status == 200 and resp.content_type == PROTOBUF
    api_version, kind, raw = decoding.unwrap(resp.body)
    assert (api_version, kind) == ("meta.k8s.io/v1", "PartialObjectMetadataList")
    listed = decoding.message(raw, "apis.meta.v1.PartialObjectMetadataList")
    names = {i["metadata"]["name"] for i in listed["items"]}
    assert {"c1", "c2"} <= names and all(set(i) == {"metadata"} for i in listed["items"])
    one = api.get(cm_path(ns, "c1"), headers={"Accept": f"application/json;{POM_ACCEPT}"}).json()
    assert set(one) == {"kind", "apiVersion", "metadata"}
    assert (one["kind"], one["apiVersion"]) == ("PartialObjectMetadata", "meta.k8s.io/v1")
    assert one["metadata"]["labels"] == {"app": "x"}
    as_json = api.get(cm_path(ns), headers={"Accept": f"application/json;{POML_ACCEPT}"}).json()
    assert as_json["items"][0]["kind"] == "PartialObjectMetadata"


def test_metadata_only_view_of_the_wrong_shape_is_406(api: Kube, ns: str) -> None:
    """Upstream's asPartialObjectMetadata(List) refusals, naming the internal Go type."""
    resp = api.get(cm_path(ns), headers={"Accept": f"application/json;{POM_ACCEPT}"})
    assert resp.status == 406
    assert resp.json()["message"] == (
        "you requested PartialObjectMetadata, but the requested object is a list (*core.ConfigMapList)"
    )
    resp = api.get(cm_path(ns, "c1"), headers={"Accept": f"application/json;{POML_ACCEPT}"})
    assert resp.status == 406
    assert resp.json()["message"] == (
        "you requested PartialObjectMetadataList, but the requested object is not a list (*core.ConfigMap)"
    )


def test_metadata_only_watch_in_protobuf(api: Kube, ns: str) -> None:
    """A metadata-only watch sends PartialObjectMetadata objects in its protobuf frames."""
    rv = api.ok("GET", cm_path(ns))["metadata"]["resourceVersion"]
    accept = f"{PROTOBUF};{POM_ACCEPT},application/json;{POM_ACCEPT},application/json"
    with api.watch(cm_path(ns), {"resourceVersion": rv}, headers={"Accept": accept}) as w:
        api.ok("POST", cm_path(ns), configmap("m1", ns, data={"k": "v"}))
        size = int.from_bytes(w.resp.read(4), "big")
        event = {n: v for n, _, v in wire.fields(memoryview(w.resp.read(size)))}
    embedded = bytes({n: v for n, _, v in wire.fields(event[2])}[1])
    api_version, kind, raw = decoding.unwrap(embedded)
    assert (api_version, kind) == ("meta.k8s.io/v1", "PartialObjectMetadata")
    assert decoding.message(raw, "apis.meta.v1.PartialObjectMetadata")["metadata"]["name"] == "m1"


def test_custom_resource_metadata_in_protobuf(api: Kube, gadgets: str) -> None:
    """Metadata views of custom resources may be protobuf (the CRD handler keeps protobuf for them)."""
    resp = api.get(gadgets, headers={"Accept": f"{PROTOBUF};{POML_ACCEPT}"})
    assert resp.status == 200 and resp.content_type == PROTOBUF
    _, _, raw = decoding.unwrap(resp.body)
    listed = decoding.message(raw, "apis.meta.v1.PartialObjectMetadataList")
    assert [i["metadata"]["name"] for i in listed["items"]] == ["g1"]
