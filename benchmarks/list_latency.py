"""Latency of listing 2,000 ConfigMaps, whole and paged, and of one GET; one JSON line.

    python benchmarks/list_latency.py --kubeconfig PATH [--objects 2000] [--rounds 30] [--page 500]
                                      [--accept json|protobuf|both]

Makes sure namespace ``--namespace`` (default ``bench-list``) holds at least ``--objects``
ConfigMaps, creating the missing ones with 16 concurrent clients, then times ``--rounds`` full lists
(``GET .../configmaps``) and ``--rounds`` paged lists (``limit=--page`` and ``continue`` until the last
page). A list's time runs from sending the request to having the whole body; decoding it to check
the item count and read the continue token is not counted, since that is the client's cost. The
namespace is kept so that later runs skip the filling step. ``--accept`` picks the reply's media
type (``Accept: application/json`` or ``application/vnd.kubernetes.protobuf``, what client-go asks
first; ``both`` alternates the two request by request, each first in every other round, so that
both see the same load, and reports each under ``by_accept``); the same rounds also time ``GET``
of one ConfigMap. Between timed requests the client does as little as it can: it counts the
items of each media type's first lists only, and otherwise reads just the continue token from the
reply's head; its cyclic garbage collector is off while it measures. Decoding every 2,000-item JSON
reply left ~20,000 objects to collect and the caches cold for the next timed request, under
``both`` always one of the other media type, which made protobuf look slower than it is.
No compression is asked for (see ``_client``). With ``--server-pid`` (a server on this machine), each
request's cost to the server's request thread is also reported (``server_cpu_ms``, medians): the
server's own answer time, which no client-side effect moves.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import re
import sys
import time
import urllib.parse
from dataclasses import dataclass, field
from typing import Any

import _client
import aiohttp
import orjson

from kplane.api.protobuf import decoding, wire

BODY = (
    b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm-%05d","labels":{"bench":"list"}},'
    b'"data":{"greeting":"hello","config.yaml":"replicas: 3\\nimage: registry.example/app:1.0\\n"}}'
)


async def _fill(target: _client.Target, url: str, want: int) -> int:
    """Create ``cm-00000`` … up to ``want`` objects, skipping names that exist; returns how many were made."""
    async with _client.session(target) as http:
        body = await _client.request(http, "GET", url)
        have = {item["metadata"]["name"] for item in orjson.loads(body)["items"]}
    missing = [i for i in range(want) if f"cm-{i:05d}" not in have]
    if len(have) >= want or not missing:
        return 0
    queue = iter(missing)
    created = 0

    async def worker() -> None:
        nonlocal created
        async with _client.session(target) as http:
            for i in queue:
                await _client.request(http, "POST", url, body=BODY % i, ok=(201, 409))
                created += 1

    await asyncio.gather(*(worker() for _ in range(16)))
    return created


@dataclass
class _Timer:
    """Times GETs; with ``server_pid``, also the CPU the server's request thread spent meanwhile
    (its schedstat, in nanoseconds: the server's own cost of the answer, whatever the client does)."""

    server_pid: int | None = None

    async def get(self, http: aiohttp.ClientSession, url: str) -> tuple[float, float, bytes]:
        """(seconds until the whole body arrived, server CPU seconds or 0.0, the body)."""
        pid = self.server_pid
        cpu0 = _client.thread_cpu_ns(pid) if pid else 0
        t = time.perf_counter()
        async with http.get(url) as resp:
            data = await resp.read()
            elapsed = time.perf_counter() - t
            cpu = (_client.thread_cpu_ns(pid) - cpu0) / 1e9 if pid else 0.0
            data = _client.decoded_body(data, resp.headers.get("Content-Encoding"))
            if resp.status != 200:
                raise _client.HTTPError("GET", url, resp.status, data)
        return elapsed, cpu, data


_JSON_CONTINUE = re.compile(rb'"continue":"([^"]*)"')


def _continue_token(data: bytes) -> str:
    """A list reply's continue token, read from its head without decoding the items (which would
    leave the client's garbage and cold caches to the next timed request; see the module notes)."""
    if not data.startswith(decoding.MAGIC):
        head, items, _ = data[:4096].partition(b'"items"')  # ListMeta precedes the items
        if items:
            found = _JSON_CONTINUE.search(head)
            return found.group(1).decode() if found is not None else ""
        return _items_and_continue(data)[1]
    _, _, raw = decoding.unwrap(data)
    for number, _, value in wire.fields(raw):
        if number == 1 and isinstance(value, memoryview):  # ListMeta: continue is field 3
            for meta_number, _, meta_value in wire.fields(value):
                if meta_number == 3 and isinstance(meta_value, memoryview):
                    return bytes(meta_value).decode()
            return ""
    return ""


def _items_and_continue(data: bytes) -> tuple[int, str]:
    """Count a list reply's items and read its continue token, in JSON or protobuf."""
    if not data.startswith(decoding.MAGIC):
        decoded = orjson.loads(data)
        return len(decoded["items"]), decoded["metadata"].get("continue") or ""
    _, kind, raw = decoding.unwrap(data)
    if not kind.endswith("List"):
        raise SystemExit(f"expected a list in protobuf, got kind {kind!r}")
    items = 0
    token = ""
    for number, _, value in wire.fields(raw):
        if number == 2:
            items += 1
        elif number == 1 and isinstance(value, memoryview):  # ListMeta: continue is field 3
            for meta_number, _, meta_value in wire.fields(value):
                if meta_number == 3 and isinstance(meta_value, memoryview):
                    token = bytes(meta_value).decode()
    return items, token


@dataclass
class _Samples:
    """Durations (seconds) of each kind of request in one media type."""

    full: list[float] = field(default_factory=list)
    paged: list[float] = field(default_factory=list)
    single: list[float] = field(default_factory=list)
    cpu: dict[str, list[float]] = field(
        default_factory=lambda: {"get": [], "full_list": [], "paged_list": []}
    )
    size: int = 0
    pages: int = 0

    def figures(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "get": _client.quantiles_ms(self.single),
            "full_list": _client.quantiles_ms(self.full),
            "full_list_bytes": self.size,
            "paged_list": _client.quantiles_ms(self.paged),
            "pages": self.pages,
        }
        if any(self.cpu.values()):
            out["server_cpu_ms"] = {k: _client.quantiles_ms(v)["median_ms"] for k, v in self.cpu.items()}
        return out


async def _paged(
    timer: _Timer,
    http: aiohttp.ClientSession,
    url: str,
    page: int,
    objects: int,
    out: _Samples,
    *,
    verify: bool,
) -> None:
    """One paged list, timed; ``verify`` also counts the items (decoding every page)."""
    total = cpu = 0.0
    out.pages = 0
    items = 0
    token = ""
    while True:
        query = f"?limit={page}" + (f"&continue={urllib.parse.quote(token, safe='')}" if token else "")
        elapsed, spent, data = await timer.get(http, url + query)
        total += elapsed
        cpu += spent
        out.pages += 1
        if verify:
            count, token = _items_and_continue(data)
            items += count
        else:
            token = _continue_token(data)
        if not token:
            break
    if verify and items < objects:
        raise SystemExit(f"paged list returned {items} items, expected at least {objects}")
    out.paged.append(total)
    if timer.server_pid:
        out.cpu["paged_list"].append(cpu)


def _in_turn(
    sessions: dict[str, aiohttp.ClientSession], round_: int
) -> list[tuple[str, aiohttp.ClientSession]]:
    """The sessions in the order of round ``round_``: each media type goes first in every other
    round, so that none always follows the other."""
    order = list(sessions.items())
    return order if round_ % 2 == 0 else order[::-1]


async def _measure(
    target: _client.Target,
    url: str,
    objects: int,
    rounds: int,
    page: int,
    accepts: list[str],
    timer: _Timer,
) -> dict[str, _Samples]:
    """Time each kind of request in every media type of ``accepts``, alternating between them
    request by request so that all see the same load on a shared machine."""
    samples = {accept: _Samples() for accept in accepts}
    sessions = {accept: _client.session(target, accept=accept) for accept in accepts}
    gc.collect()
    gc.disable()  # see the module notes
    try:
        for http in sessions.values():
            for _ in range(3):  # warm the connection and any server-side caches
                await timer.get(http, url)
                await timer.get(http, f"{url}/cm-00000")
        for r in range(rounds):
            for accept, http in _in_turn(sessions, r):
                elapsed, cpu, data = await timer.get(http, url)
                samples[accept].full.append(elapsed)
                if timer.server_pid:
                    samples[accept].cpu["full_list"].append(cpu)
                samples[accept].size = len(data)
                if r < 2:  # each media type's first list is counted (decoded); later ones are not
                    count, _ = _items_and_continue(data)
                    if count < objects:
                        raise SystemExit(f"list returned {count} items, expected at least {objects}")
        for r in range(rounds):
            for accept, http in _in_turn(sessions, r):
                await _paged(timer, http, url, page, objects, samples[accept], verify=r < 2)
        for r in range(rounds * 10):
            for accept, http in _in_turn(sessions, r):
                elapsed, cpu, _ = await timer.get(http, f"{url}/cm-00000")
                samples[accept].single.append(elapsed)
                if timer.server_pid:
                    samples[accept].cpu["get"].append(cpu)
    finally:
        gc.enable()
        for http in sessions.values():
            await http.close()
    return samples


async def _run(args: argparse.Namespace) -> dict[str, Any]:
    target = _client.load_kubeconfig(args.kubeconfig, context=args.context, auth=args.auth)
    async with _client.session(target) as http:
        await _client.ensure_namespace(http, target.server, args.namespace)
    url = f"{target.server}/api/v1/namespaces/{args.namespace}/configmaps"
    t = time.perf_counter()
    created = await _fill(target, url, args.objects)
    fill_s = time.perf_counter() - t
    media = {"json": _client.JSON, "protobuf": _client.PROTOBUF}
    accepts = list(media.values()) if args.accept == "both" else [media[args.accept]]
    timer = _Timer(args.server_pid)
    samples = await _measure(target, url, args.objects, args.rounds, args.page, accepts, timer)
    result: dict[str, Any] = {
        "benchmark": "list_latency",
        "server": target.server,
        "auth": target.auth,
        "namespace": args.namespace,
        "objects": args.objects,
        "created": created,
        "fill_s": round(fill_s, 3),
        "rounds": args.rounds,
        "page_size": args.page,
        "accept": accepts[0],
        **samples[accepts[0]].figures(),
    }
    if len(accepts) > 1:
        result["accept"] = "both"
        result["by_accept"] = {accept: s.figures() for accept, s in samples.items()}
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--context", default=None)
    parser.add_argument("--auth", choices=("auto", "cert", "token"), default="auto")
    parser.add_argument("--namespace", default="bench-list")
    parser.add_argument("--objects", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--page", type=int, default=500)
    parser.add_argument("--accept", choices=("json", "protobuf", "both"), default="json")
    parser.add_argument(
        "--server-pid",
        type=int,
        default=None,
        help="also report the CPU this local server's request thread spent per request (server_cpu_ms)",
    )
    args = parser.parse_args(argv)
    print(json.dumps(_client.run(_run(args))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
