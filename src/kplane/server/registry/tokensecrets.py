"""Legacy ServiceAccount token Secrets, filled as kube-controller-manager's token controller does.

A Secret of type ``kubernetes.io/service-account-token`` whose annotation
``kubernetes.io/service-account.name`` names an existing ServiceAccount, written without a token, gets
``data.token`` (a non-expiring legacy JWT), ``data.ca.crt`` (the cluster CA), ``data.namespace`` and
the annotation ``kubernetes.io/service-account.uid``, in an update made right after the write that
created it. It lives in the server (kplane runs no controller manager); an ``after_write`` hook
starts the update, so nothing is polled. A Secret naming a missing ServiceAccount is left as is
(upstream's controller deletes it). Its token stops authenticating once the Secret or the
ServiceAccount is gone (``serviceaccounts.Tokens``).
"""

from __future__ import annotations

import asyncio
import base64
import logging
from collections.abc import Callable

from kplane.api import errors
from kplane.api.builtin import BUILTIN_RECORDS
from kplane.api.catalog import ResourceRecord
from kplane.server.registry.store import Object, Registry

log = logging.getLogger("kplane.server.tokensecrets")

TYPE = "kubernetes.io/service-account-token"
NAME_ANNOTATION = "kubernetes.io/service-account.name"
UID_ANNOTATION = "kubernetes.io/service-account.uid"
_CORE = {r.plural: r for r in BUILTIN_RECORDS if r.group == "" and r.version == "v1"}
SECRETS, SERVICEACCOUNTS = _CORE["secrets"], _CORE["serviceaccounts"]

Sign = Callable[[str, Object, str], str]
"""``sign(namespace, service account, secret name)`` → the legacy token."""


class TokenSecrets:
    """Fills token Secrets after they are written; ``close`` cancels what is in progress."""

    def __init__(self, registry: Registry, sign: Sign, ca_pem: bytes) -> None:
        self._registry = registry
        self._sign = sign
        self._ca = base64.b64encode(ca_pem).decode()
        self._tasks: set[asyncio.Task[None]] = set()
        registry.after_write(self._after_write, resource=("", "secrets"))

    def _after_write(self, record: ResourceRecord, obj: Object, deleted: bool) -> None:
        if deleted or record.group or record.plural != "secrets":
            return
        if obj.get("type") != TYPE or (obj.get("data") or {}).get("token"):
            return
        meta = obj.get("metadata") or {}
        if not (meta.get("annotations") or {}).get(NAME_ANNOTATION):
            return
        task = asyncio.get_running_loop().create_task(self._fill(meta.get("namespace", ""), meta["name"]))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _fill(self, namespace: str, name: str) -> None:
        try:
            secret = await self._registry.get(SECRETS, namespace, name)
            sa_name = ((secret.get("metadata") or {}).get("annotations") or {}).get(NAME_ANNOTATION, "")
            sa = await self._registry.get(SERVICEACCOUNTS, namespace, sa_name)
        except errors.NotFound:
            return
        sa_uid = (sa.get("metadata") or {}).get("uid", "")
        token = self._sign(namespace, sa, name)

        def fill(current: Object) -> Object:
            new = dict(current)
            meta = dict(new.get("metadata") or {})
            annotations = dict(meta.get("annotations") or {})
            if annotations.get(NAME_ANNOTATION) != sa_name or (new.get("data") or {}).get("token"):
                return current
            expected = annotations.get(UID_ANNOTATION)
            if expected and expected != sa_uid:
                return current
            annotations[UID_ANNOTATION] = sa_uid
            meta["annotations"] = annotations
            new["metadata"] = meta
            new["data"] = {
                **(new.get("data") or {}),
                "ca.crt": self._ca,
                "namespace": base64.b64encode(namespace.encode()).decode(),
                "token": base64.b64encode(token.encode()).decode(),
            }
            return new

        try:
            await self._registry.update(SECRETS, namespace, name, fill)
        except errors.APIError as err:
            log.warning("token secret %s/%s not filled: %s", namespace, name, err)

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
