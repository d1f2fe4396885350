"""The dashboard's server side through a real ``kplane serve``: public page and assets with strict
security headers, nothing else public, the certificate session probe, controllers on /metrics."""

from __future__ import annotations

import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e import conftest
from tests.e2e.conftest import Server

TOKEN = "dashboard-test-token"
NOBODY_TOKEN = "dashboard-nobody-token"  # a user no RBAC rule grants anything but discovery


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    data = tmp_path_factory.mktemp("kplane")
    tokens = data / "tokens.csv"
    tokens.write_text(f'{TOKEN},dash-admin,1,"system:masters"\n{NOBODY_TOKEN},dash-nobody,2\n')
    srv = conftest.start_server(data, "--token-file", str(tokens), "--nodes", "1", controllers=True)
    yield srv
    srv.stop()


def _get(
    server: Server, path: str, *, method: str = "GET", headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    """One request without a client certificate (as a browser without one)."""
    ctx = ssl.create_default_context(cafile=str(server.data_dir / "pki" / "ca.crt"))
    req = urllib.request.Request(server.url + path, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=10) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), err.read()


@pytest.mark.parametrize(
    "path", ["/dashboard", "/dashboard/", "/dashboard/static/main.js", "/dashboard/static/app.css"]
)
def test_page_and_assets_are_public_with_security_headers(served: Server, path: str) -> None:
    """The page and its assets load without credentials, each with the strict headers."""
    status, headers, body = _get(served, path)
    assert status == 200 and body
    csp = headers["Content-Security-Policy"]
    assert "default-src 'self'" in csp and "frame-ancestors 'none'" in csp and "'unsafe-inline'" not in csp
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert headers["X-Frame-Options"] == "DENY"
    assert "Set-Cookie" not in headers


def test_asset_types_and_revalidation(served: Server) -> None:
    """Scripts are served as JavaScript (nosniff needs it); a matching ETag answers 304."""
    status, headers, _ = _get(served, "/dashboard/static/api.js")
    assert status == 200 and headers["Content-Type"].startswith("text/javascript")
    status, _, body = _get(served, "/dashboard/static/api.js", headers={"If-None-Match": headers["ETag"]})
    assert status == 304 and body == b""


@pytest.mark.parametrize(
    "path",
    [
        "/dashboard/static/nope.js",
        "/dashboard/static/%2e%2e/assets.py",
        "/dashboard/static/../assets.py",
        "/dashboard/x",
    ],
)
def test_unknown_dashboard_paths_are_404(served: Server, path: str) -> None:
    """Only the packaged files are served: a traversal attempt finds nothing."""
    status, headers, _ = _get(served, path)
    assert status == 404
    assert headers["X-Content-Type-Options"] == "nosniff"


def test_dashboard_is_read_only(served: Server) -> None:
    """Writes to dashboard paths are refused with upstream's 405 Status."""
    status, _, body = _get(served, "/dashboard/", method="POST")
    assert status == 405
    assert b"the server does not allow this method on the requested resource" in body


def test_api_still_needs_credentials(served: Server) -> None:
    """Being public stops at /dashboard: the API answers 401 to the same anonymous browser."""
    # upstream's 401 body: {"kind":"Status",...,"message":"Unauthorized","reason":"Unauthorized","code":401}
    status, _, body = _get(served, "/api/v1/namespaces")
    assert status == 401 and b'"reason":"Unauthorized"' in body
    status, _, _ = _get(served, "/api/v1/namespaces", headers={"Authorization": f"Bearer {TOKEN}"})
    assert status == 200


def test_session_names_no_user_without_a_certificate(served: Server) -> None:
    """The certificate probe reports no user for a connection without a certificate, even with a
    token (it never reads tokens), and is not cached."""
    status, headers, body = _get(served, "/dashboard/session", headers={"Authorization": f"Bearer {TOKEN}"})
    assert status == 200 and body == b'{"certificateUser": null}'
    assert headers["Cache-Control"] == "no-store"


def test_session_names_the_certificate_user(served: Server, tmp_path: Path) -> None:
    """With the admin's client certificate, the probe names its user (CN) and groups (O)."""
    from tests.e2e import helpers

    kube = helpers.Kube.from_kubeconfig(served.kubeconfig, tmp_path)
    resp = kube.get("/dashboard/session")
    assert resp.status == 200
    user = resp.json()["certificateUser"]
    assert user["username"] == "kplane-admin" and "system:masters" in user["groups"]


def test_metrics_include_the_controllers(served: Server) -> None:
    """kplane serve's /metrics carries its controllers' queue and reconcile families (scraped from
    the controllers' process every 2 s, so the first ones come a moment after start)."""

    def complete(text: str) -> bool:
        # a scrape may come while the controllers are still starting: wait for both families
        deployment_queue = (
            'workqueue_depth{controller="deployment"' in text or 'workqueue_depth{name="deployment"' in text
        )
        return deployment_queue and "controller_runtime_reconcile_time_seconds_bucket" in text

    deadline = time.monotonic() + 30
    while True:
        status, _, body = _get(served, "/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
        text = body.decode()
        assert status == 200
        if complete(text) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert 'workqueue_depth{controller="deployment"' in text or 'workqueue_depth{name="deployment"' in text
    assert "controller_runtime_reconcile_time_seconds_bucket" in text
    assert text.count("# TYPE apiserver_request_total ") == 1


def test_no_dashboard_flag(tmp_path: Path) -> None:
    """--no-dashboard: /dashboard is an API path like any other (401 without credentials)."""
    srv = conftest.start_server(tmp_path, "--no-dashboard")
    try:
        status, _, _ = _get(srv, "/dashboard/")
        assert status == 401
    finally:
        srv.stop()
