"""Parse what the request addresses once; later filters and handlers read ``request[INFO_KEY]``."""

from __future__ import annotations

from aiohttp import web

from kplane.server.endpoints import requestinfo as parsing
from kplane.server.filters.types import Gate


def _parse(request: web.BaseRequest) -> None:
    request[parsing.INFO_KEY] = parsing.parse(
        request.method, request.path, watch_param=request.query.get("watch")
    )


request_info = Gate(_parse)
