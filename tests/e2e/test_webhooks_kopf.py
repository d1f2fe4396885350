"""kopf from PyPI, unchanged, as an admission webhook server for ``kplane serve``: it creates its own
webhook configurations (``settings.admission.managed``), its validating handler refuses a create and
its mutating handler's patch is applied.

kopf would generate its own self-signed certificate with ``certbuilder``/``oscrypto``, whose released
version cannot load OpenSSL 3's libcrypto; the test hands kopf a self-signed pair instead (kopf then
uses that certificate as the configurations' ``caBundle``, as for any provided certificate)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kplane.runtime.webhook import certs
from tests.e2e.conftest import Server, requires_kubectl, start_server

pytestmark = [requires_kubectl, pytest.mark.slow]
OPERATOR = Path(__file__).with_name("kopf_admission_operator.py")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def kopf_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, subprocess.Popen[str]]]:
    srv = start_server(tmp_path_factory.mktemp("kopf-kplane"), storage="memory")
    tmp = tmp_path_factory.mktemp("kopf")
    cert, key = certs.self_signed(["127.0.0.1"])
    (tmp / "tls.crt").write_bytes(cert)
    (tmp / "tls.key").write_bytes(key)
    log = open(tmp / "kopf.log", "w")  # noqa: SIM115 - the process owns it
    env = {
        **os.environ,
        "KUBECONFIG": str(srv.kubeconfig),
        "KOPF_TEST_PORT": str(_free_port()),
        "KOPF_TEST_CERT": str(tmp / "tls.crt"),
        "KOPF_TEST_KEY": str(tmp / "tls.key"),
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "kopf", "run", "--standalone", "--all-namespaces", str(OPERATOR)],
        stdout=log,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    try:
        yield srv, proc
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
        srv.stop()


def _wait_for_configurations(srv: Server, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert proc.poll() is None, "kopf exited"
        got = srv.kubectl(
            "get", "mutatingwebhookconfigurations,validatingwebhookconfigurations", "-o", "name"
        )
        names = set(got.stdout.split())
        if {
            "mutatingwebhookconfiguration.admissionregistration.k8s.io/kplane-test.kopf.dev",
            "validatingwebhookconfiguration.admissionregistration.k8s.io/kplane-test.kopf.dev",
        } <= names:
            return
        time.sleep(0.5)
    raise AssertionError("kopf did not create its webhook configurations")


def test_kopf_admission_handlers_work_against_kplane(
    kopf_server: tuple[Server, subprocess.Popen[str]],
) -> None:
    """kopf's managed configurations are accepted; its refusal reaches kubectl with upstream's
    wording (statuserror.go ToStatusErr) and its mutation is stored."""
    srv, proc = kopf_server
    _wait_for_configurations(srv, proc)
    hook = json.loads(
        srv.kubectl("get", "validatingwebhookconfiguration", "kplane-test.kopf.dev", "-o", "json").stdout
    )["webhooks"][0]
    assert hook["clientConfig"]["url"].startswith("https://127.0.0.1:")
    # kopf's server may come up just after its configurations: retry the first create briefly.
    deadline = time.monotonic() + 30
    while True:
        res = srv.kubectl("create", "configmap", "fine", "--from-literal=a=b", check=False)
        if res.returncode == 0 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert res.returncode == 0, res.stderr
    stored = json.loads(srv.kubectl("get", "configmap", "fine", "-o", "json").stdout)
    assert stored["metadata"]["labels"] == {"stamped-by": "kopf"}
    refused = srv.kubectl(
        "apply", "-f", "-", check=False,
        input=json.dumps({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "bad", "namespace": "default", "labels": {"forbidden": "yes"}},
        }),
    )  # fmt: skip
    assert refused.returncode == 1
    assert (
        'admission webhook "no-forbidden.kplane-test.kopf.dev" denied the request: '
        "kopf refuses forbidden configmaps" in refused.stderr
    ), refused.stderr
    assert srv.kubectl("get", "configmap", "bad", check=False).returncode == 1
