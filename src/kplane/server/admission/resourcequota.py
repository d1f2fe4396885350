"""ResourceQuota (apiserver ``pkg/admission/plugin/resourcequota``): the last validating step.

For a CREATE, or an UPDATE that raises usage (``new - old``, increases only), every ResourceQuota
of the namespace whose scopes select the object and whose ``spec.hard`` names a resource the
object uses is checked:

- the quota's ``status.hard`` lacks such a resource (its controller has not counted it yet): 403
  ``status unknown for quota: q, resources: pods``;
- a pod lacks the request or limit of a compute resource the quota constrains: 403
  ``failed quota: q: must specify limits.cpu for: app; ...``;
- ``used + requested > hard``: 403 ``exceeded quota: q, requested: pods=1, used: pods=2,
  limited: pods=2`` (only the exceeded resources, keys sorted).

Then ``status.used`` of each quota is raised in one atomic update of the quota (re-checked on the
fresh quota, so concurrent creates never overshoot); a dry run charges nothing. Decreases are
the quota controller's (``registry.quotas``).
"""

from __future__ import annotations

from collections.abc import Awaitable
from decimal import Decimal
from typing import Any

from kplane.server import storage
from kplane.server.admission import plugin
from kplane.server.registry import admitting, quotas

NAME = "ResourceQuota"
_MUST_SPECIFY = tuple(f"{kind}.{res}" for kind in ("requests", "limits") for res in ("cpu", "memory"))


class _Exceeded(Exception):
    def __init__(self, message: str) -> None:
        self.message = message


def _fmt(values: dict[str, str]) -> str:
    return ",".join(f"{k}={values[k]}" for k in sorted(values))


class ResourceQuota(plugin.Base):
    name = NAME

    def __init__(self, ctx: plugin.Context) -> None:
        self.ctx = ctx
        self._quotas = ctx.record("", "v1", "resourcequotas")

    def validate(self, attrs: admitting.Attributes) -> Awaitable[None] | None:
        if attrs.operation not in ("CREATE", "UPDATE") or attrs.subresource or not attrs.record.namespaced:
            return None
        if attrs.obj is None or self.ctx.surely_none(self._quotas, attrs.namespace):
            return None
        return self._admit(attrs)

    async def _admit(self, attrs: admitting.Attributes) -> None:
        assert attrs.obj is not None
        record = attrs.record
        page = await self.ctx.storage.list(self._quotas.key(attrs.namespace, ""))
        if not page.items:
            return
        delta = quotas.usage(record, attrs.obj)
        if attrs.operation == "UPDATE" and attrs.old is not None:
            before = quotas.usage(record, attrs.old)
            delta = {k: v - before.get(k, Decimal(0)) for k, v in delta.items()}
            delta = {k: v for k, v in delta.items() if v > 0}
        if not delta:
            return
        charged: list[tuple[str, dict[str, Decimal]]] = []
        for quota in page.items:
            if not quotas.matches(quota, record, attrs.obj):
                continue
            hard = plugin.as_dict(plugin.as_dict(quota.get("spec")).get("hard"))
            constrained = {k: v for k, v in delta.items() if k in hard}
            name = quota["metadata"]["name"]
            if record.plural == "pods" and not record.group:
                self._check_specified(attrs, name, hard)
            if not constrained:
                continue
            try:
                _check(name, quota, constrained)
            except _Exceeded as err:
                raise plugin.forbidden(attrs, err.message) from None
            charged.append((name, constrained))
        if attrs.dry_run:
            return
        for name, constrained in charged:
            await self._charge(attrs, self._quotas.key(attrs.namespace, name), name, constrained)

    def _check_specified(self, attrs: admitting.Attributes, name: str, hard: dict[str, Any]) -> None:
        spec = plugin.as_dict((attrs.obj or {}).get("spec"))
        missing = []
        for res in _MUST_SPECIFY:
            if res not in hard:
                continue
            kind, resource = res.split(".", 1)
            lacking = [
                str(c.get("name"))
                for c in plugin.as_list(spec.get("containers"))
                if isinstance(c, dict)
                and resource not in plugin.as_dict(plugin.as_dict(c.get("resources")).get(kind))
            ]
            if lacking:
                missing.append(f"{res} for: {','.join(lacking)}")
        if missing:
            raise plugin.forbidden(attrs, f"failed quota: {name}: must specify {'; '.join(missing)}")

    async def _charge(
        self, attrs: admitting.Attributes, key: str, name: str, constrained: dict[str, Decimal]
    ) -> None:
        def charge(current: dict[str, Any]) -> dict[str, Any]:
            _check(name, current, constrained)
            status = dict(plugin.as_dict(current.get("status")))
            hard = plugin.as_dict(status.get("hard"))
            used = dict(plugin.as_dict(status.get("used")))
            raised = {k: quotas.parse_used(used.get(k)) + v for k, v in constrained.items()}
            used.update(quotas.render(raised, hard))
            status["used"] = used
            return {**current, "status": status}

        try:
            await self.ctx.storage.guaranteed_update(key, charge)
        except _Exceeded as err:
            raise plugin.forbidden(attrs, err.message) from None
        except storage.KeyNotFound:
            pass  # the quota was deleted meanwhile: nothing to charge


def _check(name: str, quota: dict[str, Any], constrained: dict[str, Decimal]) -> None:
    status = plugin.as_dict(quota.get("status"))
    hard = plugin.as_dict(status.get("hard"))
    used = plugin.as_dict(status.get("used"))
    unknown = sorted(k for k in constrained if k not in hard or k not in used)
    if unknown:
        raise _Exceeded(f"status unknown for quota: {name}, resources: {','.join(unknown)}")
    over = {
        k: v
        for k, v in constrained.items()
        if quotas.parse_used(used.get(k)) + v > quotas.parse_used(hard.get(k))
    }
    if over:
        requested = quotas.render(over, hard)
        now = quotas.render({k: quotas.parse_used(used.get(k)) for k in over}, hard)
        limits = {k: str(hard[k]) for k in over}
        raise _Exceeded(
            f"exceeded quota: {name}, requested: {_fmt(requested)}, "
            f"used: {_fmt(now)}, limited: {_fmt(limits)}"
        )
