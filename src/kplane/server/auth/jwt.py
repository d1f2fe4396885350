"""RS256 JSON Web Tokens with the service-account signing key: sign, verify, and the key's JWK.

The key is an RSA key kept in the data directory (``pki/sa.key``, PKCS#1 PEM, mode 0600), made on
the first start with ``cryptography`` and read afterwards by a few lines of DER parsing, so a
restart does not import ``cryptography`` (start-up budget). Signing and verifying are PKCS#1 v1.5
over SHA-256 done with Python's ``pow`` (CRT for signing), which is all RS256 is; verification is a
public-exponent ``pow``, tens of microseconds. The ``kid`` is upstream's: the unpadded base64url
SHA-256 of the public key's DER ``SubjectPublicKeyInfo``.

Nothing here interprets claims beyond decoding them: ``serviceaccounts`` does that.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

KEY_FILE = "sa.key"
MAX_TOKEN_BYTES = 16 * 1024  # a bearer token larger than this is not one we issued
# DigestInfo of SHA-256 (RFC 8017 §9.2 note 1), prefixed to the digest in an RS256 signature.
_SHA256_INFO = bytes.fromhex("3031300d060960864801650304020105000420")
_RSA_OID = bytes.fromhex("06092a864886f70d0101010500")  # rsaEncryption, NULL parameters


class InvalidToken(ValueError):
    """A token that is not a well-formed RS256 JWT signed by this key."""


@dataclass(frozen=True)
class SigningKey:
    """An RSA private key: modulus ``n``, exponents ``e`` and ``d``, primes and CRT values."""

    n: int
    e: int
    d: int
    p: int
    q: int
    dp: int
    dq: int
    qinv: int

    @property
    def size(self) -> int:
        return (self.n.bit_length() + 7) // 8

    @property
    def kid(self) -> str:
        return _b64(hashlib.sha256(public_key_der(self.n, self.e)).digest())

    def jwk(self) -> dict[str, str]:
        """The public key as upstream's ``/openid/v1/jwks`` lists it (same field order)."""
        return {
            "use": "sig",
            "kty": "RSA",
            "kid": self.kid,
            "alg": "RS256",
            "n": _b64(self.n.to_bytes(self.size, "big")),
            "e": _b64(self.e.to_bytes((self.e.bit_length() + 7) // 8, "big")),
        }

    def sign(self, claims: dict[str, Any]) -> str:
        """A compact JWS of ``claims`` (keys sorted, as Go's JSON of a map), header ``alg``, ``kid``."""
        header = _b64(orjson.dumps({"alg": "RS256", "kid": self.kid}))
        payload = _b64(orjson.dumps(claims, option=orjson.OPT_SORT_KEYS))
        signing_input = f"{header}.{payload}".encode()
        m = int.from_bytes(_encoded_digest(signing_input, self.size), "big")
        # CRT: two half-size exponentiations instead of one full-size one.
        s1, s2 = pow(m, self.dp, self.p), pow(m, self.dq, self.q)
        s = s2 + self.q * ((self.qinv * (s1 - s2)) % self.p)
        return f"{header}.{payload}.{_b64(s.to_bytes(self.size, 'big'))}"

    def verify(self, token: str) -> tuple[dict[str, Any], dict[str, Any]]:
        """``(header, claims)`` of ``token`` if its RS256 signature verifies; raises ``InvalidToken``.

        Only ``alg: RS256`` is accepted (``none`` and every other algorithm are refused), whatever
        the header says about keys."""
        header, claims, signing_input, signature = split(token)
        if header.get("alg") != "RS256":
            raise InvalidToken(f"unsupported signing algorithm {header.get('alg')!r}")
        if len(signature) != self.size:
            raise InvalidToken("signature has the wrong length")
        s = int.from_bytes(signature, "big")
        if s >= self.n:
            raise InvalidToken("signature out of range")
        em = pow(s, self.e, self.n).to_bytes(self.size, "big")
        if not hmac.compare_digest(em, _encoded_digest(signing_input, self.size)):
            raise InvalidToken("invalid signature")
        return header, claims


def split(token: str) -> tuple[dict[str, Any], dict[str, Any], bytes, bytes]:
    """``(header, claims, signing input, signature)`` of a compact JWS, unverified."""
    if len(token) > MAX_TOKEN_BYTES or token.count(".") != 2:
        raise InvalidToken("not a compact JWS")
    h, p, s = token.split(".")
    try:
        header = orjson.loads(_unb64(h))
        claims = orjson.loads(_unb64(p))
        signature = _unb64(s)
    except (ValueError, orjson.JSONDecodeError) as e:
        raise InvalidToken("malformed token") from e
    if not isinstance(header, dict) or not isinstance(claims, dict):
        raise InvalidToken("malformed token")
    return header, claims, f"{h}.{p}".encode(), signature


def ensure_key(pki_dir: Path) -> SigningKey:
    """The signing key in ``pki_dir``, generated (2048-bit RSA, file 0600) on first use."""
    path = pki_dir / KEY_FILE
    try:
        pem = path.read_bytes()
    except FileNotFoundError:
        pem = _generate()
        tmp = path.with_name(f".{KEY_FILE}.{os.getpid()}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, pem)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    return load_pem(pem)


def _generate() -> bytes:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )


def load_pem(pem: bytes) -> SigningKey:
    """A PKCS#1 ``RSA PRIVATE KEY`` PEM; raises ``InvalidToken`` on anything else."""
    text = pem.decode("ascii", "replace")
    begin, end = "-----BEGIN RSA PRIVATE KEY-----", "-----END RSA PRIVATE KEY-----"
    if begin not in text or end not in text:
        raise InvalidToken("not a PKCS#1 RSA private key")
    der = base64.b64decode("".join(text.split(begin, 1)[1].split(end, 1)[0].split()))
    body, _ = _tlv(der, 0, 0x30)
    values: list[int] = []
    pos = 0
    while pos < len(body):
        value, pos = _tlv(body, pos, 0x02)
        values.append(int.from_bytes(value, "big"))
    if len(values) < 9:
        raise InvalidToken("truncated RSA private key")
    _version, n, e, d, p, q, dp, dq, qinv = values[:9]
    return SigningKey(n, e, d, p, q, dp, dq, qinv)


def public_key_der(n: int, e: int) -> bytes:
    """DER ``SubjectPublicKeyInfo`` of an RSA public key (what Go's ``MarshalPKIXPublicKey`` writes)."""
    rsa_key = _der(0x30, _der_int(n) + _der_int(e))
    return _der(0x30, _der(0x30, _RSA_OID) + _der(0x03, b"\x00" + rsa_key))


def _encoded_digest(data: bytes, size: int) -> bytes:
    t = _SHA256_INFO + hashlib.sha256(data).digest()
    return b"\x00\x01" + b"\xff" * (size - len(t) - 3) + b"\x00" + t


def _tlv(der: bytes, pos: int, tag: int) -> tuple[bytes, int]:
    if pos + 2 > len(der) or der[pos] != tag:
        raise InvalidToken("malformed DER")
    length = der[pos + 1]
    pos += 2
    if length & 0x80:
        count = length & 0x7F
        length = int.from_bytes(der[pos : pos + count], "big")
        pos += count
    if pos + length > len(der):
        raise InvalidToken("malformed DER")
    return der[pos : pos + length], pos + length


def _der(tag: int, body: bytes) -> bytes:
    n = len(body)
    if n < 0x80:
        return bytes([tag, n]) + body
    size = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([tag, 0x80 | len(size)]) + size + body


def _der_int(v: int) -> bytes:
    raw = v.to_bytes((v.bit_length() + 8) // 8, "big")  # room for a sign bit
    return _der(0x02, raw)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    if not text or any(c in text for c in "=+/"):
        raise ValueError("not unpadded base64url")
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
