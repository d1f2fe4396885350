"""The dashboard filter: ``/dashboard`` and below are the dashboard's public files, never the API.

It runs before authentication, because a page must load before anyone has signed in; what it serves
is only the page, its assets, and ``/dashboard/session``: who the connection's client certificate
(and nothing else) authenticates, so the page can sign a certificate holder in without asking for a
token and without a 401 in the browser's console. Every datum the page shows comes from API requests
that pass the whole chain with the user's credentials. Any other method than GET or HEAD is 405.
"""

from __future__ import annotations

from aiohttp import web

from kplane.api import errors
from kplane.server.auth import authn
from kplane.server.dashboard import assets
from kplane.server.filters.types import Gate

SESSION_PATH = assets.PREFIX + "/session"


def dashboard(authenticator: authn.RequestAuthenticator, files: assets.Assets) -> Gate:
    def serve(request: web.BaseRequest) -> web.StreamResponse | None:
        if not assets.is_dashboard_path(request.path):
            return None
        if request.method not in ("GET", "HEAD"):
            raise errors.method_not_allowed()
        if request.path == SESSION_PATH:
            return _session(request, authenticator)
        return files.response(request)

    return Gate(serve)


def _session(request: web.BaseRequest, authenticator: authn.RequestAuthenticator) -> web.Response:
    transport = request.transport
    ssl_object = transport.get_extra_info("ssl_object") if transport is not None else None
    der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
    user = None
    if der and ssl_object is not None:
        try:
            user = authenticator.authenticate_certificate(der, ssl_object.getpeercert() or {})
        except ValueError:  # a certificate that does not verify signs nobody in
            user = None
    body = {"certificateUser": None if user is None else {"username": user.name, "groups": list(user.groups)}}
    return web.json_response(body, headers={**assets.SECURITY_HEADERS, "Cache-Control": "no-store"})
