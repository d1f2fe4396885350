"""The filter chain, written once, outermost first (the order a request passes through)."""

from __future__ import annotations

import functools

from kplane.server.auth import authn
from kplane.server.filters.authentication import authentication
from kplane.server.filters.recovery import recovery
from kplane.server.filters.requestinfo import request_info
from kplane.server.filters.types import Filter, Handler


def filters(authenticator: authn.RequestAuthenticator) -> list[Filter]:
    """Outermost first: recovery -> request info -> authentication.

    Authorization (RBAC) will sit after authentication; until then every authenticated user may do
    everything.
    """
    return [recovery, request_info, authentication(authenticator)]


def build(authenticator: authn.RequestAuthenticator, handler: Handler) -> Handler:
    """``handler`` wrapped in every filter, so a request passes them in list order."""
    for f in reversed(filters(authenticator)):
        handler = functools.partial(f, handler=handler)
    return handler
