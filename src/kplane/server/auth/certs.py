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

Reuse is the common case and must be cheap, so a full check (which needs ``cryptography``, tens of
milliseconds to import) ends by writing ``pki/.state.json``: the SHA-256 of every PKI file, the host
names the serving certificate covers and the earliest expiry. A later start whose files still have
those digests, whose hosts are covered and which is not within 30 days of that expiry reuses the PKI
without loading ``cryptography``; any other start takes the full path in ``_issuing``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import hashlib
import ipaddress
import json
import os
import secrets
import ssl
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

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

        Client certificates are requested but optional (``CERT_OPTIONAL``) and verified against
        this CA in the handshake; ``x509.ClientCertificates.install`` changes that to upstream's
        behaviour (the handshake completes, the authenticator refuses), as the server does.
        """
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        ctx.load_cert_chain(self.serving_cert_file, self.serving_key_file)
        ctx.load_verify_locations(cafile=self.ca_cert_file)
        ctx.verify_mode = ssl.CERT_OPTIONAL
        # The HTTP layer speaks HTTP/1.1 only; saying so keeps Go clients from attempting h2.
        ctx.set_alpn_protocols(["http/1.1"])
        return ctx


def share_pki(data_dir: Path, pki_dir: Path) -> None:
    """Make ``data_dir/pki`` a link to ``pki_dir``, another server's PKI directory (its CA, serving
    certificate, admin credentials and ServiceAccount signing key), so several servers of one cluster
    trust the same clients and tokens. ``pki_dir`` must hold a CA. Idempotent; refuses (``OSError``)
    when ``data_dir/pki`` already is something else."""
    target = pki_dir.resolve()
    if not (target / "ca.crt").is_file() or not (target / "ca.key").is_file():
        raise FileNotFoundError(2, "no CA (ca.crt and ca.key) to share", str(pki_dir))
    link = data_dir / "pki"
    data_dir.mkdir(parents=True, exist_ok=True)
    if link.is_symlink() and link.resolve() == target:
        return
    if link.exists() or link.is_symlink():
        raise FileExistsError(17, f"already holds a PKI: remove it to share {target}", str(link))
    link.symlink_to(target, target_is_directory=True)


def ensure_pki(
    data_dir: Path,
    *,
    hosts: Sequence[str] = DEFAULT_HOSTS,
    clock: clock_mod.Clock | None = None,
) -> PKI:
    """Make sure ``data_dir`` holds a usable PKI for a server reachable as ``hosts``; return it.

    Idempotent: a second call with the same arguments changes no certificate, key or token.
    ``hosts`` are IP addresses (IP SANs; brackets around IPv6 are allowed) or DNS names (DNS SANs);
    unspecified addresses such as ``0.0.0.0`` name no host and are ignored. ``data_dir`` and
    ``data_dir/pki`` are created if needed and set to mode 0700; private keys and the token are
    written with mode 0600.
    """
    now = (clock or clock_mod.RealClock()).now()
    paths = PKI.at(data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    data_dir.chmod(0o700)
    pki_dir = paths.ca_cert_file.parent
    pki_dir.mkdir(mode=0o700, exist_ok=True)
    pki_dir.chmod(0o700)
    wanted = normalize_hosts(hosts)
    with _locked(pki_dir / ".lock"):
        if _stamp_allows_reuse(paths, wanted, now):
            return paths
        from kplane.server.auth import _issuing  # cryptography: only to check in depth or issue

        pki, covered, expires = _issuing.ensure(paths, hosts, now)
        _write_stamp(pki, covered, expires)
    return pki


def issue_client_cert(
    pki: PKI,
    cn: str,
    groups: Sequence[str] = (),
    *,
    clock: clock_mod.Clock | None = None,
    validity: datetime.timedelta | None = None,
) -> tuple[bytes, bytes]:
    """A client certificate for ``cn`` (user) in ``groups`` (O attributes), signed by ``pki``'s CA:
    ``(cert_pem, key_pem)``, valid for ``validity`` (default: a year). For tests and for handing
    out credentials to other users (``kplane kubeconfig``)."""
    from kplane.server.auth import _issuing

    now = (clock or clock_mod.RealClock()).now()
    return _issuing.issue_client_cert(pki, cn, groups, now=now, validity=validity)


def normalize_hosts(hosts: Sequence[str]) -> set[str]:
    """Host names as certificate SANs compare them: brackets stripped, DNS names lower-cased,
    IP addresses in canonical form, unspecified addresses dropped."""
    out: set[str] = set()
    for raw in hosts:
        host = raw.strip().strip("[]")
        if not host:
            continue
        try:
            ip = ipaddress.ip_address(host)
        except ValueError:
            out.add(host.lower())
            continue
        if not ip.is_unspecified:
            out.add(str(ip))
    return out


# -- the reuse stamp ----------------------------------------------------------------------------


def _stamp_path(pki: PKI) -> Path:
    return pki.ca_cert_file.parent / ".state.json"


def _digests(pki: PKI) -> dict[str, str]:
    out = {}
    for f in (
        pki.ca_cert_file,
        pki.ca_key_file,
        pki.serving_cert_file,
        pki.serving_key_file,
        pki.admin_cert_file,
        pki.admin_key_file,
        pki.admin_token_file,
    ):
        try:
            out[f.name] = hashlib.sha256(f.read_bytes()).hexdigest()
        except OSError:
            out[f.name] = ""
    return out


def _stamp_allows_reuse(pki: PKI, wanted: set[str], now: datetime.datetime) -> bool:
    try:
        stamp: Any = json.loads(_stamp_path(pki).read_text())
        expires = datetime.datetime.fromisoformat(stamp["expires"])
        covered = set(stamp["hosts"])
        digests = stamp["digests"]
    except (OSError, ValueError, KeyError, TypeError):
        return False
    if not wanted <= covered or expires - now < RENEW_BEFORE:
        return False
    current = _digests(pki)
    return all(current.values()) and current == digests and _read_text(pki.admin_token_file).strip() != ""


def _write_stamp(pki: PKI, covered: set[str], expires: datetime.datetime) -> None:
    stamp = {"digests": _digests(pki), "hosts": sorted(covered), "expires": expires.isoformat()}
    write_atomic(_stamp_path(pki), json.dumps(stamp, indent=1).encode(), 0o600)


# -- files --------------------------------------------------------------------------------------


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
