"""Upstream's ``EncryptionConfiguration`` (``apiserver.config.k8s.io/v1``) and its providers.

Each rule names resources (``secrets``, ``deployments.apps``, ``*.apps``, ``*.`` for every core
resource, ``*.*`` for all) and an ordered list of providers. The first provider of the first rule
that matches a resource encrypts its writes; every provider of that rule can decrypt reads, chosen
by the stored value's prefix ``k8s:enc:<provider>:v1:<key name>:`` (``identity`` has none), as
upstream's prefix transformers do. A key's ``secret`` is base64: 16, 24 or 32 bytes for ``aescbc``
and ``aesgcm``, 32 for ``secretbox``.

Ciphertexts are laid out as upstream writes them: ``aescbc`` a random 16-byte IV then the PKCS#7
padded ciphertext; ``aesgcm`` a random 12-byte nonce then the sealed data, authenticated with the
storage key (so a value copied to another key does not decrypt); ``secretbox`` (XSalsa20-Poly1305,
PyNaCl) a random 24-byte nonce then the box.
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

IDENTITY = "identity"
_KINDS = ("aescbc", "aesgcm", "secretbox")


class InvalidEncryptionConfig(ValueError):
    """The configuration file cannot be used; the message says why."""


class DecryptError(ValueError):
    """A stored value that no configured provider can read."""


@dataclass(frozen=True)
class Provider:
    """One key of one provider: ``prefix`` marks what it wrote; ``seal``/``open`` take the storage key
    as associated data (only ``aesgcm`` uses it)."""

    prefix: bytes
    seal: Callable[[bytes, bytes], bytes]
    open: Callable[[bytes, bytes], bytes]


@dataclass(frozen=True)
class Rule:
    """Resources as ``(group, resource)`` patterns (``*`` for any) and their providers, writer first;
    ``writer`` None means identity (stored in clear)."""

    resources: tuple[tuple[str, str], ...]
    providers: tuple[Provider | None, ...]

    def matches(self, group: str, resource: str) -> bool:
        return any(g in ("*", group) and r in ("*", resource) for g, r in self.resources)


def load(path: Path) -> list[Rule]:
    """Rules of the file at ``path``; raises ``InvalidEncryptionConfig`` or ``OSError``."""
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as e:
        raise InvalidEncryptionConfig(f"{path}: not YAML: {e}") from e
    return parse(doc, source=str(path))


def parse(doc: Any, *, source: str = "<encryption config>") -> list[Rule]:
    """Rules of a decoded configuration document; raises ``InvalidEncryptionConfig``."""
    if not isinstance(doc, dict) or doc.get("kind") != "EncryptionConfiguration":
        raise InvalidEncryptionConfig(f"{source}: not an EncryptionConfiguration")
    if doc.get("apiVersion") not in ("apiserver.config.k8s.io/v1", "apiserver.config.k8s.io/v1beta1"):
        raise InvalidEncryptionConfig(f"{source}: unsupported apiVersion {doc.get('apiVersion')!r}")
    rules: list[Rule] = []
    for i, entry in enumerate(doc.get("resources") or ()):
        where = f"{source}: resources[{i}]"
        if not isinstance(entry, dict):
            raise InvalidEncryptionConfig(f"{where}: must be an object")
        names = entry.get("resources") or []
        providers = entry.get("providers") or []
        if not names or not isinstance(names, list):
            raise InvalidEncryptionConfig(f"{where}.resources: at least one resource is required")
        if not providers or not isinstance(providers, list):
            raise InvalidEncryptionConfig(f"{where}.providers: at least one provider is required")
        patterns = tuple(_pattern(str(n)) for n in names)
        built: list[Provider | None] = []
        for j, p in enumerate(providers):
            built.extend(_providers(p, f"{where}.providers[{j}]"))
        rules.append(Rule(patterns, tuple(built)))
    return rules


def _pattern(name: str) -> tuple[str, str]:
    resource, _, group = name.partition(".")
    return group, resource


def _providers(spec: Any, where: str) -> Sequence[Provider | None]:
    if not isinstance(spec, dict) or len(spec) != 1:
        raise InvalidEncryptionConfig(f"{where}: exactly one provider type is required")
    kind, body = next(iter(spec.items()))
    if kind == IDENTITY:
        return [None]
    if kind not in _KINDS:
        raise InvalidEncryptionConfig(
            f"{where}: unsupported provider {kind!r} (aescbc, aesgcm, secretbox, identity)"
        )
    keys = (body or {}).get("keys") if isinstance(body, dict) else None
    if not keys or not isinstance(keys, list):
        raise InvalidEncryptionConfig(f"{where}.{kind}.keys: at least one key is required")
    out: list[Provider | None] = []
    for k, key in enumerate(keys):
        name = key.get("name") if isinstance(key, dict) else None
        secret = key.get("secret") if isinstance(key, dict) else None
        if not isinstance(name, str) or not name or ":" in name:
            raise InvalidEncryptionConfig(f"{where}.{kind}.keys[{k}].name: a name without ':' is required")
        try:
            raw = base64.b64decode(str(secret), validate=True)
        except (binascii.Error, ValueError) as e:
            raise InvalidEncryptionConfig(f"{where}.{kind}.keys[{k}].secret: not base64") from e
        sizes = (32,) if kind == "secretbox" else (16, 24, 32)
        if len(raw) not in sizes:
            raise InvalidEncryptionConfig(
                f"{where}.{kind}.keys[{k}].secret: {len(raw)} bytes, need {' or '.join(map(str, sizes))}"
            )
        out.append(_make(kind, name, raw))
    return out


def _make(kind: str, name: str, key: bytes) -> Provider:
    prefix = f"k8s:enc:{kind}:v1:{name}:".encode()
    if kind == "aescbc":
        return Provider(prefix, *_aescbc(key))
    if kind == "aesgcm":
        return Provider(prefix, *_aesgcm(key))
    return Provider(prefix, *_secretbox(key))


def _aescbc(key: bytes) -> tuple[Callable[[bytes, bytes], bytes], Callable[[bytes, bytes], bytes]]:
    from cryptography.hazmat.primitives import padding
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    def seal(data: bytes, _ad: bytes) -> bytes:
        iv = os.urandom(16)
        padder = padding.PKCS7(128).padder()
        enc = Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor()
        return iv + enc.update(padder.update(data) + padder.finalize()) + enc.finalize()

    def open_(data: bytes, _ad: bytes) -> bytes:
        if len(data) < 32 or len(data) % 16:
            raise DecryptError("the stored data was shorter than the required size")
        dec = Cipher(algorithms.AES(key), modes.CBC(data[:16])).decryptor()
        unpadder = padding.PKCS7(128).unpadder()
        try:
            return unpadder.update(dec.update(data[16:]) + dec.finalize()) + unpadder.finalize()
        except ValueError as e:
            raise DecryptError("invalid PKCS7 data (empty or not padded)") from e

    return seal, open_


def _aesgcm(key: bytes) -> tuple[Callable[[bytes, bytes], bytes], Callable[[bytes, bytes], bytes]]:
    from cryptography.exceptions import InvalidTag
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    aead = AESGCM(key)

    def seal(data: bytes, ad: bytes) -> bytes:
        nonce = os.urandom(12)
        return nonce + aead.encrypt(nonce, data, ad)

    def open_(data: bytes, ad: bytes) -> bytes:
        try:
            return aead.decrypt(data[:12], data[12:], ad)
        except (InvalidTag, ValueError) as e:
            raise DecryptError("cipher: message authentication failed") from e

    return seal, open_


def _secretbox(key: bytes) -> tuple[Callable[[bytes, bytes], bytes], Callable[[bytes, bytes], bytes]]:
    import nacl.exceptions
    import nacl.secret

    box = nacl.secret.SecretBox(key)

    def seal(data: bytes, _ad: bytes) -> bytes:
        return bytes(box.encrypt(data))

    def open_(data: bytes, _ad: bytes) -> bytes:
        try:
            return bytes(box.decrypt(data))
        except (nacl.exceptions.CryptoError, ValueError) as e:
            raise DecryptError("output array was not large enough for encryption") from e

    return seal, open_
