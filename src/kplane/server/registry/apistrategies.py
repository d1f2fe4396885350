"""Strategies of the API-machinery kinds: CertificateSigningRequest, APIService, FlowSchema and
PriorityLevelConfiguration. Each follows its upstream ``strategy.go`` (1.32) for what a client may
set on create and what each subresource may change.
"""

from __future__ import annotations

from collections.abc import Callable

from kplane._util.clock import Clock
from kplane.api import errors
from kplane.api.catalog import ResourceRecord
from kplane.server.registry import objects
from kplane.server.registry.fieldschema import Requester
from kplane.server.registry.strategy import ListCurrent, Object, Strategy

_APPROVAL_TYPES = ("Approved", "Denied")


def _conditions(obj: Object) -> list[Object]:
    status = obj.get("status")
    conditions = status.get("conditions") if isinstance(status, dict) else None
    return [c for c in conditions if isinstance(c, dict)] if isinstance(conditions, list) else []


class CertificateSigningRequestStrategy(Strategy):
    """Creates clear status (no pre-approved requests); ``/approval`` changes only the
    conditions, ``/status`` everything in status but the Approved/Denied conditions; both
    stamp condition times that are missing."""

    async def prepare_for_create(
        self, record: ResourceRecord, obj: Object, list_current: ListCurrent
    ) -> None:
        obj.pop("status", None)
        spec = obj.get("spec")
        if isinstance(spec, dict):
            for key in ("username", "uid", "groups", "extra"):
                spec.pop(key, None)

    def record_requester(self, obj: Object, requester: Requester | None) -> None:
        """The requester's identity replaces whatever the client sent (upstream strategy.go)."""
        spec = obj.get("spec")
        if requester is None or not isinstance(spec, dict):
            return
        spec["username"] = requester.username
        if requester.uid:
            spec["uid"] = requester.uid
        if requester.groups:
            spec["groups"] = list(requester.groups)
        if requester.extra:
            spec["extra"] = {k: list(v) for k, v in requester.extra.items()}

    def prepare_for_update(self, record: ResourceRecord, new: Object, old: Object) -> None:
        """The main endpoint changes metadata only: spec is immutable, status has subresources."""
        for key in ("spec", "status"):
            if key in old:
                new[key] = old[key]
            else:
                new.pop(key, None)

    def prepare_for_subresource_update(
        self, record: ResourceRecord, subresource: str, new: Object, old: Object
    ) -> Object:
        raw_old = old.get("status")
        old_status: Object = raw_old if isinstance(raw_old, dict) else {}
        new_conditions = _conditions(new)
        if subresource == "approval":
            status = {**old_status, "conditions": new_conditions}
        elif subresource == "status":
            raw = new.get("status")
            status = dict(raw) if isinstance(raw, dict) else {}
            kept = [c for c in _conditions(old) if c.get("type") in _APPROVAL_TYPES]
            others = [c for c in new_conditions if c.get("type") not in _APPROVAL_TYPES]
            status["conditions"] = kept + others
        else:
            return super().prepare_for_subresource_update(record, subresource, new, old)
        if not status.get("conditions"):
            status.pop("conditions", None)
        return {**old, "status": status}

    def validate(self, record: ResourceRecord, obj: Object, old: Object | None) -> list[errors.FieldError]:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return [errors.required("spec.request")]
        errs: list[errors.FieldError] = []
        if not spec.get("request"):
            errs.append(errors.required("spec.request"))
        if not spec.get("signerName"):
            errs.append(errors.required("spec.signerName"))
        if not spec.get("usages") and old is None:
            errs.append(errors.required("spec.usages"))
        seen: set[str] = set()
        for i, c in enumerate(_conditions(obj)):
            kind = c.get("type")
            if not kind:
                errs.append(errors.required(f"status.conditions[{i}].type"))
            elif kind in _APPROVAL_TYPES and c.get("status") != "True":
                errs.append(errors.not_supported(f"status.conditions[{i}].status", c.get("status"), ["True"]))
            if kind in seen and kind in _APPROVAL_TYPES:
                errs.append(
                    errors.FieldError("FieldValueDuplicate", f"status.conditions[{i}].type", "", kind)
                )
            if isinstance(kind, str):
                seen.add(kind)
        if {"Approved", "Denied"} <= seen:
            errs.append(
                errors.invalid(
                    "status.conditions", "Approved", "Approved and Denied conditions are mutually exclusive"
                )
            )
        return errs


IN_PROCESS = frozenset({("metrics.k8s.io", "v1beta1")})
"""Group-versions upstream serves through an aggregated server and kplane serves itself."""


class APIServiceStrategy(Strategy):
    """Status is reset on create, as upstream does. A local APIService (no ``spec.service``) is
    born ``Available``; one backed by a Service is marked unavailable, since kplane does not proxy
    aggregated APIs (upstream's availability controller reports ``FailedDiscoveryCheck`` when it
    cannot get the backend's discovery document)."""

    name_rule = "path"

    def __init__(self, now: Callable[[], str]) -> None:
        self._now = now

    def validate(self, record: ResourceRecord, obj: Object, old: Object | None) -> list[errors.FieldError]:
        # upstream kube-aggregator pkg/apis/apiregistration/validation/validation.go
        raw_spec = obj.get("spec")
        spec: Object = raw_spec if isinstance(raw_spec, dict) else {}
        errs: list[errors.FieldError] = []
        version, group = spec.get("version") or "", spec.get("group") or ""
        required = f"{version}.{group}"
        name = obj["metadata"].get("name")
        if name != required:
            errs.append(
                errors.invalid("metadata.name", name, f'must be `spec.version+"."+spec.group`: "{required}"')
            )
        if not version:
            errs.append(errors.required("spec.version"))
        if not isinstance(spec.get("service"), dict) and group and not spec.get("groupPriorityMinimum"):
            errs.append(
                errors.invalid(
                    "spec.groupPriorityMinimum",
                    spec.get("groupPriorityMinimum", 0),
                    "must be positive and less than 20000",
                )
            )
        return errs

    async def prepare_for_create(
        self, record: ResourceRecord, obj: Object, list_current: ListCurrent
    ) -> None:
        obj["status"] = {"conditions": [self._available(obj)]}

    def prepare_for_update(self, record: ResourceRecord, new: Object, old: Object) -> None:
        super().prepare_for_update(record, new, old)
        wanted = self._available(new)
        current = [c for c in _conditions(new) if c.get("type") == "Available"]
        if not current or (current[0].get("status"), current[0].get("reason")) != (
            wanted["status"],
            wanted["reason"],
        ):
            others = [c for c in _conditions(new) if c.get("type") != "Available"]
            new["status"] = {**(new.get("status") or {}), "conditions": [wanted, *others]}

    def _available(self, obj: Object) -> Object:
        raw_spec = obj.get("spec")
        spec: Object = raw_spec if isinstance(raw_spec, dict) else {}
        service = spec.get("service")
        now = self._now()
        if not isinstance(service, dict):
            return {
                "type": "Available",
                "status": "True",
                "lastTransitionTime": now,
                "reason": "Local",
                "message": "Local APIServices are always available",
            }
        if (spec.get("group"), spec.get("version")) in IN_PROCESS:
            # served by this server itself (metrics.k8s.io): the availability controller's
            # answer for a backend whose discovery check passes
            return {
                "type": "Available",
                "status": "True",
                "lastTransitionTime": now,
                "reason": "Passed",
                "message": "all checks passed",
            }
        name, namespace, port = service.get("name"), service.get("namespace"), service.get("port") or 443
        url = f"https://{name}.{namespace}.svc:{port}/apis/{spec.get('group')}/{spec.get('version')}"
        return {
            "type": "Available",
            "status": "False",
            "lastTransitionTime": now,
            "reason": "FailedDiscoveryCheck",
            "message": f"failing or missing response from {url}: kplane does not proxy aggregated APIs",
        }


def table(clock: Clock) -> dict[tuple[str, str], Strategy]:
    """This module's strategies by (group, kind), for the ``Registry``'s construction."""
    return {
        ("certificates.k8s.io", "CertificateSigningRequest"): CertificateSigningRequestStrategy(),
        ("apiregistration.k8s.io", "APIService"): APIServiceStrategy(lambda: objects.rfc3339(clock)),
    }
