"""Namespace lifecycle rules that every write obeys (upstream's ``NamespaceLifecycle`` admission
plugin, apiserver ``pkg/admission/plugin/namespace/lifecycle``).

- The namespaces a cluster cannot work without (``default``, ``kube-system``, ``kube-public``)
  may not be deleted: 403, before the object is even read.
- Nothing is created in a namespace that does not exist (404) or is being terminated (403).

The registry calls these checks on create and delete; when admission plugins exist (issue 9) this
module becomes the ``NamespaceLifecycle`` plugin. Recreating system namespaces that went missing is
not a rule but a controller: see ``namespaces.NamespaceLifecycle``.
"""

from __future__ import annotations

from kplane.api import errors
from kplane.api.catalog import ResourceRecord
from kplane.api.gvk import GroupResource
from kplane.server import storage

IMMORTAL_NAMESPACES = frozenset({"default", "kube-system", "kube-public"})
_NAMESPACES = GroupResource("", "namespaces")


def check_delete(record: ResourceRecord, name: str) -> None:
    """403 for deleting an immortal namespace (whether or not it exists, dry run or not)."""
    if record.group == "" and record.plural == "namespaces" and name in IMMORTAL_NAMESPACES:
        raise errors.Forbidden(
            f'{_NAMESPACES} "{name}" is forbidden: this namespace may not be deleted',
            details={"name": name, "kind": "namespaces"},
        )


async def check_namespace_open(store: storage.Storage, namespace: str) -> None:
    """404 when ``namespace`` does not exist, 403 when it is being terminated."""
    try:
        ns = await store.get(f"/registry/core/namespaces/{namespace}")
    except storage.KeyNotFound:
        raise errors.not_found(_NAMESPACES, namespace) from None
    if (ns.get("metadata") or {}).get("deletionTimestamp") or (ns.get("status") or {}).get(
        "phase"
    ) == "Terminating":
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
