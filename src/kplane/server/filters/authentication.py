"""Authentication: client certificate or bearer token -> ``request[USER_KEY]``.

The client certificate is tried first, then the bearer token (upstream's order). Anonymous requests
reach only the public paths (version and health); anything else answers 401
Unauthorized (upstream's anonymous authenticator limited to those paths, as its structured
authentication configuration allows); on them the anonymous user ``system:anonymous`` (group
``system:unauthenticated``) goes on to authorization. A request with a bearer token that does not
authenticate is refused even on public paths, as upstream does. Requests arriving on the opt-in
insecure (plain HTTP, loopback) port are trusted as the admin, like upstream's old insecure port.

A TLS connection's client certificate cannot change, so the user it authenticates is remembered per
connection (weakly, keyed by the connection's ``SSLObject``) and certificate parsing happens once.
"""

from __future__ import annotations

import weakref
from typing import Any

from aiohttp import web

from kplane.api import errors
from kplane.server.auth import authn
from kplane.server.filters.types import Filter, Handler

INSECURE_USER = authn.UserInfo(name="kplane-admin", groups=("system:masters", authn.AUTHENTICATED_GROUP))
USER_KEY = authn.USER_KEY
"""Where this filter stores the authenticated user on a request."""
_UNSET = object()


def authentication(authenticator: authn.RequestAuthenticator) -> Filter:
    by_connection: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()

    async def authenticate(request: web.BaseRequest, handler: Handler) -> web.StreamResponse:
        transport = request.transport
        ssl_object = transport.get_extra_info("ssl_object") if transport is not None else None
        if ssl_object is None:
            request[USER_KEY] = INSECURE_USER
            return await handler(request)
        user = by_connection.get(ssl_object, _UNSET)
        if user is _UNSET:
            user = authenticator.authenticate(ssl_object.getpeercert() or None, None)
            by_connection[ssl_object] = user
        if user is None:
            authorization = request.headers.get("Authorization")
            if authorization:
                user = authenticator.authenticate(None, authorization)
                if user is None:
                    raise errors.Unauthorized("Unauthorized")
            elif request.path not in authn.ANONYMOUS_PATHS:
                raise errors.Unauthorized("Unauthorized")
            else:
                user = authn.ANONYMOUS
        request[USER_KEY] = user
        return await handler(request)

    return authenticate
