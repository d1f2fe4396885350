"""Upstream's webhook predicates (apiserver pkg/admission/plugin/webhook/predicates, 1.32)."""

from __future__ import annotations

import pytest

from kplane.api import labels
from kplane.api.builtin.records import builtin_catalog
from kplane.server.admission import matching


def _req(op: str = "CREATE", group: str = "", version: str = "v1", resource: str = "pods",
         sub: str = "", ns: str = "default") -> matching.Request:  # fmt: skip
    return matching.Request(op, group, version, resource, sub, ns)


RULE = {"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}


@pytest.mark.parametrize(
    ("rule", "req", "expected"),
    [
        (RULE, _req(), True),
        (RULE, _req(op="UPDATE"), False),
        (RULE, _req(sub="status"), False),
        ({**RULE, "resources": ["pods/*"]}, _req(sub="status"), True),
        ({**RULE, "resources": ["pods/*"]}, _req(), True),  # "*" matches the empty subresource too
        ({**RULE, "resources": ["*/status"]}, _req(sub="status"), True),
        ({**RULE, "resources": ["*"]}, _req(sub="status"), False),
        ({**RULE, "resources": ["*/*"]}, _req(sub="status"), True),
        (
            {**RULE, "apiGroups": ["*"], "apiVersions": ["*"], "operations": ["*"]},
            _req(op="DELETE", group="apps"),
            True,
        ),
        ({**RULE, "scope": "Cluster"}, _req(), False),
        ({**RULE, "scope": "Namespaced"}, _req(), True),
        (
            {**RULE, "resources": ["namespaces"], "scope": "Namespaced"},
            _req(resource="namespaces", ns="x"),
            False,
        ),
        (
            {**RULE, "resources": ["namespaces"], "scope": "Cluster"},
            _req(resource="namespaces", ns="x"),
            True,
        ),
        ({**RULE, "resources": ["nodes"], "scope": "Namespaced"}, _req(resource="nodes", ns=""), False),
    ],
    ids=lambda v: "" if not isinstance(v, bool) else str(v),
)
def test_rule_matches(rule: dict[str, object], req: matching.Request, expected: bool) -> None:
    """Operations, groups, versions, resource/subresource patterns and scope, as rules.Matcher."""
    assert matching.Rule.parse(rule).matches(req) is expected


def test_object_selector_matches_old_or_new() -> None:
    """The object selector matches when either the new or the old object's labels match."""
    sel = matching.selector({"matchLabels": {"a": "b"}})
    labelled = {"metadata": {"labels": {"a": "b"}}}
    assert matching.selects_object(sel, labelled, None)
    assert matching.selects_object(sel, {"metadata": {}}, labelled)
    assert not matching.selects_object(sel, {"metadata": {}}, None)
    assert matching.selects_object(labels.Selector.everything(), None, None)


def test_namespace_labels_of_a_namespace_create_come_from_the_object() -> None:
    """A Namespace's own create is matched on the object's labels; others on the namespace's."""

    def lookup(name: str) -> dict[str, object] | None:
        return {"metadata": {"labels": {"team": "x"}}} if name == "ns1" else None

    obj = {"metadata": {"name": "n", "labels": {"team": "y"}}}
    common = {"group": "", "subresource": "", "operation": "CREATE"}
    assert matching.namespace_labels(lookup, resource="namespaces", namespace="", obj=obj, **common) == {
        "team": "y"
    }
    assert matching.namespace_labels(lookup, resource="pods", namespace="ns1", obj=obj, **common) == {
        "team": "x"
    }
    with pytest.raises(matching.NamespaceNotFound):
        matching.namespace_labels(lookup, resource="pods", namespace="gone", obj=obj, **common)


def test_equivalents_share_storage() -> None:
    """Events in core/v1 and events.k8s.io/v1 are one resource; HPA v1 and v2 too."""
    catalog = builtin_catalog()
    eq = matching.Equivalents(catalog)
    core_events = catalog.lookup("", "v1", "events")
    assert core_events is not None
    assert [r.api_version for r in eq.of(core_events)] == ["events.k8s.io/v1"]
    hpa = catalog.lookup("autoscaling", "v1", "horizontalpodautoscalers")
    assert hpa is not None
    assert [r.api_version for r in eq.of(hpa)] == ["autoscaling/v2"]


def test_admission_configuration_kinds_are_exempt() -> None:
    """Webhooks never see webhook configurations (rules.IsExemptAdmissionConfigurationResource)."""
    catalog = builtin_catalog()
    vwc = catalog.lookup("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations")
    pods = catalog.lookup("", "v1", "pods")
    assert vwc is not None and pods is not None
    assert matching.exempt(vwc) and not matching.exempt(pods)
