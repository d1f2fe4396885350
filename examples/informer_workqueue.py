"""An informer feeding a work queue: print each ConfigMap of a namespace whenever it changes.

Run it as ``python examples/informer_workqueue.py KUBECONFIG [NAMESPACE] [--once]``; with
``--once`` it exits after handling every object of the initial list (the test uses that).
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from kplane.client import Client, Config
from kplane.client.models import core_v1
from kplane.informers import (
    FactoryOptions,
    HandlerFuncs,
    SharedInformerFactory,
    meta_namespace_key,
    wait_for_cache_sync,
)
from kplane.workqueue import Queue


async def main(kubeconfig: str, namespace: str, once: bool) -> None:
    async with Client(Config.from_kubeconfig(kubeconfig)) as client:
        factory = SharedInformerFactory(client.dynamic, FactoryOptions(namespace=namespace))
        informer = await factory.informer(core_v1.ConfigMap)  # typed objects; "configmaps" gives dicts
        queue: Queue[str] = Queue()

        def enqueue(obj: Any, new: Any = None) -> None:
            queue.add(meta_namespace_key(new if new is not None else obj))

        handled = informer.add_event_handler(HandlerFuncs(add=enqueue, update=enqueue))
        factory.start()
        await wait_for_cache_sync(handled.has_synced)
        while not (once and len(queue) == 0):
            key = await queue.get()
            obj = informer.store.get_by_key(key)  # the cache's current state (None: deleted)
            state = "deleted" if obj is None or obj.metadata is None else obj.metadata.resource_version
            print(key, state, flush=True)
            queue.done(key)
        await factory.shutdown()


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--once"]
    asyncio.run(main(args[0], args[1] if len(args) > 1 else "default", "--once" in sys.argv))
