"""ServiceAccount tokens: upstream's claims (``pkg/serviceaccount/claims.go``), issued and validated.

``Tokens.issue`` builds a bound token's claims (iss, sub, aud, exp, iat, nbf, jti and the private
``kubernetes.io`` claim naming the namespace, the ServiceAccount and the pod, secret or node it is
bound to) and signs them; ``Tokens.legacy`` the claims of a token Secret (issuer
``kubernetes/serviceaccount``, flat ``kubernetes.io/serviceaccount/*`` claims).

``Tokens.authenticate`` is the bearer-token authenticator. A token is verified (signature, issuer,
audience) once and remembered by its SHA-256 for ``CACHE_SECONDS``; every request then re-checks
only what can change: the time window (one minute of leeway, as go-jose) and that the
ServiceAccount and bound object still exist with the UIDs in the claims, through ``lookup``, a
synchronous read of the server's in-memory cache (no storage read per request). Any failure is
"not authenticated" (the HTTP layer answers 401); the reason is logged at debug level only.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import logging
import types
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kplane._util.clock import Clock
from kplane.server.auth import jwt
from kplane.server.auth.authn import AUTHENTICATED_GROUP, UserInfo

log = logging.getLogger("kplane.server.auth")

DEFAULT_ISSUER = "https://kubernetes.default.svc.cluster.local"
LEGACY_ISSUER = "kubernetes/serviceaccount"
LEEWAY = 60  # seconds; go-jose's DefaultLeeway
CACHE_SECONDS = 10.0
CACHE_ENTRIES = 4096
EXTENDED_SECONDS = 3607  # what the kubelet asks for; see ``issue``
ONE_YEAR = 365 * 24 * 3600
_LEGACY = "kubernetes.io/serviceaccount/"

Lookup = Callable[[str], Mapping[str, Any] | None]
"""The current object at a storage key, or None: a synchronous, in-memory read."""


def username(namespace: str, name: str) -> str:
    return f"system:serviceaccount:{namespace}:{name}"


def sa_key(namespace: str, name: str) -> str:
    return f"/registry/core/serviceaccounts/{namespace}/{name}"


def object_key(kind: str, namespace: str, name: str) -> str:
    """The storage key of a bound object (``Pod``, ``Secret`` namespaced; ``Node`` cluster-scoped)."""
    if kind == "Node":
        return f"/registry/core/nodes/{name}"
    return f"/registry/core/{kind.lower()}s/{namespace}/{name}"


@dataclass(frozen=True)
class Bound:
    """The object a token is bound to."""

    kind: str  # Pod, Secret or Node
    name: str
    uid: str
    node: tuple[str, str] | None = None  # a pod's node (name, uid) when known


@dataclass(frozen=True)
class _Verified:
    user: UserInfo
    not_before: float
    expires: float
    checks: tuple[tuple[str, str], ...]  # (storage key, uid) that must still hold
    secret_token: tuple[str, str] | None  # legacy: (secret key, base64 of the token)
    cached_at: float


class Tokens:
    """Issues and validates ServiceAccount tokens signed with ``key``."""

    def __init__(
        self,
        key: jwt.SigningKey,
        *,
        clock: Clock,
        issuer: str = DEFAULT_ISSUER,
        api_audiences: Sequence[str] = (),
        lookup: Lookup | None = None,
    ) -> None:
        self.key = key
        self.issuer = issuer
        self.api_audiences = tuple(api_audiences) or (issuer,)
        self.lookup: Lookup = lookup or (lambda _key: None)
        self._clock = clock
        self._cache: dict[bytes, _Verified] = {}

    # -- issuing -------------------------------------------------------------------------------

    def issue(
        self,
        namespace: str,
        sa: Mapping[str, Any],
        *,
        audiences: Sequence[str],
        seconds: int,
        bound: Bound | None = None,
        extend: bool = True,
    ) -> tuple[str, int, str]:
        """``(token, expiry (unix seconds, as the response reports it), jti)``.

        Upstream's safe-rollout extension: a pod-bound token for API audiences asking exactly 3607
        seconds gets a one-year ``exp`` and a ``warnafter`` at 3607 seconds (the response still
        says 3607 seconds)."""
        now = int(self._clock.now().timestamp())
        meta = sa.get("metadata") or {}
        jti = str(uuid.uuid4())
        private: dict[str, Any] = {
            "namespace": namespace,
            "serviceaccount": {"name": meta.get("name", ""), "uid": meta.get("uid", "")},
        }
        exp = now + seconds
        if bound is not None:
            ref = {"name": bound.name, "uid": bound.uid}
            if bound.kind == "Pod":
                private["pod"] = ref
                if bound.node is not None:
                    private["node"] = {"name": bound.node[0], "uid": bound.node[1]}
            else:
                private[bound.kind.lower()] = ref
            if (
                extend
                and bound.kind == "Pod"
                and seconds == EXTENDED_SECONDS
                and set(audiences) <= set(self.api_audiences)
            ):
                private["warnafter"] = exp
                exp = now + ONE_YEAR
        claims = {
            "aud": list(audiences),
            "exp": exp,
            "iat": now,
            "iss": self.issuer,
            "jti": jti,
            "kubernetes.io": private,
            "nbf": now,
            "sub": username(namespace, str(meta.get("name", ""))),
        }
        return self.key.sign(claims), now + seconds, jti

    def legacy(self, namespace: str, sa: Mapping[str, Any], secret_name: str) -> str:
        """A token Secret's token (no expiry, no audience), as the legacy token controller writes."""
        meta = sa.get("metadata") or {}
        name = str(meta.get("name", ""))
        return self.key.sign(
            {
                "iss": LEGACY_ISSUER,
                _LEGACY + "namespace": namespace,
                _LEGACY + "secret.name": secret_name,
                _LEGACY + "service-account.name": name,
                _LEGACY + "service-account.uid": meta.get("uid", ""),
                "sub": username(namespace, name),
            }
        )

    # -- validating ----------------------------------------------------------------------------

    def authenticate(self, token: str, audiences: Sequence[str] = ()) -> UserInfo | None:
        """The ServiceAccount user behind ``token``, or None (not ours, invalid, expired, revoked).

        ``audiences``: the audiences the token must be for (default: the API audiences)."""
        digest = hashlib.sha256(token.encode()).digest()
        now = self._clock.now().timestamp()
        entry = self._cache.get(digest) if not audiences else None
        if entry is None or now - entry.cached_at > CACHE_SECONDS:
            try:
                entry = self._verify(token, tuple(audiences) or self.api_audiences, now)
            except jwt.InvalidToken as e:
                log.debug("service account token refused: %s", e)
                self._cache.pop(digest, None)
                return None
            if not audiences:
                if len(self._cache) >= CACHE_ENTRIES:
                    self._cache.clear()
                self._cache[digest] = entry
        return entry.user if self._still_valid(entry, now) else None

    def review(self, token: str, audiences: Sequence[str]) -> tuple[UserInfo | None, tuple[str, ...]]:
        """TokenReview's question: the user, and which of ``audiences`` (default: the API
        audiences) the token is for."""
        wanted = tuple(audiences) or self.api_audiences
        user = self.authenticate(token, wanted)
        if user is None:
            return None, ()
        aud = jwt.split(token)[1].get("aud")
        token_aud = (
            [aud] if isinstance(aud, str) else aud if isinstance(aud, list) else list(self.api_audiences)
        )
        return user, tuple(a for a in wanted if a in token_aud)

    def _still_valid(self, entry: _Verified, now: float) -> bool:
        if now + LEEWAY < entry.not_before or now - LEEWAY > entry.expires:
            return False
        for key, uid in entry.checks:
            obj = self.lookup(key)
            meta = obj.get("metadata") if obj is not None else None
            if not isinstance(meta, Mapping) or meta.get("uid") != uid:
                return False
            deleted = meta.get("deletionTimestamp")
            if deleted and _seconds(deleted) < now - LEEWAY:
                return False
        if entry.secret_token is not None:
            key, encoded = entry.secret_token
            secret = self.lookup(key)
            data = secret.get("data") if secret is not None else None
            if not isinstance(data, Mapping) or data.get("token") != encoded:
                return False
        return True

    def _verify(self, token: str, audiences: tuple[str, ...], now: float) -> _Verified:
        # Abstain cheaply on tokens of other issuers before any RSA arithmetic, as upstream.
        _header, unverified, _input, _sig = jwt.split(token)
        if unverified.get("iss") not in (self.issuer, LEGACY_ISSUER):
            raise jwt.InvalidToken("issuer not ours")
        _header, claims = self.key.verify(token)
        if claims.get("iss") == LEGACY_ISSUER:
            return self._legacy_user(token, claims, audiences, now)
        aud = claims.get("aud")
        token_aud = [aud] if isinstance(aud, str) else aud if isinstance(aud, list) else []
        if not set(token_aud) & set(audiences):
            raise jwt.InvalidToken(f"token audiences {token_aud} is invalid for the target audiences")
        private = claims.get("kubernetes.io")
        if not isinstance(private, dict):
            raise jwt.InvalidToken("no kubernetes.io claim")
        ns = _str(private.get("namespace"))
        sa = private.get("serviceaccount") or {}
        name, uid = _str(sa.get("name")), _str(sa.get("uid"))
        if not ns or not name or claims.get("sub") != username(ns, name):
            raise jwt.InvalidToken("malformed service account claims")
        checks = [(sa_key(ns, name), uid)]
        extra: dict[str, tuple[str, ...]] = {}
        for kind in ("Pod", "Secret", "Node"):
            ref = private.get(kind.lower())
            if not isinstance(ref, dict):
                continue
            ref_name, ref_uid = _str(ref.get("name")), _str(ref.get("uid"))
            prefix = f"authentication.kubernetes.io/{kind.lower()}"
            if kind != "Secret":
                extra[f"{prefix}-name"] = (ref_name,)
                extra[f"{prefix}-uid"] = (ref_uid,)
            if kind == "Node" and "pod" in private:
                continue  # a pod's node is informational (upstream checks only the pod)
            checks.append((object_key(kind, ns, ref_name), ref_uid))
        jti = _str(claims.get("jti"))
        if jti:
            extra["authentication.kubernetes.io/credential-id"] = (f"JTI={jti}",)
        user = _user(ns, name, uid, extra)
        return _Verified(
            user, _num(claims.get("nbf"), now), _num(claims.get("exp"), 0), tuple(checks), None, now
        )

    def _legacy_user(
        self, token: str, claims: dict[str, Any], audiences: tuple[str, ...], now: float
    ) -> _Verified:
        if not set(audiences) & set(self.api_audiences):
            raise jwt.InvalidToken("legacy tokens are for the API audiences only")
        ns = _str(claims.get(_LEGACY + "namespace"))
        name = _str(claims.get(_LEGACY + "service-account.name"))
        uid = _str(claims.get(_LEGACY + "service-account.uid"))
        secret = _str(claims.get(_LEGACY + "secret.name"))
        if not (ns and name and secret) or claims.get("sub") != username(ns, name):
            raise jwt.InvalidToken("malformed legacy claims")
        encoded = base64.b64encode(token.encode()).decode()
        user = _user(ns, name, uid, {})
        checks = ((sa_key(ns, name), uid),)
        return _Verified(user, 0, float("inf"), checks, (object_key("Secret", ns, secret), encoded), now)


def _user(ns: str, name: str, uid: str, extra: dict[str, tuple[str, ...]]) -> UserInfo:
    groups = ("system:serviceaccounts", f"system:serviceaccounts:{ns}", AUTHENTICATED_GROUP)
    return UserInfo(username(ns, name), uid, groups, types.MappingProxyType(extra))


def _str(v: Any) -> str:
    return v if isinstance(v, str) else ""


def _num(v: Any, default: float) -> float:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else default


def _seconds(rfc3339: Any) -> float:
    try:
        return datetime.datetime.fromisoformat(str(rfc3339).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0
