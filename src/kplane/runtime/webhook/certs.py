"""A self-signed serving certificate for a webhook server in local and development use.

controller-runtime never generates webhook certificates (cert-manager or envtest provide them);
kplane can, when asked (``WebhookServerOptions.self_signed``): ``ensure_self_signed`` writes
``tls.crt``/``tls.key`` into the cert dir unless both exist. The certificate is its own CA (give
``tls.crt`` as the ``caBundle`` of the webhook configuration), ECDSA P-256, valid one year, for
the given DNS names and IP addresses. The key file is written 0600.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from collections.abc import Sequence
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

VALIDITY = datetime.timedelta(days=365)


def ensure_self_signed(
    cert_file: Path, key_file: Path, hosts: Sequence[str], *, now: datetime.datetime | None = None
) -> bool:
    """Write a self-signed pair for ``hosts`` unless both files exist; True when written."""
    if cert_file.exists() and key_file.exists():
        return False
    cert_pem, key_pem = self_signed(hosts, now=now)
    cert_file.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(key_pem)
    cert_file.write_bytes(cert_pem)
    return True


def self_signed(hosts: Sequence[str], *, now: datetime.datetime | None = None) -> tuple[bytes, bytes]:
    """(certificate PEM, private key PEM) of a new self-signed serving certificate for ``hosts``."""
    if not hosts:
        raise ValueError("a serving certificate needs at least one host")
    key = ec.generate_private_key(ec.SECP256R1())
    start = (now or datetime.datetime.now(datetime.UTC)) - datetime.timedelta(minutes=5)
    names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hosts[0])])
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + VALIDITY)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem
