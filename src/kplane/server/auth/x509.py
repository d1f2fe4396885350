"""Client certificates: asked for in the handshake, verified by the authenticator (upstream's split).

kube-apiserver's TLS layer uses Go's ``tls.RequestClientCert``: it asks for a client certificate and
accepts whatever is presented; its x509 authenticator then verifies the chain against the client CA
at the request's time and wants the ``clientAuth`` usage. A certificate from another CA, expired or
not yet valid therefore gets an HTTP 401 ``Unauthorized`` Status (kubectl: ``error: You must be
logged in to the server (Unauthorized)``), never a TLS alert.

Python's ``ssl`` verifies a requested certificate during the handshake and has no switch to ask
without verifying. ``request_client_certificates`` installs, through ``ctypes``, OpenSSL's
certificate-verification callback (``SSL_CTX_set_cert_verify_callback``) on the context: the
callback accepts the presented chain, so the handshake completes and the certificate is readable
with ``getpeercert(binary_form=True)``. The context's ``SSL_CTX`` pointer is read from the Python
object and checked against two values Python itself reports (verify mode and options) before
anything is installed; if the check fails (another Python build), nothing is touched and the
context keeps verifying in the handshake (the old behaviour: a foreign certificate gets a TLS alert).

``ClientCertificates.verify`` does the authenticator's part in Python with ``cryptography``
(imported on the first certificate, not at start): the leaf must be signed directly by the CA
(kplane issues no intermediates; Python 3.11 cannot read the chain a client sends), both must be
valid at the clock's time, and the leaf's extended key usage, when present, must allow
``clientAuth``. The filter calls it once per connection (a connection's certificate cannot change).
"""

from __future__ import annotations

import ctypes
import datetime
import logging
import ssl
from typing import TYPE_CHECKING, Any

from kplane._util.clock import Clock
from kplane.server.auth import authn

if TYPE_CHECKING:
    from cryptography import x509 as cx509

log = logging.getLogger(__name__)

_SSL_VERIFY_PEER = 0x01
# OpenSSL's callback type: int (*)(X509_STORE_CTX *, void *arg); 1 accepts the chain.
_CERT_VERIFY_CB = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)


class InvalidCertificate(ValueError):
    """A presented client certificate that does not verify (upstream's x509 authenticator error)."""


def _accept_chain(store_ctx: int | None, arg: int | None) -> int:
    return 1


_accept = _CERT_VERIFY_CB(_accept_chain)  # kept referenced for the process's life: OpenSSL holds it


def _libssl() -> Any:
    import _ssl  # the extension module links libssl: its handle resolves libssl's symbols

    lib = ctypes.CDLL(_ssl.__file__)
    lib.SSL_CTX_get_verify_mode.restype = ctypes.c_int
    lib.SSL_CTX_get_verify_mode.argtypes = [ctypes.c_void_p]
    lib.SSL_CTX_get_options.restype = ctypes.c_uint64
    lib.SSL_CTX_get_options.argtypes = [ctypes.c_void_p]
    lib.SSL_CTX_set_cert_verify_callback.restype = None
    lib.SSL_CTX_set_cert_verify_callback.argtypes = [ctypes.c_void_p, _CERT_VERIFY_CB, ctypes.c_void_p]
    return lib


def _ssl_ctx_pointer(ctx: ssl.SSLContext, lib: Any) -> int | None:
    """The ``SSL_CTX *`` behind ``ctx`` (the first field after the object header), or None when
    what is found there does not answer as ``ctx`` does."""
    ptr = ctypes.c_void_p.from_address(id(ctx) + object.__basicsize__).value
    if not ptr:
        return None
    saved = ctx.verify_mode
    try:
        ctx.verify_mode = ssl.CERT_REQUIRED
        required = lib.SSL_CTX_get_verify_mode(ptr)
        ctx.verify_mode = ssl.CERT_OPTIONAL
        optional = lib.SSL_CTX_get_verify_mode(ptr)
    finally:
        ctx.verify_mode = saved
    ok = (
        required == 0x03 and optional == _SSL_VERIFY_PEER and lib.SSL_CTX_get_options(ptr) == int(ctx.options)
    )
    return int(ptr) if ok else None


def request_client_certificates(ctx: ssl.SSLContext) -> bool:
    """Make the server context ``ctx`` ask for an optional client certificate and accept any
    presented one in the handshake (Go's ``tls.RequestClientCert``). True when installed; False
    (logged) when it could not be, and ``ctx`` still verifies in the handshake."""
    ctx.verify_mode = ssl.CERT_OPTIONAL
    try:
        lib = _libssl()
        ptr = _ssl_ctx_pointer(ctx, lib)
    except (OSError, AttributeError, ValueError):
        ptr = None
    if ptr is None:
        log.warning("cannot defer client certificate verification; foreign certificates get a TLS alert")
        return False
    lib.SSL_CTX_set_cert_verify_callback(ptr, _accept, None)
    return True


class ClientCertificates:
    """Verifies client certificates (DER) against one CA at ``clock``'s time; see the module docstring."""

    def __init__(self, ca_pem: bytes, clock: Clock) -> None:
        self._ca_pem = ca_pem
        self._clock = clock
        self._ca: cx509.Certificate | None = None

    def verify(self, der: bytes) -> authn.UserInfo | None:
        """The user ``der`` names (CN → name, each O → a group, first occurrence kept), or None
        when it has no CN (it then identifies nobody, as upstream). Raises ``InvalidCertificate``
        when it cannot be parsed, is not signed by the CA, is outside its or the CA's validity
        window, or does not allow ``clientAuth``."""
        from cryptography import x509 as cx509
        from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

        if self._ca is None:
            self._ca = cx509.load_pem_x509_certificate(self._ca_pem)
        ca = self._ca
        try:
            leaf = cx509.load_der_x509_certificate(der)
            leaf.verify_directly_issued_by(ca)
        except Exception as e:  # any parse or signature failure: cryptography raises several types
            raise InvalidCertificate(f"x509: certificate signed by unknown authority ({e})") from None
        now = self._clock.now().astimezone(datetime.UTC)
        for cert in (leaf, ca):
            if now < cert.not_valid_before_utc or now > cert.not_valid_after_utc:
                raise InvalidCertificate("x509: certificate has expired or is not yet valid")
        try:
            usages = leaf.extensions.get_extension_for_class(cx509.ExtendedKeyUsage).value
        except cx509.ExtensionNotFound:
            usages = None
        except ValueError as e:  # a malformed extension
            raise InvalidCertificate(f"x509: {e}") from None
        allowed = (ExtendedKeyUsageOID.CLIENT_AUTH, ExtendedKeyUsageOID.ANY_EXTENDED_KEY_USAGE)
        if usages is not None and not any(u in allowed for u in usages):
            raise InvalidCertificate("x509: certificate specifies an incompatible key usage")
        name = ""
        groups: list[str] = []
        for attr in leaf.subject:
            value = attr.value if isinstance(attr.value, str) else ""
            if attr.oid == NameOID.COMMON_NAME:
                name = value
            elif attr.oid == NameOID.ORGANIZATION_NAME and value and value not in groups:
                groups.append(value)
        return authn.UserInfo(name=name, groups=tuple(groups)) if name else None
