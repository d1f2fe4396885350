"""The server's own upkeep of its APF objects (upstream's ``apf_controller`` and config-producer).

``ensure_bootstrap``: at start, every mandatory and suggested object (``flowcontrol.bootstrap``)
is created when missing; one that exists with ``apf.kubernetes.io/autoupdate-spec: "true"`` gets
the bootstrap spec back if it differs (a user opts out by setting the annotation to ``false``).

``DanglingConditions``: after each configuration change (``FlowControl.on_change``), every
FlowSchema's ``status.conditions`` holds one ``Dangling`` condition saying whether the level it
names exists, in upstream's words; it is written (status subresource) only when it differs, one
pass at a time in the background.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
from typing import Any

from kplane._util.clock import Clock
from kplane.api import errors
from kplane.api.catalog import Catalog, ResourceRecord
from kplane.server.flowcontrol import bootstrap
from kplane.server.flowcontrol.config import FlowControl
from kplane.server.registry.apibootstrap import get_or_create
from kplane.server.registry.store import Registry

Object = dict[str, Any]
GROUP = "flowcontrol.apiserver.k8s.io"
log = logging.getLogger(__name__)


async def _ensure(registry: Registry, record: ResourceRecord, wanted: Object) -> None:
    current = await get_or_create(registry, record, wanted)
    if current is None:
        return
    name = wanted["metadata"]["name"]
    annotations = (current.get("metadata") or {}).get("annotations") or {}
    if annotations.get(bootstrap.AUTOUPDATE) != "true" or current.get("spec") == wanted["spec"]:
        return

    def reset(obj: Object) -> Object:
        return {**obj, "spec": copy.deepcopy(wanted["spec"])}

    with contextlib.suppress(errors.NotFound, errors.Conflict):
        await registry.update(record, "", name, reset)


async def ensure_bootstrap(registry: Registry, catalog: Catalog) -> None:
    """Create or restore the bootstrap configuration (levels first, concurrently within a kind)."""
    for plural in ("prioritylevelconfigurations", "flowschemas"):
        record = catalog.lookup(GROUP, "v1", plural)
        if record is None:
            continue
        objects = [obj for p, obj in bootstrap.all_objects() if p == plural]
        await asyncio.gather(*(_ensure(registry, record, obj) for obj in objects))


def dangling_condition(level: str, missing: bool, now: str) -> Object:
    """Upstream's ``Dangling`` condition for a FlowSchema naming ``level``."""
    if missing:
        return {
            "type": "Dangling",
            "status": "True",
            "lastTransitionTime": now,
            "reason": "NotFound",
            "message": f'This FlowSchema references the PriorityLevelConfiguration object named "{level}" '
            "but there is no such object",
        }
    return {
        "type": "Dangling",
        "status": "False",
        "lastTransitionTime": now,
        "reason": "Found",
        "message": f'This FlowSchema references the PriorityLevelConfiguration object named "{level}" '
        "and it exists",
    }


def _same(a: Object | None, b: Object) -> bool:
    return a is not None and all(a.get(k) == b[k] for k in ("status", "reason", "message"))


class DanglingConditions:
    """Keeps every FlowSchema's ``Dangling`` condition true (see the module docstring)."""

    def __init__(self, registry: Registry, catalog: Catalog, control: FlowControl, clock: Clock) -> None:
        self._registry = registry
        self._record = catalog.lookup(GROUP, "v1", "flowschemas")
        self._control = control
        self._clock = clock
        self._task: asyncio.Task[None] | None = None
        self._again = False

    async def start(self) -> None:
        """Write what differs now, then follow every configuration change."""
        if self._record is not None:
            await self.sync()
        self._control.on_change.append(self.poke)

    def poke(self) -> None:
        """Schedule a pass (one at a time; a change during a pass triggers another)."""
        if self._record is None:
            return
        if self._task is not None and not self._task.done():
            self._again = True
            return
        with contextlib.suppress(RuntimeError):  # no running loop: the next change will do
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        self._again = True
        while self._again:
            self._again = False
            try:
                await self.sync()
            except errors.APIError as e:
                log.warning("flowschema conditions: %s", e)

    async def sync(self) -> None:
        """Write every FlowSchema's condition that differs (concurrently: one group commit)."""
        assert self._record is not None
        record = self._record
        now = self._clock.now().strftime("%Y-%m-%dT%H:%M:%SZ")

        async def keep(name: str, wanted: Object) -> None:
            def put(obj: Object) -> Object:
                status = dict(obj.get("status") or {})
                conditions = [c for c in status.get("conditions") or [] if isinstance(c, dict)]
                current = next((c for c in conditions if c.get("type") == "Dangling"), None)
                if _same(current, wanted):
                    return obj
                others = [c for c in conditions if c.get("type") != "Dangling"]
                status["conditions"] = [*others, wanted]
                return {**obj, "status": status}

            with contextlib.suppress(errors.NotFound, errors.Conflict):
                await self._registry.update(record, "", name, put, subresource="status")

        await asyncio.gather(
            *(
                keep(name, dangling_condition(level, missing, now))
                for name, (level, missing) in sorted(self._control.dangling().items())
            )
        )

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
