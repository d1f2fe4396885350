"""Issuing and checking the PKI's certificates: everything in ``certs`` that needs ``cryptography``.

Imported only when ``certs.ensure_pki`` cannot reuse the PKI on the strength of its stamp, or when a
client certificate is issued, so a normal start does not pay for importing ``cryptography``.
"""

from __future__ import annotations

import dataclasses
import datetime
import ipaddress
import secrets
from collections.abc import Sequence
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from kplane.server.auth.certs import (
    _BACKDATE,
    ADMIN_GROUP,
    ADMIN_USER,
    CA_VALIDITY,
    KUBERNETES_NAMES,
    LEAF_VALIDITY,
    PKI,
    RENEW_BEFORE,
    _read_text,
    write_atomic,
)

_SAN = x509.DNSName | x509.IPAddress
_Key = ec.EllipticCurvePrivateKey


def ensure(
    paths: PKI, hosts: Sequence[str], now: datetime.datetime
) -> tuple[PKI, set[str], datetime.datetime]:
    """The full check of ``certs.ensure_pki`` (the caller holds the lock): reissue what is missing
    or unfit. Returns the PKI, the host names the serving certificate covers and the earliest expiry.
    """
    generated: list[str] = []
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
    covered = {_san_text(n) for n in _cert_sans(serving[0])}
    expires = min(ca_cert.not_valid_after_utc, serving[0].not_valid_after_utc, admin[0].not_valid_after_utc)
    return dataclasses.replace(paths, generated=tuple(generated)), covered, expires


def _san_text(name: _SAN) -> str:
    return str(name.value).lower() if isinstance(name, x509.DNSName) else str(name.value)


def issue_client_cert(
    pki: PKI,
    cn: str,
    groups: Sequence[str],
    *,
    now: datetime.datetime,
    validity: datetime.timedelta | None = None,
) -> tuple[bytes, bytes]:
    """A client certificate for ``cn`` in ``groups`` signed by ``pki``'s CA, as PEM (cert, key);
    valid for ``validity`` (default: the leaf default)."""
    ca = _load_pair(pki.ca_cert_file, pki.ca_key_file)
    if ca is None:
        raise FileNotFoundError(f"no usable CA in {pki.ca_cert_file.parent}")
    cert, key = _issue_client(ca, cn, groups, now, validity)
    return cert.public_bytes(serialization.Encoding.PEM), _key_pem(key)


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
    validity: datetime.timedelta | None = None,
) -> tuple[x509.Certificate, _Key]:
    ca_cert, ca_key = ca
    key = _new_key()
    aki = x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key())
    builder = (
        _builder(subject, key, now, validity or LEAF_VALIDITY)
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
    ca: tuple[x509.Certificate, _Key],
    cn: str,
    groups: Sequence[str],
    now: datetime.datetime,
    validity: datetime.timedelta | None = None,
) -> tuple[x509.Certificate, _Key]:
    attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, g) for g in groups]
    subject = x509.Name([*attrs, x509.NameAttribute(NameOID.COMMON_NAME, cn)])
    return _issue_leaf(ca, subject, ExtendedKeyUsageOID.CLIENT_AUTH, set(), now, validity)


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
