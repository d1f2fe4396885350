"""``/openapi/v2`` through a real server: the JSON and gnostic protobuf documents, and real kubectl
using them (``explain --output=plaintext-openapiv2``; ``apply`` of a CRD and an object of it in one
file while ``/openapi/v3`` is unavailable, the case that fails without v2)."""

from __future__ import annotations

import http.client
import http.server
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from kplane.api.protobuf import wire
from tests.e2e import helpers
from tests.e2e.conftest import Server, requires_kubectl, start_server

# kube-openapi pkg/handler/handler.go: the type kubectl asks for, and the one it answers with
PB_ACCEPT = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
PB_TYPE = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"


def _crd(group: str, kind: str, plural: str) -> dict[str, object]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": plural, "singular": kind.lower(), "kind": kind},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {
                                    "type": "object",
                                    "description": "What the gadget should be.",
                                    "properties": {"size": {"type": "integer", "description": "How big."}},
                                }
                            },
                        }
                    },
                }
            ],
        },
    }


def test_json_document_shape(api: helpers.Kube) -> None:
    """Swagger 2.0 with upstream's definition names, GVK extensions and PATCH operations that
    take fieldValidation (what kubectl's v2 query-param verifier looks for)."""
    resp = api.get("/openapi/v2", headers={"Accept": "application/json"})
    assert resp.status == 200 and resp.content_type == "application/json"
    assert resp.headers["vary"] == "Accept" and resp.headers["etag"].startswith('"')
    doc = resp.json()
    assert (doc["swagger"], doc["info"]["title"]) == ("2.0", "Kubernetes")
    deploy = doc["definitions"]["io.k8s.api.apps.v1.Deployment"]
    assert deploy["x-kubernetes-group-version-kind"] == [
        {"group": "apps", "kind": "Deployment", "version": "v1"}
    ]
    assert (
        deploy["properties"]["metadata"]["$ref"]
        == "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    )
    # upstream v2: IntOrString is a string with format int-or-string
    assert doc["definitions"]["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]["format"] == "int-or-string"
    patch = doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"]
    assert patch["x-kubernetes-group-version-kind"] == {
        "group": "apps",
        "kind": "Deployment",
        "version": "v1",
    }
    assert "fieldValidation" in [p["name"] for p in patch["parameters"]]
    assert patch["parameters"][0]["in"] == "body"
    for node in (n for d in doc["definitions"].values() for n in _walk(d)):
        assert "oneOf" not in node and "anyOf" not in node and "#/components" not in str(node.get("$ref", ""))


def _walk(node: object) -> Iterator[dict[str, object]]:
    """Every schema node under ``node`` (property maps are not schemas, their values are)."""
    if not isinstance(node, dict):
        return
    yield node
    for key, value in node.items():
        if key == "properties" and isinstance(value, dict):
            for sub in value.values():
                yield from _walk(sub)
        elif key in ("items", "additionalProperties"):
            yield from _walk(value)
        elif key == "allOf" and isinstance(value, list):
            for sub in value:
                yield from _walk(sub)


def test_protobuf_negotiation_and_caching(api: helpers.Kube) -> None:
    """kubectl's Accept gets gnostic protobuf (field 1 "2.0"); an unacceptable type gets 406; a
    matching If-None-Match gets 304."""
    resp = api.get("/openapi/v2", headers={"Accept": PB_ACCEPT})
    assert resp.status == 200 and resp.content_type == PB_TYPE
    fields = {number: value for number, _, value in wire.fields(memoryview(resp.body))}
    assert bytes(fields[1]) == b"2.0"  # Document.swagger
    assert 9 in fields and 8 in fields  # definitions, paths
    assert api.get("/openapi/v2", headers={"Accept": "text/html"}).status == 406
    etag = resp.headers["etag"]
    again = api.get("/openapi/v2", headers={"Accept": PB_ACCEPT, "If-None-Match": etag})
    assert again.status == 304


@requires_kubectl
def test_crd_appears_and_explain_reads_v2(server: Server, api: helpers.Kube) -> None:
    """A new CRD is in /openapi/v2 at once; kubectl explain through v2 shows built-ins and it."""
    api.ok(
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        _crd("v2.example.com", "Gadget", "gadgets"),
    )
    doc = api.get("/openapi/v2", headers={"Accept": "application/json"}).json()
    assert "com.example.v2.v1.Gadget" in doc["definitions"]
    assert "/apis/v2.example.com/v1/namespaces/{namespace}/gadgets/{name}" in doc["paths"]
    out = server.kubectl("explain", "deployment.spec.replicas", "--output=plaintext-openapiv2").stdout
    assert "FIELD:    replicas <integer>" in out
    out = server.kubectl("explain", "gadgets.spec", "--output=plaintext-openapiv2").stdout
    assert "What the gadget should be." in out and "size\t<integer>" in out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _HideV3(http.server.BaseHTTPRequestHandler):
    """Forwards to the server's insecure port, answering 404 to every /openapi/v3 request."""

    upstream = 0

    def _forward(self) -> None:
        if self.path.startswith("/openapi/v3"):
            body = b'{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}'
            self.send_response(404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        length = int(self.headers.get("Content-Length") or 0)
        data = self.rfile.read(length) if length else None
        conn = http.client.HTTPConnection("127.0.0.1", self.upstream, timeout=30)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "accept-encoding")}
        conn.request(self.command, self.path, body=data, headers=headers)
        got = conn.getresponse()
        payload = got.read()
        self.send_response(got.status)
        for key, value in got.getheaders():
            if key.lower() not in ("transfer-encoding", "content-length", "connection"):
                self.send_header(key, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)
        conn.close()

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _forward

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def hidden_v3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, Path]]:
    """A server whose /openapi/v3 is hidden by a proxy, and a kubeconfig for the proxy."""
    port = _free_port()
    srv = start_server(tmp_path_factory.mktemp("hidev3"), "--insecure-port", str(port))
    handler = type("Handler", (_HideV3,), {"upstream": port})
    proxy = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=proxy.serve_forever, daemon=True)
    thread.start()
    config = srv.data_dir / "proxy-kubeconfig"
    config.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: p\n"
        f"clusters: [{{name: p, cluster: {{server: 'http://127.0.0.1:{proxy.server_address[1]}'}}}}]\n"
        "contexts: [{name: p, context: {cluster: p, user: p}}]\nusers: [{name: p, user: {}}]\n"
    )
    yield srv, config
    proxy.shutdown()
    srv.stop()


@requires_kubectl
def test_apply_crd_and_object_without_v3(hidden_v3: tuple[Server, Path]) -> None:
    """With /openapi/v3 answering 404, kubectl apply of a file holding a CRD and an object of it
    works through /openapi/v2 (without v2 it fails: "failed to download openapi")."""
    srv, config = hidden_v3
    manifest = srv.data_dir / "both.yaml"
    crd = _crd("hide.example.com", "Widget", "widgets")
    import yaml

    obj = {
        "apiVersion": "hide.example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w1", "namespace": "default"},
        "spec": {"size": 3},
    }
    manifest.write_text(yaml.safe_dump(crd) + "---\n" + yaml.safe_dump(obj))
    env = {"KUBECONFIG": str(config)}
    res = srv.kubectl("apply", "-f", str(manifest), env=env, check=False, timeout=60)
    # Validation passed (without /openapi/v2 kubectl stops at "failed to download openapi" and
    # creates nothing); the CRD is created. The object then meets kubectl's own mapping step, which
    # ran before the CRD existed: kubectl 1.32 says so against any server and a second apply works.
    assert "failed to download openapi" not in res.stderr
    assert "customresourcedefinition.apiextensions.k8s.io/widgets.hide.example.com created" in res.stdout
    if res.returncode != 0:
        assert "ensure CRDs are installed first" in res.stderr
        res = srv.kubectl("apply", "-f", str(manifest), env=env, check=False, timeout=60)
    assert res.returncode == 0, res.stderr
    assert "widget.hide.example.com/w1 created" in res.stdout
    bad = srv.data_dir / "bad.yaml"
    bad.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "c1", "namespace": "default"},
                "data": {"a": "b"},
                "bogus": 1,
            }
        )
    )
    res = srv.kubectl("apply", "-f", str(bad), env=env, check=False, timeout=60)
    # server-side field validation chosen through the v2 document: upstream's strict-decoding message
    # kubectl found the PATCH operation with fieldValidation in /openapi/v2 and let the server
    # validate (a client-side check would say "error validating data: ValidationError(...)")
    assert res.returncode != 0
    assert 'cannot be handled as a ConfigMap: strict decoding error: unknown field "bogus"' in res.stderr
