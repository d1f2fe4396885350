"""Group ``batch``: Jobs and CronJobs (kubernetes ``pkg/apis/batch/validation/validation.go``, 1.32):
template restart policy OnFailure/Never, the selector matching the template, immutable template
and selector, CronJob name length, schedule and concurrency policy.
"""

from __future__ import annotations

from kplane.api import errors, labels
from kplane.api.validation import template
from kplane.api.validation.field import Errs, GoMap, Object, d, nonnegative

_JOB_POLICIES = ["OnFailure", "Never"]
_CONCURRENCY = ["Allow", "Forbid", "Replace"]


def _job_spec(spec: Object, prefix: str, errs: Errs) -> None:
    for key in ("parallelism", "completions", "activeDeadlineSeconds", "backoffLimit"):
        errs.extend(nonnegative(spec, key, f"{prefix}.{key}"))
    tmpl = d(spec.get("template"))
    errs.extend(template.validate(tmpl, f"{prefix}.template"))
    policy = d(tmpl.get("spec")).get("restartPolicy")
    if policy not in _JOB_POLICIES:
        errs.append(
            errors.required(f"{prefix}.template.spec.restartPolicy", 'valid values: "OnFailure", "Never"')
        )
    raw = spec.get("selector")
    if isinstance(raw, dict):
        try:
            selector = labels.from_label_selector(raw)
        except ValueError:
            selector = labels.Selector.everything()
        tlabels = d(d(tmpl.get("metadata")).get("labels"))
        if not selector.empty and not selector.matches(tlabels):
            errs.append(
                errors.invalid(
                    f"{prefix}.template.metadata.labels",
                    GoMap(d(tmpl.get("metadata")).get("labels")),
                    "`selector` does not match template `labels`",
                )
            )


def job(obj: Object, old: Object | None) -> Errs:
    spec = d(obj.get("spec"))
    errs: Errs = []
    _job_spec(spec, "spec", errs)
    if old is not None:
        old_spec = d(old.get("spec"))
        for key in ("selector", "completionMode", "podFailurePolicy"):
            if spec.get(key) != old_spec.get(key):
                errs.append(errors.invalid(f"spec.{key}", spec.get(key), "field is immutable"))
        if spec.get("template") != old_spec.get("template"):
            errs.append(
                errors.invalid("spec.template", _Opaque("core.PodTemplateSpec{...}"), "field is immutable")
            )
    return errs


class _Opaque:
    """An internal Go struct upstream prints with ``%#v``; kplane shows its type only."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text


def cron_job(obj: Object, old: Object | None) -> Errs:
    errs: Errs = []
    name = d(obj.get("metadata")).get("name")
    if old is None and isinstance(name, str) and len(name) > 52:
        errs.append(errors.invalid("metadata.name", name, "must be no more than 52 characters"))
    spec = d(obj.get("spec"))
    if not spec.get("schedule"):
        errs.append(errors.required("spec.schedule"))
    policy = spec.get("concurrencyPolicy")
    if policy not in _CONCURRENCY:
        errs.append(
            errors.required("spec.concurrencyPolicy")
            if not policy
            else errors.not_supported("spec.concurrencyPolicy", policy, _CONCURRENCY)
        )
    errs.extend(nonnegative(spec, "startingDeadlineSeconds", "spec.startingDeadlineSeconds"))
    errs.extend(nonnegative(spec, "successfulJobsHistoryLimit", "spec.successfulJobsHistoryLimit"))
    errs.extend(nonnegative(spec, "failedJobsHistoryLimit", "spec.failedJobsHistoryLimit"))
    _job_spec(d(d(spec.get("jobTemplate")).get("spec")), "spec.jobTemplate.spec", errs)
    return errs
