"""Authentication: client certificate or bearer token -> ``request["user"]``.

Anonymous requests reach only the public paths (version and health); anything else answers 401
Unauthorized. A request with a bearer token that does not authenticate is refused even on public
paths, as upstream does. Requests arriving on the opt-in insecure (plain HTTP, loopback) port are
trusted as the admin, like upstream's old insecure port.
"""

from __future__ import annotations

from aiohttp import web

from kplane.api import errors
from kplane.server.auth import authn
from kplane.server.filters.types import Handler

INSECURE_USER = authn.UserInfo(name="kplane-admin", groups=("system:masters", authn.AUTHENTICATED_GROUP))


def authentication(authenticator: authn.RequestAuthenticator) -> object:
    @web.middleware
    async def authenticate(request: web.Request, handler: Handler) -> web.StreamResponse:
        transport = request.transport
        if transport is None or transport.get_extra_info("sslcontext") is None:
            request["user"] = INSECURE_USER
            return await handler(request)
        peercert = transport.get_extra_info("peercert")
        authorization = request.headers.get("Authorization")
        user = authenticator.authenticate(peercert or None, authorization)
        if user is None and (authorization or request.path not in authn.ANONYMOUS_PATHS):
            raise errors.Unauthorized("Unauthorized")
        request["user"] = user
        return await handler(request)

    return authenticate
