"""Group ``apps``: Deployments, ReplicaSets, StatefulSets, DaemonSets (kubernetes
``pkg/apis/apps/validation/validation.go``, 1.32): replicas, a required non-empty selector that
matches the template's labels, ``restartPolicy: Always`` templates, immutable selectors.
"""

from __future__ import annotations

from kplane.api import errors, labels
from kplane.api.validation import template
from kplane.api.validation.field import Errs, GoMap, GoSelector, Object, d, nonnegative


def _selector(spec: Object, what: str, errs: Errs) -> labels.Selector:
    """The workload's selector checks; returns the selector (nothing matches a missing one)."""
    raw = spec.get("selector")
    if not isinstance(raw, dict):
        errs.append(errors.required("spec.selector"))
        return labels.Selector.nothing()
    if not raw.get("matchLabels") and not raw.get("matchExpressions"):
        errs.append(errors.invalid("spec.selector", GoSelector(raw), f"empty selector is invalid for {what}"))
    try:
        return labels.from_label_selector(raw)
    except ValueError:
        return labels.Selector.nothing()


def template_for(spec: Object, selector: labels.Selector, errs: Errs, allowed: list[str]) -> None:
    """``ValidatePodTemplateSpecForReplicaSet`` and its kin: labels match, pod spec valid, policy."""
    tmpl = spec.get("template")
    if not isinstance(tmpl, dict):
        errs.append(errors.required("spec.template"))
        return
    tlabels = d(d(tmpl.get("metadata")).get("labels"))
    if not selector.empty and not selector.matches(tlabels):
        errs.append(
            errors.invalid(
                "spec.template.metadata.labels",
                GoMap(d(tmpl.get("metadata")).get("labels")),
                "`selector` does not match template `labels`",
            )
        )
    errs.extend(template.validate(tmpl, "spec.template"))
    tspec = d(tmpl.get("spec"))
    policy = tspec.get("restartPolicy")
    if policy not in allowed:
        errs.append(errors.not_supported("spec.template.spec.restartPolicy", policy, allowed))
    if (
        "activeDeadlineSeconds" in tspec
        and tspec["activeDeadlineSeconds"] is not None
        and allowed == ["Always"]
    ):
        errs.append(
            errors.forbidden(
                "spec.template.spec.activeDeadlineSeconds",
                "activeDeadlineSeconds in ReplicaSet is not Supported",
            )
        )


def _workload(what: str, obj: Object, old: Object | None) -> Errs:
    spec = d(obj.get("spec"))
    errs: Errs = []
    if what != "daemonset":
        errs.extend(nonnegative(spec, "replicas", "spec.replicas"))
    selector = _selector(spec, what, errs)
    template_for(spec, selector, errs, ["Always"])
    errs.extend(nonnegative(spec, "minReadySeconds", "spec.minReadySeconds"))
    errs.extend(nonnegative(spec, "revisionHistoryLimit", "spec.revisionHistoryLimit"))
    if what == "deployment":
        deadline, ready = spec.get("progressDeadlineSeconds"), spec.get("minReadySeconds") or 0
        if type(deadline) is int and type(ready) is int and deadline >= 0 and deadline <= ready:
            errs.append(
                errors.invalid(
                    "spec.progressDeadlineSeconds", deadline, "must be greater than minReadySeconds"
                )
            )
    if old is not None:
        errs.extend(immutable_selector(spec, d(old.get("spec"))))
    return errs


def immutable_selector(spec: Object, old: Object) -> Errs:
    if spec.get("selector") != old.get("selector"):
        return [errors.invalid("spec.selector", GoSelector(spec.get("selector")), "field is immutable")]
    return []


_STS_MUTABLE = frozenset(
    (
        "replicas",
        "ordinals",
        "template",
        "updateStrategy",
        "persistentVolumeClaimRetentionPolicy",
        "minReadySeconds",
    )
)


def deployment(obj: Object, old: Object | None) -> Errs:
    return _workload("deployment", obj, old)


def replica_set(obj: Object, old: Object | None) -> Errs:
    return _workload("replicaset", obj, old)


def daemon_set(obj: Object, old: Object | None) -> Errs:
    return _workload("daemonset", obj, old)


def stateful_set(obj: Object, old: Object | None) -> Errs:
    spec = d(obj.get("spec"))
    errs: Errs = []
    errs.extend(nonnegative(spec, "replicas", "spec.replicas"))
    selector = _selector(spec, "statefulset", errs)
    template_for(spec, selector, errs, ["Always"])
    if old is not None:
        old_spec = d(old.get("spec"))
        keys = (set(spec) | set(old_spec)) - _STS_MUTABLE
        if any(spec.get(k) != old_spec.get(k) for k in keys):
            errs.append(
                errors.forbidden(
                    "spec",
                    "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', "
                    "'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' "
                    "are forbidden",
                )
            )
    return errs
