"""Authorization: may this user do this? (upstream's ``authorizer.Authorizer``).

An ``Authorizer`` is one callable, ``authorize(attributes) -> Decision``, with no I/O: the HTTP
filter, impersonation, the escalation checks, the access-review APIs (and later audit and the CEL
``authorizer`` library) all ask the same question the same way.

Decisions are upstream's three: ALLOW, DENY and NO_OPINION. ``chain`` asks each authorizer in
turn; the first ALLOW or DENY wins, and when all abstain the request is refused. As upstream, a
``system:masters`` authorizer runs first (allow with an empty reason) whatever the mode.
"""

from __future__ import annotations

import dataclasses
import enum
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from aiohttp import web

from kplane.api import errors
from kplane.server.auth.authn import UserInfo

PRIVILEGED_GROUP = "system:masters"


class Verdict(enum.Enum):
    DENY = 0
    ALLOW = 1
    NO_OPINION = 2


@dataclasses.dataclass(frozen=True, slots=True)
class Attributes:
    """What a request asks to do (upstream's ``authorizer.AttributesRecord``).

    ``resource_request`` False: a non-resource request, described by ``path`` and ``verb`` (the
    lower-cased HTTP method). ``group`` "" is the core group.
    """

    user: UserInfo
    verb: str
    resource_request: bool = True
    group: str = ""
    version: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    path: str = ""


@dataclasses.dataclass(frozen=True, slots=True)
class Decision:
    verdict: Verdict
    reason: str = ""

    @property
    def allowed(self) -> bool:
        return self.verdict is Verdict.ALLOW


class Authorizer(Protocol):
    def __call__(self, attributes: Attributes) -> Decision:
        """The decision for ``attributes``. Must be quick, must not block or do I/O, never raises."""
        ...


_ALLOW = Decision(Verdict.ALLOW)
_NO_OPINION = Decision(Verdict.NO_OPINION)


def always_allow(attributes: Attributes) -> Decision:
    """``--authorization-mode AlwaysAllow``: everyone may do everything."""
    return _ALLOW


def privileged(attributes: Attributes) -> Decision:
    """Upstream's privileged-group authorizer: ``system:masters`` may do everything."""
    return _ALLOW if PRIVILEGED_GROUP in attributes.user.groups else _NO_OPINION


def chain(authorizers: Sequence[Authorizer]) -> Authorizer:
    """First ALLOW or DENY wins; reasons of abstaining authorizers are joined with ``\\n``."""

    members = tuple(authorizers)

    def authorize(attributes: Attributes) -> Decision:
        reasons = ""
        for a in members:
            d = a(attributes)
            if d.verdict is not Verdict.NO_OPINION:
                return d
            if d.reason:
                reasons = f"{reasons}\n{d.reason}" if reasons else d.reason
        return Decision(Verdict.NO_OPINION, reasons)

    return authorize


AuthorizerFactory = Callable[[], Authorizer]


def go_quote(s: str) -> str:
    """Go's ``%q`` for the strings authorization messages quote."""
    return json.dumps(s, ensure_ascii=False)


def _sanitize(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def forbidden_message(attributes: Attributes) -> str:
    """``User "u" cannot <verb> ...`` exactly as upstream's ``responsewriters.forbiddenMessage``."""
    who = go_quote(attributes.user.name)
    if not attributes.resource_request:
        return f"User {who} cannot {attributes.verb} path {go_quote(attributes.path)}"
    resource = attributes.resource
    if attributes.subresource:
        resource += "/" + attributes.subresource
    head = (
        f"User {who} cannot {attributes.verb} resource {go_quote(resource)}"
        f" in API group {go_quote(attributes.group)}"
    )
    if attributes.namespace:
        return f"{head} in the namespace {go_quote(attributes.namespace)}"
    return f"{head} at the cluster scope"


def forbidden(attributes: Attributes, reason: str) -> errors.Forbidden:
    """The 403 upstream's authorization filter answers (``responsewriters.ForbiddenStatusError``)."""
    msg = _sanitize(forbidden_message(attributes))
    if reason:
        msg += ": " + reason
    return forbidden_error(attributes.group, attributes.resource, attributes.name, msg)


def forbidden_error(group: str, resource: str, name: str, why: str) -> errors.Forbidden:
    """Upstream's ``errors.NewForbidden(group/resource, name, why)``."""
    if not resource and not group:
        head = "forbidden"
    else:
        qualified = f"{resource}.{group}" if group else resource
        head = f"{qualified} {go_quote(name)} is forbidden" if name else f"{qualified} is forbidden"
    details = errors.ordered_details({"name": name, "group": group, "kind": resource})
    return errors.Forbidden(f"{head}: {why}", details=details)


RulesFor = Callable[[UserInfo, str], tuple[list[Mapping[str, Any]], list[str]]]
"""Every rule granted to a user in a namespace, and the errors met resolving them."""


def all_rules(user: UserInfo, namespace: str) -> tuple[list[Mapping[str, Any]], list[str]]:
    """``AlwaysAllow``'s answer to ``RulesFor``: everything."""
    return [
        {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]},
        {"verbs": ["*"], "nonResourceURLs": ["*"]},
    ], []


DECISION_KEY: web.RequestKey[Decision] = web.RequestKey("authorization_decision", Decision)
"""The authorizer's decision on the request (for the audit log's annotations)."""
