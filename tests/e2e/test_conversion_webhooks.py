"""CRD conversion webhooks end to end: a two-version CRD (v1 stored, v2 served too) whose
``conversion.strategy: Webhook`` points at a test HTTPS server. Expected texts are upstream's
(apiextensions-apiserver 1.32 ``pkg/apiserver/conversion/webhook_converter.go``,
``pkg/apis/apiextensions/validation/validation.go`` ``validateCustomResourceConversion``)."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.conftest import Server, requires_kubectl
from tests.e2e.helpers import Kube, assert_status, poll, unique
from tests.e2e.webhookserver import Review, WebhookServer

pytestmark = requires_kubectl
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def _convert(review: Review) -> Review:
    """v1 ``spec.size`` <-> v2 ``spec.replicas``."""
    req = review["request"]
    desired = req["desiredAPIVersion"]
    out = []
    for obj in req["objects"]:
        new = copy.deepcopy(obj)
        spec = new.setdefault("spec", {})
        if desired.endswith("/v2") and "size" in spec:
            spec["replicas"] = spec.pop("size")
        elif desired.endswith("/v1") and "replicas" in spec:
            spec["size"] = spec.pop("replicas")
        new["apiVersion"] = desired
        new.setdefault("metadata", {}).setdefault("labels", {})["converted"] = "yes"
        out.append(new)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "response": {"uid": req["uid"], "convertedObjects": out, "result": {"status": "Success"}},
    }


@pytest.fixture(scope="module")
def hooks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebhookServer]:
    srv = WebhookServer(tmp_path_factory.mktemp("conversion")).start()
    srv.handlers["/convert"] = _convert
    yield srv
    srv.stop()


def _crd(group: str, url: str, ca: str) -> dict[str, Any]:
    def version(name: str, field: str, storage: bool) -> dict[str, Any]:
        return {
            "name": name,
            "served": True,
            "storage": storage,
            "schema": {
                "openAPIV3Schema": {
                    "type": "object",
                    "properties": {"spec": {"type": "object", "properties": {field: {"type": "integer"}}}},
                }
            },
        }

    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [version("v1", "size", True), version("v2", "replicas", False)],
            "conversion": {
                "strategy": "Webhook",
                "webhook": {"clientConfig": {"url": url, "caBundle": ca}, "conversionReviewVersions": ["v1"]},
            },
        },
    }


def _install(api: Kube, crd: dict[str, Any]) -> str:
    api.ok("POST", CRDS, crd)
    group = crd["spec"]["group"]
    poll(lambda: api.get(f"/apis/{group}/v2/widgets").status == 200, timeout=10)
    return group


def _widget(group: str, version: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": f"{group}/{version}", "kind": "Widget", "metadata": {"name": name}, "spec": spec}


def test_objects_are_converted_by_the_webhook(server: Server, api: Kube, hooks: WebhookServer) -> None:
    """Created in v1 (the storage version), read and listed in v2 through the webhook; a list is
    converted in one review; a v2 create is stored converted to v1."""
    group = _install(api, _crd(f"{unique('conv')}.kplane.dev", hooks.url("/convert"), hooks.ca_bundle))
    base = f"/apis/{group}/%s/namespaces/default/widgets"
    api.ok("POST", base % "v1", _widget(group, "v1", "a", {"size": 3}))
    api.ok("POST", base % "v1", _widget(group, "v1", "b", {"size": 4}))
    before = len(hooks.received.get("/convert", []))
    got = api.ok("GET", base % "v2" + "/a")
    assert got["apiVersion"] == f"{group}/v2" and got["spec"] == {"replicas": 3}
    # the webhook may change labels and annotations only; the rest of metadata is the original's
    assert got["metadata"]["labels"] == {"converted": "yes"} and got["metadata"]["name"] == "a"
    (review,) = hooks.received["/convert"][before:]
    assert review["apiVersion"] == "apiextensions.k8s.io/v1" and review["kind"] == "ConversionReview"
    assert review["request"]["desiredAPIVersion"] == f"{group}/v2"
    assert [o["spec"] for o in review["request"]["objects"]] == [{"size": 3}]

    before = len(hooks.received["/convert"])
    listed = api.ok("GET", base % "v2")
    assert [(i["metadata"]["name"], i["spec"]) for i in listed["items"]] == [
        ("a", {"replicas": 3}),
        ("b", {"replicas": 4}),
    ]
    (batch,) = hooks.received["/convert"][before:]  # one review for the whole list
    assert len(batch["request"]["objects"]) == 2

    created = api.ok("POST", base % "v2", _widget(group, "v2", "c", {"replicas": 5}))
    assert created["spec"] == {"replicas": 5}
    assert api.ok("GET", base % "v1" + "/c")["spec"] == {"size": 5}
    out = server.kubectl("get", f"widgets.v2.{group}", "c", "-o", "jsonpath={.spec.replicas}")
    assert out.stdout == "5"
    with api.watch(base % "v2", {"resourceVersion": "0"}) as stream:  # each event converted
        events = [stream.next() for _ in range(3)]
    assert sorted(
        (e["object"]["metadata"]["name"], e["object"]["spec"]["replicas"]) for e in events if e
    ) == [
        ("a", 3),
        ("b", 4),
        ("c", 5),
    ]


def test_conversion_failure_is_upstreams_error(api: Kube, hooks: WebhookServer) -> None:
    """A dead conversion webhook fails reads in the other version with upstream's message."""
    group = _install(
        api, _crd(f"{unique('dead')}.kplane.dev", "https://127.0.0.1:1/convert", hooks.ca_bundle)
    )
    api.ok("POST", f"/apis/{group}/v1/namespaces/default/widgets", _widget(group, "v1", "a", {"size": 1}))
    resp = api.get(f"/apis/{group}/v2/namespaces/default/widgets/a")
    assert resp.status == 500
    st = resp.json()
    assert st["message"] == (
        f"conversion webhook for {group}/v1, Kind=Widget failed: "
        'Post "https://127.0.0.1:1/convert": dial tcp 127.0.0.1:1: connect: connection refused'
    )


def test_conversion_configuration_is_validated(api: Kube, hooks: WebhookServer) -> None:
    """strategy Webhook needs a client config and known review versions; None forbids them."""
    crd = _crd(f"{unique('bad')}.kplane.dev", "http://127.0.0.1/convert", hooks.ca_bundle)
    crd["spec"]["conversion"]["webhook"]["conversionReviewVersions"] = ["v9"]
    st = assert_status(api.post(CRDS, crd), 422, "Invalid")
    assert [(c["field"], c["message"]) for c in st["details"]["causes"]] == [
        (
            "spec.conversion.webhookClientConfig.url",
            "Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: https://host[/path]",
        ),
        (
            "spec.conversion.conversionReviewVersions",
            'Invalid value: []string{"v9"}: must include at least one of v1, v1beta1',
        ),
    ]
    crd["spec"]["conversion"] = {"strategy": "None", "webhook": {"conversionReviewVersions": ["v1"]}}
    st = assert_status(api.post(CRDS, crd), 422, "Invalid")
    assert [(c["field"], c["message"]) for c in st["details"]["causes"]] == [
        (
            "spec.conversion.conversionReviewVersions",
            "Forbidden: should not be set when strategy is not set to Webhook",
        ),
    ]
