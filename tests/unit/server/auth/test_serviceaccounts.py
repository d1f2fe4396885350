"""ServiceAccount tokens: issued claims, and validation on a fake clock against an in-memory lookup."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import pytest

from kplane._util.clock import FakeClock
from kplane.server.auth import jwt, serviceaccounts

T0 = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
SA = {"metadata": {"name": "bot", "namespace": "ns", "uid": "u-1"}}


@pytest.fixture(scope="module")
def key(tmp_path_factory: pytest.TempPathFactory) -> jwt.SigningKey:
    return jwt.ensure_key(tmp_path_factory.mktemp("sa"))


def _tokens(key: jwt.SigningKey, objects: dict[str, Any]) -> tuple[serviceaccounts.Tokens, FakeClock]:
    clock = FakeClock(T0)
    return serviceaccounts.Tokens(key, clock=clock, lookup=objects.get), clock


def test_user_groups_and_extra(key: jwt.SigningKey) -> None:
    """A valid token is its ServiceAccount's user, with upstream's groups and credential-id."""
    objects: dict[str, Any] = {"/registry/core/serviceaccounts/ns/bot": SA}
    tokens, _ = _tokens(key, objects)
    token, expiry, jti = tokens.issue("ns", SA, audiences=[serviceaccounts.DEFAULT_ISSUER], seconds=3600)
    assert expiry == int(T0.timestamp()) + 3600
    user = tokens.authenticate(token)
    assert user is not None
    assert user.name == "system:serviceaccount:ns:bot" and user.uid == "u-1"
    assert user.groups == ("system:serviceaccounts", "system:serviceaccounts:ns", "system:authenticated")
    assert dict(user.extra) == {"authentication.kubernetes.io/credential-id": (f"JTI={jti}",)}


def test_expiry_with_one_minute_leeway(key: jwt.SigningKey) -> None:
    """A token is accepted until a minute past exp (go-jose's leeway), then refused."""
    tokens, clock = _tokens(key, {"/registry/core/serviceaccounts/ns/bot": SA})
    token, _, _ = tokens.issue("ns", SA, audiences=[serviceaccounts.DEFAULT_ISSUER], seconds=600)
    clock.step(600 + 59)
    assert tokens.authenticate(token) is not None
    clock.step(2)
    assert tokens.authenticate(token) is None


def test_revoked_by_serviceaccount_uid_and_bound_object(key: jwt.SigningKey) -> None:
    """A recreated ServiceAccount (new uid) or a deleted bound Pod ends a cached token at once."""
    objects: dict[str, Any] = {
        "/registry/core/serviceaccounts/ns/bot": SA,
        "/registry/core/pods/ns/p": {"metadata": {"uid": "p-1"}},
    }
    tokens, _ = _tokens(key, objects)
    bound = serviceaccounts.Bound("Pod", "p", "p-1", ("node-1", "n-1"))
    token, _, _ = tokens.issue(
        "ns", SA, audiences=[serviceaccounts.DEFAULT_ISSUER], seconds=3600, bound=bound
    )
    user = tokens.authenticate(token)
    assert user is not None and user.extra["authentication.kubernetes.io/pod-name"] == ("p",)
    assert user.extra["authentication.kubernetes.io/node-name"] == ("node-1",)
    del objects["/registry/core/pods/ns/p"]
    assert tokens.authenticate(token) is None
    objects["/registry/core/pods/ns/p"] = {"metadata": {"uid": "p-1"}}
    objects["/registry/core/serviceaccounts/ns/bot"] = {"metadata": {"name": "bot", "uid": "u-2"}}
    assert tokens.authenticate(token) is None


def test_extended_pod_token(key: jwt.SigningKey) -> None:
    """3607 s pod-bound API tokens get a one-year exp and warnafter (upstream's safe rollout)."""
    tokens, _ = _tokens(key, {})
    bound = serviceaccounts.Bound("Pod", "p", "p-1")
    token, expiry, _ = tokens.issue(
        "ns", SA, audiences=[serviceaccounts.DEFAULT_ISSUER], seconds=3607, bound=bound
    )
    _, claims = key.verify(token)
    now = int(T0.timestamp())
    assert expiry == now + 3607
    assert claims["exp"] == now + serviceaccounts.ONE_YEAR
    assert claims["kubernetes.io"]["warnafter"] == now + 3607


def test_other_issuer_and_audience_refused(key: jwt.SigningKey) -> None:
    """Tokens of another issuer, or for other audiences, are not ours."""
    tokens, _ = _tokens(key, {"/registry/core/serviceaccounts/ns/bot": SA})
    token, _, _ = tokens.issue("ns", SA, audiences=["vault"], seconds=3600)
    assert tokens.authenticate(token) is None
    assert tokens.authenticate(token, ["vault"]) is not None
    _, claims = key.verify(token)
    assert tokens.authenticate(key.sign({**claims, "iss": "https://other", "aud": [tokens.issuer]})) is None


def test_key_survives_restart_and_kid_is_spki_digest(tmp_path: Path) -> None:
    """The key file is reused (0600) and the kid is the SHA-256 of the DER SubjectPublicKeyInfo."""
    import base64
    import hashlib

    from cryptography.hazmat.primitives import serialization

    first = jwt.ensure_key(tmp_path)
    again = jwt.ensure_key(tmp_path)
    assert first == again
    assert (tmp_path / jwt.KEY_FILE).stat().st_mode & 0o777 == 0o600
    loaded = serialization.load_pem_private_key((tmp_path / jwt.KEY_FILE).read_bytes(), None)
    spki = loaded.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    assert first.kid == base64.urlsafe_b64encode(hashlib.sha256(spki).digest()).rstrip(b"=").decode()


@pytest.mark.parametrize(
    "token",
    ["", "a.b", "a.b.c", "e30.e30.", "eyJhbGciOiJub25lIn0.e30.", "eyJhbGciOiJIUzI1NiJ9.e30.AAAA"],
    ids=["empty", "two-parts", "not-base64-json", "no-signature", "alg-none", "hs256"],
)
def test_malformed_tokens_refused(key: jwt.SigningKey, token: str) -> None:
    """Malformed JWTs and other algorithms raise InvalidToken, never anything else."""
    with pytest.raises(jwt.InvalidToken):
        key.verify(token)
