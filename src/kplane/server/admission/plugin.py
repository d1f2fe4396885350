"""What an admission plugin is, and what it is given."""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any, Protocol

from kplane._util.clock import Clock
from kplane.api import errors
from kplane.api.catalog import Catalog, ResourceRecord
from kplane.server import storage
from kplane.server.auth import authz
from kplane.server.registry import admitting
from kplane.server.registry.objects import to_version
from kplane.server.webhooks import client as webhookclient
from kplane.server.webhooks import resolving

Object = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Context:
    """The server's parts a plugin reads: storage (through the catalog's records), time, and the
    client webhook plugins call webhooks with (one per server: its connection pools are shared;
    made on first use, resolving Services through the cache, when none is given) and the authorizer."""

    storage: storage.Storage
    catalog: Catalog
    clock: Clock
    webhook_client: webhookclient.Client | None = None
    authorizer: authz.Authorizer | None = None
    """The server's authorizer (CEL's ``authorizer`` library asks it); None allows every check."""
    _made: list[webhookclient.Client] = field(default_factory=list, compare=False, repr=False)

    def webhooks(self) -> webhookclient.Client:
        if self.webhook_client is not None:
            return self.webhook_client
        if not self._made:
            peek = getattr(self.storage, "peek", lambda key: None)
            self._made.append(webhookclient.Client(resolving.EndpointResolver(peek)))
        return self._made[0]

    def record(self, group: str, version: str, plural: str) -> ResourceRecord:
        found = self.catalog.lookup(group, version, plural)
        assert found is not None, (group, version, plural)
        return found

    def cached(self, record: ResourceRecord, namespace: str, name: str) -> Object | None:
        """The stored object as ``get`` would find it in the cache, without waiting or converting
        it to ``record``'s version (for fields every version shares, such as metadata), or None
        when that cannot be told at once (then ``await get``). Shared: treat as read-only."""
        peek = getattr(self.storage, "current_peek", None)
        return peek(record.key(namespace, name)) if peek is not None else None

    def surely_none(self, record: ResourceRecord, namespace: str) -> bool:
        """True when ``list(record, namespace)`` would surely answer nothing (told at once from the
        cache); False when unsure."""
        empty = getattr(self.storage, "surely_empty", None)
        prefix = record.key(namespace, "") if namespace else record.key_prefix
        return empty is not None and bool(empty(prefix))

    async def get(self, record: ResourceRecord, namespace: str, name: str) -> Object | None:
        """The object, or None when it does not exist. Read from the cache as it is; a miss is
        checked again once the cache is in sync with a store shared with other servers (upstream's
        NamespaceLifecycle does a live lookup on a miss: the object may be newer than the cache)."""
        key = record.key(namespace, name)
        try:
            return to_version(record, await self.storage.get(key))
        except storage.KeyNotFound:
            pass
        sync = getattr(self.storage, "sync", None)
        if sync is None:
            return None
        await sync()
        try:
            return to_version(record, await self.storage.get(key))
        except storage.KeyNotFound:
            return None

    async def list(self, record: ResourceRecord, namespace: str = "") -> list[Object]:
        prefix = record.key(namespace, "") if namespace else record.key_prefix
        return [to_version(record, o) for o in (await self.storage.list(prefix)).items]


class Plugin(Protocol):
    """One plugin. ``mutate`` runs in the first pass (may change ``attrs.obj`` in place),
    ``validate`` in the second (must not); either refuses by raising an ``errors.APIError``.
    ``mutates(group, plural)``: whether ``mutate`` may change objects of that resource.

    Either pass returns None when it is done at once (it decided without waiting: the common
    case, such as no webhook configured, costs no coroutine), else an awaitable that finishes it
    (an ``async def`` pass always returns one)."""

    name: str

    def mutate(self, attrs: admitting.Attributes) -> Awaitable[None] | None: ...

    def validate(self, attrs: admitting.Attributes) -> Awaitable[None] | None: ...

    def mutates(self, group: str, plural: str) -> bool: ...


class Base:
    """A plugin that does nothing; plugins override what they implement.

    ``resources``: the (group, plural) pairs whose requests the plugin's passes can act on, or None
    for any. The chain calls a plugin only for those (every write pays for each call), so a plugin
    that names them must also do nothing for every other resource.
    """

    name = ""
    resources: frozenset[tuple[str, str]] | None = None

    def mutate(self, attrs: admitting.Attributes) -> Awaitable[None] | None:
        return None

    def validate(self, attrs: admitting.Attributes) -> Awaitable[None] | None:
        return None

    def mutates(self, group: str, plural: str) -> bool:
        return False


def forbidden(attrs: admitting.Attributes, message: str) -> errors.APIError:
    """Upstream's ``admission.NewForbidden``: 403 ``<resource> "<name>" is forbidden: <message>``."""
    name = attrs.name
    if not name and attrs.obj is not None:
        name = str((attrs.obj.get("metadata") or {}).get("name") or "")
    gr = attrs.record.group_resource
    return errors.Forbidden(
        f'{gr} "{name}" is forbidden: {message}',
        details={"name": name, "group": attrs.record.group, "kind": attrs.record.plural},
    )


def is_pod(attrs: admitting.Attributes) -> bool:
    return attrs.record.group == "" and attrs.record.plural == "pods" and not attrs.subresource


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []
