"""A synchronous facade over the async client, for scripts and REPLs.

``sync.Client(config)`` starts one private event loop in a daemon thread and runs the async
``typed.Client`` there. Every object it hands out is a ``Proxy``: calling an async method runs it
on that loop and returns its result; an async iterator (``watch``) becomes a plain iterator;
results that are themselves async-API objects (``resource(...)`` clients) come back proxied, and
plain values (dicts, models, ``Resource``) come back as they are. Nothing is reimplemented, so the
facade has exactly the async API's behaviour and errors::

    with sync.Client() as c:  # Config.load(): $KUBECONFIG, in-cluster, ~/.kube/config
        cm = c.resource("configmaps", namespace="default").get("settings")

Calls block the calling thread; they must not be made from the facade's own loop (for example
from inside a coroutine that it runs). Static types are not preserved through the proxy.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import os
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from types import TracebackType
from typing import Any, TypeVar

from kplane.client import config as config_mod
from kplane.client import transport, typed

T = TypeVar("T")


class Runner:
    """An event loop running forever in a daemon thread; ``run`` submits work and waits for it."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="kplane-sync", daemon=True)
        self._thread.start()

    def run(self, coro: Awaitable[T]) -> T:
        """Run ``coro`` on the loop and return its result (or raise its exception) in this thread."""
        if threading.current_thread() is self._thread:
            if inspect.iscoroutine(coro):
                coro.close()  # Never awaited: close it so it does not warn.
            raise RuntimeError("the sync facade cannot be called from its own event loop")

        async def wrap() -> T:
            return await coro

        return asyncio.run_coroutine_threadsafe(wrap(), self.loop).result()

    def iterate(self, agen: AsyncIterator[T]) -> Iterator[T]:
        """Drive ``agen`` one item at a time; closing the returned iterator closes ``agen``."""
        try:
            while True:
                try:
                    yield self.run(agen.__anext__())
                except StopAsyncIteration:
                    return
        finally:
            aclose = getattr(agen, "aclose", None)
            if aclose is not None and self.loop.is_running():
                self.run(aclose())

    def stop(self) -> None:
        """Stop the loop and join its thread (idempotent)."""
        if self.loop.is_running():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join()
        if not self.loop.is_closed():
            self.loop.close()


_ASYNC_API: dict[type, bool] = {}


def _is_async_api(cls: type) -> bool:
    """True for classes with async methods: their instances are proxied, everything else is not."""
    known = _ASYNC_API.get(cls)
    if known is None:
        known = _ASYNC_API[cls] = any(
            inspect.iscoroutinefunction(member) or inspect.isasyncgenfunction(member)
            for _, member in inspect.getmembers(cls, inspect.isfunction)
        )
    return known


class Proxy:
    """The blocking view of one async-API object; see the module docstring."""

    def __init__(self, target: Any, runner: Runner) -> None:
        self._target = target
        self._runner = runner

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._target, name)
        if inspect.iscoroutinefunction(attr):
            return self._blocking(attr)
        if inspect.isasyncgenfunction(attr):
            return lambda *a, **kw: self._runner.iterate(attr(*a, **kw))
        if callable(attr) and not isinstance(attr, type):
            return lambda *a, **kw: self._wrap(attr(*a, **kw))
        return self._wrap(attr)

    def __repr__(self) -> str:
        return f"sync.Proxy({self._target!r})"

    def _blocking(self, fn: Callable[..., Awaitable[Any]]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            return self._wrap(self._runner.run(fn(*args, **kwargs)))

        return call

    def _wrap(self, value: Any) -> Any:
        if isinstance(value, AsyncIterator):
            return self._runner.iterate(value)
        if _is_async_api(type(value)):
            return Proxy(value, self._runner)
        return value


class Client(Proxy):
    """A blocking ``typed.Client``: ``resource(...)``, ``mapper``, ``discovery``, ``rest`` and friends."""

    def __init__(
        self,
        config: config_mod.Config | None = None,
        *,
        cache_dir: str | os.PathLike[str] | None = None,
        warning_handler: transport.WarningHandler | None = None,
    ) -> None:
        config = config or config_mod.Config.load()
        runner = Runner()

        async def build() -> typed.Client:
            return typed.Client(config, cache_dir=cache_dir, warning_handler=warning_handler)

        super().__init__(runner.run(build()), runner)

    def close(self) -> None:
        """Close the connections and stop the private event loop."""
        if self._runner.loop.is_running():
            self._runner.run(self._target.close())
        self._runner.stop()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
