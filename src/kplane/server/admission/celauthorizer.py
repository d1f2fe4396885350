"""The CEL ``authorizer`` library of one admission request: the server's authorizer asked as the
request's user (or, for ``authorizer.serviceAccount(ns, name)``, as that account). Shared by
ValidatingAdmissionPolicy expressions and webhook ``matchConditions``."""

from __future__ import annotations

from kplane.api.cel import authz as celauthz
from kplane.server.auth import authn, authz
from kplane.server.registry import admitting


def for_request(authorizer: authz.Authorizer | None, attrs: admitting.Attributes) -> celauthz.Authorize:
    """The CEL ``authorizer`` of this request: the server's authorizer, asked as the request's
    user (or as ``authorizer.serviceAccount(...)``'s account)."""
    if authorizer is None:
        return celauthz.allow_all
    requester = attrs.user
    me = (
        authn.UserInfo(
            requester.username,
            requester.uid,
            requester.groups,
            {k: tuple(v) for k, v in requester.extra.items()},
        )
        if requester is not None
        else authn.UserInfo("")
    )

    def check(a: celauthz.Attributes) -> tuple[str, str]:
        user = me if a.user == me.name else service_account_user(a.user)
        decision = authorizer(
            authz.Attributes(
                user,
                a.verb,
                resource_request=not a.path,
                group=a.group,
                resource=a.resource,
                subresource=a.subresource,
                namespace=a.namespace,
                name=a.name,
                path=a.path,
            )
        )
        verdict = {authz.Verdict.ALLOW: "allow", authz.Verdict.DENY: "deny"}.get(
            decision.verdict, "noopinion"
        )
        return verdict, decision.reason

    return check


def service_account_user(name: str) -> authn.UserInfo:
    """The user ``authorizer.serviceAccount(ns, name)`` checks as (upstream's service account
    groups)."""
    parts = name.split(":")
    groups: tuple[str, ...] = ()
    if len(parts) == 4 and name.startswith("system:serviceaccount:"):
        groups = ("system:serviceaccounts", f"system:serviceaccounts:{parts[2]}", "system:authenticated")
    return authn.UserInfo(name, groups=groups)
