"""The admission chain's plugin selection: upstream's order and default-on set, the two flags."""

from __future__ import annotations

import pytest

from kplane.server.admission import chain


def test_default_chain_is_upstreams_order() -> None:
    """With no flags, every default-on plugin runs, in kube-apiserver 1.32's order."""
    names = chain.enabled()
    assert names[:3] == ["NamespaceLifecycle", "LimitRanger", "ServiceAccount"]
    assert names[-1] == "ResourceQuota"
    assert names.index("PodSecurity") < names.index("Priority") < names.index("DefaultTolerationSeconds")
    assert names.index("MutatingAdmissionWebhook") < names.index("ValidatingAdmissionPolicy")


def test_flag_order_is_irrelevant_and_lists_are_comma_separated() -> None:
    """Enabling adds (in the fixed order), disabling removes; spaces and empty items are ignored."""
    names = chain.enabled(["AlwaysPullImages, NodeRestriction"], ["ServiceAccount,,Priority"])
    assert "ServiceAccount" not in names and "Priority" not in names
    assert names[-2:] == ["AlwaysPullImages", "NodeRestriction"]


def test_unknown_plugin_is_refused() -> None:
    """A name kube-apiserver does not know stops the server from starting."""
    with pytest.raises(chain.UnknownPlugin, match="Bogus"):
        chain.enabled(["Bogus"])


def test_plugins_naming_their_resources_are_called_for_those_only() -> None:
    """A plugin that names its resources is skipped for others; one that names none runs for all.
    Each plugin naming resources says it mutates none outside them."""
    from kplane.server.admission import plugin, tolerations

    pods_only = tolerations.DefaultTolerationSeconds()
    assert chain._acts_on(pods_only, ("", "pods"))
    assert not chain._acts_on(pods_only, ("", "configmaps"))
    assert chain._acts_on(plugin.Base(), ("example.com", "widgets"))
    from kplane.server.admission import (
        defaultclass,
        limitranger,
        priority,
        runtimeclass,
        serviceaccount,
        storageprotection,
    )

    classes = [
        serviceaccount.ServiceAccount,
        priority.Priority,
        runtimeclass.RuntimeClass,
        defaultclass.DefaultStorageClass,
        defaultclass.DefaultIngressClass,
        storageprotection.StorageObjectInUseProtection,
        limitranger.LimitRanger,
        tolerations.DefaultTolerationSeconds,
        tolerations.TaintNodesByCondition,
    ]
    samples = [
        ("", "pods"),
        ("", "nodes"),
        ("", "configmaps"),
        ("", "persistentvolumeclaims"),
        ("", "persistentvolumes"),
        ("networking.k8s.io", "ingresses"),
        ("apps", "deployments"),
    ]
    for cls in classes:
        assert cls.resources, cls.__name__
        instance = object.__new__(cls)  # mutates() reads no state
        for key in samples:
            if instance.mutates(*key):
                assert key in cls.resources, (cls.__name__, key)
