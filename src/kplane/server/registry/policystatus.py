"""The ValidatingAdmissionPolicy status controller (upstream's
``validatingadmissionpolicy-status-controller``, kube-controller-manager 1.32), run in the server.

After each write of a policy whose ``metadata.generation`` is past ``status.observedGeneration``,
the policy's expressions are type-checked against the kinds it matches (``api/cel/typecheck``) and
``status`` becomes ``{observedGeneration, typeChecking: {expressionWarnings?}}``, written through
the status subresource as upstream's server-side apply does. Asynchronous, as upstream: a client
sees the status shortly after its write, never in its reply. Checks of one policy do not overlap.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

from kplane.api import errors
from kplane.api.catalog import Catalog, ResourceRecord
from kplane.api.cel import typecheck
from kplane.server.registry.fieldschema import WriteOptions
from kplane.server.registry.store import Registry

log = logging.getLogger(__name__)
Object = dict[str, Any]
MANAGER = "validatingadmissionpolicy-status-controller"
GROUP, PLURAL = "admissionregistration.k8s.io", "validatingadmissionpolicies"


def _generation(obj: Object) -> tuple[int, int]:
    meta = obj.get("metadata") or {}
    status = obj.get("status") or {}
    gen = meta.get("generation")
    seen = status.get("observedGeneration") if isinstance(status, dict) else None
    return (gen if isinstance(gen, int) else 0), (seen if isinstance(seen, int) else 0)


class PolicyStatus:
    """Writes ``status.typeChecking`` of ValidatingAdmissionPolicies (see the module docstring)."""

    def __init__(self, registry: Registry, catalog: Catalog) -> None:
        self.registry = registry
        self.catalog = catalog
        self._tasks: dict[str, asyncio.Task[None]] = {}
        registry.after_write(self._after_write, resource=(GROUP, PLURAL))

    def _after_write(self, record: ResourceRecord, obj: Object, deleted: bool) -> None:
        if deleted or record.group != GROUP or record.plural != PLURAL:
            return
        gen, seen = _generation(obj)
        name = str((obj.get("metadata") or {}).get("name") or "")
        if gen > seen and name and (name not in self._tasks or self._tasks[name].done()):
            self._tasks[name] = asyncio.get_running_loop().create_task(self._reconcile(record, name))

    async def close(self) -> None:
        for task in self._tasks.values():
            task.cancel()
        await asyncio.gather(*self._tasks.values(), return_exceptions=True)

    def _schema_for(self, group: str, version: str, resource: str) -> tuple[str, Mapping[str, Any]] | None:
        record = self.catalog.lookup(group, version, resource)
        return None if record is None else self._schema(record)

    def _schema(self, record: ResourceRecord) -> tuple[str, Mapping[str, Any]] | None:
        if record.custom:
            if record.schema is None:
                return None
            return record.kind, typecheck.with_object_meta(record.schema)
        found = typecheck.builtin_schema(record.group, record.version, record.kind)
        return None if found is None else (record.kind, found)

    def _param_schema(self, policy: Object) -> Mapping[str, Any] | None:
        kind = (policy.get("spec") or {}).get("paramKind")
        if not isinstance(kind, dict):
            return None
        group, _, version = str(kind.get("apiVersion") or "").rpartition("/")
        record = self.catalog.by_kind(group, version, str(kind.get("kind") or ""))
        found = self._schema(record) if record is not None else None
        return found[1] if found is not None else None

    async def _reconcile(self, record: ResourceRecord, name: str) -> None:
        def transform(current: Object) -> Object:
            gen, seen = _generation(current)
            if gen <= seen:
                return current
            warnings = typecheck.check(current, self._schema_for, self._param_schema(current))
            checking: Object = {"expressionWarnings": warnings} if warnings else {}
            found = current.get("status")
            status: Object = found if isinstance(found, dict) else {}
            return {**current, "status": {**status, "observedGeneration": gen, "typeChecking": checking}}

        try:
            await self.registry.update(
                record, "", name, transform, subresource="status", opts=WriteOptions(field_manager=MANAGER)
            )
        except errors.NotFound:
            return
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("type checking ValidatingAdmissionPolicy %s failed", name)
