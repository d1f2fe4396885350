from __future__ import annotations

import datetime
import ipaddress
import ssl
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from kplane._util import clock
from kplane.server.auth import certs
from kplane.server.auth import x509 as client_certs

from .conftest import TLSServerFactory


def _files(pki: certs.PKI) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in (pki.data_dir / "pki").iterdir() if not p.name.startswith(".")}


def _cert(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def _sans(path: Path) -> set[str]:
    ext = _cert(path).extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    return {str(n.value) for n in ext}


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _client_ctx(pki: certs.PKI, cert: Path | None = None, key: Path | None = None) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(pki.ca_cert_file))
    if cert is not None:
        ctx.load_cert_chain(cert, key)
    return ctx


def _later(days: int) -> clock.FakeClock:
    return clock.FakeClock(start=datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=days))


def test_first_start_creates_everything(tmp_path: Path) -> None:
    """A first start writes CA, serving and admin credentials and reports all four as generated."""
    pki = certs.ensure_pki(tmp_path / "data")
    assert pki.generated == ("ca", "serving", "admin", "token")
    assert set(_files(pki)) == {
        "ca.crt", "ca.key", "apiserver.crt", "apiserver.key", "admin.crt", "admin.key", "admin.token",
    }  # fmt: skip
    assert len(pki.admin_token()) >= 43  # 32 random bytes, urlsafe base64


def test_reuse_keeps_every_byte(tmp_path: Path) -> None:
    """A second start with the same hosts reuses every file unchanged."""
    first = certs.ensure_pki(tmp_path)
    before = _files(first)
    second = certs.ensure_pki(tmp_path)
    assert second.generated == ()
    assert _files(second) == before
    assert second.admin_token() == first.admin_token()


def test_modes(tmp_path: Path) -> None:
    """The data dir and pki dir are 0700; keys and token 0600, even if the data dir existed before."""
    data = tmp_path / "data"
    data.mkdir(mode=0o755)
    pki = certs.ensure_pki(data)
    assert _mode(data) == 0o700
    assert _mode(data / "pki") == 0o700
    for f in (pki.ca_key_file, pki.serving_key_file, pki.admin_key_file, pki.admin_token_file):
        assert _mode(f) == 0o600, f


def test_serving_cert_names(tmp_path: Path) -> None:
    """The serving cert names the requested hosts (IPs as IP SANs) and the in-cluster names."""
    pki = certs.ensure_pki(tmp_path)
    ext = _cert(pki.serving_cert_file).extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert set(ext.get_values_for_type(x509.IPAddress)) == {
        ipaddress.ip_address("127.0.0.1"),
        ipaddress.ip_address("::1"),
    }
    assert set(ext.get_values_for_type(x509.DNSName)) == {
        "localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
    }  # fmt: skip
    eku = _cert(pki.serving_cert_file).extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(eku) == [ExtendedKeyUsageOID.SERVER_AUTH]


def test_validity_periods(tmp_path: Path) -> None:
    """The CA is valid for about 10 years, the leaves for about one."""
    pki = certs.ensure_pki(tmp_path)
    for path, days in ((pki.ca_cert_file, 3650), (pki.serving_cert_file, 365), (pki.admin_cert_file, 365)):
        c = _cert(path)
        span = c.not_valid_after_utc - c.not_valid_before_utc
        assert abs(span - datetime.timedelta(days=days)) < datetime.timedelta(hours=1), path


def test_new_host_reissues_serving_cert_only(tmp_path: Path) -> None:
    """A host missing from the serving cert reissues it, keeping the old names; the CA stays."""
    first = certs.ensure_pki(tmp_path)
    before = _files(first)
    second = certs.ensure_pki(tmp_path, hosts=("10.1.2.3", "API.example.com", "[fd00::1]", "0.0.0.0"))
    assert second.generated == ("serving",)
    after = _files(second)
    assert after["apiserver.crt"] != before["apiserver.crt"]
    assert {k: v for k, v in after.items() if not k.startswith("apiserver")} == {
        k: v for k, v in before.items() if not k.startswith("apiserver")
    }
    names = _sans(second.serving_cert_file)
    assert {"10.1.2.3", "api.example.com", "fd00::1", "127.0.0.1", "localhost"} <= names
    assert "0.0.0.0" not in names
    # Going back to the defaults finds every name present and changes nothing.
    assert certs.ensure_pki(tmp_path).generated == ()


def test_expiring_leaves_are_reissued(tmp_path: Path) -> None:
    """Within 30 days of expiry the serving and admin certs are reissued, the CA and token kept."""
    first = certs.ensure_pki(tmp_path)
    ca, token = first.ca_pem(), first.admin_token()
    assert certs.ensure_pki(tmp_path, clock=_later(330)).generated == ()
    later = certs.ensure_pki(tmp_path, clock=_later(340))
    assert later.generated == ("serving", "admin")
    assert later.ca_pem() == ca and later.admin_token() == token
    serving = _cert(later.serving_cert_file)
    assert serving.not_valid_after_utc > datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=700)
    serving.verify_directly_issued_by(_cert(later.ca_cert_file))


def test_lost_ca_reissues_everything_but_the_token(tmp_path: Path) -> None:
    """Without its CA key every certificate is reissued under a new CA; the token is kept."""
    first = certs.ensure_pki(tmp_path)
    old_ca, token = first.ca_pem(), first.admin_token()
    first.ca_key_file.unlink()
    second = certs.ensure_pki(tmp_path)
    assert second.generated == ("ca", "serving", "admin")
    assert second.ca_pem() != old_ca
    assert second.admin_token() == token
    ca = _cert(second.ca_cert_file)
    _cert(second.serving_cert_file).verify_directly_issued_by(ca)
    _cert(second.admin_cert_file).verify_directly_issued_by(ca)


def test_mismatched_key_is_replaced(tmp_path: Path) -> None:
    """A serving key that does not match its cert (a crash between writes) gets a new pair."""
    pki = certs.ensure_pki(tmp_path)
    pki.serving_key_file.write_bytes(pki.admin_key_file.read_bytes())
    assert certs.ensure_pki(tmp_path).generated == ("serving",)
    assert certs.ensure_pki(tmp_path).generated == ()


def test_admin_and_issued_client_certs(tmp_path: Path) -> None:
    """Client certs carry CN=user and one O per group, are for client auth and chain to the CA."""
    pki = certs.ensure_pki(tmp_path)
    ca = _cert(pki.ca_cert_file)
    cert_pem, key_pem = certs.issue_client_cert(pki, "alice", ["devs", "ops"])
    assert b"PRIVATE KEY" in key_pem
    for c, cn, orgs in (
        (_cert(pki.admin_cert_file), "kplane-admin", ["system:masters"]),
        (x509.load_pem_x509_certificate(cert_pem), "alice", ["devs", "ops"]),
    ):
        c.verify_directly_issued_by(ca)
        assert [a.value for a in c.subject.get_attributes_for_oid(NameOID.COMMON_NAME)] == [cn]
        assert [a.value for a in c.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)] == orgs
        eku = c.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
        assert list(eku) == [ExtendedKeyUsageOID.CLIENT_AUTH]


async def test_tls_client_cert_is_verified(tmp_path: Path, tls_server: TLSServerFactory) -> None:
    """A client presenting the admin cert is verified; the server sees CN and O in getpeercert()."""
    pki = certs.ensure_pki(tmp_path)
    async with tls_server(pki) as srv:
        assert await srv.ask(_client_ctx(pki, pki.admin_cert_file, pki.admin_key_file)) == b"ok"
        # The serving cert is valid for the DNS name too, not only the IP.
        assert await srv.ask(_client_ctx(pki), server_hostname="localhost") == b"ok"
    peer = srv.peercerts[0]
    assert peer is not None
    assert ((("commonName", "kplane-admin"),) in peer["subject"]) and (
        (("organizationName", "system:masters"),) in peer["subject"]
    )
    assert not srv.peercerts[1]


@pytest.mark.parametrize(
    "version", [ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3], ids=["tls1.2", "tls1.3"]
)
async def test_tls_foreign_client_cert_is_left_to_the_authenticator(
    tmp_path: Path, tls_server: TLSServerFactory, version: ssl.TLSVersion
) -> None:
    """A client cert signed by another CA completes the handshake (Go's ``tls.RequestClientCert``),
    so the request can be answered 401; the authenticator refuses it."""
    pki = certs.ensure_pki(tmp_path / "ours")
    other = certs.ensure_pki(tmp_path / "theirs")
    ctx = _client_ctx(pki, other.admin_cert_file, other.admin_key_file)
    ctx.maximum_version = version
    verifier = client_certs.ClientCertificates(clock.RealClock())
    async with tls_server(pki, verifier) as srv:
        assert await srv.ask(ctx) == b"ok"
    assert srv.peerders[0] == ssl.PEM_cert_to_DER_cert(other.admin_cert_file.read_text())
    with pytest.raises(client_certs.InvalidCertificate, match="local issuer"):
        verifier.verify(srv.peerders[0], srv.peercerts[0] or {})


def test_server_context_settings(tmp_path: Path) -> None:
    """The server context requires TLS 1.2+, asks for an optional client cert and trusts our CA only."""
    pki = certs.ensure_pki(tmp_path)
    ctx = pki.ssl_server_context()
    assert ctx.minimum_version == ssl.TLSVersion.TLSv1_2
    assert ctx.verify_mode == ssl.CERT_OPTIONAL
    assert [c["subject"] for c in ctx.get_ca_certs()] == [((("commonName", _ca_cn(pki)),),)]


def _ca_cn(pki: certs.PKI) -> str:
    return str(_cert(pki.ca_cert_file).subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value)


def test_expiring_ca_reissues_everything_but_the_token(tmp_path: Path) -> None:
    """A CA within 30 days of expiry is replaced, and every certificate with it; the token stays."""
    first = certs.ensure_pki(tmp_path)
    old_ca, token = first.ca_pem(), first.admin_token()
    later = certs.ensure_pki(tmp_path, clock=_later(3640))
    assert later.generated == ("ca", "serving", "admin")
    assert later.ca_pem() != old_ca and later.admin_token() == token


def test_reuse_start_does_not_load_cryptography(tmp_path: Path) -> None:
    """A start on an intact PKI is decided by its stamp, without importing cryptography."""
    certs.ensure_pki(tmp_path)
    code = (
        "import sys; from pathlib import Path; from kplane.server.auth import certs; "
        f"p = certs.ensure_pki(Path({str(tmp_path)!r})); "
        "print(p.generated, 'cryptography' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "() False"


def test_changed_file_defeats_the_stamp(tmp_path: Path) -> None:
    """A PKI file changed behind the stamp's back takes the full check, which repairs it."""
    pki = certs.ensure_pki(tmp_path)
    pki.serving_key_file.write_bytes(b"not a key")
    again = certs.ensure_pki(tmp_path)
    assert again.generated == ("serving",)
