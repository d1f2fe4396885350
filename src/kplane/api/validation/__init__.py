"""Upstream's hand-written validation of built-in kinds: the rules a schema cannot express.

``validate(group, kind, obj, old)`` returns the field errors of a create (``old`` None) or an
update, in the order kube-apiserver produces them, for the registry to aggregate into one 422. One
module per API group, one entry per kind in ``VALIDATORS``; kinds without an entry have no rules
here. Pure functions of the (defaulted) object: no I/O, regexes compiled at import. Metadata rules
(names, labels, annotations, finalizers, owner references) are the registry's ``objectmeta``.
"""

from __future__ import annotations

from collections.abc import Callable

from kplane.api import errors
from kplane.api.validation import admissionpolicy, admissionregistration, apps, batch, core
from kplane.api.validation.field import Errs, Object

Validator = Callable[[Object, "Object | None"], Errs]

VALIDATORS: dict[tuple[str, str], Validator] = {
    ("", "Pod"): core.pod,
    ("", "ConfigMap"): core.config_map,
    ("", "Secret"): core.secret,
    ("", "PersistentVolumeClaim"): core.pvc,
    ("apps", "Deployment"): apps.deployment,
    ("apps", "ReplicaSet"): apps.replica_set,
    ("apps", "StatefulSet"): apps.stateful_set,
    ("apps", "DaemonSet"): apps.daemon_set,
    ("batch", "Job"): batch.job,
    ("batch", "CronJob"): batch.cron_job,
    ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"): (
        admissionregistration.mutating_webhook_configuration
    ),
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"): (
        admissionregistration.validating_webhook_configuration
    ),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"): admissionpolicy.policy,
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"): admissionpolicy.binding,
}


def validate(group: str, kind: str, obj: Object, old: Object | None) -> list[errors.FieldError]:
    """The built-in rules of ``group``/``kind`` for ``obj`` (``old`` on update); [] when none apply."""
    check = VALIDATORS.get((group, kind))
    return check(obj, old) if check is not None else []
