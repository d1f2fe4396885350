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
