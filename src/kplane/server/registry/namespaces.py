"""Namespace lifecycle inside the server: system namespaces and the ``default`` ServiceAccount.

Deleting a Namespace only marks it Terminating (its ``spec.finalizers`` holds ``kubernetes``, the
strategy sets the phase): emptying it and removing that finalizer through ``/finalize`` is the
namespace controller's work (``kplane.controllers.namespaces``), as upstream's in
kube-controller-manager. Without controllers (``kplane serve --no-controllers``) a deleted
namespace stays Terminating, as it does on a cluster without kube-controller-manager.

Every namespace gets its ``default`` ServiceAccount as soon as it is written and not terminating
(upstream's serviceaccounts controller in kube-controller-manager; the ServiceAccount admission
plugin waits up to about 1.5 s for it, as upstream).

The system namespaces exist at start-up and are created again as soon as one is gone (upstream's
system-namespaces controller in kube-apiserver does it within a minute); the NamespaceLifecycle
admission plugin forbids deleting three of them at all.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from kplane._util.clock import Clock
from kplane.api import errors
from kplane.api.catalog import Catalog, ResourceRecord
from kplane.server.registry.store import Registry

log = logging.getLogger("kplane.server.namespaces")

BOOTSTRAP = ("default", "kube-system", "kube-public", "kube-node-lease")


class NamespaceLifecycle:
    def __init__(self, registry: Registry, catalog: Catalog, clock: Clock) -> None:
        self.registry = registry
        self.catalog = catalog
        self.clock = clock
        self._tasks: dict[str, asyncio.Task[None]] = {}
        registry.after_write(self._recreate_system_namespace, resource=("", "namespaces"))
        registry.after_write(self._namespace_written, resource=("", "namespaces"))

    def _ns_record(self) -> ResourceRecord:
        record = self.catalog.lookup("", "v1", "namespaces")
        assert record is not None
        return record

    async def bootstrap(self) -> None:
        """Create the namespaces every cluster has, and the ``default`` ServiceAccount of active ones."""
        record = self._ns_record()
        existing = {ns["metadata"]["name"] for ns in await self.registry.list_current(record)}
        # Concurrently, so a first start commits them together (one fsync, not four).
        await asyncio.gather(*(self._create(name) for name in BOOTSTRAP if name not in existing))
        for ns in await self.registry.list_current(record):
            if not ns["metadata"].get("deletionTimestamp"):
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
        if deleted or record.group or record.plural != "namespaces" or meta.get("deletionTimestamp"):
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

    async def close(self) -> None:
        for task in self._tasks.values():
            task.cancel()
        await asyncio.gather(*self._tasks.values(), return_exceptions=True)
