"""Table-driven: ConfigMaps, Secrets, PVCs and Pod updates (kubernetes
``pkg/apis/core/validation/validation.go``: ValidateConfigMap(Update), ValidateSecret(Update),
ValidatePersistentVolumeClaim(Update), ValidatePodUpdate), causes as kube-apiserver 1.32 gives them."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kplane.api import validation
from tests.unit.api.validation import cases
from tests.unit.api.validation.cases import CONFIG_KEY, Obj

Cause = tuple[str, str, str]
MIB = 1024 * 1024
FROZEN = "Forbidden: field is immutable when `immutable` is set"


def causes(kind: str, obj: Obj, old: Obj | None = None) -> list[Cause]:
    return [(e.type, e.field, e.body()) for e in validation.validate("", kind, obj, old)]


def cm(**kw: Any) -> Obj:
    return {"metadata": {"name": "c"}, **kw}


def secret(**kw: Any) -> Obj:
    return {"metadata": {"name": "s"}, "type": "Opaque", **kw}


@pytest.mark.parametrize(
    ("obj", "want"),
    [
        pytest.param(
            cm(data={"a b": "x"}),
            [("FieldValueInvalid", "data[a b]", f'Invalid value: "a b": {CONFIG_KEY}')],
            id="space",
        ),
        pytest.param(
            cm(data={"a/b": "x"}),
            [("FieldValueInvalid", "data[a/b]", f'Invalid value: "a/b": {CONFIG_KEY}')],
            id="slash",
        ),
        pytest.param(
            cm(data={"..": "x"}),
            [("FieldValueInvalid", "data[..]", "Invalid value: \"..\": must not be '..'")],
            id="dotdot",
        ),
        pytest.param(
            cm(data={"..a": "x"}),
            [("FieldValueInvalid", "data[..a]", "Invalid value: \"..a\": must not start with '..'")],
            id="dotdot-prefix",
        ),
        pytest.param(
            cm(data={"k" * 254: "x"}),
            [
                (
                    "FieldValueInvalid",
                    f"data[{'k' * 254}]",
                    f'Invalid value: "{"k" * 254}": must be no more than 253 characters',
                )
            ],
            id="long-key",
        ),
        pytest.param(
            cm(binaryData={"a b": "eA=="}),
            [("FieldValueInvalid", "binaryData[a b]", f'Invalid value: "a b": {CONFIG_KEY}')],
            id="binary-key",
        ),
        pytest.param(
            cm(data={"k": "x"}, binaryData={"k": "eA=="}),
            [("FieldValueInvalid", "data[k]", 'Invalid value: "k": duplicate of key present in binaryData')],
            id="both-maps",
        ),
        pytest.param(
            cm(data={"a": "x" * MIB, "b": "y"}),
            [("FieldValueTooLong", "[]", f"Too long: may not be more than {MIB} bytes")],
            id="too-big",
        ),
        pytest.param(
            cm(data={"a": "\u00e9" * (MIB // 2) + "x"}),  # fewer characters than the limit, more bytes
            [("FieldValueTooLong", "[]", f"Too long: may not be more than {MIB} bytes")],
            id="too-big-in-utf8",
        ),
        pytest.param(
            cm(data={"a": "\u00e9" * (MIB // 4)}, binaryData={"b": "AAAA" * (MIB // 6 + 2)}),
            [("FieldValueTooLong", "[]", f"Too long: may not be more than {MIB} bytes")],
            id="too-big-with-binary",
        ),
    ],
)
def test_invalid_config_map(obj: Obj, want: list[Cause]) -> None:
    assert causes("ConfigMap", obj) == want


@pytest.mark.parametrize(
    "obj",
    [
        pytest.param(cm(data={"a.b-c_D": "x", ".hidden": "y"}), id="key-alphabet"),
        pytest.param(cm(data={"a": "x" * MIB}), id="exactly-1MiB"),
        pytest.param(cm(data={"k" * 253: ""}), id="key-253"),
        pytest.param(cm(binaryData={"bin": "AAEC"}), id="binary"),
        pytest.param(cm(), id="empty"),
    ],
)
def test_valid_config_map(obj: Obj) -> None:
    assert causes("ConfigMap", obj) == []


def test_immutable_config_map() -> None:
    old = cm(data={"a": "1"}, immutable=True)
    assert causes("ConfigMap", cm(data={"a": "2"}, immutable=True), old) == [
        ("FieldValueForbidden", "data", FROZEN)
    ]
    assert causes("ConfigMap", cm(data={"a": "1"}), old) == [("FieldValueForbidden", "immutable", FROZEN)]
    assert causes("ConfigMap", cm(data={"a": "1"}, immutable=True), old) == []
    assert causes("ConfigMap", cm(data={"a": "2"}), cm(data={"a": "1"}, immutable=False)) == []


@pytest.mark.parametrize(
    ("obj", "want"),
    [
        pytest.param(
            secret(data={"a b": "eA=="}),
            [("FieldValueInvalid", "data[a b]", f'Invalid value: "a b": {CONFIG_KEY}')],
            id="key",
        ),
        pytest.param(
            secret(type="kubernetes.io/tls", data={"tls.crt": "eA=="}),
            [("FieldValueRequired", "data[tls.key]", "Required value")],
            id="tls-key",
        ),
        pytest.param(
            secret(type="kubernetes.io/service-account-token"),
            [
                (
                    "FieldValueRequired",
                    "metadata.annotations[kubernetes.io/service-account.name]",
                    "Required value",
                )
            ],
            id="sa-token",
        ),
        pytest.param(
            secret(type="kubernetes.io/ssh-auth"),
            [("FieldValueRequired", "data[ssh-privatekey]", "Required value")],
            id="ssh",
        ),
        pytest.param(
            secret(type="kubernetes.io/dockerconfigjson"),
            [("FieldValueRequired", "data[.dockerconfigjson]", "Required value")],
            id="dockerconfigjson",
        ),
        pytest.param(
            secret(data={"a": "A" * (MIB * 4 // 3 + 8)}),
            [("FieldValueTooLong", "data", f"Too long: may not be more than {MIB} bytes")],
            id="too-big",
        ),
    ],
)
def test_invalid_secret(obj: Obj, want: list[Cause]) -> None:
    assert causes("Secret", obj) == want


def test_secret_update_rules() -> None:
    old = secret(data={"a": "eA=="}, immutable=True)
    assert causes("Secret", secret(data={"a": "eQ=="}, immutable=True), old) == [
        ("FieldValueForbidden", "data", FROZEN)
    ]
    tls = secret(type="kubernetes.io/tls", data={"tls.crt": "eA==", "tls.key": "eA=="})
    assert causes("Secret", tls, secret(data=tls["data"])) == [
        ("FieldValueInvalid", "type", 'Invalid value: "kubernetes.io/tls": field is immutable')
    ]
    assert causes("Secret", tls) == []


def pvc(**spec: Any) -> Obj:
    base = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    return {"metadata": {"name": "v"}, "spec": {**base, **spec}}


def test_pvc_rules() -> None:
    assert causes("PersistentVolumeClaim", pvc(accessModes=[])) == [
        ("FieldValueRequired", "spec.accessModes", "Required value: at least 1 access mode is required")
    ]
    assert causes("PersistentVolumeClaim", pvc(resources={})) == [
        ("FieldValueRequired", "spec.resources[storage]", "Required value")
    ]
    old = pvc()
    grown = pvc(resources={"requests": {"storage": "2Gi"}})
    frozen = "Forbidden: spec is immutable after creation except resources.requests for bound claims"
    assert causes("PersistentVolumeClaim", grown, old) == [("FieldValueForbidden", "spec", frozen)]
    bound = {**old, "status": {"phase": "Bound"}}
    assert causes("PersistentVolumeClaim", grown, bound) == []
    shrunk = pvc(resources={"requests": {"storage": "512Mi"}})
    assert causes("PersistentVolumeClaim", shrunk, bound) == [
        (
            "FieldValueForbidden",
            "spec.resources.requests.storage",
            "Forbidden: field can not be less than previous value",
        )
    ]
    assert causes("PersistentVolumeClaim", pvc(volumeName="pv-1"), old) == []


def pod(**spec: Any) -> Obj:
    return {"metadata": {"name": "p"}, "spec": cases.pod_spec(**spec)}


_POD_FROZEN = (
    "Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to "
    "existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was "
    "previously negative)"
)


def test_pod_update_rules() -> None:
    old = pod(activeDeadlineSeconds=100, tolerations=[{"key": "k", "operator": "Exists"}])
    new = copy.deepcopy(old)
    new["spec"]["containers"][0]["image"] = "nginx:2"
    new["spec"]["activeDeadlineSeconds"] = 50
    new["spec"]["tolerations"].append({"key": "other", "operator": "Exists"})
    assert causes("Pod", new, old) == []
    longer = copy.deepcopy(old)
    longer["spec"]["activeDeadlineSeconds"] = 200
    assert causes("Pod", longer, old) == [
        (
            "FieldValueInvalid",
            "spec.activeDeadlineSeconds",
            "Invalid value: 200: must be less than or equal to previous value",
        )
    ]
    env = copy.deepcopy(old)
    env["spec"]["containers"][0]["env"] = [{"name": "A", "value": "1"}]
    assert causes("Pod", env, old) == [("FieldValueForbidden", "spec", _POD_FROZEN)]
    more = copy.deepcopy(old)
    more["spec"]["containers"].append(cases.container(name="d"))
    assert causes("Pod", more, old) == [
        ("FieldValueForbidden", "spec.containers", "Forbidden: pod updates may not add or remove containers")
    ]
    edited = copy.deepcopy(old)
    edited["spec"]["tolerations"][0]["key"] = "changed"
    assert causes("Pod", edited, old) == [
        (
            "FieldValueForbidden",
            "spec.tolerations[0]",
            "Forbidden: existing toleration can not be modified except its tolerationSeconds",
        ),
    ]  # the tolerations are reset to the old ones before the frozen-spec comparison (upstream too)


def test_pod_create_only_rules() -> None:
    assert causes("Pod", pod(activeDeadlineSeconds=0)) == [
        (
            "FieldValueInvalid",
            "spec.activeDeadlineSeconds",
            "Invalid value: 0: must be between 1 and 2147483647, inclusive",
        )
    ]
    assert causes("Pod", pod(activeDeadlineSeconds=2147483647)) == []
    assert causes("Pod", pod(ephemeralContainers=[{"name": "e", "image": "busybox"}])) == [
        ("FieldValueForbidden", "spec.ephemeralContainers", "Forbidden: cannot be set on create")
    ]
