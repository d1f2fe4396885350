"""Outermost filter: every failure becomes a Kubernetes ``Status``, never an HTML page or a traceback.

API errors keep their code; headers inner filters asked for (``RESPONSE_HEADERS``) are added to
any answer not yet sent; aiohttp's own HTTP errors (body too large, bad request line) map to the
matching Status; anything unexpected is logged with its traceback and answered 500 InternalError.
"""

from __future__ import annotations

import logging
import re

from aiohttp import web

from kplane.api import errors
from kplane.server import storage
from kplane.server.endpoints import negotiation
from kplane.server.endpoints.scope import status_response
from kplane.server.filters.types import RESPONSE_HEADERS, Handler
from kplane.server.registry import objects

log = logging.getLogger("kplane.server")

_HTTP_TO_ERROR: dict[int, type[errors.APIError]] = {
    400: errors.BadRequest,
    404: errors.NotFound,
    405: errors.MethodNotAllowed,
    413: errors.RequestEntityTooLarge,
    415: errors.UnsupportedMediaType,
}


# Characters no HTTP header value may hold; aiohttp refuses to send them, which would drop the
# connection after the handler's work (perhaps a committed write) is done.
_UNSAFE_HEADER = re.compile("[\x00-\x08\x0a-\x1f\x7f]")


async def recovery(handler: Handler, request: web.BaseRequest) -> web.StreamResponse:
    try:
        resp = await handler(request)
    except errors.APIError as err:
        resp = _failure(request, err)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        cls = _HTTP_TO_ERROR.get(exc.status, errors.APIError)
        message = exc.text or exc.reason
        if exc.status == 413:
            message = "the request body is too large: at most 3145728 bytes are accepted"
        resp = _failure(request, cls(message, code=exc.status, reason=cls.default_reason))
    except (ConnectionResetError, ConnectionError):
        raise
    except storage.StorageError as err:
        # The store failed under something that is not the registry (an admission plugin's read):
        # the same Status as when the registry meets it (etcd down: 504/500, never a bare 500).
        mapped = objects.backend_error(err)
        if mapped is None:
            log.exception("unhandled storage error serving %s %s", request.method, request.path)
            mapped = errors.InternalError(f"Internal error occurred: {err}")
        resp = _failure(request, mapped)
    except Exception:
        log.exception("unhandled error serving %s %s", request.method, request.path)
        resp = _failure(request, errors.InternalError("Internal error occurred: unexpected server error"))
    else:
        if not resp.prepared:
            _sanitize_headers(resp)
    try:
        extra = request[RESPONSE_HEADERS]  # set by priority and fairness (on by default)
    except KeyError:
        return resp
    if extra and not resp.prepared:
        resp.headers.update(extra)
    return resp


def _failure(request: web.BaseRequest, err: errors.APIError) -> web.StreamResponse:
    pretty = negotiation.is_pretty(request.query, request.headers.get("User-Agent", ""))
    return status_response(err, request.headers.get("Accept"), pretty=pretty)


def _sanitize_headers(resp: web.StreamResponse) -> None:
    """Make every header value sendable, as Go's net/http does (a header is written, whatever a
    handler put into it), so the answer of a request that already took effect always leaves."""
    headers = resp.headers
    if not _UNSAFE_HEADER.search("\t".join(headers.values())):  # a tab is allowed: no false match
        return
    for name in {n for n, v in headers.items() if _UNSAFE_HEADER.search(v)}:
        values = headers.getall(name)
        log.warning("header %s held control characters; they were replaced", name)
        del headers[name]
        for value in values:
            headers.add(name, _UNSAFE_HEADER.sub(" ", value))
