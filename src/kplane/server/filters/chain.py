"""The filter chain, written once, outermost first (the order a request passes through)."""

from __future__ import annotations

import functools
from collections.abc import Sequence

from kplane.server.auth import authn
from kplane.server.filters.authentication import authentication
from kplane.server.filters.recovery import recovery
from kplane.server.filters.requestinfo import request_info
from kplane.server.filters.types import Filter, Handler


def filters(authenticator: authn.RequestAuthenticator, extra: Sequence[Filter] = ()) -> list[Filter]:
    """Outermost first: recovery -> request info -> authentication -> ``extra``.

    Authorization (RBAC) will sit after authentication; until then every authenticated user may do
    everything. ``extra`` filters (test hooks such as fault injection) see only authenticated
    requests, with ``request[INFO_KEY]`` parsed, and their failures still become a Status.
    """
    return [recovery, request_info, authentication(authenticator), *extra]


def build(
    authenticator: authn.RequestAuthenticator, handler: Handler, *, extra: Sequence[Filter] = ()
) -> Handler:
    """``handler`` wrapped in every filter, so a request passes them in list order."""
    for f in reversed(filters(authenticator, extra)):
        handler = functools.partial(f, handler=handler)
    return handler
