"""The PVC and PV protection controllers, as upstream's ``pkg/controller/volume/pvcprotection`` and
``pvprotection``: they remove the finalizers the StorageObjectInUseProtection admission plugin adds.

A PersistentVolumeClaim being deleted keeps ``kubernetes.io/pvc-protection`` while a scheduled pod
(``spec.nodeName`` set) of its namespace names it in a ``persistentVolumeClaim`` volume; the pods are
listed from the server, not the cache, before the finalizer goes (upstream asks the API server too),
and any pod event requeues the claims it names. A PersistentVolume being deleted keeps
``kubernetes.io/pv-protection`` while its phase is ``Bound``. The finalizer is removed with an update
(the controllers' roles grant ``update``, not ``patch``) carrying the object's resourceVersion, so a
concurrent change is never overwritten.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kplane import runtime
from kplane.api import errors
from kplane.client import dynamic
from kplane.controllers import workload
from kplane.controllers.workload import Object, meta

PVCS = dynamic.Resource("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", namespaced=True)
PVS = dynamic.Resource("", "v1", "persistentvolumes", "PersistentVolume", namespaced=False)
PVC_FINALIZER = "kubernetes.io/pvc-protection"
PV_FINALIZER = "kubernetes.io/pv-protection"


def claims_of(pod: Object) -> list[str]:
    """The claim names ``pod`` mounts (``persistentVolumeClaim`` volumes)."""
    volumes = (pod.get("spec") or {}).get("volumes") or []
    names = []
    for volume in volumes if isinstance(volumes, list) else ():
        source = volume.get("persistentVolumeClaim") if isinstance(volume, dict) else None
        name = source.get("claimName") if isinstance(source, dict) else None
        if isinstance(name, str) and name:
            names.append(name)
    return names


def uses(pod: Object, claim: str) -> bool:
    """Whether ``pod`` holds ``claim`` (only a scheduled pod can: upstream's ``podUsesPVC``)."""
    return bool((pod.get("spec") or {}).get("nodeName")) and claim in claims_of(pod)


async def _drop_finalizer(resource: Any, obj: Object, finalizer: str) -> None:
    finalizers = [f for f in meta(obj).get("finalizers") or () if f != finalizer]
    body = {**obj, "metadata": {**meta(obj), "finalizers": finalizers or None}}
    namespace = meta(obj).get("namespace")
    try:
        await resource.update(body, namespace=namespace or None)
    except errors.NotFound:
        pass


class PVCProtectionController:
    """Removes ``kubernetes.io/pvc-protection`` from deleted claims no scheduled pod uses."""

    def __init__(self, manager: runtime.Manager) -> None:
        self.manager = manager
        self.claims = manager.api.dynamic.resource(PVCS)
        self.pods = manager.api.dynamic.resource(workload.PODS)

    async def setup(self) -> runtime.Controller:
        def claims_of_pod(pod: Object) -> Iterable[runtime.Request]:
            namespace = meta(pod).get("namespace", "")
            return [runtime.Request(namespace, name) for name in claims_of(pod)]

        return await (
            runtime.Builder(self.manager)
            .for_(PVCS)
            .watches(workload.PODS, claims_of_pod)
            .named("pvc-protection")
            .complete(self)
        )

    async def reconcile(self, request: runtime.Request) -> runtime.Result | None:
        try:
            claim = await self.manager.client.get(PVCS, request.name, request.namespace)
        except errors.NotFound:
            return None
        if not meta(claim).get("deletionTimestamp") or PVC_FINALIZER not in (
            meta(claim).get("finalizers") or ()
        ):
            return None
        listed = await self.pods.list(namespace=request.namespace)
        if any(uses(pod, request.name) for pod in listed["items"]):
            return None  # a pod event requeues the claim
        try:
            await _drop_finalizer(self.claims, claim, PVC_FINALIZER)
        except errors.Conflict:
            return runtime.Result(requeue=True)
        return None


class PVProtectionController:
    """Removes ``kubernetes.io/pv-protection`` from deleted volumes that are not Bound."""

    def __init__(self, manager: runtime.Manager) -> None:
        self.manager = manager
        self.volumes = manager.api.dynamic.resource(PVS)

    async def setup(self) -> runtime.Controller:
        return await runtime.Builder(self.manager).for_(PVS).named("pv-protection").complete(self)

    async def reconcile(self, request: runtime.Request) -> runtime.Result | None:
        try:
            volume = await self.manager.client.get(PVS, request.name)
        except errors.NotFound:
            return None
        deleting = meta(volume).get("deletionTimestamp")
        if not deleting or PV_FINALIZER not in (meta(volume).get("finalizers") or ()):
            return None
        if (volume.get("status") or {}).get("phase") == "Bound":
            return None
        try:
            await _drop_finalizer(self.volumes, volume, PV_FINALIZER)
        except errors.Conflict:
            return runtime.Result(requeue=True)
        return None
