"""Per-namespace objects every namespace gets, as upstream's ``serviceaccounts-controller`` and
``root-ca-cert-publisher`` (reference/cluster.md §9).

* ``ServiceAccountsController``: the ServiceAccount ``default`` in every ``Active`` namespace,
  recreated when deleted. Pod admission looks it up, so it must appear as soon as the namespace does.
* ``RootCAPublisher``: the ConfigMap ``kube-root-ca.crt`` in every ``Active`` namespace with
  ``data["ca.crt"]`` = the API server's CA bundle (PEM) and upstream's description annotation;
  recreated when deleted and reverted when edited. The bundle is what the controllers' client
  trusts (``Config.ca_data`` or ``ca_file``), never read from the server's process.

Both are keyed by namespace name: a namespace event, or an event on the object they own in it,
enqueues that namespace. Nothing is written into a namespace that is terminating (upstream skips
non-Active namespaces; the server would refuse the create anyway).
"""

from __future__ import annotations

from pathlib import Path

from kplane import runtime
from kplane.api import errors
from kplane.client import config as config_mod
from kplane.client import dynamic
from kplane.controllers.workload import Object, meta

NAMESPACES = dynamic.Resource("", "v1", "namespaces", "Namespace", namespaced=False)
SERVICEACCOUNTS = dynamic.Resource("", "v1", "serviceaccounts", "ServiceAccount", namespaced=True)
CONFIGMAPS = dynamic.Resource("", "v1", "configmaps", "ConfigMap", namespaced=True)

DEFAULT_SA = "default"
ROOT_CA_CONFIGMAP = "kube-root-ca.crt"
ROOT_CA_KEY = "ca.crt"
DESCRIPTION_KEY = "kubernetes.io/description"
DESCRIPTION = (
    "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints"
    " such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across"
    " distributions of Kubernetes clusters."
)


def ca_bundle(config: config_mod.Config) -> str:
    """The PEM bundle ``config`` trusts for the API server ("" when it names none: insecure/plain HTTP)."""
    if config.ca_data:
        return config.ca_data.decode()
    if config.ca_file:
        return Path(config.ca_file).read_text()
    return ""


def _namespace_map(name: str) -> runtime.EnqueueRequestsFromMapFunc:
    def fn(obj: Object) -> list[runtime.Request]:
        m = meta(obj)
        if m.get("name") != name or not m.get("namespace"):
            return []
        return [runtime.Request("", m["namespace"])]

    return runtime.EnqueueRequestsFromMapFunc(fn)


def _terminating_create(err: errors.APIError) -> bool:
    """True when a create failed because the namespace is going away (or already gone)."""
    if isinstance(err, errors.NotFound):
        return True
    return any(c.reason == "NamespaceTerminating" for c in err.causes)


class _PerNamespace:
    """Reconciles one owned object per Active namespace (subclasses say which and with what content)."""

    resource: dynamic.Resource
    object_name: str
    controller_name: str

    def __init__(self, manager: runtime.Manager) -> None:
        self.manager = manager
        self.client = manager.client
        self.api = manager.api.dynamic.resource(self.resource)

    async def setup(self) -> runtime.Controller:
        """Build the controller (added to the manager by the builder)."""
        return await (
            runtime.Builder(self.manager)
            .for_(NAMESPACES)
            .watches(self.resource, _namespace_map(self.object_name))
            .named(self.controller_name)
            .complete(self)
        )

    async def reconcile(self, request: runtime.Request) -> runtime.Result | None:
        try:
            ns = await self.client.get(NAMESPACES, request.name)
        except errors.NotFound:
            return None
        if (ns.get("status") or {}).get("phase", "Active") != "Active" or meta(ns).get("deletionTimestamp"):
            return None
        try:
            current = await self.client.get(self.resource, self.object_name, request.name)
        except errors.NotFound:
            current = None
        await self.ensure(request.name, current)
        return None

    async def ensure(self, namespace: str, current: Object | None) -> None:
        raise NotImplementedError

    async def _create(self, namespace: str, obj: Object) -> None:
        try:
            await self.api.create(obj, namespace=namespace)
        except errors.AlreadyExists:
            return  # our cache is behind; the watch event brings us back
        except errors.APIError as err:
            if not _terminating_create(err):
                raise


class ServiceAccountsController(_PerNamespace):
    """Keeps the ServiceAccount ``default`` in every Active namespace."""

    resource = SERVICEACCOUNTS
    object_name = DEFAULT_SA
    controller_name = "serviceaccount"

    async def ensure(self, namespace: str, current: Object | None) -> None:
        if current is not None and not meta(current).get("deletionTimestamp"):
            return
        sa = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": DEFAULT_SA}}
        await self._create(namespace, sa)


class RootCAPublisher(_PerNamespace):
    """Keeps ``kube-root-ca.crt`` with the API server's CA bundle in every Active namespace."""

    resource = CONFIGMAPS
    object_name = ROOT_CA_CONFIGMAP
    controller_name = "root-ca-cert-publisher"

    def __init__(self, manager: runtime.Manager, *, bundle: str | None = None) -> None:
        super().__init__(manager)
        self.bundle = ca_bundle(manager.api.config) if bundle is None else bundle

    async def ensure(self, namespace: str, current: Object | None) -> None:
        data = {ROOT_CA_KEY: self.bundle}
        if current is None:
            cm = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": ROOT_CA_CONFIGMAP, "annotations": {DESCRIPTION_KEY: DESCRIPTION}},
                "data": data,
            }
            await self._create(namespace, cm)
            return
        annotations = meta(current).get("annotations") or {}
        if current.get("data") == data and annotations.get(DESCRIPTION_KEY) == DESCRIPTION:
            return
        # Revert edits (upstream's publisher replaces data and restores the annotation, keeping others).
        updated = {k: v for k, v in current.items() if k != "binaryData"}
        updated["data"] = data
        updated["metadata"] = {**meta(current), "annotations": {**annotations, DESCRIPTION_KEY: DESCRIPTION}}
        try:
            await self.api.update(updated, namespace=namespace)
        except (errors.Conflict, errors.NotFound):
            return  # a newer version is on its way to the cache: reconciled again then
