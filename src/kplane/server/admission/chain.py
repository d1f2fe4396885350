"""The admission chain: upstream's plugin order, the default-on set, and the two passes.

Execution order is fixed (``ORDER``, kube-apiserver 1.32's), whatever the order of the flags.
``--enable-admission-plugins`` adds to the default-on set, ``--disable-admission-plugins``
removes from it; an unknown name is refused at start-up, as upstream. Plugins kplane does not
implement (the certificate plugins, admission policies until built) are accepted by name and do
nothing, so the order has their slots.

The first pass calls every enabled plugin's ``mutate`` in order, the second every ``validate``;
the first refusal ends the request.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable

from kplane.api.catalog import ResourceRecord
from kplane.server.admission import (
    defaultclass,
    limitranger,
    mutatingwebhook,
    namespacelifecycle,
    plugin,
    podsecurity,
    priority,
    resourcequota,
    runtimeclass,
    serviceaccount,
    storageprotection,
    tolerations,
    validatingpolicy,
    validatingwebhook,
)
from kplane.server.registry import admitting

ORDER: tuple[str, ...] = (
    "NamespaceLifecycle",
    "LimitRanger",
    "ServiceAccount",
    "TaintNodesByCondition",
    "PodSecurity",
    "Priority",
    "DefaultTolerationSeconds",
    "DefaultStorageClass",
    "StorageObjectInUseProtection",
    "PersistentVolumeClaimResize",
    "RuntimeClass",
    "CertificateApproval",
    "CertificateSigning",
    "ClusterTrustBundleAttest",
    "CertificateSubjectRestriction",
    "DefaultIngressClass",
    "MutatingAdmissionPolicy",
    "MutatingAdmissionWebhook",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionWebhook",
    "ResourceQuota",
)
DEFAULT_ON = frozenset(ORDER)
OFF_BY_DEFAULT = (
    "AlwaysAdmit",
    "AlwaysDeny",
    "AlwaysPullImages",
    "DenyServiceExternalIPs",
    "EventRateLimit",
    "ExtendedResourceToleration",
    "ImagePolicyWebhook",
    "LimitPodHardAntiAffinityTopology",
    "NamespaceAutoProvision",
    "NamespaceExists",
    "NodeRestriction",
    "OwnerReferencesPermissionEnforcement",
    "PodNodeSelector",
    "PodTolerationRestriction",
)
KNOWN = frozenset(ORDER) | frozenset(OFF_BY_DEFAULT)

Factory = Callable[[plugin.Context], plugin.Plugin]
IMPLEMENTED: dict[str, Factory] = {
    namespacelifecycle.NAME: namespacelifecycle.NamespaceLifecycle,
    serviceaccount.NAME: serviceaccount.ServiceAccount,
    tolerations.TAINT_NODES_BY_CONDITION: lambda ctx: tolerations.TaintNodesByCondition(),
    priority.NAME: priority.Priority,
    tolerations.DEFAULT_TOLERATION_SECONDS: lambda ctx: tolerations.DefaultTolerationSeconds(),
    resourcequota.NAME: resourcequota.ResourceQuota,
    podsecurity.NAME: podsecurity.PodSecurity,
    defaultclass.DEFAULT_STORAGE_CLASS: defaultclass.DefaultStorageClass,
    defaultclass.DEFAULT_INGRESS_CLASS: defaultclass.DefaultIngressClass,
    runtimeclass.NAME: runtimeclass.RuntimeClass,
    limitranger.NAME: limitranger.LimitRanger,
    storageprotection.NAME: lambda ctx: storageprotection.StorageObjectInUseProtection(),
    mutatingwebhook.NAME: lambda ctx: mutatingwebhook.MutatingWebhook(ctx, ctx.webhooks()),
    validatingwebhook.NAME: lambda ctx: validatingwebhook.ValidatingWebhook(ctx, ctx.webhooks()),
    validatingpolicy.NAME: validatingpolicy.ValidatingAdmissionPolicy,
}


def _acts_on(p: plugin.Plugin, key: tuple[str, str]) -> bool:
    resources = getattr(p, "resources", None)
    return resources is None or key in resources


Admit = Callable[[admitting.Attributes], Awaitable[None] | None]


async def _run_on(
    attrs: admitting.Attributes, admits: list[Admit], index: int, pending: Awaitable[None]
) -> None:
    """The rest of a pass, from ``admits[index]``, whose call returned ``pending``."""
    await pending
    for admit in admits[index + 1 :]:
        more = admit(attrs)
        if more is not None:
            await more


async def _mutate_on(
    attrs: admitting.Attributes, mutators: list[Admit], index: int, pending: Awaitable[None]
) -> None:
    await _run_on(attrs, mutators, index, pending)
    again = _reinvoked(attrs, mutators)
    if again is not None:
        await again


def _reinvoked(attrs: admitting.Attributes, mutators: list[Admit]) -> Awaitable[None] | None:
    """Upstream's reinvocation (admission/reinvocation.go): the whole mutating pass once more,
    when a plugin of the first round asked for it."""
    again = attrs.reinvocation
    if again is None or not again.requested or again.round != 0:
        return None
    again.round = 1
    for i, admit in enumerate(mutators):
        pending = admit(attrs)
        if pending is not None:
            return _run_on(attrs, mutators, i, pending)
    return None


class UnknownPlugin(ValueError):
    pass


def _names(text: Iterable[str]) -> list[str]:
    return [n.strip() for part in text for n in part.split(",") if n.strip()]


def enabled(enable: Iterable[str] = (), disable: Iterable[str] = ()) -> list[str]:
    """The enabled plugin names in execution order, from the two flags' comma lists."""
    on, off = _names(enable), _names(disable)
    unknown = sorted({n for n in on + off if n not in KNOWN})
    if unknown:
        raise UnknownPlugin(f"{', '.join(unknown)} are not valid admission plugins")
    chosen = (DEFAULT_ON | set(on)) - set(off)
    return [n for n in (*ORDER, *OFF_BY_DEFAULT) if n in chosen]


def build(names: Iterable[str], ctx: plugin.Context) -> admitting.Admission:
    """The registry's admission callbacks running ``names`` (in the order given)."""
    plugins = [IMPLEMENTED[n](ctx) for n in names if n in IMPLEMENTED]
    if not plugins:
        return admitting.NONE
    # Each pass calls only the plugins that implement it and may act on the request's resource
    # (``Base.resources``): every write pays for these calls.
    with_mutate = [p for p in plugins if type(p).mutate is not plugin.Base.mutate]
    with_validate = [p for p in plugins if type(p).validate is not plugin.Base.validate]
    passes: dict[tuple[str, str], tuple[list[Admit], list[Admit]]] = {}

    def for_resource(record: ResourceRecord) -> tuple[list[Admit], list[Admit]]:
        key = (record.group, record.plural)
        found = passes.get(key)
        if found is None:
            found = passes[key] = (
                [p.mutate for p in with_mutate if _acts_on(p, key)],
                [p.validate for p in with_validate if _acts_on(p, key)],
            )
        return found

    def mutate(attrs: admitting.Attributes) -> Awaitable[None] | None:
        mutators = for_resource(attrs.record)[0]
        for i, admit in enumerate(mutators):
            pending = admit(attrs)
            if pending is not None:
                return _mutate_on(attrs, mutators, i, pending)
        return None if attrs.reinvocation is None else _reinvoked(attrs, mutators)

    def validate(attrs: admitting.Attributes) -> Awaitable[None] | None:
        validators = for_resource(attrs.record)[1]
        for i, admit in enumerate(validators):
            pending = admit(attrs)
            if pending is not None:
                return _run_on(attrs, validators, i, pending)
        return None

    memo: dict[tuple[str, str], bool] = {}
    # Plugins driven by stored configurations (webhooks) answer afresh each time.
    dynamic = [p for p in plugins if getattr(p, "dynamic", False)]
    static = [p for p in plugins if not getattr(p, "dynamic", False)]

    def mutating(group: str, resource: str) -> bool:
        known = memo.get((group, resource))
        if known is None:
            known = memo[(group, resource)] = any(p.mutates(group, resource) for p in static)
        return known or any(p.mutates(group, resource) for p in dynamic)

    return admitting.Admission(mutate=mutate, validate=validate, mutating=mutating)
