"""Client certificate verification (``auth.x509``): what upstream's x509 authenticator checks
(``k8s.io/apiserver/pkg/authentication/request/x509/x509.go``: chain to the client CA at the
current time, ``ExtKeyUsageClientAuth``), on an injected clock."""

from __future__ import annotations

import datetime
import ssl
from pathlib import Path

import pytest

from kplane._util.clock import FakeClock
from kplane.server.auth import authn, certs, x509


def _der(pem: bytes) -> bytes:
    return ssl.PEM_cert_to_DER_cert(pem.decode())


@pytest.fixture
def pki(tmp_path: Path) -> certs.PKI:
    return certs.ensure_pki(tmp_path / "data")


def test_validity_window_follows_the_clock(pki: certs.PKI) -> None:
    """Valid from issue (backdated 5 min) to one year later; before or after: not yet valid /
    expired, on the injected clock only."""
    now = datetime.datetime.now(datetime.UTC)
    cert, _ = certs.issue_client_cert(pki, "alice", ["devs"], clock=FakeClock(now))
    clock = FakeClock(now - datetime.timedelta(hours=1))
    verifier = x509.ClientCertificates(pki.ca_pem(), clock)
    with pytest.raises(x509.InvalidCertificate, match="expired or is not yet valid"):
        verifier.verify(_der(cert))
    clock.step(3600)
    assert verifier.verify(_der(cert)) == authn.UserInfo(name="alice", groups=("devs",))
    clock.step(366 * 86400)
    with pytest.raises(x509.InvalidCertificate, match="expired or is not yet valid"):
        verifier.verify(_der(cert))


def test_server_only_usage_is_refused(pki: certs.PKI) -> None:
    """The serving certificate (signed by the same CA, serverAuth only) is no client credential."""
    verifier = x509.ClientCertificates(pki.ca_pem(), FakeClock(datetime.datetime.now(datetime.UTC)))
    with pytest.raises(x509.InvalidCertificate, match="incompatible key usage"):
        verifier.verify(_der(pki.serving_cert_file.read_bytes()))


@pytest.mark.parametrize("der", [b"", b"\x30\x00", b"\x30\x82\xff\xff" + b"\x00" * 10, b"not a cert"])
def test_garbage_is_invalid(pki: certs.PKI, der: bytes) -> None:
    """Bytes that are no certificate are an InvalidCertificate, never another exception."""
    verifier = x509.ClientCertificates(pki.ca_pem(), FakeClock(datetime.datetime.now(datetime.UTC)))
    with pytest.raises(x509.InvalidCertificate):
        verifier.verify(der)


def test_context_requests_without_verifying(pki: certs.PKI) -> None:
    """The server context asks for an optional certificate; the deferral hook is installed."""
    ctx = pki.ssl_server_context()
    assert ctx.verify_mode == ssl.CERT_OPTIONAL
    assert x509.request_client_certificates(ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER))
