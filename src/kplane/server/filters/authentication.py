"""Authentication: client certificate or bearer token -> ``request[USER_KEY]``.

The client certificate is tried first, then the bearer token (upstream's order). Anonymous requests
reach only the public paths (version and health); anything else answers 401
Unauthorized (upstream's anonymous authenticator limited to those paths, as its structured
authentication configuration allows); on them the anonymous user ``system:anonymous`` (group
``system:unauthenticated``) goes on to authorization. A request with a bearer token that does not
authenticate is refused even on public paths, as upstream does. Requests arriving on the opt-in
insecure (plain HTTP, loopback) port are trusted as the admin, like upstream's old insecure port.

A client certificate's verification does not end the TLS handshake (``auth.x509``); the
authenticator refuses one that failed it. One that does not verify makes the request 401 unless a bearer token
authenticates it, even on the public paths (upstream's union authenticator, whose errors are not
turned anonymous). A TLS connection's client certificate cannot change, so its outcome is
remembered per connection (weakly, keyed by the connection's ``SSLObject``) and verified once.
"""

from __future__ import annotations

import weakref
from typing import Any

from aiohttp import web

from kplane.api import errors
from kplane.server.auth import authn
from kplane.server.filters.types import Gate

INSECURE_USER = authn.UserInfo(name="kplane-admin", groups=("system:masters", authn.AUTHENTICATED_GROUP))
USER_KEY = authn.USER_KEY
"""Where this filter stores the authenticated user on a request."""
_UNSET = object()
_INVALID = object()  # a presented certificate that does not verify


def authentication(authenticator: authn.RequestAuthenticator) -> Gate:
    by_connection: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()

    def certificate_user(ssl_object: Any) -> Any:
        der = ssl_object.getpeercert(binary_form=True)
        if not der:
            return None
        try:
            return authenticator.authenticate_certificate(der, ssl_object.getpeercert() or {})
        except ValueError:
            return _INVALID

    def authenticate(request: web.BaseRequest) -> None:
        transport = request.transport
        ssl_object = transport.get_extra_info("ssl_object") if transport is not None else None
        if ssl_object is None:
            request[USER_KEY] = INSECURE_USER
            return
        user = by_connection.get(ssl_object, _UNSET)
        if user is _UNSET:
            user = by_connection[ssl_object] = certificate_user(ssl_object)
        if user is None or user is _INVALID:
            authorization = request.headers.get("Authorization")
            if authorization:
                user = authenticator.authenticate(authorization)
                if user is None:
                    raise errors.Unauthorized("Unauthorized")
            elif user is _INVALID or request.path not in authn.ANONYMOUS_PATHS:
                raise errors.Unauthorized("Unauthorized")
            else:
                user = authn.ANONYMOUS
        request[USER_KEY] = user

    return Gate(authenticate)
