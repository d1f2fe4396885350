"""Client certificates: verified during the handshake but refused by the authenticator (upstream's split).

kube-apiserver's TLS layer uses Go's ``tls.RequestClientCert``: it asks for a client certificate and
accepts whatever is presented; its x509 authenticator then verifies the chain against the client CA
at the request's time and wants the ``clientAuth`` usage. A certificate from another CA, expired or
not yet valid therefore gets an HTTP 401 ``Unauthorized`` Status (kubectl: ``error: You must be
logged in to the server (Unauthorized)``), never a TLS alert.

Python's ``ssl`` verifies a requested certificate during the handshake and ends the handshake when
it fails; it has no switch to ask without that. ``ClientCertificates.install`` sets, through
``ctypes``, OpenSSL's certificate-verification callback (``SSL_CTX_set_cert_verify_callback``) on
the server context. The callback runs OpenSSL's own verification (``X509_verify_cert``: the chain
the client sent up to the CA loaded in the context, the ``ssl_client`` purpose, so the
``clientAuth`` extended key usage) at the injected clock's time (``X509_VERIFY_PARAM_set_time``),
records the outcome under the leaf's DER, and accepts the handshake whatever it was. The
authentication filter asks ``verify`` once per connection, which answers from that record: no
certificate parsing in Python, no ``cryptography`` import. The context's ``SSL_CTX`` pointer is read
from the Python object and checked against two values Python itself reports (verify mode and
options) before anything is installed; if the check fails (another Python build), nothing is
touched and the context keeps verifying in the handshake (a foreign certificate then gets a TLS
alert), and ``verify`` accepts what that handshake accepted.
"""

from __future__ import annotations

import collections
import ctypes
import logging
import ssl
from collections.abc import Mapping
from typing import Any

from kplane._util.clock import Clock
from kplane.server.auth import authn

log = logging.getLogger(__name__)

_SSL_VERIFY_PEER = 0x01
_VERDICTS = 4096  # handshakes remembered (a connection asks right after its handshake)
# OpenSSL's callback type: int (*)(X509_STORE_CTX *, void *arg); 1 accepts the chain.
_CERT_VERIFY_CB = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)


class InvalidCertificate(ValueError):
    """A presented client certificate that does not verify (upstream's x509 authenticator error)."""


def _libssl() -> Any:
    import _ssl  # the extension module links libssl and libcrypto: its handle resolves their symbols

    lib = ctypes.CDLL(_ssl.__file__)
    ptr, num = ctypes.c_void_p, ctypes.c_int
    for name, restype, argtypes in (
        ("SSL_CTX_get_verify_mode", num, [ptr]),
        ("SSL_CTX_get_options", ctypes.c_uint64, [ptr]),
        ("SSL_CTX_set_cert_verify_callback", None, [ptr, _CERT_VERIFY_CB, ptr]),
        ("X509_verify_cert", num, [ptr]),
        ("X509_STORE_CTX_get_error", num, [ptr]),
        ("X509_STORE_CTX_get0_param", ptr, [ptr]),
        ("X509_STORE_CTX_get0_cert", ptr, [ptr]),
        ("X509_VERIFY_PARAM_set_time", None, [ptr, ctypes.c_int64]),
        ("X509_verify_cert_error_string", ctypes.c_char_p, [ctypes.c_long]),
        ("i2d_X509", num, [ptr, ctypes.POINTER(ptr)]),
    ):
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = restype, argtypes
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
    same_options = lib.SSL_CTX_get_options(ptr) == int(ctx.options)
    return int(ptr) if required == 0x03 and optional == _SSL_VERIFY_PEER and same_options else None


def _der(lib: Any, cert: int) -> bytes:
    size = lib.i2d_X509(cert, None)
    if size <= 0:
        return b""
    buf = ctypes.create_string_buffer(size)
    out = ctypes.c_void_p(ctypes.addressof(buf))
    lib.i2d_X509(cert, ctypes.byref(out))
    return buf.raw


def user_from_cert(peercert: Mapping[str, object]) -> authn.UserInfo | None:
    """CN → name, each O → a group (subject order, first occurrence kept) from the decoded
    certificate ``ssl.SSLObject.getpeercert()`` returns; None without a CN. With several CNs the
    last wins, as with Go's ``pkix.Name``."""
    name = ""
    groups: list[str] = []
    subject = peercert.get("subject", ())
    for rdn in subject if isinstance(subject, tuple) else ():
        for attr in rdn if isinstance(rdn, tuple) else ():
            if not (isinstance(attr, tuple) and len(attr) == 2):
                continue
            key, value = attr
            if key == "commonName" and isinstance(value, str):
                name = value
            elif key == "organizationName" and isinstance(value, str) and value and value not in groups:
                groups.append(value)
    return authn.UserInfo(name=name, groups=tuple(groups)) if name else None


class ClientCertificates:
    """Client certificates of the server's TLS contexts; see the module docstring. Implements
    ``authn.CertificateVerifier``."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._lib: Any = None
        self._callback: Any = None
        self.deferred = False
        """True once ``install`` deferred verification on some context."""
        # leaf DER -> OpenSSL's error code for the latest handshake presenting it (0: verified)
        self._verdicts: collections.OrderedDict[bytes, int] = collections.OrderedDict()

    def install(self, ctx: ssl.SSLContext) -> bool:
        """Make the server context ``ctx`` ask for an optional client certificate and let its
        handshake complete whatever the verification's outcome, which is kept for ``verify``.
        ``ctx`` must trust the client CA. False (logged) when the hook could not be installed:
        ``ctx`` then verifies in the handshake."""
        ctx.verify_mode = ssl.CERT_OPTIONAL
        try:
            lib = self._lib or _libssl()
            ptr = _ssl_ctx_pointer(ctx, lib)
        except (OSError, AttributeError, ValueError):
            ptr = None
        if ptr is None:
            log.warning("cannot defer client certificate verification; foreign certificates get a TLS alert")
            return False
        self._lib = lib
        if self._callback is None:
            self._callback = _CERT_VERIFY_CB(self._verify_chain)  # referenced here: OpenSSL holds it
        lib.SSL_CTX_set_cert_verify_callback(ptr, self._callback, None)
        self.deferred = True
        return True

    def _verify_chain(self, store_ctx: int | None, arg: int | None) -> int:
        """OpenSSL's callback (in the handshake): verify, remember, accept."""
        lib = self._lib
        try:
            lib.X509_VERIFY_PARAM_set_time(
                lib.X509_STORE_CTX_get0_param(store_ctx), int(self._clock.now().timestamp())
            )
            ok = lib.X509_verify_cert(store_ctx)
            error = 0 if ok == 1 else (lib.X509_STORE_CTX_get_error(store_ctx) or -1)
            der = _der(lib, lib.X509_STORE_CTX_get0_cert(store_ctx))
            if der:
                self._verdicts[der] = error
                self._verdicts.move_to_end(der)
                while len(self._verdicts) > _VERDICTS:
                    self._verdicts.popitem(last=False)
        except Exception:  # never let an exception cross into OpenSSL
            log.exception("client certificate verification failed unexpectedly")
        return 1

    def verify(self, der: bytes, decoded: Mapping[str, object]) -> authn.UserInfo | None:
        """The user of the certificate a handshake just presented (``der``, and ``decoded`` as
        ``getpeercert()`` gives it), None when it has no CN (it then identifies nobody, as
        upstream). Raises ``InvalidCertificate`` when its handshake's verification failed (or is
        not known)."""
        if self.deferred:
            error = self._verdicts.get(der)
            if error is None:
                raise InvalidCertificate("x509: certificate not verified by this server")
            if error:
                reason = self._lib.X509_verify_cert_error_string(error) if error > 0 else b"unknown error"
                raise InvalidCertificate(f"x509: {reason.decode(errors='replace')}")
        return user_from_cert(decoded)
