"""``kplane migrate``: copy every object from one store to another (servers stopped).

    kplane migrate --from DATA_DIR --to etcd://h1:2379,h2:2379     # SQLite into etcd
    kplane migrate --from etcd://h1:2379 --to NEW_DATA_DIR          # and back

A store is a data directory (its ``state.db``) or an etcd cluster (``etcd://``, with the
``--etcd-*`` TLS files and ``--etcd-prefix`` as for ``kplane serve``). The current state of every key
is copied as stored, so objects encrypted at rest stay encrypted (serve the destination with the same
``--encryption-provider-config``); history is not copied, and the destination gives each object a
new resourceVersion (clients relist, as after any restore). The destination must hold no object.
Event leases start afresh (``--event-ttl``) when the destination is etcd.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

_IN_FLIGHT = 64  # concurrent creates into the destination


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "migrate", help="copy every object between a data directory and etcd (servers stopped)"
    )
    p.add_argument("--from", dest="source", required=True, help="DATA_DIR or etcd://HOST:PORT[,...]")
    p.add_argument("--to", dest="target", required=True, help="DATA_DIR or etcd://HOST:PORT[,...]")
    p.add_argument("--etcd-cafile", type=Path, default=None, help="CA of etcd's serving certificates (TLS)")
    p.add_argument("--etcd-certfile", type=Path, default=None, help="client certificate for etcd")
    p.add_argument("--etcd-keyfile", type=Path, default=None, help="key of --etcd-certfile")
    p.add_argument("--etcd-prefix", default="", help="prefix of kplane's keys in etcd (default: none)")
    p.add_argument("--event-ttl", type=int, default=3600, help="seconds Events live in a destination etcd")
    p.set_defaults(func=run)


async def _open(spec: str, args: argparse.Namespace, *, create: bool) -> Any:
    from kplane.server.storage import etcd
    from kplane.server.storage.sqlite import SQLiteStorage

    if spec.startswith("etcd://"):
        files = (args.etcd_cafile, args.etcd_certfile, args.etcd_keyfile)
        tls = etcd.TLSFiles(*files) if any(f is not None for f in files) else None
        client = etcd.EtcdClient(etcd.parse_endpoints(spec), tls=tls, timeout=30.0)
        store = etcd.EtcdStorage(
            client, key_prefix=args.etcd_prefix, event_ttl=args.event_ttl, compaction_interval=0
        )
        try:
            await store.start()
        except BaseException:
            await store.close()
            raise
        return store
    path = Path(spec) / "state.db"
    if not create and not path.exists():
        raise FileNotFoundError(2, "no store", str(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    return SQLiteStorage(str(path), compaction_interval=0)


async def copy(source: Any, target: Any) -> int:
    """Create every current object of ``source`` in ``target`` (which must be empty); returns how
    many. Raises ``ValueError`` when ``target`` holds objects."""
    existing = await target.list("/", limit=1)
    if existing.items:
        raise ValueError("the destination already holds objects")
    pairs, _ = await source.list_keyed("/")
    pending: set[asyncio.Future[Any]] = set()
    for key, obj in pairs:
        pending.add(asyncio.ensure_future(target.create(key, dict(obj))))
        if len(pending) >= _IN_FLIGHT:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for f in done:
                f.result()
    for f in asyncio.as_completed(pending):
        await f
    return len(pairs)


def run(args: argparse.Namespace) -> int:
    from kplane.server import storage

    async def main() -> int:
        source = target = None
        try:
            source = await _open(args.source, args, create=False)
            target = await _open(args.target, args, create=True)
            n = await copy(source, target)
        except (storage.StorageError, OSError, ValueError) as err:
            print(f"kplane: cannot migrate {args.source} to {args.target}: {err}", file=sys.stderr)
            return 1
        finally:
            for store in (target, source):
                if store is not None:
                    await store.close()
        print(f"kplane: copied {n} objects from {args.source} to {args.target}")
        return 0

    return asyncio.run(main())
