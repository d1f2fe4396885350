"""Bad input end to end: each gets a ``Status`` with the right code, never a 500, and loses nothing."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.e2e.helpers import Kube, Response, assert_status, cm_path, configmap, unique

CM = "application/json"


@pytest.fixture(scope="module")
def keeper(api: Kube) -> Iterator[dict[str, Any]]:
    """A ConfigMap created before the abuse; every test checks it is still intact afterwards."""
    obj = api.ok("POST", cm_path(), configmap(unique("keeper"), data={"precious": "yes"}))
    yield obj


def _intact(api: Kube, keeper: dict[str, Any]) -> None:
    got = api.ok("GET", cm_path(name=keeper["metadata"]["name"]))
    assert got["data"] == {"precious": "yes"}
    assert got["metadata"]["resourceVersion"] == keeper["metadata"]["resourceVersion"]
    assert got["metadata"]["uid"] == keeper["metadata"]["uid"]


def _post_raw(body: bytes, ctype: str) -> Callable[[Kube, str], Response]:
    return lambda api, keeper_name: api.post(cm_path(), body, content_type=ctype)


CASES: list[tuple[str, Callable[[Kube, str], Response], int, str]] = [
    ("malformed-json", _post_raw(b'{"apiVersion": "v1", "kind": ', CM), 400, "BadRequest"),
    (
        "malformed-yaml",
        _post_raw(b"apiVersion: v1\nkind: [ConfigMap\n  metadata: {", "application/yaml"),
        400,
        "BadRequest",
    ),
    ("json-array-body", _post_raw(b'[{"apiVersion": "v1"}]', CM), 400, "BadRequest"),
    ("json-string-body", _post_raw(b'"hello"', CM), 400, "BadRequest"),
    (
        "wrong-kind",
        lambda api, _: api.post(
            cm_path(), {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": unique("wk")}}
        ),
        400,
        "BadRequest",
    ),
    (
        "wrong-apiversion",
        lambda api, _: api.post(
            cm_path(), {"apiVersion": "apps/v1", "kind": "ConfigMap", "metadata": {"name": unique("wv")}}
        ),
        400,
        "BadRequest",
    ),
    (
        "too-large",
        lambda api, _: api.post(
            cm_path(), configmap(unique("big"), data={"x": "a" * (3 * 1024 * 1024 + 1)}), timeout=30
        ),
        413,
        "RequestEntityTooLarge",
    ),
    ("text-csv", _post_raw(b"a,b\n1,2\n", "text/csv"), 415, "UnsupportedMediaType"),
    (
        "bad-patch-type",
        lambda api, name: api.patch(cm_path(name=name), {"data": {"precious": "no"}}, ptype="text/plain"),
        415,
        "UnsupportedMediaType",
    ),
    (
        "put-mismatched-name",
        lambda api, name: api.put(cm_path(name=name), configmap(unique("other"), data={"precious": "no"})),
        400,
        "BadRequest",
    ),
    (
        "put-malformed-json",
        lambda api, name: api.put(cm_path(name=name), b"{nope", content_type=CM),
        400,
        "BadRequest",
    ),
    (
        "patch-malformed-json",
        lambda api, name: api.patch(cm_path(name=name), b"{nope", ptype="merge"),
        400,
        "BadRequest",
    ),
    (
        "json-patch-not-a-list",
        lambda api, name: api.patch(cm_path(name=name), {"op": "add"}, ptype="json"),
        400,
        "BadRequest",
    ),
]


@pytest.mark.parametrize(("case", "send", "code", "reason"), CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_a_status(
    api: Kube,
    keeper: dict[str, Any],
    case: str,
    send: Callable[[Kube, str], Response],
    code: int,
    reason: str,
) -> None:
    """Each malformed request gets the upstream Status code and reason; the stored object is untouched."""
    resp = send(api, keeper["metadata"]["name"])
    st = assert_status(resp, code, reason)
    assert st["message"], st
    _intact(api, keeper)


def test_unknown_resource_path_is_404(api: Kube, keeper: dict[str, Any]) -> None:
    """An unknown resource under a known group version is 404 with the generic message."""
    for path in ("/api/v1/namespaces/default/widgets", "/apis/nope.example.com/v1/things", "/apis/apps/v9/x"):
        st = assert_status(api.get(path), 404, "NotFound")
        assert st["message"] == "the server could not find the requested resource", st
    _intact(api, keeper)


def test_invalid_name_is_422_with_causes(api: Kube, keeper: dict[str, Any]) -> None:
    """A name that is not a DNS subdomain is 422 Invalid with a cause on metadata.name."""
    st = assert_status(api.post(cm_path(), configmap("Foo_Bar")), 422, "Invalid")
    assert st["message"].startswith(
        'ConfigMap "Foo_Bar" is invalid: metadata.name: Invalid value: "Foo_Bar"'
    ), st
    details = st["details"]
    assert details["name"] == "Foo_Bar" and details["kind"] == "ConfigMap"
    causes = details["causes"]
    assert any(c["field"] == "metadata.name" and c["reason"] == "FieldValueInvalid" for c in causes), causes
    assert api.get(cm_path(name="Foo_Bar")).status in (404, 400)
    _intact(api, keeper)


def test_put_mismatched_name_message(api: Kube, keeper: dict[str, Any]) -> None:
    """PUT whose body names another object is 400 and stores neither."""
    other = unique("other")
    st = assert_status(api.put(cm_path(name=keeper["metadata"]["name"]), configmap(other)), 400, "BadRequest")
    assert other in st["message"], st
    assert api.get(cm_path(name=other)).status == 404
    _intact(api, keeper)


def test_unsupported_patch_type_lists_accepted(api: Kube, keeper: dict[str, Any]) -> None:
    """The 415 for an unknown patch type names the accepted patch media types."""
    st = assert_status(
        api.patch(cm_path(name=keeper["metadata"]["name"]), {}, ptype="application/xml"),
        415,
        "UnsupportedMediaType",
    )
    assert st["message"].startswith(
        "the body of the request was in an unknown format - accepted media types"
    ), st
    assert "application/merge-patch+json" in st["message"]
    _intact(api, keeper)


def test_wrong_kind_on_put_and_deployment_url(api: Kube, keeper: dict[str, Any]) -> None:
    """A ConfigMap body sent to the deployments URL is 400, on create and on update."""
    url = "/apis/apps/v1/namespaces/default/deployments"
    assert_status(api.post(url, configmap(unique("x"))), 400, "BadRequest")
    assert_status(
        api.put(
            cm_path(name=keeper["metadata"]["name"]),
            {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": keeper["metadata"]["name"]}},
        ),
        400,
        "BadRequest",
    )
    _intact(api, keeper)


def test_yaml_body_is_accepted(api: Kube) -> None:
    """A well-formed YAML body with Content-Type application/yaml creates the object."""
    name = unique("yaml")
    body = f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  a: b\n"
    resp = api.post(cm_path(), body, content_type="application/yaml")
    assert resp.status == 201, resp.body
    assert api.ok("GET", cm_path(name=name))["data"] == {"a": "b"}


def test_delete_missing_is_404(api: Kube) -> None:
    """DELETE of an object that does not exist is 404 NotFound with the resource in the message."""
    st = assert_status(api.delete(cm_path(name="nope-missing")), 404, "NotFound")
    assert st["message"] == 'configmaps "nope-missing" not found'
    assert st["details"] == {"name": "nope-missing", "kind": "configmaps"}


def test_method_not_allowed_is_405(api: Kube) -> None:
    """POST to a named object URL is 405 MethodNotAllowed, not a 500."""
    resp = api.post(cm_path(name="whatever"), configmap("whatever"))
    assert_status(resp, 405, "MethodNotAllowed")


def test_missing_content_type_defaults_to_json(api: Kube) -> None:
    """A POST or PUT body without Content-Type is decoded as JSON (the Python client sends none on create)."""
    name = unique("noctype")
    resp = api.post(cm_path(), configmap(name, data={"a": "1"}), content_type="")
    assert resp.status == 201, resp.body
    resp = api.put(cm_path(name=name), configmap(name, data={"a": "2"}), content_type="")
    assert resp.status == 200, resp.body
    assert api.ok("GET", cm_path(name=name))["data"] == {"a": "2"}


def test_patch_without_content_type_is_415(api: Kube, keeper: dict[str, Any]) -> None:
    """A PATCH needs a patch media type: without Content-Type it is 415 and changes nothing."""
    resp = api.request("PATCH", cm_path(name=keeper["metadata"]["name"]), {"data": {}}, content_type="")
    assert_status(resp, 415, "UnsupportedMediaType")
    _intact(api, keeper)
