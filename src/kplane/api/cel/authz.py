"""Kubernetes' CEL authorizer library (apiserver pkg/cel/library/authz.go; 1.27, new rules 1.28),
for ValidatingAdmissionPolicy and webhook ``matchConditions``.

``authorizer.group(g).resource(r).namespace(n).name(x).subresource(s).check(verb)`` and
``authorizer.path(p).check(verb)`` give a ``Decision`` with ``allowed() reason() errored()
error()``; ``authorizer.serviceAccount(ns, name)`` checks as that service account;
``authorizer.requestResource`` is the request's own resource. The checks are answered by an
``Authorize`` callable given by the caller for each evaluation (``Authorizers.bind``): the server
passes its authorizer for the request's user, and ``allow_all`` stands in until one is wired.
The ``fieldSelector``/``labelSelector`` refinements (1.31, behind AuthorizeWithSelectors) are not here.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from cel_expr_python import cel

from kplane.api.cel import types

T = cel.Type
A, PC, GC, RC, D = (
    types.AUTHORIZER_T,
    types.PATH_CHECK_T,
    types.GROUP_CHECK_T,
    types.RESOURCE_CHECK_T,
    types.DECISION_T,
)


@dataclass(frozen=True)
class Attributes:
    """What one ``check`` asks: upstream's authorizer.Attributes of a resource or path request."""

    user: str
    verb: str
    path: str = ""
    group: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""


Authorize = Callable[[Attributes], tuple[str, str]]
"""Returns (decision, reason): decision is ``"allow"``, ``"deny"`` or ``"noopinion"``."""


def allow_all(attributes: Attributes) -> tuple[str, str]:
    """Until the admission chain passes the server's authorizer: every check is allowed."""
    return "allow", ""


class Authorizers:
    """Authorize callables bound for the duration of an evaluation, by number (the ``ref`` the
    library's values carry), so one compiled program serves every request."""

    def __init__(self) -> None:
        self._live: dict[int, Authorize] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    @contextmanager
    def bind(self, authorize: Authorize, user: str = "") -> Iterator[Any]:
        """An ``authorizer`` value answered by ``authorize`` while the block runs."""
        with self._lock:
            ref = next(self._ids)
            self._live[ref] = authorize
        try:
            yield types.Authorizer(ref=ref, user=user)
        finally:
            with self._lock:
                self._live.pop(ref, None)

    def decide(self, check: Any, verb: str) -> Any:
        authorize = self._live.get(check.ref)
        if authorize is None:
            return types.Decision(allowed=False, error="authorizer not available")
        attributes = Attributes(
            user=check.user,
            verb=verb,
            path=check.path,
            group=check.group,
            resource=check.resource,
            subresource=check.subresource,
            namespace=check.namespace,
            name=check.name,
        )
        try:
            decision, reason = authorize(attributes)
        except Exception as exc:
            return types.Decision(allowed=False, error=str(exc))
        return types.Decision(allowed=decision == "allow", reason=reason)


AUTHORIZERS = Authorizers()


def request_resource(
    authorizer: Any, group: str, resource: str, subresource: str, namespace: str, name: str
) -> Any:
    """The value of ``authorizer.requestResource`` for a request."""
    return types.ResourceCheck(
        ref=authorizer.ref,
        user=authorizer.user,
        group=group,
        resource=resource,
        subresource=subresource,
        namespace=namespace,
        name=name,
    )


def _with(kind: Any, **changes: Any) -> Callable[..., Any]:
    def impl(check: Any, value: str) -> Any:
        out = kind()
        out.CopyFrom(check) if type(check) is kind else _copy_common(out, check)
        for field in changes:
            setattr(out, field, value)
        return out

    return impl


def _copy_common(out: Any, check: Any) -> None:
    out.ref = check.ref
    out.user = check.user
    for field in ("group", "resource", "subresource", "namespace", "name", "path"):
        if hasattr(check, field) and hasattr(out, field):
            setattr(out, field, getattr(check, field))


def _service_account(authorizer: Any, namespace: str, name: str) -> Any:
    return types.Authorizer(ref=authorizer.ref, user=f"system:serviceaccount:{namespace}:{name}")


def authz_functions() -> list[Any]:
    """The authorizer library's declarations."""
    m = True
    s = T.STRING

    def member(name: str, oid: str, result: Any, params: list[Any], impl: Any) -> Any:
        return cel.FunctionDecl(name, [cel.Overload(oid, result, params, is_member=m, impl=impl)])

    return [
        member("path", "authorizer_path", PC, [A, s], _with(types.PathCheck, path=True)),
        member("group", "authorizer_group", GC, [A, s], _with(types.GroupCheck, group=True)),
        member("serviceAccount", "authorizer_serviceaccount", A, [A, s, s], _service_account),
        member("resource", "groupcheck_resource", RC, [GC, s], _with(types.ResourceCheck, resource=True)),
        member(
            "subresource",
            "resourcecheck_subresource",
            RC,
            [RC, s],
            _with(types.ResourceCheck, subresource=True),
        ),
        member(
            "namespace", "resourcecheck_namespace", RC, [RC, s], _with(types.ResourceCheck, namespace=True)
        ),
        member("name", "resourcecheck_name", RC, [RC, s], _with(types.ResourceCheck, name=True)),
        cel.FunctionDecl(
            "check",
            [
                cel.Overload("pathcheck_check", D, [PC, s], is_member=m, impl=AUTHORIZERS.decide),
                # the runtime dispatches on kinds (both are messages): one implementation serves both
                cel.Overload("resourcecheck_check", D, [RC, s], is_member=m),
            ],
        ),
        member("allowed", "decision_allowed", T.BOOL, [D], lambda d: d.allowed),
        member("reason", "decision_reason", s, [D], lambda d: d.reason),
        member("errored", "decision_errored", T.BOOL, [D], lambda d: bool(d.error)),
        member("error", "decision_error", s, [D], lambda d: d.error),
    ]
