"""``EncryptedStorage``: a ``Storage`` decorator that encrypts chosen resources at rest.

It sits directly over the durable backend (under the cache), as upstream's value transformers sit
at the etcd boundary: the cache, watches and everything above see plain objects; the backend holds,
for an encrypted resource, an envelope ``{"metadata": {name, namespace, uid, resourceVersion},
"key": <storage key>, "encrypted": "k8s:enc:<provider>:v1:<key>:<base64 ciphertext>"}``. The
ciphertext is the object's JSON; the envelope keeps only what the backend itself reads (the
revision stamp and the uid of preconditions), never data. Values are base64 inside the JSON text
the backend stores, where upstream stores raw bytes in etcd; the prefix is upstream's.

Which provider reads a value is chosen by its prefix; a value with no envelope is read as
``identity`` only when the resource's rule lists ``identity`` (upstream: "no matching prefix found"
otherwise). An update that does not change the plain object hands the backend the envelope it
read, so a no-op update still makes no new revision, unless the value was read with another
provider than the writer (upstream's "stale"): then it is written again, which is how rewriting
every Secret moves them to a new key.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import builtins
import dataclasses
import inspect
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import orjson

from kplane.server.storage import interface
from kplane.server.storage.encryption import config

_FIELD = "encrypted"
_KEY = "key"
_KEPT = ("name", "namespace", "uid", "resourceVersion")


class EncryptedStorage:
    """Encrypts writes and decrypts reads of resources matched by ``rules``; delegates the rest."""

    def __init__(self, backend: Any, rules: Sequence[config.Rule]) -> None:
        self._backend = backend
        self._rules = tuple(rules)
        self._by_prefix: dict[str, config.Rule | None] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._backend, name)

    # -- transformation ------------------------------------------------------------------------

    def _rule(self, key: str) -> config.Rule | None:
        parts = key.split("/", 4)
        if len(parts) < 4:
            return None
        prefix = "/".join(parts[:4])
        if prefix in self._by_prefix:
            return self._by_prefix[prefix]
        group = "" if parts[2] == "core" else parts[2]
        rule = next((r for r in self._rules if r.matches(group, parts[3])), None)
        if len(self._by_prefix) < 4096:  # keys are request-derived: bound the memo
            self._by_prefix[prefix] = rule
        return rule

    def _seal(self, key: str, obj: interface.Object) -> interface.Object:
        rule = self._rule(key)
        if rule is None or rule.providers[0] is None:
            return obj
        writer = rule.providers[0]
        meta = obj.get("metadata") or {}
        kept = {k: meta[k] for k in _KEPT if k in meta}
        sealed = writer.seal(orjson.dumps(obj), key.encode())
        return {"metadata": kept, _KEY: key, _FIELD: (writer.prefix + base64.b64encode(sealed)).decode()}

    def _open(self, key: str, stored: interface.Object) -> interface.Object:
        rule = self._rule(key)
        if rule is None:
            return stored
        value = stored.get(_FIELD)
        if not isinstance(value, str):
            if None in rule.providers:
                return stored
            raise interface.StorageError(f"no matching prefix found for {key}")
        raw = value.encode()
        for provider in rule.providers:
            if provider is not None and raw.startswith(provider.prefix):
                try:
                    data = provider.open(base64.b64decode(raw[len(provider.prefix) :]), key.encode())
                    obj: interface.Object = orjson.loads(data)
                except (config.DecryptError, binascii.Error, orjson.JSONDecodeError) as e:
                    raise interface.StorageError(f"cannot decrypt {key}: {e}") from e
                rv = (stored.get("metadata") or {}).get("resourceVersion")
                if rv is not None:
                    obj.setdefault("metadata", {})["resourceVersion"] = rv
                return obj
        raise interface.StorageError(f"no matching prefix found for {key}")

    def _stale(self, key: str, stored: interface.Object) -> bool:
        """Whether ``stored`` was not written by the current writer (upstream's "stale" read): then
        even an unchanged update is written again, which is how a rewrite moves data to a new key."""
        rule = self._rule(key)
        writer = rule.providers[0] if rule is not None else None
        value = stored.get(_FIELD)
        if writer is None:
            return isinstance(value, str)
        return not (isinstance(value, str) and value.encode().startswith(writer.prefix))

    def _event(self, event: interface.Event) -> interface.Event:
        if self._rule(event.key) is None:
            return event
        prev = None if event.prev_object is None else self._open(event.key, event.prev_object)
        return interface.Event(
            event.type, event.key, self._open(event.key, event.object), event.revision, prev
        )

    # -- the contract --------------------------------------------------------------------------

    async def get(self, key: str) -> interface.Object:
        return self._open(key, await self._backend.get(key))

    async def list(self, prefix: str, *args: Any, **kwargs: Any) -> interface.ListResult:
        result: interface.ListResult = await self._backend.list(prefix, *args, **kwargs)
        items = [self._open(self._key_of(prefix, obj), obj) for obj in result.items]
        return interface.ListResult(items, result.revision, result.more, result.remaining, result.last_key)

    @staticmethod
    def _key_of(prefix: str, stored: interface.Object) -> str:
        """The key an item of a list under ``prefix`` was stored at (envelopes record it)."""
        key = stored.get(_KEY)
        if isinstance(key, str) and key.startswith(prefix):
            return key
        return prefix  # plain items: only the rule of the prefix matters

    async def list_keyed(self, prefix: str) -> tuple[builtins.list[tuple[str, interface.Object]], int]:
        items, revision = await self._backend.list_keyed(prefix)
        return [(key, self._open(key, obj)) for key, obj in items], revision

    async def create(self, key: str, obj: interface.Object) -> interface.Object:
        stored = await self._backend.create(key, self._seal(key, obj))
        return self._open(key, stored)

    async def guaranteed_update(
        self,
        key: str,
        fn: interface.UpdateFunc,
        *,
        preconditions: interface.Preconditions | None = None,
        cached: interface.Object | None = None,
    ) -> interface.Object:
        if self._rule(key) is None:
            plain: interface.Object = await self._backend.guaranteed_update(
                key, fn, preconditions=preconditions, cached=cached
            )
            return plain
        # Encrypted: ``cached`` (a plain object) is dropped; the backend holds the sealed form.

        async def sealed(current: interface.Object) -> interface.Object:
            plain = self._open(key, current)
            stale = self._stale(key, current)
            token = interface.STALE_READ.set(stale)
            try:
                result = fn(self._open(key, current))
                new = await result if inspect.isawaitable(result) else result
            finally:
                interface.STALE_READ.reset(token)
            return current if new == plain and not stale else self._seal(key, new)

        stored = await self._backend.guaranteed_update(key, sealed, preconditions=preconditions)
        return self._open(key, stored)

    async def delete(self, key: str, *args: Any, **kwargs: Any) -> interface.Object:
        return self._open(key, await self._backend.delete(key, *args, **kwargs))

    async def revisions(
        self, where: str, *, deletions_only: bool = False, limit: int = 1000
    ) -> builtins.list[interface.Revision]:
        found = await interface.history_of(self._backend).revisions(
            where, deletions_only=deletions_only, limit=limit
        )
        return [dataclasses.replace(r, object=self._open(r.key, r.object)) for r in found]

    async def get_at(self, key: str, revision: int) -> interface.Object:
        return self._open(key, await interface.history_of(self._backend).get_at(key, revision))

    @property
    def listen(self) -> Callable[..., Callable[[], None]]:
        """The backend's ``listen`` with decrypted events; absent (``AttributeError``) when the
        backend has none (etcd), so the cache follows the watch instead."""
        backend_listen = self._backend.listen

        def listen(listener: Callable[[interface.Event], None], prefix: str = "") -> Callable[[], None]:
            unlisten: Callable[[], None] = backend_listen(lambda event: listener(self._event(event)), prefix)
            return unlisten

        return listen

    def watch(self, prefix: str, from_revision: int) -> interface.Watch:
        return _DecryptingWatch(self._backend.watch(prefix, from_revision), self._event)


class _DecryptingWatch:
    """A backend watch whose events are decrypted as they are taken."""

    def __init__(self, inner: interface.Watch, convert: Callable[[interface.Event], interface.Event]) -> None:
        self._inner = inner
        self._convert = convert

    def __getattr__(self, name: str) -> Any:
        inner = getattr(self._inner, name)  # e.g. an etcd watch's progress hooks
        if name == "deliver_to":  # events handed straight to a sink are decrypted on the way
            convert = self._convert

            def deliver_to(sink: Callable[[interface.Event], None]) -> None:
                inner(lambda event: sink(convert(event)))

            return deliver_to
        return inner

    async def __aiter__(self) -> AsyncIterator[interface.Event]:
        async for event in self._inner:
            yield self._convert(event)

    @property
    def ready(self) -> bool:
        return self._inner.ready

    def on_terminate(self, callback: Callable[[interface.StorageError], None]) -> None:
        self._inner.on_terminate(callback)

    def wake_when_ready(self, waiter: asyncio.Future[None]) -> None:
        self._inner.wake_when_ready(waiter)

    def close(self) -> None:
        self._inner.close()
