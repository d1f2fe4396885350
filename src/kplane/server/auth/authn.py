"""Authentication: who is making this request.

Two credentials are understood, checked in upstream's order (client certificate first, then bearer
token; the first that identifies the caller wins):

* a client certificate, requested but not verified by the TLS layer (``x509``), verified here
  by a ``CertificateVerifier`` against the server's CA: the subject's common name is the user name,
  each organization a group; one that does not verify is an error (401), not "no credentials";
* ``Authorization: Bearer <token>``, looked up in a ``TokenTable``: the admin token from the PKI,
  plus any users from a static token file in upstream's CSV format (``token,user,uid,"g1,g2"``);
  else, a JWT, given to the ``BearerAuthenticator`` for ServiceAccount tokens (``serviceaccounts``).

Every authenticated user also belongs to ``system:authenticated``. A request with neither is
anonymous; the HTTP layer lets anonymous requests reach only ``ANONYMOUS_PATHS`` and answers 401
otherwise.
"""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import hmac
import io
import types
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Protocol

from aiohttp import web

from kplane.server.auth import certs

AUTHENTICATED_GROUP = "system:authenticated"
UNAUTHENTICATED_GROUP = "system:unauthenticated"
# What upstream's system:public-info-viewer role grants to everyone, signed in or not.
ANONYMOUS_PATHS: frozenset[str] = frozenset({"/version", "/version/", "/healthz", "/livez", "/readyz"})


@dataclasses.dataclass(frozen=True)
class UserInfo:
    """An authenticated user: name, optional uid, groups (in order, no duplicates), extra attributes."""

    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: Mapping[str, tuple[str, ...]] = dataclasses.field(
        default_factory=lambda: types.MappingProxyType({}), hash=False
    )


ANONYMOUS = UserInfo(name="system:anonymous", groups=(UNAUTHENTICATED_GROUP,))
"""Who a request without credentials is (only on ``ANONYMOUS_PATHS``)."""


def user_info(user: UserInfo) -> dict[str, object]:
    """``user`` in the API's ``UserInfo`` shape (reviews, audit events): empty fields left out."""
    out: dict[str, object] = {"username": user.name}
    if user.uid:
        out["uid"] = user.uid
    if user.groups:
        out["groups"] = list(user.groups)
    if user.extra:
        out["extra"] = {k: list(v) for k, v in user.extra.items()}
    return out


USER_KEY: web.RequestKey[UserInfo] = web.RequestKey("user", UserInfo)
"""Where the authentication filter stores the authenticated user on a request."""


class RequestAuthenticator(Protocol):
    """What the HTTP layer needs from authentication. Neither method blocks or does I/O."""

    def authenticate_certificate(self, der: bytes, decoded: Mapping[str, object]) -> UserInfo | None:
        """The user a presented client certificate (DER, and as ``getpeercert()`` decodes it)
        names, or None when it names nobody (no CN). Raises ``ValueError`` when it does not verify
        (the request then gets 401 unless a bearer token authenticates it, as upstream's union
        authenticator)."""
        ...

    def authenticate(self, authorization: str | None) -> UserInfo | None:
        """The user behind the raw ``Authorization`` header, or None when it does not verify."""
        ...


class CertificateVerifier(Protocol):
    """Verifies a client certificate (``x509.ClientCertificates``)."""

    def verify(self, der: bytes, decoded: Mapping[str, object]) -> UserInfo | None:
        """The user the certificate names, None without a CN; raises ``ValueError`` when it does
        not verify."""
        ...


class BearerAuthenticator(Protocol):
    """A source of bearer-token users besides the static table (ServiceAccount JWTs)."""

    def authenticate(self, token: str) -> UserInfo | None:
        """The user behind ``token``, or None. Must not block or do I/O."""
        ...


class InvalidTokenFile(ValueError):
    """A static token file that cannot be parsed; the message names the file and line."""


class TokenTable:
    """Bearer tokens and their users.

    Lookup is O(1): tokens are keyed by their SHA-256, and the stored token is then compared with
    ``hmac.compare_digest``, so the time taken does not reveal how much of a guess was right.
    """

    def __init__(self, entries: Iterable[tuple[str, UserInfo]] = ()) -> None:
        self._by_hash: dict[bytes, tuple[bytes, UserInfo]] = {}
        for token, user in entries:
            self.add(token, user)

    def add(self, token: str, user: UserInfo) -> None:
        """Map ``token`` (non-empty) to ``user``; a token added again now maps to the new user."""
        if not token:
            raise ValueError("empty bearer token")
        raw = token.encode()
        self._by_hash[hashlib.sha256(raw).digest()] = (raw, user)

    def lookup(self, token: str) -> UserInfo | None:
        """The user for ``token``, or None."""
        raw = token.encode()
        entry = self._by_hash.get(hashlib.sha256(raw).digest())
        if entry is None or not hmac.compare_digest(entry[0], raw):
            return None
        return entry[1]

    def __len__(self) -> int:
        return len(self._by_hash)


class Authenticator:
    """Client certificate, then bearer token (see the module docstring). Implements ``RequestAuthenticator``.

    Upstream answers 401 to a request with a bad bearer token even on a public path; ``authenticate``
    returns None for both "no credentials" and "bad credentials", so an HTTP layer that wants that
    behaviour checks whether an ``Authorization`` header was sent.
    """

    def __init__(
        self,
        tokens: TokenTable,
        bearer: BearerAuthenticator | None = None,
        certificates: CertificateVerifier | None = None,
    ) -> None:
        self._tokens = tokens
        self.bearer = bearer
        self._certificates = certificates
        # A credential's user with system:authenticated, built once: later layers key memos on the
        # user's identity (authorization attributes, a write's requester), so a token must not
        # give a new UserInfo on every request. Bounded: users come from the table or the bearer
        # authenticator's own bounded cache.
        self._authenticated: dict[int, tuple[UserInfo, UserInfo]] = {}

    @classmethod
    def from_pki(
        cls,
        pki: certs.PKI,
        *,
        token_file: Path | None = None,
        certificates: CertificateVerifier | None = None,
    ) -> Authenticator:
        """The admin token of ``pki`` (user ``kplane-admin`` in ``system:masters``), plus ``token_file``;
        client certificates verified by ``certificates`` (none accepted without it)."""
        admin = UserInfo(name=certs.ADMIN_USER, groups=(certs.ADMIN_GROUP,))
        table = TokenTable([(pki.admin_token(), admin)])
        if token_file is not None:
            for token, user in load_token_file(token_file):
                table.add(token, user)
        return cls(table, certificates=certificates)

    def authenticate_certificate(self, der: bytes, decoded: Mapping[str, object]) -> UserInfo | None:
        if self._certificates is None:
            raise ValueError("client certificates are not accepted")
        user = self._certificates.verify(der, decoded)
        return None if user is None else with_group(user, AUTHENTICATED_GROUP)

    def authenticate(self, authorization: str | None) -> UserInfo | None:
        token = bearer_token(authorization) if authorization else None
        if not token:
            return None
        user = self._tokens.lookup(token)
        if user is None and self.bearer is not None and token.count(".") == 2:
            user = self.bearer.authenticate(token)
        if user is None:
            return None
        hit = self._authenticated.get(id(user))
        if hit is not None and hit[0] is user:
            return hit[1]
        grouped = with_group(user, AUTHENTICATED_GROUP)
        if len(self._authenticated) >= _AUTHENTICATED_BOUND:
            self._authenticated.clear()
        self._authenticated[id(user)] = (user, grouped)  # holds ``user``: its id is not reused meanwhile
        return grouped


_AUTHENTICATED_BOUND = 4096


def bearer_token(authorization: str) -> str | None:
    """The token in ``Bearer <token>`` (scheme case-insensitive), or None for any other header."""
    scheme, _, token = authorization.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token or any(c.isspace() for c in token):
        return None
    return token


def with_group(user: UserInfo, group: str) -> UserInfo:
    """``user`` with ``group`` appended unless already present."""
    if group in user.groups:
        return user
    return dataclasses.replace(user, groups=(*user.groups, group))


def load_token_file(path: Path) -> list[tuple[str, UserInfo]]:
    """Read a static token file; see ``parse_token_file``. Raises ``InvalidTokenFile``, ``OSError``."""
    return parse_token_file(path.read_text(encoding="utf-8-sig"), source=str(path))


def parse_token_file(text: str, *, source: str = "<token file>") -> list[tuple[str, UserInfo]]:
    """Parse upstream's static token CSV: ``token,user,uid[,"group1,group2,..."]`` per line.

    Blank lines are skipped; extra columns are ignored; spaces after commas and around group names
    are dropped, as are empty group names. A line with fewer than three columns, or an empty token
    or user, raises ``InvalidTokenFile``. Entries come back in file order (a later duplicate token
    overrides an earlier one when added to a ``TokenTable``).
    """
    out: list[tuple[str, UserInfo]] = []
    reader = csv.reader(io.StringIO(text.removeprefix("\ufeff")), skipinitialspace=True, strict=True)
    try:
        for record in reader:
            if not record or all(not f.strip() for f in record):
                continue
            line = reader.line_num
            if len(record) < 3:
                raise InvalidTokenFile(
                    f"{source}:{line}: need at least 3 columns (token, user name, user uid),"
                    f" found {len(record)}"
                )
            token, name, uid = (f.strip() for f in record[:3])
            if not token or not name:
                raise InvalidTokenFile(f"{source}:{line}: empty token or user name")
            groups: list[str] = []
            if len(record) > 3:
                for g in record[3].split(","):
                    if g.strip() and g.strip() not in groups:
                        groups.append(g.strip())
            out.append((token, UserInfo(name=name, uid=uid, groups=tuple(groups))))
    except csv.Error as e:
        raise InvalidTokenFile(f"{source}:{reader.line_num}: {e}") from e
    return out
