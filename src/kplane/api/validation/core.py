"""Group ``core`` (``""``): Pods (create, and the update rule that freezes all but a few spec fields),
ConfigMaps and Secrets (keys, 1 MiB, ``immutable``), PersistentVolumeClaims. Upstream's
``pkg/apis/core/validation/validation.go`` (kubernetes 1.32), messages and order kept.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Collection

from kplane.api import errors
from kplane.api.validation import podspec
from kplane.api.validation.field import Errs, Object, config_key, d, dl, quantity, valid_config_key

_MAX_DATA = 1024 * 1024


def pod(obj: Object, old: Object | None) -> Errs:
    spec = d(obj.get("spec"))
    if old is None:
        errs = podspec.validate(spec, "spec")
        if spec.get("ephemeralContainers"):
            errs.append(errors.forbidden("spec.ephemeralContainers", "cannot be set on create"))
        return errs
    return _pod_update(spec, d(old.get("spec")))


_POD_MUTABLE = (
    "`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,"
    "`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` "
    "(allow it to be set to 1 if it was previously negative)"
)


def _pod_update(spec: Object, old: Object) -> Errs:
    """``ValidatePodUpdate``: only images, a shorter active deadline and added tolerations may change."""
    errs = podspec.validate(spec, "spec")
    for key in ("containers", "initContainers"):
        if len(dl(spec.get(key))) != len(dl(old.get(key))):
            errs.append(errors.forbidden(f"spec.{key}", "pod updates may not add or remove containers"))
            return errs
    deadline, old_deadline = spec.get("activeDeadlineSeconds"), old.get("activeDeadlineSeconds")
    shorter = type(deadline) is int and type(old_deadline) is int and deadline <= old_deadline
    if old_deadline is not None and deadline != old_deadline and not shorter:
        errs.append(
            errors.invalid(
                "spec.activeDeadlineSeconds", deadline, "must be less than or equal to previous value"
            )
        )
    old_tol = dl(old.get("tolerations"))
    new_tol = dl(spec.get("tolerations"))
    for i, tol in enumerate(old_tol):
        if i >= len(new_tol) or {**tol, "tolerationSeconds": None} != {
            **new_tol[i],
            "tolerationSeconds": None,
        }:
            errs.append(
                errors.forbidden(
                    f"spec.tolerations[{i}]",
                    "existing toleration can not be modified except its tolerationSeconds",
                )
            )
    # Compare with the mutable fields carried over from the new spec.
    probe = dict(old)
    for key in ("containers", "initContainers"):
        if key in spec:
            probe[key] = [
                {**c, "image": n.get("image")}
                for c, n in zip(dl(old.get(key)), dl(spec.get(key)), strict=False)
            ]
    for key in ("activeDeadlineSeconds", "tolerations"):
        if key in spec:
            probe[key] = spec[key]
        else:
            probe.pop(key, None)
    grace = old.get("terminationGracePeriodSeconds")
    if type(grace) is int and grace < 0 and spec.get("terminationGracePeriodSeconds") == 1:
        probe["terminationGracePeriodSeconds"] = 1
    if probe != spec:
        errs.append(errors.forbidden("spec", f"pod updates may not change fields other than {_POD_MUTABLE}"))
    return errs


def config_map(obj: Object, old: Object | None) -> Errs:
    """``ValidateConfigMap`` (+ ``ValidateConfigMapUpdate``)."""
    errs: Errs = []
    data, binary = obj.get("data"), obj.get("binaryData")
    data = data if type(data) is dict else {}  # d(), inline: every ConfigMap write passes here
    binary = binary if type(binary) is dict else {}
    if binary or not all(map(valid_config_key, data)):
        for key in data:
            errs.extend(config_key(key, "data"))
            if key in binary:
                errs.append(errors.invalid(f"data[{key}]", key, "duplicate of key present in binaryData"))
    total = _utf8_len(data.values())
    for key, value in binary.items():
        errs.extend(config_key(key, "binaryData"))
        total += _decoded_len(value)
    if total > _MAX_DATA:
        errs.append(
            errors.FieldError("FieldValueTooLong", "[]", f"may not be more than {_MAX_DATA} bytes", None)
        )
    if old is not None:
        errs.extend(_immutable_data(obj, old, ("data", "binaryData")))
    return errs


def secret(obj: Object, old: Object | None) -> Errs:
    """``ValidateSecret`` (+ ``ValidateSecretUpdate``): keys, 1 MiB of data, typed-secret keys."""
    errs: Errs = []
    data = d(obj.get("data"))
    total = 0
    for key, value in data.items():
        errs.extend(config_key(key, "data"))
        total += _decoded_len(value)
    kind = obj.get("type")
    if kind == "kubernetes.io/service-account-token":
        annotations = d(d(obj.get("metadata")).get("annotations"))
        if not annotations.get("kubernetes.io/service-account.name"):
            errs.append(errors.required("metadata.annotations[kubernetes.io/service-account.name]"))
    elif kind == "kubernetes.io/tls":
        for key in ("tls.key", "tls.crt"):
            if key not in data:
                errs.append(errors.required(f"data[{key}]"))
    elif kind == "kubernetes.io/basic-auth" and "username" not in data and "password" not in data:
        errs.append(errors.required("data[username]"))
        errs.append(errors.required("data[password]"))
    elif kind == "kubernetes.io/ssh-auth" and "ssh-privatekey" not in data:
        errs.append(errors.required("data[ssh-privatekey]"))
    elif kind == "kubernetes.io/dockerconfigjson" and ".dockerconfigjson" not in data:
        errs.append(errors.required("data[.dockerconfigjson]"))
    elif kind == "kubernetes.io/dockercfg" and ".dockercfg" not in data:
        errs.append(errors.required("data[.dockercfg]"))
    if total > _MAX_DATA:
        errs.append(
            errors.FieldError("FieldValueTooLong", "data", f"may not be more than {_MAX_DATA} bytes", None)
        )
    if old is not None:
        if old.get("type") != kind:
            errs.append(errors.invalid("type", kind, "field is immutable"))
        errs.extend(_immutable_data(obj, old, ("data",)))
    return errs


def _utf8_len(values: Collection[object]) -> int:
    """The UTF-8 size of the strings among ``values`` (others count 0); ASCII text is counted
    without encoding it."""
    try:
        if all(map(str.isascii, values)):  # type: ignore[arg-type]
            return sum(map(len, values))  # type: ignore[arg-type]
    except TypeError:  # not all strings (possible only with schema validation off)
        pass
    return sum(len(v.encode()) for v in values if isinstance(v, str))


def _decoded_len(value: object) -> int:
    if not isinstance(value, str):
        return 0
    try:
        return len(base64.b64decode(value, validate=True))
    except (binascii.Error, ValueError):
        return len(value) * 3 // 4


def _immutable_data(obj: Object, old: Object, keys: tuple[str, ...]) -> Errs:
    """``immutable: true`` freezes the data maps and the flag itself."""
    if old.get("immutable") is not True:
        return []
    errs: Errs = []
    if obj.get("immutable") is not True:
        errs.append(errors.forbidden("immutable", "field is immutable when `immutable` is set"))
    for key in keys:
        if (obj.get(key) or {}) != (old.get(key) or {}):
            errs.append(errors.forbidden(key, "field is immutable when `immutable` is set"))
    return errs


def pvc(obj: Object, old: Object | None) -> Errs:
    """``ValidatePersistentVolumeClaim`` (+ update: the spec is frozen except a bound claim's request)."""
    spec = d(obj.get("spec"))
    errs: Errs = []
    if not dl_or_str(spec.get("accessModes")):
        errs.append(errors.required("spec.accessModes", "at least 1 access mode is required"))
    requests = d(d(spec.get("resources")).get("requests"))
    if "storage" not in requests:
        errs.append(errors.required("spec.resources[storage]"))
    if old is None:
        return errs
    old_spec = d(old.get("spec"))
    bound = d(old.get("status")).get("phase") == "Bound"
    probe = {**spec, "resources": old_spec.get("resources")} if bound else spec
    if "volumeName" not in old_spec:
        probe = {k: v for k, v in probe.items() if k != "volumeName"}  # binding sets it once
    if probe != {k: v for k, v in old_spec.items() if k != "volumeName" or "volumeName" in probe}:
        errs.append(
            errors.forbidden(
                "spec", "spec is immutable after creation except resources.requests for bound claims"
            )
        )
    elif bound:
        new_size = quantity(requests.get("storage"))
        old_size = quantity(d(d(old_spec.get("resources")).get("requests")).get("storage"))
        if new_size is not None and old_size is not None and new_size < old_size:
            errs.append(
                errors.forbidden(
                    "spec.resources.requests.storage", "field can not be less than previous value"
                )
            )
    return errs


def dl_or_str(value: object) -> bool:
    return isinstance(value, list) and len(value) > 0
