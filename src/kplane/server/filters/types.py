"""The signatures every filter has and wraps."""

from collections.abc import Awaitable, Callable

from aiohttp import web

Handler = Callable[[web.BaseRequest], Awaitable[web.StreamResponse]]
Filter = Callable[..., Awaitable[web.StreamResponse]]
"""``async def f(request, handler) -> response``: a filter calls ``handler`` to go on."""
