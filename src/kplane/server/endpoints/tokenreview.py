"""``POST /apis/authentication.k8s.io/v1/tokenreviews``: is this token valid, and whose is it?
(upstream's ``pkg/registry/authentication/tokenreview/storage.go``).

Nothing is stored. The reply (201) is the request with ``status``: ``authenticated``, ``user``
(username, uid, groups, extra), the ``audiences`` the token is valid for among those asked (the
API audiences when the spec names none), and ``error`` when it does not authenticate.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from aiohttp import web

from kplane.api import errors
from kplane.server.auth import authn, serviceaccounts
from kplane.server.endpoints import negotiation
from kplane.server.endpoints.scope import Scope

Review = Callable[[str, Sequence[str]], tuple[authn.UserInfo | None, tuple[str, ...]]]
"""``review(token, audiences)`` → (the user or None, the audiences the token is valid for)."""
_INVALID = "invalid bearer token"  # upstream's bearertoken.errInvalidToken


async def create(scope: Scope, *, review: Review) -> web.StreamResponse:
    body = negotiation.decode_object(
        await scope.body(), scope.request.headers.get("Content-Type"), kind="TokenReview"
    )
    raw_meta, raw_spec = body.get("metadata"), body.get("spec")
    meta: dict[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
    spec: dict[str, Any] = raw_spec if isinstance(raw_spec, dict) else {}
    if meta.get("namespace"):
        raise errors.BadRequest(f"namespace is not allowed on this type: {meta['namespace']}")
    token = spec.get("token")
    if not isinstance(token, str) or not token:
        raise errors.BadRequest("token is required for TokenReview in authentication")
    raw_aud = spec.get("audiences")
    asked = [a for a in raw_aud if isinstance(a, str)] if isinstance(raw_aud, list) else []
    user, audiences = review(token, asked)
    status: dict[str, Any]
    if user is None:
        status = {"user": {}, "error": _INVALID}
    else:
        status = {"authenticated": True, "user": authn.user_info(user), "audiences": list(audiences)}
    reply = {
        "kind": "TokenReview",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {**meta, "creationTimestamp": None} if meta else {"creationTimestamp": None},
        "spec": spec,
        "status": status,
    }
    return scope.respond_plain(reply, 201)


def review(
    tokens: serviceaccounts.Tokens, authenticator: authn.Authenticator, token: str, audiences: Sequence[str]
) -> tuple[authn.UserInfo | None, tuple[str, ...]]:
    """TokenReview: ServiceAccount tokens for the audiences asked; other bearer tokens (static,
    audience-agnostic) only when the API audiences are among them, as upstream."""
    if token.count(".") == 2:
        user, valid = tokens.review(token, audiences)
        if user is not None:
            return user, valid
    wanted = tuple(audiences) or tokens.api_audiences
    api = tuple(a for a in wanted if a in tokens.api_audiences)
    if not api:
        return None, ()
    user = authenticator.authenticate(f"Bearer {token}")
    return (user, api) if user is not None else (None, ())
