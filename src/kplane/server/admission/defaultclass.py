"""DefaultStorageClass and DefaultIngressClass (kubernetes ``plugin/pkg/admission/storage/
storageclass/setdefault`` and ``network/defaultingressclass``): a claim or Ingress created without a
class gets the cluster's default one.

A PersistentVolumeClaim without ``spec.storageClassName`` (an explicit ``""`` counts as set) and
without the beta annotation ``volume.beta.kubernetes.io/storage-class`` gets the StorageClass
annotated ``storageclass.kubernetes.io/is-default-class: "true"``; an Ingress without
``spec.ingressClassName`` and without the ``kubernetes.io/ingress.class`` annotation gets the
IngressClass annotated ``ingressclass.kubernetes.io/is-default-class: "true"``. Several defaults: the
newest wins (ties by name); none: the object is left as it is.
"""

from __future__ import annotations

from kplane.server.admission import plugin
from kplane.server.registry import admitting

DEFAULT_STORAGE_CLASS = "DefaultStorageClass"
DEFAULT_INGRESS_CLASS = "DefaultIngressClass"


async def _default_name(ctx: plugin.Context, group: str, plural: str, annotation: str) -> str | None:
    classes = [
        c
        for c in await ctx.list(ctx.record(group, "v1", plural))
        if plugin.as_dict(plugin.as_dict(c.get("metadata")).get("annotations")).get(annotation) == "true"
    ]
    if not classes:
        return None

    # newest first (RFC 3339 UTC timestamps sort as strings), ties by name: two stable sorts
    classes.sort(key=lambda c: str(c["metadata"].get("name")))
    classes.sort(key=lambda c: str(c["metadata"].get("creationTimestamp") or ""), reverse=True)
    return str(classes[0]["metadata"]["name"])


class DefaultStorageClass(plugin.Base):
    name = DEFAULT_STORAGE_CLASS
    resources = frozenset({("", "persistentvolumeclaims")})

    def __init__(self, ctx: plugin.Context) -> None:
        self.ctx = ctx

    def mutates(self, group: str, plural: str) -> bool:
        return group == "" and plural == "persistentvolumeclaims"

    async def mutate(self, attrs: admitting.Attributes) -> None:
        record = attrs.record
        if attrs.operation != "CREATE" or record.group or record.plural != "persistentvolumeclaims":
            return
        if attrs.subresource or attrs.obj is None:
            return
        spec = attrs.obj.get("spec")
        annotations = plugin.as_dict(plugin.as_dict(attrs.obj.get("metadata")).get("annotations"))
        if not isinstance(spec, dict) or "storageClassName" in spec:
            return
        if "volume.beta.kubernetes.io/storage-class" in annotations:
            return
        found = await _default_name(
            self.ctx, "storage.k8s.io", "storageclasses", "storageclass.kubernetes.io/is-default-class"
        )
        if found is not None:
            spec["storageClassName"] = found


class DefaultIngressClass(plugin.Base):
    name = DEFAULT_INGRESS_CLASS
    resources = frozenset({("networking.k8s.io", "ingresses")})

    def __init__(self, ctx: plugin.Context) -> None:
        self.ctx = ctx

    def mutates(self, group: str, plural: str) -> bool:
        return group == "networking.k8s.io" and plural == "ingresses"

    async def mutate(self, attrs: admitting.Attributes) -> None:
        record = attrs.record
        if attrs.operation != "CREATE" or record.group != "networking.k8s.io" or record.plural != "ingresses":
            return
        if attrs.subresource or attrs.obj is None:
            return
        spec = attrs.obj.get("spec")
        annotations = plugin.as_dict(plugin.as_dict(attrs.obj.get("metadata")).get("annotations"))
        if spec is None:
            spec = attrs.obj["spec"] = {}
        if not isinstance(spec, dict) or spec.get("ingressClassName") is not None:
            return
        if "kubernetes.io/ingress.class" in annotations:
            return
        found = await _default_name(
            self.ctx, "networking.k8s.io", "ingressclasses", "ingressclass.kubernetes.io/is-default-class"
        )
        if found is not None:
            spec["ingressClassName"] = found
