"""The server's own PKI: a CA, a serving certificate and admin credentials in the data directory.

Design note. ``kplane serve`` must be usable over HTTPS the moment it starts, with nothing set up by
hand, and must be ready in well under a second even on first start. So on every start
``ensure_pki`` looks at ``<data_dir>/pki`` and creates only what is missing or no longer fit for use;
everything still valid is reused byte for byte, so kubeconfigs handed out earlier keep working.
Keys are ECDSA P-256: generating one takes well under a millisecond, where RSA-2048 takes tens of
milliseconds, and every TLS client that matters (Go, OpenSSL, browsers) accepts them.

What is reissued, and when:

* the CA (10 years) only when its files are missing, unreadable or do not match each other, or when
  it expires within 30 days (leaves signed then would outlive it); reissuing it reissues every leaf;
* the serving certificate (1 year) also when it lacks a requested host, was not signed by the
  current CA, or expires within 30 days; a reissued serving certificate keeps the names of the one
  it replaces, so alternating between two host lists does not reissue on every start;
* the admin client certificate (1 year) under the same rules, minus the host check;
* the admin token only when missing or empty.

Every file is written atomically (temporary file, then rename), and the steps run under an
exclusive lock on ``pki/.lock``, so two servers starting on one data directory do not interleave.
A crash between writing a key and its certificate leaves a pair that does not match, which the next
start detects and reissues.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import ipaddress
import os
import secrets
import ssl
from collections.abc import Iterator, Sequence
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from kplane._util import clock as clock_mod

try:  # POSIX only; elsewhere concurrent first starts on one data directory are not guarded.
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]

DEFAULT_HOSTS: tuple[str, ...] = ("127.0.0.1", "localhost", "::1")
# In-cluster names clients use for the API server; always on the serving certificate.
KUBERNETES_NAMES: tuple[str, ...] = ("kubernetes", "kubernetes.default", "kubernetes.default.svc")
ADMIN_USER = "kplane-admin"
ADMIN_GROUP = "system:masters"

CA_VALIDITY = datetime.timedelta(days=3650)
LEAF_VALIDITY = datetime.timedelta(days=365)
RENEW_BEFORE = datetime.timedelta(days=30)
# Certificates start a little in the past so a client whose clock lags ours still accepts them.
_BACKDATE = datetime.timedelta(minutes=5)

_SAN = x509.DNSName | x509.IPAddress
_Key = ec.EllipticCurvePrivateKey


@dataclasses.dataclass(frozen=True)
class PKI:
    """Where the server's credentials live. All paths are inside ``data_dir / "pki"``.

    ``generated`` names what the ``ensure_pki`` call that built this value (re)issued: a subset of
    ``"ca"``, ``"serving"``, ``"admin"``, ``"token"``; empty when everything was reused.
    """

    data_dir: Path
    ca_cert_file: Path
    ca_key_file: Path
    serving_cert_file: Path
    serving_key_file: Path
    admin_cert_file: Path
    admin_key_file: Path
    admin_token_file: Path
    generated: tuple[str, ...] = ()

    @classmethod
    def at(cls, data_dir: Path) -> PKI:
        """The paths for ``data_dir``, without looking at or creating any file."""
        pki = data_dir / "pki"
        return cls(
            data_dir=data_dir,
            ca_cert_file=pki / "ca.crt",
            ca_key_file=pki / "ca.key",
            serving_cert_file=pki / "apiserver.crt",
            serving_key_file=pki / "apiserver.key",
            admin_cert_file=pki / "admin.crt",
            admin_key_file=pki / "admin.key",
            admin_token_file=pki / "admin.token",
        )

    def ca_pem(self) -> bytes:
        """The CA certificate, PEM."""
        return self.ca_cert_file.read_bytes()

    def admin_token(self) -> str:
        """The admin bearer token."""
        return self.admin_token_file.read_text().strip()

    def ssl_server_context(self) -> ssl.SSLContext:
        """A fresh TLS server context: TLS 1.2 or later, serving certificate loaded.

        Client certificates are requested but optional (``CERT_OPTIONAL``): one that is presented
        must chain to this CA or the handshake fails; a client presenting none (token or anonymous)
        still connects. The verified certificate is then available from ``getpeercert()``.
        """
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        ctx.load_cert_chain(self.serving_cert_file, self.serving_key_file)
        ctx.load_verify_locations(cafile=self.ca_cert_file)
        ctx.verify_mode = ssl.CERT_OPTIONAL
        # The HTTP layer speaks HTTP/1.1 only; saying so keeps Go clients from attempting h2.
        ctx.set_alpn_protocols(["http/1.1"])
        return ctx


def ensure_pki(
    data_dir: Path,
    *,
    hosts: Sequence[str] = DEFAULT_HOSTS,
    clock: clock_mod.Clock | None = None,
) -> PKI:
    """Make sure ``data_dir`` holds a usable PKI for a server reachable as ``hosts``; return it.

    Idempotent: a second call with the same arguments changes no file. ``hosts`` are IP addresses
    (IP SANs; brackets around IPv6 are allowed) or DNS names (DNS SANs); unspecified addresses such
    as ``0.0.0.0`` name no host and are ignored. ``data_dir`` and ``data_dir/pki`` are created if
    needed and set to mode 0700; private keys and the token are written with mode 0600.
    """
    now = (clock or clock_mod.RealClock()).now()
    paths = PKI.at(data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    data_dir.chmod(0o700)
    pki_dir = paths.ca_cert_file.parent
    pki_dir.mkdir(mode=0o700, exist_ok=True)
    pki_dir.chmod(0o700)
    generated: list[str] = []
    with _locked(pki_dir / ".lock"):
        ca = _load_pair(paths.ca_cert_file, paths.ca_key_file)
        if ca is None or ca[0].not_valid_after_utc - now < RENEW_BEFORE:
            ca = _issue_ca(now)
            _write_pair(paths.ca_cert_file, paths.ca_key_file, ca)
            generated.append("ca")
        ca_cert = ca[0]

        wanted = _sans(hosts) | _sans(KUBERNETES_NAMES)
        serving = _load_pair(paths.serving_cert_file, paths.serving_key_file)
        if serving is None or "ca" in generated or not _leaf_fit(serving[0], ca_cert, now, wanted):
            keep = _cert_sans(serving[0]) if serving is not None else set()
            serving = _issue_serving(ca, wanted | keep, now)
            _write_pair(paths.serving_cert_file, paths.serving_key_file, serving)
            generated.append("serving")

        admin = _load_pair(paths.admin_cert_file, paths.admin_key_file)
        if admin is None or "ca" in generated or not _leaf_fit(admin[0], ca_cert, now, set()):
            admin = _issue_client(ca, ADMIN_USER, (ADMIN_GROUP,), now)
            _write_pair(paths.admin_cert_file, paths.admin_key_file, admin)
            generated.append("admin")

        if not _read_text(paths.admin_token_file).strip():
            write_atomic(paths.admin_token_file, secrets.token_urlsafe(32).encode() + b"\n", 0o600)
            generated.append("token")
    return dataclasses.replace(paths, generated=tuple(generated))


def issue_client_cert(
    pki: PKI,
    cn: str,
    groups: Sequence[str] = (),
    *,
    clock: clock_mod.Clock | None = None,
) -> tuple[bytes, bytes]:
    """Sign a client certificate for user ``cn`` in ``groups`` (one O each); return (cert, key) PEM.

    Nothing is written to disk. Meant for tests and for handing out credentials to extra users.
    """
    now = (clock or clock_mod.RealClock()).now()
    ca = _load_pair(pki.ca_cert_file, pki.ca_key_file)
    if ca is None:
        raise FileNotFoundError(f"no usable CA in {pki.ca_cert_file.parent}")
    cert, key = _issue_client(ca, cn, groups, now)
    return cert.public_bytes(serialization.Encoding.PEM), _key_pem(key)


# -- issuing ------------------------------------------------------------------------------------


def _new_key() -> _Key:
    return ec.generate_private_key(ec.SECP256R1())


def _builder(
    subject: x509.Name, key: _Key, now: datetime.datetime, validity: datetime.timedelta
) -> x509.CertificateBuilder:
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _BACKDATE)
        .not_valid_after(now + validity)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
    )


def _key_usage(*, ca: bool) -> x509.KeyUsage:
    # ECDSA keys only sign (no key encipherment); a CA also signs certificates and CRLs.
    return x509.KeyUsage(
        digital_signature=True, content_commitment=False, key_encipherment=False,
        data_encipherment=False, key_agreement=False, key_cert_sign=ca, crl_sign=ca,
        encipher_only=False, decipher_only=False,
    )  # fmt: skip


def _issue_ca(now: datetime.datetime) -> tuple[x509.Certificate, _Key]:
    key = _new_key()
    # A timestamp in the name tells CAs of successive data directories apart, as upstream does.
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"kplane-ca@{int(now.timestamp())}")])
    cert = (
        _builder(name, key, now, CA_VALIDITY)
        .issuer_name(name)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_key_usage(ca=True), critical=True)
        .sign(key, hashes.SHA256())
    )
    return cert, key


def _issue_leaf(
    ca: tuple[x509.Certificate, _Key],
    subject: x509.Name,
    usage: x509.ObjectIdentifier,
    sans: set[_SAN],
    now: datetime.datetime,
) -> tuple[x509.Certificate, _Key]:
    ca_cert, ca_key = ca
    key = _new_key()
    aki = x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key())
    builder = (
        _builder(subject, key, now, LEAF_VALIDITY)
        .issuer_name(ca_cert.subject)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(ca=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(aki, critical=False)
    )
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(_sorted(sans)), critical=False)
    return builder.sign(ca_key, hashes.SHA256()), key


def _issue_serving(
    ca: tuple[x509.Certificate, _Key], sans: set[_SAN], now: datetime.datetime
) -> tuple[x509.Certificate, _Key]:
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")])
    return _issue_leaf(ca, subject, ExtendedKeyUsageOID.SERVER_AUTH, sans, now)


def _issue_client(
    ca: tuple[x509.Certificate, _Key], cn: str, groups: Sequence[str], now: datetime.datetime
) -> tuple[x509.Certificate, _Key]:
    attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, g) for g in groups]
    subject = x509.Name([*attrs, x509.NameAttribute(NameOID.COMMON_NAME, cn)])
    return _issue_leaf(ca, subject, ExtendedKeyUsageOID.CLIENT_AUTH, set(), now)


# -- checking -----------------------------------------------------------------------------------


def _sans(hosts: Sequence[str]) -> set[_SAN]:
    out: set[_SAN] = set()
    for raw in hosts:
        host = raw.strip().strip("[]")
        if not host:
            continue
        try:
            ip = ipaddress.ip_address(host)
        except ValueError:
            out.add(x509.DNSName(host.lower()))
            continue
        if not ip.is_unspecified:
            out.add(x509.IPAddress(ip))
    return out


def _cert_sans(cert: x509.Certificate) -> set[_SAN]:
    try:
        ext = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return set()
    return {n for n in ext if isinstance(n, x509.DNSName | x509.IPAddress)}


def _sorted(sans: set[_SAN]) -> list[x509.GeneralName]:
    # A stable order makes reissued certificates easy to compare by eye.
    return sorted(sans, key=lambda n: (isinstance(n, x509.DNSName), str(n.value)))


def _leaf_fit(
    cert: x509.Certificate, ca_cert: x509.Certificate, now: datetime.datetime, sans: set[_SAN]
) -> bool:
    """True when ``cert`` was signed by ``ca_cert``, is valid for 30 more days and names ``sans``."""
    try:
        cert.verify_directly_issued_by(ca_cert)
    except (InvalidSignature, ValueError, TypeError):
        return False
    if cert.not_valid_before_utc > now or cert.not_valid_after_utc - now < RENEW_BEFORE:
        return False
    return sans <= _cert_sans(cert)


def _load_pair(cert_file: Path, key_file: Path) -> tuple[x509.Certificate, _Key] | None:
    """The certificate and key in these files, or None if either is missing, unreadable or they differ."""
    try:
        cert = x509.load_pem_x509_certificate(cert_file.read_bytes())
        key = serialization.load_pem_private_key(key_file.read_bytes(), password=None)
    except (OSError, ValueError, TypeError):
        return None
    if not isinstance(key, ec.EllipticCurvePrivateKey) or key.public_key() != cert.public_key():
        return None
    return cert, key


# -- files --------------------------------------------------------------------------------------


def _key_pem(key: _Key) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _write_pair(cert_file: Path, key_file: Path, pair: tuple[x509.Certificate, _Key]) -> None:
    cert, key = pair
    write_atomic(key_file, _key_pem(key), 0o600)
    write_atomic(cert_file, cert.public_bytes(serialization.Encoding.PEM), 0o644)


def write_atomic(path: Path, data: bytes, mode: int) -> None:
    """Replace ``path`` with ``data`` so readers see the old or the new content, never a mix.

    The file is created with ``mode`` from the start (never briefly more open) and fsynced before the
    rename.
    """
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)  # the umask may have narrowed what os.open set
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _read_text(path: Path) -> str:
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError):
        return ""


@contextlib.contextmanager
def _locked(lock_file: Path) -> Iterator[None]:
    if fcntl is None:  # pragma: no cover
        yield
        return
    fd = os.open(lock_file, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
