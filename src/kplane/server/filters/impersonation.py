"""Impersonation: ``Impersonate-User``/``-Group``/``-Uid``/``-Extra-<key>`` headers (upstream's
``endpoints/filters/impersonation.go``).

Each requested item is authorized for the real user with the verb ``impersonate``: a user name on
``users`` (a service account's name on ``serviceaccounts`` in its namespace), a group on ``groups``,
a uid on ``uids`` and each extra value on ``userextras/<key>`` (both in ``authentication.k8s.io``).
The first refusal is upstream's 403; when everything is allowed the request goes on as the new
user, whose groups get ``system:authenticated`` (``system:unauthenticated`` for
``system:anonymous``) unless one of the two is already there.
"""

from __future__ import annotations

import operator
import types
import urllib.parse

from aiohttp import web

from kplane.server.auth import authn, authz
from kplane.server.filters.types import Gate

_USER = "Impersonate-User"
_UID = "Impersonate-Uid"
_GROUP = "Impersonate-Group"
_EXTRA = "impersonate-extra-"
_SA_PREFIX = "system:serviceaccount:"
_AUTH_GROUP = "authentication.k8s.io"
_ANY = b"impersonate-"
_NAME = operator.itemgetter(0)


def impersonation(authorizer: authz.Authorizer) -> Gate:
    def impersonate(request: web.BaseRequest) -> web.StreamResponse | None:
        # every request passes here and almost none impersonates: one C-level scan of the names
        # (find, not in: bytes.__contains__ raises and drops a TypeError for a bytes argument)
        if b"\0".join(map(_NAME, request.raw_headers)).lower().find(_ANY) < 0:
            return None
        headers = request.headers
        name = headers.get(_USER)
        groups = headers.getall(_GROUP, [])
        uid = headers.get(_UID)
        extra: dict[str, list[str]] = {}
        for key, value in headers.items():
            if key.lower().startswith(_EXTRA):
                extra.setdefault(urllib.parse.unquote(key[len(_EXTRA) :].lower()), []).append(value)
        if name is None and not groups and uid is None and not extra:
            return None
        if not name:
            requested = [*(f"Group {g}" for g in groups), *(f"Extra {k}" for k in extra)]
            if uid is not None:
                requested.append(f"Uid {uid}")
            return web.Response(
                status=500,
                text=f'Internal Server Error: "{request.path_qs}": requested [{" ".join(requested)}]'
                " without impersonating a user\n",
                content_type="text/plain",
            )
        actor = request[authn.USER_KEY]
        checks: list[authz.Attributes] = []
        new_groups = list(groups)
        if name.startswith(_SA_PREFIX) and name.count(":") == 3:
            ns, _, sa = name[len(_SA_PREFIX) :].partition(":")
            checks.append(
                authz.Attributes(actor, "impersonate", resource="serviceaccounts", namespace=ns, name=sa)
            )
            if not groups:
                new_groups = ["system:serviceaccounts", f"system:serviceaccounts:{ns}"]
        else:
            checks.append(authz.Attributes(actor, "impersonate", resource="users", name=name))
        checks.extend(authz.Attributes(actor, "impersonate", resource="groups", name=g) for g in groups)
        for key, values in extra.items():
            checks.extend(
                authz.Attributes(
                    actor, "impersonate", group=_AUTH_GROUP, resource="userextras", subresource=key, name=v
                )
                for v in values
            )
        if uid is not None:
            checks.append(
                authz.Attributes(actor, "impersonate", group=_AUTH_GROUP, resource="uids", name=uid)
            )
        for attrs in checks:
            decision = authorizer(attrs)
            if not decision.allowed:
                raise authz.forbidden(attrs, decision.reason)
        implied = authn.UNAUTHENTICATED_GROUP if name == authn.ANONYMOUS.name else authn.AUTHENTICATED_GROUP
        if authn.AUTHENTICATED_GROUP not in new_groups and authn.UNAUTHENTICATED_GROUP not in new_groups:
            new_groups.append(implied)
        request[authn.USER_KEY] = authn.UserInfo(
            name=name,
            uid=uid or "",
            groups=tuple(dict.fromkeys(new_groups)),
            extra=types.MappingProxyType({k: tuple(v) for k, v in extra.items()}),
        )
        return None

    return Gate(impersonate)
