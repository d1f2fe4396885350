"""PodSecurity (pod-security-admission ``admission/admission.go``): the Pod Security Standards,
per namespace, from its labels.

``pod-security.kubernetes.io/{enforce,warn,audit}`` name a level (``privileged``, ``baseline``,
``restricted``) and ``...-version`` a version (``latest`` or ``v1.N``; every version is checked as
``latest`` here, but named in the messages). Unlabelled namespaces are ``privileged:latest``.

- Pod CREATE, and UPDATEs that change more than metadata, container images and the node binding: ``enforce``
  violations refuse (403 ``violates PodSecurity "restricted:latest": reason (detail), ...``),
  ``warn`` violations add the warning ``would violate PodSecurity "...": ...`` (not when the
  request is refused anyway). ``audit`` is accepted but not recorded (kplane has no audit log
  annotations yet).
- Workload templates (Deployment, ReplicaSet, StatefulSet, DaemonSet, Job, CronJob,
  ReplicationController, PodTemplate): warnings only, for the enforce and warn levels.
- Namespace writes: invalid level or version labels are refused with a 422 on CREATE, and on
  UPDATE when the value changed.
"""

from __future__ import annotations

import re
from typing import Any

from kplane.api import errors
from kplane.server.admission import plugin, podsecuritychecks
from kplane.server.registry import admitting

NAME = "PodSecurity"
PREFIX = "pod-security.kubernetes.io/"
LEVELS = ("privileged", "baseline", "restricted")
_VERSION = re.compile(r"^v1\.(0|[1-9][0-9]*)$")
_TEMPLATES: dict[tuple[str, str], tuple[str, ...]] = {
    ("apps", "deployments"): ("spec", "template"),
    ("apps", "replicasets"): ("spec", "template"),
    ("apps", "statefulsets"): ("spec", "template"),
    ("apps", "daemonsets"): ("spec", "template"),
    ("batch", "jobs"): ("spec", "template"),
    ("batch", "cronjobs"): ("spec", "jobTemplate", "spec", "template"),
    ("", "replicationcontrollers"): ("spec", "template"),
    ("", "podtemplates"): ("template",),
}


def _policy(labels: dict[str, Any], mode: str) -> tuple[str, str]:
    level = labels.get(PREFIX + mode)
    version = labels.get(f"{PREFIX}{mode}-version")
    return (
        level if level in LEVELS else "privileged",
        version
        if isinstance(version, str) and (version == "latest" or _VERSION.match(version))
        else "latest",
    )


def _message(level: str, version: str, found: list[tuple[str, str]]) -> str:
    return f'PodSecurity "{level}:{version}": ' + ", ".join(f"{r} ({d})" for r, d in found)


def _without_images(spec: Any) -> Any:
    if not isinstance(spec, dict):
        return spec
    out = dict(spec)
    out.pop("nodeName", None)  # set through pods/binding upstream, which PodSecurity does not check
    for key in ("initContainers", "containers", "ephemeralContainers"):
        out[key] = [
            {k: v for k, v in c.items() if k != "image"} if isinstance(c, dict) else c
            for c in plugin.as_list(spec.get(key))
        ]
    return out


class PodSecurity(plugin.Base):
    name = NAME
    resources = frozenset({("", "namespaces"), ("", "pods"), *_TEMPLATES})

    def __init__(self, ctx: plugin.Context) -> None:
        self.ctx = ctx

    async def validate(self, attrs: admitting.Attributes) -> None:
        if attrs.operation not in ("CREATE", "UPDATE") or attrs.obj is None or attrs.subresource:
            return
        group, plural = attrs.record.group, attrs.record.plural
        if not group and plural == "namespaces":
            self._check_labels(attrs)
            return
        if not group and plural == "pods":
            await self._check_pod(attrs)
        elif (group, plural) in _TEMPLATES:
            await self._check_template(attrs, _TEMPLATES[(group, plural)])

    async def _labels(self, namespace: str) -> dict[str, Any]:
        ns = await self.ctx.get(self.ctx.record("", "v1", "namespaces"), "", namespace)
        return plugin.as_dict(plugin.as_dict((ns or {}).get("metadata")).get("labels"))

    async def _check_pod(self, attrs: admitting.Attributes) -> None:
        pod = attrs.obj or {}
        old = attrs.old
        if old is not None and _without_images(pod.get("spec")) == _without_images(old.get("spec")):
            return  # only metadata or images changed: upstream does not re-check
        labels = await self._labels(attrs.namespace)
        if not any(k.startswith(PREFIX) for k in labels):
            return
        spec = plugin.as_dict(pod.get("spec"))
        meta = plugin.as_dict(pod.get("metadata"))
        level, version = _policy(labels, "enforce")
        found = podsecuritychecks.violations(level, spec, meta)
        if found:
            raise plugin.forbidden(attrs, "violates " + _message(level, version, found))
        level, version = _policy(labels, "warn")
        found = podsecuritychecks.violations(level, spec, meta)
        if found:
            attrs.warnings.append("would violate " + _message(level, version, found))

    async def _check_template(self, attrs: admitting.Attributes, path: tuple[str, ...]) -> None:
        labels = await self._labels(attrs.namespace)
        if not any(k.startswith(PREFIX) for k in labels):
            return
        template: Any = attrs.obj
        for step in path:
            template = plugin.as_dict(template).get(step)
        template = plugin.as_dict(template)
        spec = plugin.as_dict(template.get("spec"))
        meta = plugin.as_dict(template.get("metadata"))
        seen = set()
        for mode in ("enforce", "warn"):
            level, version = _policy(labels, mode)
            if (level, version) in seen:
                continue
            seen.add((level, version))
            found = podsecuritychecks.violations(level, spec, meta)
            if found:
                attrs.warnings.append("would violate " + _message(level, version, found))

    def _check_labels(self, attrs: admitting.Attributes) -> None:
        labels = plugin.as_dict(plugin.as_dict((attrs.obj or {}).get("metadata")).get("labels"))
        old = plugin.as_dict(plugin.as_dict((attrs.old or {}).get("metadata")).get("labels"))
        errs = []
        for mode in ("enforce", "audit", "warn"):
            key = PREFIX + mode
            value = labels.get(key)
            if (
                value is not None
                and value not in LEVELS
                and (attrs.operation == "CREATE" or old.get(key) != value)
            ):
                errs.append(
                    errors.invalid(
                        f"metadata.labels[{key}]", value, "must be one of privileged, baseline, restricted"
                    )
                )
            vkey = key + "-version"
            version = labels.get(vkey)
            if (
                version is not None
                and not (version == "latest" or (isinstance(version, str) and _VERSION.match(version)))
                and (attrs.operation == "CREATE" or old.get(vkey) != version)
            ):
                errs.append(errors.invalid(f"metadata.labels[{vkey}]", version, 'must be "latest" or "v1.x"'))
        if errs:
            raise errors.invalid_object("Namespace", "", attrs.name, errs)
