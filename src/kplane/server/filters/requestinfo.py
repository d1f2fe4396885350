"""Parse what the request addresses once; later filters and handlers read ``request[INFO_KEY]``.

``RequestInfo`` is immutable, so requests to the same path share one (a bounded memo: creates and
lists address the same collection again and again; paths are client-chosen, so only short ones
are kept and it is cleared when full).
"""

from __future__ import annotations

from aiohttp import web

from kplane.server.endpoints import requestinfo as parsing
from kplane.server.filters.types import Gate

_MEMO: dict[tuple[str, str, str | None], parsing.RequestInfo] = {}
_MEMO_BOUND = 4096
_MEMO_PATH_LENGTH = 256  # so the memo holds at most ~1 MiB of paths


def _parse(request: web.BaseRequest) -> None:
    key = (request.method, request.path, request.query.get("watch"))
    info = _MEMO.get(key)
    if info is None:
        info = parsing.parse(key[0], key[1], watch_param=key[2])
        if len(key[1]) <= _MEMO_PATH_LENGTH:  # a hostile long path is parsed, never kept
            if len(_MEMO) >= _MEMO_BOUND:
                _MEMO.clear()
            _MEMO[key] = info
    request[parsing.INFO_KEY] = info


request_info = Gate(_parse)
