"""NamespaceLifecycle (apiserver ``pkg/admission/plugin/namespace/lifecycle``): the one place that
rules what a namespace's state allows.

- ``default``, ``kube-system`` and ``kube-public`` may not be deleted: 403
  ``namespaces "kube-system" is forbidden: this namespace may not be deleted``.
- Nothing namespaced is created or updated in a namespace that does not exist (404 as a GET of it
  answers), and nothing is created in one being terminated (403 with a ``NamespaceTerminating``
  cause). Deletes of namespaced objects are always allowed (a terminating namespace empties itself).

Upstream implements only the mutating interface, so it refuses during the first pass; so does this.
Recreating system namespaces that went missing is a controller's job (``registry.namespaces``).
"""

from __future__ import annotations

from collections.abc import Awaitable

from kplane.api import errors
from kplane.api.gvk import GroupResource
from kplane.server.admission import plugin
from kplane.server.registry import admitting

NAME = "NamespaceLifecycle"
IMMORTAL_NAMESPACES = frozenset({"default", "kube-system", "kube-public"})
_NAMESPACES = GroupResource("", "namespaces")
_SKIPPED = frozenset({("authorization.k8s.io", "localsubjectaccessreviews")})


class NamespaceLifecycle(plugin.Base):
    name = NAME

    def __init__(self, ctx: plugin.Context) -> None:
        self.ctx = ctx
        self._namespaces = ctx.record("", "v1", "namespaces")

    def mutate(self, attrs: admitting.Attributes) -> Awaitable[None] | None:
        record = attrs.record
        if record.group == "" and record.plural == "namespaces":
            if attrs.operation == "DELETE" and attrs.name in IMMORTAL_NAMESPACES:
                raise errors.Forbidden(
                    f'{_NAMESPACES} "{attrs.name}" is forbidden: this namespace may not be deleted',
                    details={"name": attrs.name, "kind": "namespaces"},
                )
            return None
        if (
            not record.namespaced
            or attrs.operation in ("DELETE", "CONNECT")
            or (record.group, record.plural) in _SKIPPED
        ):
            return None
        ns = self.ctx.cached(self._namespaces, "", attrs.namespace)
        if ns is None:  # not in the cache, or the cache is behind: read it (and refuse) as it says
            return self._looked_up(attrs)
        _check(attrs, ns)
        return None

    async def _looked_up(self, attrs: admitting.Attributes) -> None:
        _check(attrs, await self.ctx.get(self._namespaces, "", attrs.namespace))


def _check(attrs: admitting.Attributes, ns: plugin.Object | None) -> None:
    """Refuse a write into namespace ``ns`` (None: it does not exist), as upstream."""
    if ns is None:
        raise errors.not_found(_NAMESPACES, attrs.namespace)
    if attrs.operation != "CREATE":
        return
    meta, status = ns.get("metadata"), ns.get("status")
    terminating = (type(meta) is dict and meta.get("deletionTimestamp")) or (
        type(status) is dict and status.get("phase") == "Terminating"
    )
    if terminating:
        namespace = attrs.namespace
        raise errors.Forbidden(
            f"unable to create new content in namespace {namespace} because it is being terminated",
            details={
                "name": namespace,
                "kind": "namespaces",
                "causes": [
                    {
                        "reason": "NamespaceTerminating",
                        "message": f"namespace {namespace} is being terminated",
                        "field": "metadata.namespace",
                    }
                ],
            },
        )
