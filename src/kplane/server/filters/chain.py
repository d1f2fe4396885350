"""The filter chain, written once, outermost first (the order a request passes through)."""

from __future__ import annotations

from kplane.server.auth import authn
from kplane.server.filters.authentication import authentication
from kplane.server.filters.recovery import recovery
from kplane.server.filters.requestinfo import request_info


def build(authenticator: authn.RequestAuthenticator) -> list[object]:
    """Middlewares for aiohttp, outermost first: recovery -> request info -> authentication.

    Authorization (RBAC) will sit after authentication; until then every authenticated user may do
    everything.
    """
    return [recovery, request_info, authentication(authenticator)]
