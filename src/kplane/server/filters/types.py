"""The signatures every filter has and wraps."""

from collections.abc import Awaitable, Callable, Mapping

from aiohttp import web

Handler = Callable[[web.BaseRequest], Awaitable[web.StreamResponse]]
Filter = Callable[..., Awaitable[web.StreamResponse]]
"""``async def f(request, handler) -> response``: a filter calls ``handler`` to go on."""

RESPONSE_HEADERS: web.RequestKey[Mapping[str, str]] = web.RequestKey("response_headers", Mapping)
"""Headers an inner filter wants on whatever answer the request gets (a failure's Status too);
the recovery filter adds them to a response not yet sent."""
