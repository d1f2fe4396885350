"""Turn a request path and method into what the API server must do (upstream's RequestInfo).

Resource paths::

    /api/v1[/watch]/[namespaces/<ns>/]<resource>[/<name>[/<subresource>]]
    /apis/<group>/<version>[/watch]/[namespaces/<ns>/]<resource>[/<name>[/<subresource>]]

``namespaces/<name>/status`` and ``namespaces/<name>/finalize`` are subresources of the Namespace
itself. Anything else (``/version``, ``/healthz``, ``/openapi/v3``...) is a non-resource request.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from aiohttp import web

Verb = Literal["get", "list", "watch", "create", "update", "patch", "delete", "deletecollection", ""]

_NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})
_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})


def parse_bool(value: str | None) -> bool:
    """Go's strconv.ParseBool truth values (``true``, ``True``, ``1``, ...); anything else is false."""
    return value in _TRUE


@dataclass(frozen=True, slots=True)
class RequestInfo:
    """What a request addresses. ``is_resource`` False means a non-resource path."""

    is_resource: bool
    path: str
    verb: Verb = ""
    api_prefix: str = ""
    group: str = ""
    version: str = ""
    namespace: str = ""
    resource: str = ""
    name: str = ""
    subresource: str = ""
    parts: tuple[str, ...] = ()


INFO_KEY: web.RequestKey[RequestInfo] = web.RequestKey("info", RequestInfo)
"""Where the request-info filter stores the parsed ``RequestInfo`` on a request."""


def parse(method: str, path: str, *, watch_param: str | None = None) -> RequestInfo:
    """Parse ``path`` (already percent-decoded, no query) for ``method``.

    A path with too few segments to name a resource (``/api``, ``/apis/apps``) is returned as a
    non-resource request carrying its ``parts`` so discovery can serve it.
    """
    parts = tuple(filter(None, path.split("/")))  # the non-empty segments
    if not parts or parts[0] not in ("api", "apis"):
        return RequestInfo(False, path, parts=parts)
    if parts[0] == "api":
        if len(parts) < 3:
            return RequestInfo(False, path, parts=parts)
        group, version, rest = "", parts[1], list(parts[2:])
    else:
        if len(parts) < 4:
            return RequestInfo(False, path, parts=parts)
        group, version, rest = parts[1], parts[2], list(parts[3:])

    watching = False
    if rest and rest[0] == "watch":
        watching = True
        rest = rest[1:]
        if not rest:
            return RequestInfo(False, path, parts=parts)

    namespace = ""
    if rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in _NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
    resource = rest[0]
    name = rest[1] if len(rest) > 1 else ""
    subresource = rest[2] if len(rest) > 2 else ""
    if len(rest) > 3:
        # A proxy subresource takes a path after it (upstream's connect-with-path); deeper paths
        # under any other subresource are not served: keep them unmatched.
        subresource = "proxy" if rest[2] == "proxy" else "/".join(rest[2:])
    if resource == "namespaces" and not name and namespace:
        name = namespace

    verb: Verb
    if method in ("GET", "HEAD"):
        if name:
            verb = "watch" if watching else "get"
        else:
            verb = "watch" if watching or parse_bool(watch_param) else "list"
    elif method == "POST":
        verb = "create"
    elif method == "PUT":
        verb = "update"
    elif method == "PATCH":
        verb = "patch"
    elif method == "DELETE":
        verb = "delete" if name else "deletecollection"
    else:
        verb = ""
    if resource == "namespaces":
        # The Namespace object is cluster-scoped: its name is not a namespace of the request.
        namespace = ""
    return RequestInfo(
        True,
        path,
        verb=verb,
        api_prefix=parts[0],
        group=group,
        version=version,
        namespace=namespace,
        resource=resource,
        name=name,
        subresource=subresource,
        parts=parts,
    )
