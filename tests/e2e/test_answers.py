"""Answers as kube-apiserver 1.32 gives them, byte for byte where clients compare bytes.

Each test quotes the upstream body or message it expects and names the upstream source it comes
from (kubernetes/apiserver, kubernetes/apimachinery at v0.32 unless said otherwise).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest
from kubernetes import client as k8s_client
from kubernetes.client.rest import ApiException

from tests.e2e.conftest import Server, requires_kubectl
from tests.e2e.helpers import Kube, assert_status, cm_path, configmap, deployment, unique

MERGE = "application/merge-patch+json"


@pytest.fixture(scope="module")
def ns(api: Kube) -> str:
    name = unique("answers")
    api.ok(
        "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    )
    return name


@pytest.fixture(scope="module")
def core(k8s: k8s_client.ApiClient) -> Iterator[k8s_client.CoreV1Api]:
    yield k8s_client.CoreV1Api(k8s)


def _status_bytes(message: str, reason: str, code: int, details: str | None = None) -> bytes:
    """A failure ``Status`` exactly as Go's json.Encoder writes it (field order, newline)."""
    det = f',"details":{details}' if details is not None else ""
    body = (
        '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
        f'"message":{json.dumps(message)},"reason":"{reason}"{det},"code":{code}}}\n'
    )
    return body.encode()


# -- system namespaces ----------------------------------------------------------------------------


@requires_kubectl
def test_system_namespaces_may_not_be_deleted(server: Server, api: Kube) -> None:
    """kubectl delete ns default|kube-system|kube-public is 403 and deletes nothing."""
    keeper = api.ok("POST", cm_path("default"), configmap(unique("keep"), "default"))
    for name in ("default", "kube-system", "kube-public"):
        res = server.kubectl("delete", "ns", name, check=False)
        assert res.returncode != 0
        # apiserver pkg/admission/plugin/namespace/lifecycle/admission.go: immortal namespaces,
        # errors.NewForbidden(namespaces, name, "this namespace may not be deleted")
        assert res.stderr.strip() == (
            f'Error from server (Forbidden): namespaces "{name}" is forbidden: '
            "this namespace may not be deleted"
        )
        resp = api.delete(f"/api/v1/namespaces/{name}")
        assert resp.body == _status_bytes(
            f'namespaces "{name}" is forbidden: this namespace may not be deleted',
            "Forbidden",
            403,
            f'{{"name":"{name}","kind":"namespaces"}}',
        )
        got = api.ok("GET", f"/api/v1/namespaces/{name}")
        assert "deletionTimestamp" not in got["metadata"]
    assert (
        api.ok("GET", cm_path("default", keeper["metadata"]["name"]))["metadata"]["uid"]
        == (keeper["metadata"]["uid"])
    )


@requires_kubectl
def test_kube_node_lease_is_recreated(server: Server, api: Kube) -> None:
    """kube-node-lease may be deleted (it is not immortal upstream) and comes back, as the system
    namespaces controller of kube-apiserver recreates it (pkg/controlplane/controller/systemnamespaces)."""
    before = api.ok("GET", "/api/v1/namespaces/kube-node-lease")["metadata"]["uid"]
    server.kubectl("delete", "ns", "kube-node-lease", "--wait=false")
    # no namespace controller on this bare server: finalize as it would once the namespace is empty
    doomed = api.ok("GET", "/api/v1/namespaces/kube-node-lease")
    assert doomed["status"]["phase"] == "Terminating"
    doomed["spec"]["finalizers"] = []
    api.ok("PUT", "/api/v1/namespaces/kube-node-lease/finalize", doomed)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        resp = api.get("/api/v1/namespaces/kube-node-lease")
        if resp.status == 200 and resp.json()["metadata"]["uid"] != before:
            assert resp.json()["status"]["phase"] == "Active"
            return
        time.sleep(0.2)
    raise AssertionError("kube-node-lease was not recreated")


# -- request decoding -----------------------------------------------------------------------------


def test_text_plain_create_is_415(api: Kube, ns: str) -> None:
    """A create sent as text/plain is refused, not stored."""
    name = unique("plain")
    resp = api.post(cm_path(ns), json.dumps(configmap(name, ns)), content_type="text/plain")
    # apiserver handlers/negotiation/errors.go errUnsupportedMediaType, listing the media types of
    # the serializers (NegotiateInputSerializerForMediaType)
    assert resp.body == _status_bytes(
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json, application/yaml, application/vnd.kubernetes.protobuf",
        "UnsupportedMediaType",
        415,
    )
    assert api.get(cm_path(ns, name)).status == 404


def test_put_with_another_name_is_400(core: k8s_client.CoreV1Api, api: Kube, ns: str) -> None:
    """PUT whose body names another object is 400 before anything is read (even if the URL's
    object does not exist)."""
    body = k8s_client.V1ConfigMap(metadata=k8s_client.V1ObjectMeta(name="b"))
    with pytest.raises(ApiException) as err:
        core.replace_namespaced_config_map("a", ns, body)
    # apiserver handlers/rest.go checkName
    assert err.value.status == 400
    assert json.loads(err.value.body)["message"] == (
        "the name of the object (b) does not match the name on the URL (a)"
    )
    other = unique("other-ns")
    resp = api.put(cm_path(ns, "a"), configmap("a", other))
    # apiserver registry/rest/meta.go EnsureObjectNamespaceMatchesRequestNamespace
    assert resp.body == _status_bytes(
        "the namespace of the provided object does not match the namespace sent on the request",
        "BadRequest",
        400,
    )


def test_apply_without_kind_is_400(api: Kube, ns: str) -> None:
    """Server-side apply of a body without apiVersion/kind creates nothing."""
    name = unique("ssa")
    resp = api.patch(
        cm_path(ns, name),
        {"metadata": {"name": name}, "data": {"a": "b"}},
        "apply",
        query={"fieldManager": "t"},
    )
    # apimachinery util/managedfields/internal/versioncheck.go: the applied object's
    # GroupVersionKind (here empty: "/, Kind=") must be the endpoint's
    assert resp.body == _status_bytes("invalid object type: /, Kind=", "BadRequest", 400)
    resp = api.patch(
        cm_path(ns, name),
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}},
        "apply",
        query={"fieldManager": "t"},
    )
    assert json.loads(resp.body)["message"] == "invalid object type: /v1, Kind=Secret"
    assert api.get(cm_path(ns, name)).status == 404


# -- Status bodies ----------------------------------------------------------------------------------


def test_status_bodies_byte_for_byte(core: k8s_client.CoreV1Api, api: Kube, ns: str) -> None:
    """Error bodies carry Go's field order, details in StatusDetails order, and a final newline."""
    with pytest.raises(ApiException) as err:
        core.read_namespaced_config_map("nope", ns)
    # apimachinery pkg/api/errors NewNotFound; written by json.Encoder, which appends "\n"
    assert (
        err.value.body
        == _status_bytes(
            'configmaps "nope" not found', "NotFound", 404, '{"name":"nope","kind":"configmaps"}'
        ).decode()
    )
    resp = api.get(f"/apis/apps/v1/namespaces/{ns}/deployments/nope")
    assert resp.body == _status_bytes(
        'deployments.apps "nope" not found',
        "NotFound",
        404,
        '{"name":"nope","group":"apps","kind":"deployments"}',
    )
    # apiserver pkg/server/handler.go serviceErrorHandler -> NewGenericServerResponse: empty,
    # but present, details (kubectl 1.32 debug reads details.name)
    resp = api.get(f"/api/v1/namespaces/{ns}/configmaps/x/nosuchsubresource")
    assert resp.body == _status_bytes(
        "the server could not find the requested resource", "NotFound", 404, "{}"
    )


def test_every_json_body_ends_with_a_newline(api: Kube, ns: str) -> None:
    """Objects, lists, delete Statuses and discovery documents end in "\\n" as json.Encoder writes."""
    name = unique("nl")
    created = api.post(cm_path(ns), configmap(name, ns))
    bodies = [
        created.body,
        api.get(cm_path(ns, name)).body,
        api.get(cm_path(ns)).body,
        api.get("/api/v1").body,
        api.get("/apis").body,
        api.delete(cm_path(ns, name)).body,
    ]
    for body in bodies:
        assert body.endswith(b"}\n") and not body.endswith(b"\n\n"), body[-80:]
    # the delete Status: registry/generic/registry/store.go finalizeDelete
    uid = created.json()["metadata"]["uid"]
    assert (
        bodies[-1]
        == (
            '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success",'
            f'"details":{{"name":"{name}","kind":"configmaps","uid":"{uid}"}}}}\n'
        ).encode()
    )


@requires_kubectl
def test_kubectl_debug_does_not_crash(server: Server, api: Kube, ns: str) -> None:
    """kubectl debug reads details.name of a 404; it must get an answer, never a nil pointer."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "dbg"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }
    api.ok("POST", f"/api/v1/namespaces/{ns}/pods", pod)
    res = server.kubectl("debug", "-n", ns, "dbg", "--image=busybox", check=False)
    assert "nil pointer" not in res.stderr and "panic" not in res.stderr, res.stderr
    assert res.returncode == 0 or "ephemeral containers are disabled for this cluster" in res.stderr, (
        res.stderr
    )


# -- metadata and lists ---------------------------------------------------------------------------


@requires_kubectl
def test_removing_last_annotation_and_label_drops_the_map(server: Server, api: Kube, ns: str) -> None:
    """Upstream stores ObjectMeta typed: empty labels/annotations (omitempty) are not kept."""
    name = unique("ann")
    api.ok("POST", cm_path(ns), configmap(name, ns, annotations={"a": "1"}, labels={"l": "1"}))
    server.kubectl("annotate", "-n", ns, "cm", name, "a-")
    server.kubectl("label", "-n", ns, "cm", name, "l-")
    meta = api.ok("GET", cm_path(ns, name))["metadata"]
    assert "annotations" not in meta and "labels" not in meta, meta
    api.ok("POST", cm_path(ns), configmap(unique("empty"), ns, annotations={}, labels={}, finalizers=[]))


def test_built_in_list_items_carry_no_type(api: Kube, ns: str) -> None:
    """A typed list's items are encoded without apiVersion/kind; the list names the kind."""
    api.ok("POST", cm_path(ns), configmap(unique("li"), ns))
    api.ok("POST", f"/apis/apps/v1/namespaces/{ns}/deployments", deployment(unique("li"), ns))
    for path in (cm_path(ns), f"/apis/apps/v1/namespaces/{ns}/deployments"):
        page = api.ok("GET", path)
        assert page["items"], page
        for item in page["items"]:
            assert "apiVersion" not in item and "kind" not in item, item


# -- selectors and preconditions ------------------------------------------------------------------


@requires_kubectl
@pytest.mark.parametrize(
    ("selector", "message"),
    [
        # apimachinery pkg/labels/selector.go: Parser.parse wraps only errors of parseRequirement
        pytest.param("a in b", "unable to parse requirement: found 'b' expected: '('", id="in-no-paren"),
        pytest.param("a=b=c", "found '=', expected: ',' or 'end of string'", id="two-equals"),
        pytest.param("a,", "found '', expected: identifier after ','", id="trailing-comma"),
        pytest.param(
            "a b",
            "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt",
            id="no-op",
        ),
        pytest.param("x in (a", "unable to parse requirement: found '', expected: ',' or ')'", id="open-set"),
        pytest.param(
            "a in (",
            "unable to parse requirement: found '', expected: ',', ')' or identifier",
            id="empty-open",
        ),
    ],
)
def test_label_selector_errors(server: Server, ns: str, selector: str, message: str) -> None:
    """kubectl get -l with a malformed selector prints upstream's parse error once."""
    res = server.kubectl("get", "cm", "-n", ns, "-l", selector, check=False)
    assert res.returncode != 0
    # kubectl (cli-runtime resource.Helper) prefixes the server's message with what it listed
    assert res.stderr.strip() == (
        'Error from server (BadRequest): Unable to find "/v1, Resource=configmaps" that match label '
        f'selector "{selector}", field selector "": {message}'
    )


def test_uid_and_resource_version_preconditions(core: k8s_client.CoreV1Api, ns: str) -> None:
    """Delete and update preconditions fail with upstream's two different texts."""
    name = unique("pre")
    cm = core.create_namespaced_config_map(
        ns, k8s_client.V1ConfigMap(metadata=k8s_client.V1ObjectMeta(name=name))
    )
    uid, rv = cm.metadata.uid, cm.metadata.resource_version
    wrong = "00000000-0000-0000-0000-000000000000"
    with pytest.raises(ApiException) as err:
        core.delete_namespaced_config_map(
            name, ns, body=k8s_client.V1DeleteOptions(preconditions=k8s_client.V1Preconditions(uid=wrong))
        )
    # apiserver registry/rest/delete.go BeforeDelete: the object is named by its kind
    assert err.value.status == 409
    assert json.loads(err.value.body) == json.loads(
        _status_bytes(
            f'Operation cannot be fulfilled on ConfigMap "{name}": the UID in the precondition ({wrong}) '
            f"does not match the UID in record ({uid}). The object might have been deleted and then "
            "recreated",
            "Conflict",
            409,
            json.dumps({"name": name, "kind": "ConfigMap"}),
        )
    )
    with pytest.raises(ApiException) as err:
        core.delete_namespaced_config_map(
            name,
            ns,
            body=k8s_client.V1DeleteOptions(preconditions=k8s_client.V1Preconditions(resource_version="1")),
        )
    assert json.loads(err.value.body)["message"] == (
        f'Operation cannot be fulfilled on ConfigMap "{name}": the ResourceVersion in the precondition (1) '
        f"does not match the ResourceVersion in record ({rv}). The object might have been modified"
    )
    cm.metadata.uid = wrong
    with pytest.raises(ApiException) as err:
        core.replace_namespaced_config_map(name, ns, cm)
    # apiserver storage/interfaces.go Preconditions.Check inside GuaranteedUpdate, a StorageError
    # (storage/errors.go) naming the etcd key, wrapped by NewConflict (registry store Update)
    assert json.loads(err.value.body)["message"] == (
        f'Operation cannot be fulfilled on configmaps "{name}": StorageError: invalid object, Code: 4, '
        f"Key: /registry/configmaps/{ns}/{name}, ResourceVersion: 0, AdditionalErrorMsg: Precondition "
        f"failed: UID in precondition: {wrong}, UID in object meta: {uid}"
    )
    assert core.read_namespaced_config_map(name, ns).metadata.uid == uid


def test_failed_preconditions_keep_the_object(api: Kube, ns: str) -> None:
    """A 409 precondition failure changes nothing."""
    name = unique("keep")
    made = api.ok("POST", cm_path(ns), configmap(name, ns, data={"k": "v"}))
    st = assert_status(api.delete(cm_path(ns, name), {"preconditions": {"uid": "x"}}), 409, "Conflict")
    assert st["details"] == {"name": name, "kind": "ConfigMap"}
    assert api.ok("GET", cm_path(ns, name)) == made


# -- patches ----------------------------------------------------------------------------------------


@requires_kubectl
def test_merge_patch_with_wrong_type_is_a_decode_error(server: Server, api: Kube, ns: str) -> None:
    """A merge patch putting a string in an int32 is refused by the typed decode, as upstream."""
    name = unique("mp")
    path = f"/apis/apps/v1/namespaces/{ns}/deployments"
    before = api.ok("POST", path, deployment(name, ns))
    decode = "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32"
    resp = api.patch(f"{path}/{name}", {"spec": {"replicas": "three"}})
    st = assert_status(resp, 422, "Invalid")
    # apiserver handlers/patch.go jsonPatcher.applyPatchToCurrentObject: NewInvalid(GroupKind{}, "",
    # field.Invalid("patch", <patched JSON>, <decode error>)); the decode error is encoding/json's
    assert st["message"].startswith(' "" is invalid: patch: Invalid value: "{'), st["message"]
    assert st["message"].endswith(f'}}": {decode}'), st["message"]
    [cause] = st["details"]["causes"]
    assert list(st["details"]) == ["causes"]
    assert cause["reason"] == "FieldValueInvalid" and cause["field"] == "patch"
    assert cause["message"] == st["message"].removeprefix(' "" is invalid: patch: ')
    res = server.kubectl(
        "patch",
        "-n",
        ns,
        "deployment",
        name,
        "--type=merge",
        "-p",
        '{"spec":{"replicas":"three"}}',
        check=False,
    )
    assert res.returncode != 0 and res.stderr.strip().endswith(decode), res.stderr
    assert res.stderr.startswith("The request is invalid: patch: Invalid value: "), res.stderr
    assert (
        api.ok("GET", f"{path}/{name}")["metadata"]["resourceVersion"]
        == before["metadata"]["resourceVersion"]
    )


def test_failed_json_patch_is_the_generic_422(api: Kube, ns: str) -> None:
    """A JSON patch that cannot be applied gets upstream's fixed text and empty details."""
    name = unique("jp")
    api.ok("POST", cm_path(ns), configmap(name, ns, data={"k": "v"}))
    resp = api.patch(cm_path(ns, name), [{"op": "remove", "path": "/data/nope"}], "json")
    # apiserver handlers/patch.go: patchObj.Apply failure -> NewGenericServerResponse(422, ...)
    assert resp.body == _status_bytes(
        "the server rejected our request due to an error in our request", "Invalid", 422, "{}"
    )


@requires_kubectl
def test_create_with_wrong_type_is_a_decode_error(server: Server, api: Kube, ns: str) -> None:
    """kubectl create of a Deployment whose replicas is a string: upstream's decode error, 400."""
    name = unique("dec")
    manifest = deployment(name, ns)
    manifest["spec"]["replicas"] = "three"
    res = server.kubectl("create", "-f", "-", input=json.dumps(manifest), check=False)
    # apiserver handlers/rest.go transformDecodeError around encoding/json's UnmarshalTypeError
    assert res.stderr.strip() == (
        'Error from server (BadRequest): error when creating "STDIN": Deployment in version "v1" cannot '
        "be handled as a Deployment: json: cannot unmarshal string into Go struct field "
        "DeploymentSpec.spec.replicas of type int32"
    )
    manifest["spec"]["replicas"] = 1
    manifest["spec"]["template"]["spec"]["containers"][0]["ports"] = "80"
    resp = api.post(f"/apis/apps/v1/namespaces/{ns}/deployments", manifest)
    assert resp.body == _status_bytes(
        'Deployment in version "v1" cannot be handled as a Deployment: json: cannot unmarshal string into '
        "Go struct field Container.spec.template.spec.containers.ports of type []v1.ContainerPort",
        "BadRequest",
        400,
    )
    assert api.get(f"/apis/apps/v1/namespaces/{ns}/deployments/{name}").status == 404


# -- JSON as Go writes it --------------------------------------------------------------------------


def test_json_strings_escaped_as_go_escapes_them(api: Kube, ns: str) -> None:
    """<, >, & and U+2028/U+2029 inside strings are \\u-escaped in objects, lists and watch events
    (encoding/json's default HTML-safe escaping), and decode to the same values."""
    name = unique("esc")
    data = {"html": "<a href='x'>&</a>", "sep": "a\u2028b\u2029c"}
    escaped = b"\\u003ca href='x'\\u003e\\u0026\\u003c/a\\u003e"
    made = api.post(cm_path(ns), configmap(name, ns, data=data))
    got = api.get(cm_path(ns, name))
    listed = api.get(cm_path(ns), query={"fieldSelector": f"metadata.name={name}"})
    for body in (made.body, got.body, listed.body):
        assert escaped in body and b"a\\u2028b\\u2029c" in body, body
        assert b"<" not in body and b"&" not in body
    assert got.json()["data"] == data
    with api.watch(cm_path(ns), {"fieldSelector": f"metadata.name={name}"}) as w:
        raw = w.resp.readline()
    assert escaped in raw and raw.endswith(b"}\n"), raw


def test_pretty_json_for_people(api: Kube, ns: str) -> None:
    """?pretty=true, or a curl/Wget/browser User-Agent, gets json.MarshalIndent's output (two-space
    indent, no final newline) (handlers/negotiation isPrettyPrint); ?pretty=false wins over curl."""
    name = unique("pretty")
    api.ok("POST", cm_path(ns), configmap(name, ns, data={"k": "v"}))
    compact = api.get(cm_path(ns, name))
    assert compact.body.endswith(b"}\n") and b"\n " not in compact.body
    expected = json.dumps(compact.json(), indent=2).encode()
    assert api.get(cm_path(ns, name), query={"pretty": "true"}).body == expected
    assert api.get(cm_path(ns, name), headers={"User-Agent": "curl/8.5.0"}).body == expected
    plain = api.get(cm_path(ns, name), query={"pretty": "false"}, headers={"User-Agent": "curl/8.5.0"})
    assert plain.body == compact.body
    missing = api.get(cm_path(ns, "nope"), headers={"User-Agent": "Wget/1.21"})
    assert missing.status == 404
    assert missing.body == json.dumps(json.loads(missing.body), indent=2).encode()


@pytest.mark.parametrize(
    ("resources", "error"),
    [
        pytest.param(
            {"limits": "x"},
            "json: cannot unmarshal string into Go struct field ResourceRequirements.spec.containers"
            ".resources.limits of type v1.ResourceList",
            id="named-type",
        ),
        pytest.param(
            {"limits": {"cpu": "lots"}},
            "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
            id="quantity",
        ),
    ],
)
def test_pod_decode_errors_name_go_types(
    api: Kube, ns: str, resources: dict[str, object], error: str
) -> None:
    """Go's decode names the field's declared Go type (v1.ResourceList, from the Go sources) and a
    Quantity's own parse error (apimachinery api/resource ParseQuantity)."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": unique("dec")},
        "spec": {"containers": [{"name": "c", "image": "i", "resources": resources}]},
    }
    resp = api.post(f"/api/v1/namespaces/{ns}/pods", pod)
    assert resp.body == _status_bytes(
        f'Pod in version "v1" cannot be handled as a Pod: {error}', "BadRequest", 400
    )


# -- request options ---------------------------------------------------------------------------------


def _options_invalid(kind: str, field: str, reason: str, body: str) -> bytes:
    causes = json.dumps([{"reason": reason, "message": body, "field": field}], separators=(",", ":"))
    return _status_bytes(
        f'{kind}.meta.k8s.io "" is invalid: {field}: {body}',
        "Invalid",
        422,
        f'{{"group":"meta.k8s.io","kind":"{kind}","causes":{causes}}}',
    )


def test_write_options_are_validated_as_upstream(api: Kube, ns: str) -> None:
    """Bad query options are a 422 on the options kind (apimachinery meta/v1/validation:
    ValidateCreateOptions, ValidatePatchOptions, ValidateDeleteOptions)."""
    name = unique("opt")
    resp = api.post(cm_path(ns), configmap(name, ns), query={"dryRun": "x"})
    assert resp.body == _options_invalid(
        "CreateOptions",
        "dryRun",
        "FieldValueNotSupported",
        'Unsupported value: []string{"x"}: supported values: "All"',
    )
    resp = api.post(cm_path(ns), configmap(name, ns), query={"fieldValidation": "x"})
    assert resp.body == _options_invalid(
        "CreateOptions",
        "fieldValidation",
        "FieldValueNotSupported",
        'Unsupported value: "x": supported values: "", "Ignore", "Strict", "Warn"',
    )
    resp = api.post(cm_path(ns), configmap(name, ns), query={"fieldManager": "m" * 129})
    assert resp.body == _options_invalid(
        "CreateOptions", "fieldManager", "FieldValueTooLong", "Too long: may not be more than 128 bytes"
    )
    assert api.get(cm_path(ns, name)).status == 404
    api.ok("POST", cm_path(ns), configmap(name, ns))
    resp = api.patch(cm_path(ns, name), {"data": {"a": "b"}}, "apply")
    assert resp.body == _options_invalid(
        "PatchOptions", "fieldManager", "FieldValueRequired", "Required value: is required for apply patch"
    )
    resp = api.patch(cm_path(ns, name), {"data": {"a": "b"}}, query={"force": "true"})
    assert resp.body == _options_invalid(
        "PatchOptions", "force", "FieldValueForbidden", "Forbidden: may not be specified for non-apply patch"
    )
    resp = api.delete(cm_path(ns, name), {"propagationPolicy": "Sometimes"})
    assert resp.body == _options_invalid(
        "DeleteOptions",
        "propagationPolicy",
        "FieldValueNotSupported",
        'Unsupported value: "Sometimes": supported values: "Foreground", "Background", "Orphan", "nil"',
    )
    assert api.ok("GET", cm_path(ns, name))["data"] == {"k": "v"}  # no patch was applied


def _with_rv(name: str, ns: str, rv: str) -> dict[str, object]:
    doc = configmap(name, ns)
    doc["metadata"]["resourceVersion"] = rv
    return doc


def test_create_with_a_resource_version_is_upstreams_500(api: Kube, ns: str) -> None:
    """A create naming a resourceVersion upstream's versioner parses is refused by the store with a
    plain error: 500, no reason (storage/etcd3 store.go Create, ErrResourceVersionSetOnCreate);
    one it cannot parse is ignored (kubernetes/kubernetes#113847); a dry run never reaches the store."""
    name = unique("rv")
    resp = api.post(cm_path(ns), _with_rv(name, ns, "42"))
    assert resp.body == (
        b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
        b'"message":"resourceVersion should not be set on objects to be created","code":500}\n'
    )
    assert api.get(cm_path(ns, name)).status == 404
    made = api.ok("POST", cm_path(ns), _with_rv(name, ns, "-1"))
    assert made["metadata"]["resourceVersion"] not in ("-1", "42")
    dry = api.post(cm_path(ns), _with_rv(unique("rv"), ns, "42"), query={"dryRun": "All"})
    assert dry.status == 201
