"""StorageObjectInUseProtection (kubernetes ``plugin/pkg/admission/storage/storageobjectinuseprotection``).

On CREATE of a PersistentVolumeClaim it adds the finalizer ``kubernetes.io/pvc-protection``, of a
PersistentVolume ``kubernetes.io/pv-protection``, unless already present (subresources are left
alone). The finalizers keep a claim in use by a pod, or a volume bound to a claim, from vanishing;
kube-controller-manager's protection controllers remove them. kplane has no such controllers yet,
so a deleted claim or volume stays Terminating until its finalizer is removed by hand (kubectl
patch), as on a cluster whose controller manager is down.
"""

from __future__ import annotations

from kplane.server.admission import plugin
from kplane.server.registry import admitting

NAME = "StorageObjectInUseProtection"
FINALIZERS = {
    "persistentvolumeclaims": "kubernetes.io/pvc-protection",
    "persistentvolumes": "kubernetes.io/pv-protection",
}


class StorageObjectInUseProtection(plugin.Base):
    name = NAME
    resources = frozenset(("", plural) for plural in FINALIZERS)

    def mutates(self, group: str, plural: str) -> bool:
        return group == "" and plural in FINALIZERS

    async def mutate(self, attrs: admitting.Attributes) -> None:
        record = attrs.record
        if attrs.operation != "CREATE" or attrs.subresource or attrs.obj is None or record.group != "":
            return
        finalizer = FINALIZERS.get(record.plural)
        meta = attrs.obj.get("metadata")
        if finalizer is None or not isinstance(meta, dict):
            return
        current = meta.get("finalizers")
        finalizers = [f for f in current if isinstance(f, str)] if isinstance(current, list) else []
        if finalizer not in finalizers:
            meta["finalizers"] = [*finalizers, finalizer]
