"""Authorization: refuse with upstream's 403 what the user may not do.

Runs after authentication and impersonation (upstream's order), before the handlers. The
request's attributes are built from ``RequestInfo``: resource requests carry the verb, group,
resource, subresource, namespace and name (a list or watch selecting ``metadata.name=<x>`` names
``x``, as upstream); other paths carry the path and the lower-cased HTTP method.
"""

from __future__ import annotations

from aiohttp import web

from kplane.server import storage
from kplane.server.auth import authn, authz
from kplane.server.endpoints import history, requestinfo
from kplane.server.filters.types import Gate


def attributes_of(request: web.BaseRequest, user: authn.UserInfo) -> authz.Attributes:
    """The authorization attributes of ``request`` made by ``user``."""
    info = request[requestinfo.INFO_KEY]
    if not info.is_resource:
        return authz.Attributes(user, request.method.lower(), resource_request=False, path=request.path)
    if info.group == history.GROUP:
        target = history.authorization_target(request.query)
        if target is not None:  # reading an object's history is reading the object
            verb, group, resource, name = target
            return authz.Attributes(
                user, verb, group=group, resource=resource, namespace=info.namespace, name=name
            )
    name = info.name
    if not name and info.verb in ("list", "watch"):
        name = _name_from_field_selector(request.query.get("fieldSelector", ""))
    return authz.Attributes(
        user,
        info.verb,
        group=info.group,
        version=info.version,
        resource=info.resource,
        subresource=info.subresource,
        namespace=info.namespace,
        name=name,
    )


_MEMO: dict[tuple[int, int], tuple[authn.UserInfo, requestinfo.RequestInfo, authz.Attributes]] = {}
_MEMO_BOUND = 4096
_MEMO_PATH_LENGTH = 256


def _attributes(request: web.BaseRequest, user: authn.UserInfo) -> authz.Attributes:
    """``attributes_of``, shared by the requests of one user to one path: users are kept per
    credential and ``RequestInfo`` per path, so their identities key a bounded memo (whose entries
    hold both, so neither id is reused meanwhile). Attributes read from the query (a list's field
    selector, a history read's target) are never shared."""
    info = request[requestinfo.INFO_KEY]
    key = (id(user), id(info))
    entry = _MEMO.get(key)
    if entry is not None and entry[0] is user and entry[1] is info:
        return entry[2]
    attributes = attributes_of(request, user)
    shareable = info.group != history.GROUP and (info.name or info.verb not in ("list", "watch"))
    if shareable and len(request.path) <= _MEMO_PATH_LENGTH:  # as the RequestInfo memo
        if len(_MEMO) >= _MEMO_BOUND:
            _MEMO.clear()
        _MEMO[key] = (user, info, attributes)
    return attributes


def _name_from_field_selector(selector: str) -> str:
    for term in selector.split(","):
        field, op, value = term.partition("=")
        if field.strip() == "metadata.name" and op:
            return value.removeprefix("=").strip()
    return ""


def authorization(
    authorizer: authz.Authorizer, *, record_writer: bool = True, record_decision: bool = True
) -> Gate:
    """Refuse what ``authorizer`` does not allow; leave its decision on the request for the audit
    log (unless not ``record_decision``: no audit log reads it). The handler runs with
    ``storage.WRITER`` set to the user, whom a store that keeps history records with each write
    (unless not ``record_writer``: to measure what it costs).

    ``WRITER`` is set and not reset: aiohttp runs each request in a task of its own, whose context
    is a copy, so the value is that request's alone."""

    def authorize(request: web.BaseRequest) -> None:
        user = request[authn.USER_KEY]
        attributes = _attributes(request, user)
        decision = authorizer(attributes)
        if record_decision:
            request[authz.DECISION_KEY] = decision
        if not decision.allowed:
            raise authz.forbidden(attributes, decision.reason)
        if record_writer:
            storage.WRITER.set(user.name)

    return Gate(authorize)
