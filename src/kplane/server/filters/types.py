"""The signatures every filter has and wraps."""

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

from aiohttp import web

Handler = Callable[[web.BaseRequest], Awaitable[web.StreamResponse]]
Filter = Callable[..., Awaitable[web.StreamResponse]]
"""``async def f(handler, request) -> response``: a filter calls ``handler(request)`` to go on.
The rest of the chain comes first, so the chain binds it with ``functools.partial`` positionally
(a keyword binding costs a dict per call, on every request)."""


@dataclass(frozen=True, slots=True)
class Gate:
    """A filter that decides before the request goes on: ``check(request)`` answers it (returns
    a response, or raises an ``APIError``), returns None to let it go on, or returns a ``Filter``
    for the rest of the chain to run under (when, for this request, it has something to do after).
    The chain runs consecutive gates in one step, so they cost no coroutine of their own."""

    check: Callable[[web.BaseRequest], web.StreamResponse | Filter | None]


RESPONSE_HEADERS: web.RequestKey[Mapping[str, str]] = web.RequestKey("response_headers", Mapping)
"""Headers an inner filter wants on whatever answer the request gets (a failure's Status too);
the recovery filter adds them to a response not yet sent."""
