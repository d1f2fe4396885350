"""fieldValidation and duplicate JSON fields, through a real server."""

from __future__ import annotations

import pytest

from tests.e2e import helpers

BODY = b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"%s"},"data":{"a":"1","a":"2"}}'


@pytest.mark.parametrize("verb", ["create", "update"])
def test_duplicate_field_strict_is_400(api: helpers.Kube, verb: str) -> None:
    """Under Strict, a repeated key is upstream's strict decoding error; nothing is written."""
    name = helpers.unique("dup")
    path = "/api/v1/namespaces/default/configmaps"
    if verb == "update":
        api.ok("POST", path, {"metadata": {"name": name}, "data": {"a": "0"}})
        resp = api.request("PUT", f"{path}/{name}", BODY % name.encode(), query={"fieldValidation": "Strict"})
    else:
        resp = api.request("POST", path, BODY % name.encode(), query={"fieldValidation": "Strict"})
    msg = helpers.assert_status(resp, 400, "BadRequest")["message"]
    expected = 'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: '
    assert msg == expected + 'duplicate field "a"'
    if verb == "update":
        assert api.ok("GET", f"{path}/{name}")["data"] == {"a": "0"}


def test_duplicate_field_warn_is_a_warning(api: helpers.Kube) -> None:
    """Under Warn (the default) the write succeeds, keeps the last value and warns."""
    name = helpers.unique("dupw")
    resp = api.request("POST", "/api/v1/namespaces/default/configmaps", BODY % name.encode())
    assert resp.status == 201
    assert resp.json()["data"] == {"a": "2"}
    assert resp.headers.get("warning") == '299 - "duplicate field \\"a\\""'
