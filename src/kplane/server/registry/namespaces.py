"""Namespace lifecycle inside the server: system namespaces, and finishing a namespace deletion.

Deleting a Namespace marks it Terminating (its ``spec.finalizers`` holds ``kubernetes``). This task
then deletes every namespaced object in it, waits until objects held by finalizers are gone, and
removes the ``kubernetes`` finalizer, which deletes the Namespace. Upstream runs this in
kube-controller-manager; kplane runs it in the server until the built-in controllers exist.

Every namespace gets its ``default`` ServiceAccount as soon as it is written and not terminating
(upstream's serviceaccounts controller in kube-controller-manager; the ServiceAccount admission
plugin waits up to about 1.5 s for it, as upstream).

The system namespaces exist at start-up and are created again as soon as one is gone (upstream's
system-namespaces controller in kube-apiserver does it within a minute); the NamespaceLifecycle
admission plugin forbids deleting three of them at all. A namespace written with a
``deletionTimestamp`` starts (or continues) its finalization.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from kplane._util.clock import Clock
from kplane.api import errors
from kplane.api.catalog import Catalog, ResourceRecord
from kplane.server.registry.store import DeleteOptions, Registry

log = logging.getLogger("kplane.server.namespaces")

BOOTSTRAP = ("default", "kube-system", "kube-public", "kube-node-lease")
FINALIZER = "kubernetes"


class NamespaceLifecycle:
    def __init__(self, registry: Registry, catalog: Catalog, clock: Clock, *, poll: float = 0.5) -> None:
        self.registry = registry
        self.catalog = catalog
        self.clock = clock
        self.poll = poll
        self._tasks: dict[str, asyncio.Task[None]] = {}
        registry.after_write.append(self._recreate_system_namespace)
        registry.after_write.append(self._namespace_written)

    def _ns_record(self) -> ResourceRecord:
        record = self.catalog.lookup("", "v1", "namespaces")
        assert record is not None
        return record

    async def bootstrap(self) -> None:
        """Create the namespaces every cluster has; resume finalizing Terminating ones."""
        record = self._ns_record()
        existing = {ns["metadata"]["name"] for ns in await self.registry.list_current(record)}
        # Concurrently, so a first start commits them together (one fsync, not four).
        await asyncio.gather(*(self._create(name) for name in BOOTSTRAP if name not in existing))
        for ns in await self.registry.list_current(record):
            if ns["metadata"].get("deletionTimestamp"):
                self.finalize_soon(ns["metadata"]["name"])
            else:
                await self._ensure_service_account(ns["metadata"]["name"])

    async def _create(self, name: str) -> None:
        with contextlib.suppress(errors.AlreadyExists):
            await self.registry.create(
                self._ns_record(), "", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
            )

    def _recreate_system_namespace(self, record: ResourceRecord, obj: dict[str, Any], deleted: bool) -> None:
        name = obj["metadata"].get("name")
        if deleted and record.group == "" and record.plural == "namespaces" and name in BOOTSTRAP:
            key = f"recreate:{name}"
            if key not in self._tasks or self._tasks[key].done():
                self._tasks[key] = asyncio.get_running_loop().create_task(self._recreate(name))

    def _namespace_written(self, record: ResourceRecord, obj: dict[str, Any], deleted: bool) -> None:
        meta = obj["metadata"]
        if deleted or record.group or record.plural != "namespaces":
            return
        if meta.get("deletionTimestamp"):
            self.finalize_soon(str(meta.get("name")))
            return
        key = f"serviceaccount:{meta.get('name')}"
        if key not in self._tasks or self._tasks[key].done():
            self._tasks[key] = asyncio.get_running_loop().create_task(
                self._ensure_service_account(str(meta.get("name")))
            )

    async def _ensure_service_account(self, namespace: str) -> None:
        record = self.catalog.lookup("", "v1", "serviceaccounts")
        assert record is not None
        try:
            await self.registry.get(record, namespace, "default")
            return
        except errors.NotFound:
            pass
        sa = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}}
        try:
            await self.registry.create(record, namespace, sa)
        except (errors.AlreadyExists, errors.NotFound, errors.Forbidden):
            pass  # created meanwhile, or the namespace is gone or terminating
        except Exception:
            log.exception("creating the default ServiceAccount of %s failed", namespace)

    async def _recreate(self, name: str) -> None:
        try:
            await self._create(name)
        except Exception:
            log.exception("recreating system namespace %s failed", name)

    def finalize_soon(self, name: str) -> None:
        if name in self._tasks and not self._tasks[name].done():
            return
        self._tasks[name] = asyncio.get_running_loop().create_task(self._finalize(name))

    async def close(self) -> None:
        for task in self._tasks.values():
            task.cancel()
        await asyncio.gather(*self._tasks.values(), return_exceptions=True)

    def _namespaced_records(self) -> list[ResourceRecord]:
        seen: dict[str, ResourceRecord] = {}
        for r in self.catalog:
            if r.namespaced:
                seen.setdefault(r.key_prefix, r)
        return list(seen.values())

    async def _finalize(self, name: str) -> None:
        try:
            while True:
                remaining = 0
                for record in self._namespaced_records():
                    page = await self.registry.storage.list(record.namespace_prefix(name))
                    for obj in page.items:
                        remaining += 1
                        if obj["metadata"].get("deletionTimestamp"):
                            continue
                        try:
                            # upstream's namespaced_resources_deleter deletes with Background
                            background = DeleteOptions(propagation_policy="Background")
                            await self.registry.delete(record, name, obj["metadata"]["name"], background)
                        except errors.NotFound:
                            pass
                if remaining == 0:
                    break
                await self.clock.sleep(self.poll)
            await self._remove_finalizer(name)
        except asyncio.CancelledError:
            raise
        except errors.NotFound:
            pass
        except Exception:
            log.exception("finalizing namespace %s failed", name)

    async def _remove_finalizer(self, name: str) -> None:
        def drop(current: dict[str, Any]) -> dict[str, Any]:
            spec = dict(current.get("spec") or {})
            spec["finalizers"] = [f for f in spec.get("finalizers") or [] if f != FINALIZER]
            return {**current, "spec": spec}

        await self.registry.update(self._ns_record(), "", name, drop, subresource="finalize")
