"""Security defaults end to end: authentication, anonymous paths, loopback HTTPS, file modes, CA reuse."""

from __future__ import annotations

import http.client
import socket
import stat
import urllib.parse
from pathlib import Path

import pytest
import yaml

from tests.e2e.conftest import Server, requires_kubectl, start_server
from tests.e2e.helpers import Kube, assert_status, cm_path, configmap, unique


def test_anonymous_api_is_401(api: Kube) -> None:
    """A request with neither client certificate nor token to /api is 401 Unauthorized as a Status."""
    st = assert_status(api.get("/api", auth="none"), 401, "Unauthorized")
    assert st["message"] == "Unauthorized"


def test_anonymous_resource_request_is_401(api: Kube) -> None:
    """Anonymous reads and writes of resources are rejected with 401."""
    assert_status(api.get(cm_path(), auth="none"), 401, "Unauthorized")
    assert_status(api.post(cm_path(), configmap(unique("anon")), auth="none"), 401, "Unauthorized")


@pytest.mark.parametrize("path", ["/version", "/healthz", "/livez", "/readyz"])
def test_anonymous_public_paths(api: Kube, path: str) -> None:
    """/version and the health endpoints answer 200 without credentials."""
    resp = api.get(path, auth="none")
    assert resp.status == 200, resp.body
    if path == "/version":
        assert resp.json()["gitVersion"].startswith("v1.")
    else:
        assert resp.body.strip() == b"ok"


def test_bearer_token_alone_works(api: Kube) -> None:
    """The kubeconfig's bearer token, without a client certificate, authenticates."""
    assert api.token
    resp = api.get("/api/v1/namespaces", auth="token")
    assert resp.status == 200, resp.body
    assert resp.json()["kind"] == "NamespaceList"
    name = unique("tok")
    assert api.post(cm_path(), configmap(name), auth="token").status == 201


def test_client_certificate_alone_works(api: Kube) -> None:
    """The kubeconfig's client certificate, without a token, authenticates."""
    assert api.get("/api/v1/namespaces", auth="cert").status == 200


def test_wrong_token_is_401(api: Kube) -> None:
    """A bearer token the server does not know is 401 Unauthorized."""
    assert_status(api.get("/api", auth="not-the-token"), 401, "Unauthorized")
    assert_status(api.get("/api/v1/namespaces", auth=api.token + "x"), 401, "Unauthorized")


def test_server_url_is_https_on_loopback(server: Server) -> None:
    """The server listens on https://127.0.0.1 only, as written in the kubeconfig."""
    cfg = yaml.safe_load(server.kubeconfig.read_text())
    url = urllib.parse.urlsplit(cfg["clusters"][0]["cluster"]["server"])
    assert url.scheme == "https"
    assert url.hostname == "127.0.0.1"
    assert server.url.startswith("https://127.0.0.1:")


def test_not_reachable_off_loopback_address(api: Kube) -> None:
    """Bound to 127.0.0.1 only: another loopback address on the same port refuses the connection."""
    with pytest.raises(OSError), socket.create_connection(("127.0.0.2", api.port), timeout=2):
        pass


def test_plain_http_is_not_served(api: Kube) -> None:
    """The API port speaks TLS only: a plain-HTTP request never gets an API answer."""
    conn = http.client.HTTPConnection(api.host, api.port, timeout=5)
    try:
        conn.request("GET", "/version")
        resp = conn.getresponse()
        assert resp.status != 200 or b"gitVersion" not in resp.read()
    except (OSError, http.client.HTTPException):
        pass  # the server closed the connection: also fine
    finally:
        conn.close()


def test_kubeconfig_mode_0600(server: Server) -> None:
    """The admin kubeconfig (it holds credentials) is readable by its owner only."""
    mode = stat.S_IMODE(server.kubeconfig.stat().st_mode)
    assert mode == 0o600, oct(mode)


def _ca_bytes(kubeconfig: Path, data_dir: Path) -> bytes:
    ca_file = data_dir / "pki" / "ca.crt"
    if ca_file.exists():
        return ca_file.read_bytes()
    cfg = yaml.safe_load(kubeconfig.read_text())
    return str(cfg["clusters"][0]["cluster"]["certificate-authority-data"]).encode()


def test_restart_reuses_ca_and_data(tmp_path: Path) -> None:
    """A restart on the same data dir keeps the CA (same ca.crt bytes) and the stored objects."""
    data = tmp_path / "kp"
    first = start_server(data)
    try:
        ca1 = _ca_bytes(first.kubeconfig, data)
        kube1 = Kube.from_kubeconfig(first.kubeconfig, tmp_path / "pki1")
        name = unique("persist")
        assert kube1.post(cm_path(), configmap(name)).status == 201
    finally:
        first.stop()
    second = start_server(data)
    try:
        assert _ca_bytes(second.kubeconfig, data) == ca1
        kube2 = Kube.from_kubeconfig(second.kubeconfig, tmp_path / "pki2")
        got = kube2.get(cm_path(name=name))
        assert got.status == 200 and got.json()["data"] == {"k": "v"}
        # The old client certificate still verifies against the same CA.
        kube_old = Kube.from_kubeconfig(first.kubeconfig, tmp_path / "pki3")
        kube_old.port = kube2.port
        assert kube_old.get("/api").status == 200
    finally:
        second.stop()


@requires_kubectl
def test_kubectl_with_wrong_token_reports_unauthorized(server: Server, tmp_path: Path) -> None:
    """kubectl with only a wrong token prints the upstream 'must be logged in' error."""
    cfg = yaml.safe_load(server.kubeconfig.read_text())
    cfg["users"][0]["user"] = {"token": "wrong-token"}
    bad = tmp_path / "bad-kubeconfig"
    bad.write_text(yaml.safe_dump(cfg))
    res = server.kubectl("get", "ns", check=False, env={"KUBECONFIG": str(bad)})
    assert res.returncode != 0
    assert "You must be logged in to the server" in res.stderr, res.stderr
