"""Each hostile input of issue 7 gets upstream's answer through a real server (one test per fix).

Bodies nested past the limit, YAML alias bombs and odd keys, int64 query parameters, JSON-patch
operations and Pod fields of the wrong type, field names holding NUL or newlines (the Warning
header), metadata of the wrong type and garbage protobuf. Each test quotes the upstream text it
expects and says where it comes from.
"""

from __future__ import annotations

import json
import urllib.parse

import pytest
from kubernetes import client as k8s_client
from kubernetes import dynamic

from kplane.api import protobuf
from kplane.api.jsonbody import MAX_DEPTH
from tests.e2e.conftest import Server, requires_kubectl
from tests.e2e.helpers import Kube, assert_status, open_crd, unique

CMS = "/api/v1/namespaces/default/configmaps"


def _deep(depth: int, opener: str = "{") -> str:
    return ('{"a":' * depth + "1" + "}" * depth) if opener == "{" else ("[" * depth + "1" + "]" * depth)


def _bomb(levels: int = 9, fanout: int = 9) -> str:
    lines = ["l0: &a0 [" + ", ".join(["lol"] * fanout) + "]"]
    lines += [f"l{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * fanout) + "]" for i in range(1, levels + 1)]
    return "\n".join(lines) + "\n"


@pytest.fixture
def cm(api: Kube) -> str:
    name = unique("cm")
    api.ok("POST", CMS, {"metadata": {"name": name}, "data": {"a": "b"}})
    return name


@pytest.mark.parametrize("validation", ["Strict", "Warn", "Ignore"])
@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 600, 1000, 1100])
def test_create_nested_too_deep_is_upstreams_400(api: Kube, depth: int, validation: str) -> None:
    """Upstream: serializer/json/meta.go ``couldn't get version/kind; json parse error: `` around
    encoding/json's ``invalid character '{' exceeded max depth`` (scanner.go), then handlers/rest.go
    transformDecodeError ``the object provided is unrecognized (must be of type ConfigMap): ... (<the
    body's first 30 bytes> ...)``. kplane's limit is lower than Go's 10000 (README)."""
    body = '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"deep"},"x":' + _deep(depth) + "}"
    resp = api.post(CMS, body, query={"fieldValidation": validation})
    st = assert_status(resp, 400, "BadRequest")
    assert st["message"] == (
        "the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; "
        "json parse error: invalid character '{' exceeded max depth "
        '({"apiVersion":"v1","kind":"Con ...)'
    )


@pytest.mark.parametrize(
    ("ptype", "body", "message"),
    [
        # handlers/patch.go: the JSON and merge patchers wrap the strict decode error
        # ("error decoding patch: %v"); strategicPatchObject answers it as it is
        (
            "merge",
            '{"data":' + _deep(1000) + "}",
            "error decoding patch: invalid character '{' exceeded max depth",
        ),
        ("strategic", '{"data":' + _deep(1000) + "}", "invalid character '{' exceeded max depth"),
        ("json", _deep(1000, "["), "error decoding patch: invalid character '[' exceeded max depth"),
    ],
)
def test_patch_nested_too_deep_is_upstreams_400(
    api: Kube, cm: str, ptype: str, body: str, message: str
) -> None:
    resp = api.patch(f"{CMS}/{cm}", body, ptype, query={"fieldValidation": "Strict"})
    assert assert_status(resp, 400, "BadRequest")["message"] == message
    assert api.ok("GET", f"{CMS}/{cm}")["data"] == {"a": "b"}


def test_apply_yaml_alias_bomb_is_refused_without_expanding(api: Kube, cm: str) -> None:
    """go-yaml v2 decode.go ``document contains excessive aliasing``, wrapped by sigs.k8s.io/yaml
    (``error converting YAML to JSON: ``) and the apply patcher (``error decoding patch: ``)."""
    body = f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {cm}\n" + _bomb()
    resp = api.patch(f"{CMS}/{cm}", body, "apply", query={"fieldManager": "bomber"})
    st = assert_status(resp, 400, "BadRequest")
    assert (
        st["message"]
        == "error decoding patch: error converting YAML to JSON: yaml: document contains excessive aliasing"
    )
    assert len(resp.body) < 1000


def test_create_yaml_alias_bomb_is_refused(api: Kube) -> None:
    """A YAML create body: YAMLToJSON's error, then transformDecodeError with the body's first 30
    bytes in hex (summarizeData: the body does not start with ``{``)."""
    body = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bomb}\n" + _bomb()
    resp = api.post(CMS, body, content_type="application/yaml")
    st = assert_status(resp, 400, "BadRequest")
    assert st["message"] == (
        "the object provided is unrecognized (must be of type ConfigMap): yaml: document contains "
        f"excessive aliasing ({body.encode()[:30].hex()} ...)"
    )


def test_yaml_keys_that_are_not_strings(api: Kube) -> None:
    """sigs.k8s.io/yaml turns bool, int and float keys into strings; a null key is refused with
    ``unsupported map key of type: %!s(<nil>), key: <nil>, value: "v"``."""
    name = unique("keys")
    body = f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata: {{true: a, 1: b, 2.5: c}}\n"
    resp = api.patch(f"{CMS}/{name}", body, "apply", query={"fieldManager": "keys"})
    assert resp.status == 201, resp.body
    assert resp.json()["data"] == {"true": "a", "1": "b", "2.5": "c"}
    bad = f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata: {{null: v}}\n"
    st = assert_status(api.patch(f"{CMS}/{name}", bad, "apply", query={"fieldManager": "keys"}), 400)
    assert st["message"] == (
        "error decoding patch: error converting YAML to JSON: unsupported map key of type: %!s(<nil>), "
        'key: <nil>, value: "v"'
    )


@pytest.mark.parametrize(
    ("param", "value", "message"),
    [
        # runtime.Convert_Slice_string_To_int64: strconv.ParseInt's error as the 400 message
        ("limit", str(2**64), 'strconv.ParseInt: parsing "18446744073709551616": value out of range'),
        ("limit", "abc", 'strconv.ParseInt: parsing "abc": invalid syntax'),
        ("timeoutSeconds", str(2**63), 'strconv.ParseInt: parsing "9223372036854775808": value out of range'),
    ],
)
def test_int64_query_parameters(api: Kube, param: str, value: str, message: str) -> None:
    assert assert_status(api.get(CMS, query={param: value}), 400, "BadRequest")["message"] == message


def test_negative_limit_and_timeout_are_served(api: Kube) -> None:
    """A negative limit means no limit; a negative watch timeout ends the watch at once (200)."""
    assert api.get(CMS, query={"limit": "-5"}).status == 200
    resp = api.get(CMS, query={"watch": "true", "timeoutSeconds": "-1"})
    assert resp.status == 200


def test_delete_grace_period_out_of_range(api: Kube, cm: str) -> None:
    st = assert_status(api.delete(f"{CMS}/{cm}", query={"gracePeriodSeconds": str(2**63)}), 400)
    assert st["message"] == 'strconv.ParseInt: parsing "9223372036854775808": value out of range'
    st = assert_status(api.delete(f"{CMS}/{cm}", {"gracePeriodSeconds": 1.5}), 400)
    # encoding/json's UnmarshalTypeError for DeleteOptions.gracePeriodSeconds (an int64)
    assert st["message"] == (
        "json: cannot unmarshal number 1.5 into Go struct field DeleteOptions.gracePeriodSeconds "
        "of type int64"
    )


@pytest.mark.parametrize("op", [1, None, ["add"], {"op": "add"}])
def test_json_patch_op_that_is_not_a_string(api: Kube, cm: str, op: object) -> None:
    """Refused as a client error, never a 500."""
    resp = api.patch(f"{CMS}/{cm}", [{"op": op, "path": "/data/x", "value": "1"}], "json")
    assert resp.status == 422, resp.body


@pytest.mark.parametrize(
    ("resources", "tail"),
    [
        (
            "x",
            "string into Go struct field Container.spec.containers.resources of type v1.ResourceRequirements",
        ),
        (
            5,
            "number into Go struct field Container.spec.containers.resources of type v1.ResourceRequirements",
        ),
        (
            {"limits": "x"},
            "string into Go struct field ResourceRequirements.spec.containers.resources.limits",
        ),
    ],
)
def test_pod_resources_not_an_object(api: Kube, resources: object, tail: str) -> None:
    """The QoS class is computed from what validation has not checked yet: never a 500, but
    upstream's decode error (encoding/json UnmarshalTypeError through transformDecodeError)."""
    pod = {
        "metadata": {"name": unique("qos")},
        "spec": {"containers": [{"name": "c", "image": "i", "resources": resources}]},
    }
    st = assert_status(api.post("/api/v1/namespaces/default/pods", pod), 400, "BadRequest")
    assert st["message"].startswith(
        'Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal ' + tail
    )


@pytest.mark.parametrize(
    ("meta", "tail"),
    [
        (
            {"name": "x", "labels": "a=b"},
            "string into Go struct field ObjectMeta.metadata.labels of type map[string]string",
        ),
        (
            {"name": "x", "finalizers": [{"a": 1}]},
            "object into Go struct field ObjectMeta.metadata.finalizers of type string",
        ),
    ],
)
def test_metadata_of_the_wrong_type_is_upstreams_decode_error(api: Kube, meta: object, tail: str) -> None:
    """handlers/rest.go transformDecodeError around encoding/json's UnmarshalTypeError."""
    st = assert_status(api.post(CMS, {"metadata": meta}), 400, "BadRequest")
    assert (
        st["message"]
        == f'ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal {tail}'
    )


@pytest.mark.parametrize(
    ("field", "quoted"),
    [("x\x00y", "x\\\\x00y"), ("new\nline", "new\\\\nline"), ('q"uote', 'q\\\\\\"uote')],
)
def test_unknown_field_with_control_characters_is_answered(api: Kube, field: str, quoted: str) -> None:
    """The write commits and its answer arrives: upstream names the field with strconv.Quote
    (sigs.k8s.io/json strict errors), so the Warning header (apimachinery NewWarningHeader:
    ``299 - "..."`` with \\ and " escaped) never holds a control character."""
    name = unique("nul")
    resp = api.post(CMS, {"metadata": {"name": name}, field: 1}, query={"fieldValidation": "Warn"})
    assert resp.status == 201, resp.body
    assert resp.headers["warning"] == f'299 - "unknown field \\"{quoted}\\""'
    strict = api.post(
        CMS, {"metadata": {"name": unique("nul")}, field: 1}, query={"fieldValidation": "Strict"}
    )
    st = assert_status(strict, 400, "BadRequest")
    assert st["message"].endswith(
        "strict decoding error: unknown field " + json.dumps(field).replace("\\u0000", "\\x00")
    )


def test_official_client_reads_the_answer(k8s: k8s_client.ApiClient) -> None:
    """The official client's dynamic API reads the answer of a write whose unknown field holds NUL
    and a newline (its connection is not dropped)."""
    configmaps = dynamic.DynamicClient(k8s).resources.get(api_version="v1", kind="ConfigMap")
    name = unique("pyc")
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "bo\x00gus\n": "1"}
    created = configmaps.create(body=body, namespace="default", query_params=[("fieldValidation", "Warn")])
    assert created.metadata.name == name


@pytest.mark.parametrize("body", [b"", b"\xff\xfe garbage", b"k8s\x00\x0a\x02\x08\x01garbage", b"k8s\x00"])
def test_garbage_protobuf_is_a_client_error(api: Kube, body: bytes) -> None:
    """Upstream's protobuf serializer fails to decode: a 400 (or 415 for a kind it has no decoder
    for), never a 500."""
    resp = api.post(CMS, body, content_type="application/vnd.kubernetes.protobuf")
    assert resp.status in (400, 415), resp.body


@requires_kubectl
def test_kubectl_apply_of_a_deep_object_is_refused(server: Server, tmp_path: object) -> None:
    """kubectl (which sends fieldValidation=Strict) gets the 400, and the server stays healthy."""
    manifest = json.dumps(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "deep-kubectl"},
            "data": json.loads(_deep(300)),
        }
    )
    res = server.kubectl("create", "-f", "-", input=manifest, check=False)
    assert res.returncode != 0
    assert "exceeded max depth" in res.stderr, res.stderr
    server.kubectl("get", "--raw", "/readyz")


def test_url_with_control_characters_in_query(api: Kube) -> None:
    """Selectors holding NUL are refused as client errors."""
    resp = api.get(CMS + "?labelSelector=" + urllib.parse.quote("a=\x00"))
    assert 400 <= resp.status < 500


@pytest.mark.parametrize("big", [True, False])
def test_json_patch_copy_bomb_is_bounded(api: Kube, cm: str, big: bool) -> None:
    """Sixty copies of a value into itself would double it sixty times; the copies stop at
    json-patch's accumulated copy limit (kube-apiserver: JSONPatchMaxCopyBytes, 3 MiB) or at kplane's
    20,000 values (tests/unit/api/test_json_patch.py), and the failure is answered as upstream
    answers any failed JSON patch (handlers/patch.go: 422, its fixed text)."""
    if big:
        api.ok(
            "PATCH",
            f"{CMS}/{cm}",
            {"data": {"big": "x" * 100_000}},
            content_type="application/merge-patch+json",
        )
    before = api.ok("GET", f"{CMS}/{cm}")
    ops = [{"op": "copy", "from": "/data", "path": f"/data/x{i}"} for i in range(60)]
    st = assert_status(api.patch(f"{CMS}/{cm}", ops, "json", timeout=60), 422, "Invalid")
    assert st["message"] == "the server rejected our request due to an error in our request"
    assert api.ok("GET", f"{CMS}/{cm}") == before


def test_json_patch_with_too_many_operations(api: Kube, cm: str) -> None:
    """handlers/patch.go maxJSONPatchOperations: 413 ``The allowed maximum operations in a JSON
    patch is 10000, got 10001``."""
    ops = [{"op": "test", "path": "/data/a", "value": "b"}] * 10_001
    st = assert_status(api.patch(f"{CMS}/{cm}", ops, "json"), 413, "RequestEntityTooLarge")
    assert st["message"] == "The allowed maximum operations in a JSON patch is 10000, got 10001"


def test_a_patch_cannot_build_an_object_deeper_than_the_limit(api: Kube) -> None:
    """A JSON patch may add a deep value at a deep path; what would be stored past the nesting
    limit is refused (400), and the stored object stays as it was."""
    crd = open_crd("hostile-answers.example.com", "Deep")
    api.ok("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    path = "/apis/hostile-answers.example.com/v1/namespaces/default/deeps"
    deep = json.loads(_deep(150))
    obj = {
        "apiVersion": "hostile-answers.example.com/v1",
        "kind": "Deep",
        "metadata": {"name": "d"},
        "spec": deep,
    }
    api.ok("POST", path, obj)
    pointer = "/spec" + "/a" * 149
    resp = api.patch(f"{path}/d", [{"op": "add", "path": pointer, "value": deep}], "json")
    st = assert_status(resp, 400, "BadRequest")
    assert (
        st["message"]
        == f"the patched object nests deeper than {MAX_DEPTH} levels, the most this server stores"
    )
    assert api.ok("GET", f"{path}/d")["spec"] == deep


def test_an_object_at_the_limit_survives_every_verb_and_form(api: Kube) -> None:
    """At the nesting limit a custom object is created, applied (by two managers), patched, replaced
    and read as JSON, YAML and a Table: the schema, patch and field-ownership walks and the encoders
    all hold it (managedFields mirror its depth and do not count against the limit)."""
    group = "at-limit.example.com"
    crd = open_crd(group, "Thing")
    api.ok("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    path = f"/apis/{group}/v1/namespaces/default/things"
    spec = _deep(MAX_DEPTH - 1)
    obj = f'{{"apiVersion":"{group}/v1","kind":"Thing","metadata":{{"name":"t"}},"spec":{spec}}}'
    api.ok("POST", path, obj, query={"fieldValidation": "Strict"})
    for manager in ("one", "two"):
        applied = obj.replace('"a":1', f'"{manager}":1') if manager == "two" else obj
        resp = api.patch(f"{path}/t", applied, "apply", query={"fieldManager": manager, "force": "true"})
        assert resp.status == 200, resp.body[:300]
    api.ok(
        "PATCH",
        f"{path}/t",
        '{"spec":' + _deep(MAX_DEPTH - 2) + "}",
        content_type="application/merge-patch+json",
    )
    api.ok("PUT", f"{path}/t", obj)
    for accept in ("application/json", "application/yaml", "application/json;as=Table;v=v1;g=meta.k8s.io"):
        assert api.get(path, headers={"Accept": accept}).status == 200
        assert api.get(f"{path}/t", headers={"Accept": accept}).status == 200


def test_protobuf_body_with_raw_json_past_the_limit(api: Kube) -> None:
    """A protobuf body carries raw JSON (RawExtension) that JSON's depth check never saw: the
    decoded object is held to the same nesting limit, so storage never meets what it cannot hold."""
    deep = json.loads(_deep(MAX_DEPTH + 30))
    revision = {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": {"name": "r"},
        "revision": 1,
        "data": deep,
    }
    body = protobuf.encode(revision)
    resp = api.post(
        "/apis/apps/v1/namespaces/default/controllerrevisions",
        body,
        content_type="application/vnd.kubernetes.protobuf",
    )
    st = assert_status(resp, 400, "BadRequest")
    assert st["message"] == f"the object nests deeper than {MAX_DEPTH} levels, the most this server stores"
