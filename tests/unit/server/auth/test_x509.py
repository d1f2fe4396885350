"""Client certificate verification (``auth.x509``): what upstream's x509 authenticator checks
(``k8s.io/apiserver/pkg/authentication/request/x509/x509.go``: the chain to the client CA at the
current time, ``ExtKeyUsageClientAuth``), done by OpenSSL during real handshakes that complete
either way, on an injected clock."""

from __future__ import annotations

import datetime
import ssl
import subprocess
import sys
from pathlib import Path

import pytest

from kplane._util.clock import FakeClock
from kplane.server.auth import authn, certs, x509

from .conftest import TLSServerFactory, present


@pytest.fixture
def pki(tmp_path: Path) -> certs.PKI:
    return certs.ensure_pki(tmp_path / "data")


async def test_validity_window_follows_the_clock(
    pki: certs.PKI, tls_server: TLSServerFactory, tmp_path: Path
) -> None:
    """Valid from issue (backdated 5 min) to one year later, judged at the injected clock's time."""
    now = datetime.datetime.now(datetime.UTC)
    cert, key = certs.issue_client_cert(pki, "alice", ["devs", "ops", "devs"], clock=FakeClock(now))
    clock = FakeClock(now - datetime.timedelta(hours=1))
    verifier = x509.ClientCertificates(clock)
    srv = await present(tls_server, pki, verifier, cert, key, tmp_path)
    with pytest.raises(x509.InvalidCertificate, match="certificate is not yet valid"):
        verifier.verify(srv.peerders[0], srv.peercerts[0] or {})
    clock.step(3600)
    srv = await present(tls_server, pki, verifier, cert, key, tmp_path)
    assert verifier.verify(srv.peerders[0], srv.peercerts[0] or {}) == authn.UserInfo(
        name="alice", groups=("devs", "ops")
    )
    clock.step(366 * 86400)
    srv = await present(tls_server, pki, verifier, cert, key, tmp_path)
    with pytest.raises(x509.InvalidCertificate, match="certificate has expired"):
        verifier.verify(srv.peerders[0], srv.peercerts[0] or {})


async def test_server_only_usage_is_refused(
    pki: certs.PKI, tls_server: TLSServerFactory, tmp_path: Path
) -> None:
    """The serving certificate (same CA, serverAuth only) is no client credential."""
    verifier = x509.ClientCertificates(FakeClock(datetime.datetime.now(datetime.UTC)))
    cert, key = pki.serving_cert_file.read_bytes(), pki.serving_key_file.read_bytes()
    srv = await present(tls_server, pki, verifier, cert, key, tmp_path)
    with pytest.raises(x509.InvalidCertificate, match="unsuitable certificate purpose"):
        verifier.verify(srv.peerders[0], srv.peercerts[0] or {})


def test_unknown_certificate_is_invalid(pki: certs.PKI) -> None:
    """With verification deferred, a certificate no handshake presented is refused."""
    verifier = x509.ClientCertificates(FakeClock())
    assert verifier.install(pki.ssl_server_context())
    der = ssl.PEM_cert_to_DER_cert(pki.admin_cert_file.read_text())
    with pytest.raises(x509.InvalidCertificate):
        verifier.verify(der, {"subject": ((("commonName", "kplane-admin"),),)})


def test_user_from_decoded_subject() -> None:
    """CN → name (the last wins), each O → a group once, in subject order; no CN → nobody."""
    decoded = {
        "subject": (
            (("organizationName", "devs"),),
            (("commonName", "first"),),
            (("organizationName", "ops"),),
            (("organizationName", "devs"),),
            (("commonName", "alice"),),
        )
    }
    assert x509.user_from_cert(decoded) == authn.UserInfo(name="alice", groups=("devs", "ops"))
    assert x509.user_from_cert({"subject": ((("organizationName", "devs"),),)}) is None
    assert x509.user_from_cert({}) is None


def test_install_needs_no_cryptography(pki: certs.PKI) -> None:
    """Deferring verification loads nothing beyond the standard library (``cryptography`` costs
    start-up time and memory the server avoids)."""
    code = (
        "import sys; from pathlib import Path; from kplane._util.clock import RealClock; "
        "from kplane.server.auth import certs, x509; "
        f"ctx = certs.PKI.at(Path({str(pki.data_dir)!r})).ssl_server_context(); "
        "print(x509.ClientCertificates(RealClock()).install(ctx), 'cryptography' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "True False"
