"""Table-driven: upstream's hand-written validation of built-in kinds (``kplane.api.validation``).

Each invalid object lists the causes kube-apiserver 1.32 returns (reason, field, message body) in
upstream's order; each valid one must produce none. Sources are named in ``cases.py`` and per table.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kplane.api import validation
from tests.unit.api.validation import cases
from tests.unit.api.validation.cases import LABEL, Obj

Cause = tuple[str, str, str]


def causes(group: str, kind: str, obj: Obj, old: Obj | None = None) -> list[Cause]:
    return [(e.type, e.field, e.body()) for e in validation.validate(group, kind, obj, old)]


POD_SPEC_INVALID = [
    pytest.param(kind, mutate, want, id=f"{kind}-{name}")
    for kind in cases.HOSTS
    for name, mutate, want in cases.POD_SPEC_INVALID
]
POD_SPEC_VALID = [
    pytest.param(kind, mutate, id=f"{kind}-{name}")
    for kind in cases.HOSTS
    for name, mutate in cases.POD_SPEC_VALID
]


@pytest.mark.parametrize(("kind", "mutate", "want"), POD_SPEC_INVALID)
def test_invalid_pod_spec(kind: str, mutate: cases.Mutate, want: list[Cause]) -> None:
    group, _, prefix = cases.HOSTS[kind]
    expected = [(reason, f"{prefix}.{path}", body) for reason, path, body in want]
    assert causes(group, kind, cases.embed(kind, mutate)) == expected


@pytest.mark.parametrize(("kind", "mutate"), POD_SPEC_VALID)
def test_valid_pod_spec(kind: str, mutate: cases.Mutate) -> None:
    group, _, _ = cases.HOSTS[kind]
    assert causes(group, kind, cases.embed(kind, mutate)) == []


def test_issue_example_three_causes() -> None:
    """The issue's Pod: container ``Bad_Name``, no image, restartPolicy ``Sometimes``."""
    pod = {"metadata": {"name": "p"}, "spec": cases.pod_spec(restartPolicy="Sometimes")}
    pod["spec"]["containers"][0].update(name="Bad_Name", image="")
    assert causes("", "Pod", pod) == [
        ("FieldValueInvalid", "spec.containers[0].name", f'Invalid value: "Bad_Name": {LABEL}'),
        ("FieldValueRequired", "spec.containers[0].image", "Required value"),
        (
            "FieldValueNotSupported",
            "spec.restartPolicy",
            'Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"',
        ),
    ]


def _workload(kind: str, **spec: Any) -> Obj:
    base = copy.deepcopy(cases.HOSTS[kind][1](cases.pod_spec()))
    base["spec"].update(spec)
    return base


_RS_POLICY = 'Unsupported value: "Never": supported values: "Always"'
_MISMATCH = "`selector` does not match template `labels`"
_NO_EXPRS = "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}"
_EMPTY_SEL = "v1.LabelSelector{MatchLabels:map[string]string(nil), " + _NO_EXPRS

# apps/validation (ValidateDeploymentSpec, ValidateReplicaSetSpec, ValidateStatefulSetSpec,
# ValidateDaemonSetSpec, ValidatePodTemplateSpecForReplicaSet).
APPS_INVALID = (
    [
        pytest.param(
            kind,
            {"selector": None},
            [
                ("FieldValueRequired", "spec.selector", "Required value"),
                (
                    "FieldValueInvalid",
                    "spec.template.metadata.labels",
                    f'Invalid value: map[string]string{{"app":"a"}}: {_MISMATCH}',
                ),
            ],
            id=f"{kind}-no-selector",
        )
        for kind in ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet")
    ]
    + [
        pytest.param(
            kind,
            {"selector": {}},
            [
                (
                    "FieldValueInvalid",
                    "spec.selector",
                    f"Invalid value: {_EMPTY_SEL}: empty selector is invalid for {what}",
                )
            ],
            id=f"{kind}-empty-selector",
        )
        for kind, what in (
            ("Deployment", "deployment"),
            ("ReplicaSet", "replicaset"),
            ("StatefulSet", "statefulset"),
            ("DaemonSet", "daemonset"),
        )
    ]
    + [
        pytest.param(
            kind,
            {"selector": {"matchLabels": {"app": "b"}}},
            [
                (
                    "FieldValueInvalid",
                    "spec.template.metadata.labels",
                    f'Invalid value: map[string]string{{"app":"a"}}: {_MISMATCH}',
                )
            ],
            id=f"{kind}-mismatch",
        )
        for kind in ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job")
    ]
    + [
        pytest.param(
            kind,
            {"replicas": -1},
            [("FieldValueInvalid", "spec.replicas", "Invalid value: -1: must be greater than or equal to 0")],
            id=f"{kind}-negative-replicas",
        )
        for kind in ("Deployment", "ReplicaSet", "StatefulSet")
    ]
    + [
        pytest.param(
            kind,
            {"minReadySeconds": -5},
            [
                (
                    "FieldValueInvalid",
                    "spec.minReadySeconds",
                    "Invalid value: -5: must be greater than or equal to 0",
                )
            ],
            id=f"{kind}-negative-min-ready",
        )
        for kind in ("Deployment", "ReplicaSet", "DaemonSet")
    ]
    + [
        pytest.param(
            "Deployment",
            {"progressDeadlineSeconds": 10, "minReadySeconds": 10},
            [
                (
                    "FieldValueInvalid",
                    "spec.progressDeadlineSeconds",
                    "Invalid value: 10: must be greater than minReadySeconds",
                )
            ],
            id="Deployment-progress-deadline",
        ),
        pytest.param(
            "Job",
            {"parallelism": -1},
            [
                (
                    "FieldValueInvalid",
                    "spec.parallelism",
                    "Invalid value: -1: must be greater than or equal to 0",
                )
            ],
            id="Job-negative-parallelism",
        ),
        pytest.param(
            "Job",
            {"backoffLimit": -1},
            [
                (
                    "FieldValueInvalid",
                    "spec.backoffLimit",
                    "Invalid value: -1: must be greater than or equal to 0",
                )
            ],
            id="Job-negative-backoff",
        ),
    ]
)


@pytest.mark.parametrize(("kind", "spec", "want"), APPS_INVALID)
def test_invalid_workload(kind: str, spec: Obj, want: list[Cause]) -> None:
    obj = _workload(kind, **spec)
    if obj["spec"].get("selector") is None:
        obj["spec"].pop("selector", None)
    assert causes(cases.HOSTS[kind][0], kind, obj) == want


@pytest.mark.parametrize("kind", ["Deployment", "ReplicaSet", "StatefulSet", "DaemonSet"])
@pytest.mark.parametrize("policy", ["Never", "OnFailure"])
def test_workload_template_restart_policy(kind: str, policy: str) -> None:
    obj = _workload(kind)
    obj["spec"]["template"]["spec"]["restartPolicy"] = policy
    want = f'Unsupported value: "{policy}": supported values: "Always"'
    assert causes("apps", kind, obj) == [("FieldValueNotSupported", "spec.template.spec.restartPolicy", want)]
    assert _RS_POLICY.replace("Never", policy) == want


@pytest.mark.parametrize("kind", ["Job", "CronJob"])
def test_job_template_restart_always(kind: str) -> None:
    """batch/validation: the defaulted ``Always`` is what makes the Required fire."""
    obj = _workload(kind)
    tmpl = obj["spec"]["jobTemplate"]["spec"]["template"] if kind == "CronJob" else obj["spec"]["template"]
    tmpl["spec"]["restartPolicy"] = "Always"
    prefix = "spec.jobTemplate.spec" if kind == "CronJob" else "spec"
    assert causes("batch", kind, obj) == [
        (
            "FieldValueRequired",
            f"{prefix}.template.spec.restartPolicy",
            'Required value: valid values: "OnFailure", "Never"',
        )
    ]


def test_workload_template_restart_unknown_twice() -> None:
    """An unknown policy fails ValidatePodSpec and then the ReplicaSet rule: two causes upstream."""
    obj = _workload("Deployment")
    obj["spec"]["template"]["spec"]["restartPolicy"] = "Sometimes"
    assert causes("apps", "Deployment", obj) == [
        (
            "FieldValueNotSupported",
            "spec.template.spec.restartPolicy",
            'Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"',
        ),
        (
            "FieldValueNotSupported",
            "spec.template.spec.restartPolicy",
            'Unsupported value: "Sometimes": supported values: "Always"',
        ),
    ]


@pytest.mark.parametrize("kind", ["Deployment", "ReplicaSet", "DaemonSet", "StatefulSet"])
def test_selector_immutable(kind: str) -> None:
    old = _workload(kind)
    new = _workload(kind, selector={"matchLabels": {"app": "a", "tier": "x"}})
    new["spec"]["template"]["metadata"]["labels"]["tier"] = "x"
    got = causes("apps", kind, new, old)
    shown = 'v1.LabelSelector{MatchLabels:map[string]string{"app":"a", "tier":"x"}, ' + _NO_EXPRS
    if kind == "StatefulSet":
        assert got[0][:2] == ("FieldValueForbidden", "spec")
    else:
        assert got == [("FieldValueInvalid", "spec.selector", f"Invalid value: {shown}: field is immutable")]


@pytest.mark.parametrize("kind", ["Deployment", "ReplicaSet", "DaemonSet", "StatefulSet", "Job"])
def test_workload_update_keeping_selector(kind: str) -> None:
    old = _workload(kind)
    new = copy.deepcopy(old)
    new["spec"]["template"]["metadata"]["labels"]["extra"] = "y"
    if kind == "Job":
        assert causes("batch", kind, new, old) == [
            (
                "FieldValueInvalid",
                "spec.template",
                "Invalid value: core.PodTemplateSpec{...}: field is immutable",
            )
        ]
    else:
        assert causes("apps", kind, new, old) == []


@pytest.mark.parametrize(
    ("spec", "want"),
    [
        ({"schedule": ""}, [("FieldValueRequired", "spec.schedule", "Required value")]),
        (
            {"concurrencyPolicy": "X"},
            [
                (
                    "FieldValueNotSupported",
                    "spec.concurrencyPolicy",
                    'Unsupported value: "X": supported values: "Allow", "Forbid", "Replace"',
                )
            ],
        ),
        (
            {"startingDeadlineSeconds": -1},
            [
                (
                    "FieldValueInvalid",
                    "spec.startingDeadlineSeconds",
                    "Invalid value: -1: must be greater than or equal to 0",
                )
            ],
        ),
    ],
)
def test_invalid_cron_job(spec: Obj, want: list[Cause]) -> None:
    assert causes("batch", "CronJob", _workload("CronJob", **spec)) == want


def test_cron_job_name_length() -> None:
    obj = _workload("CronJob")
    obj["metadata"]["name"] = "a" * 53
    assert causes("batch", "CronJob", obj) == [
        (
            "FieldValueInvalid",
            "metadata.name",
            f'Invalid value: "{"a" * 53}": must be no more than 52 characters',
        )
    ]
    obj["metadata"]["name"] = "a" * 52
    assert causes("batch", "CronJob", obj) == []
