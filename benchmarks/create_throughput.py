"""ConfigMap creates/s with concurrent clients, then sequential create and GET latency; one JSON line.

    python benchmarks/create_throughput.py --kubeconfig PATH [--clients 16] [--duration 5] [--count N]
        [--kind configmap|pod]

``--kind pod`` creates one-container Pods (what ``kubectl run`` sends), so the admission chain's
cost per Pod (ServiceAccount, Priority, tolerations, quota and PodSecurity lookups) shows in
``server_cpu_us_per_create``.

Client model: each of the ``--clients`` asyncio tasks owns one keep-alive TLS connection
(``--client raw``, the default: a minimal HTTP/1.1 client, see ``_rawhttp``; or ``--client
aiohttp``) and sends its next create as soon as the previous one is answered, as 16 upstream
clients (each with its own transport) would. Connections are opened and warmed before the clock
starts. The load runs for ``--duration`` seconds or until ``--count`` objects exist, whichever comes
first, in a fresh namespace (deleted afterwards unless ``--keep``). Then one client creates
``--samples`` objects one at a time (latency: median, p99) and GETs them one at a time.

Request bodies are pre-encoded bytes and responses are read but not decoded, so the client spends
as little of the shared CPU as aiohttp allows. ``--processes`` splits the clients over several
processes when one client process cannot keep up; ``client_cpu_s`` in the output tells whether it
was close to saturating a core. ``--server-pid`` adds the server's CPU use over the load phase (read
from /proc, so only for a server on this machine).

``--writer-kubeconfig`` (with ``--writer-user``) runs the load and the sequential phase as a
non-admin identity: the admin ``--kubeconfig`` creates the namespace, a Role allowing
create/get/list on ConfigMaps there and a RoleBinding to ``--writer-user``, so every request goes
through RBAC's rule evaluation rather than the ``system:masters`` shortcut. Compare with a server
run with ``--authorization-mode AlwaysAllow`` to see what authorization costs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import _client
import _rawhttp
import yarl

BODY = (
    b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"%s","labels":{"bench":"create"}},'
    b'"data":{"greeting":"hello","config.yaml":"replicas: 3\\nimage: registry.example/app:1.0\\n"}}'
)

POD_BODY = (
    b'{"apiVersion":"v1","kind":"Pod","metadata":{"name":"%s","labels":{"bench":"create"}},'
    b'"spec":{"containers":[{"name":"app","image":"registry.example/app:1.0"}]}}'
)
KINDS = {"configmap": ("configmaps", BODY), "pod": ("pods", POD_BODY)}


Send = Callable[[bytes], Awaitable[int]]


async def _senders(
    target: _client.Target, namespace: str, clients: int, client_kind: str, plural: str
) -> tuple[list[Send], Callable[[], Awaitable[None]]]:
    """One ``send(body) -> status`` per client, each on its own connection, and a closer."""
    path = f"/api/v1/namespaces/{namespace}/{plural}"
    if client_kind == "raw":
        conns = [
            _rawhttp.RawConnection(target.server, target.ssl_context, target.headers) for _ in range(clients)
        ]
        await asyncio.gather(*(c.connect() for c in conns))

        def raw_sender(conn: _rawhttp.RawConnection) -> Send:
            async def send(body: bytes) -> int:
                status, _ = await conn.request(conn.build("POST", path, body))
                return status

            return send

        async def close_raw() -> None:
            for c in conns:
                c.close()

        return [raw_sender(c) for c in conns], close_raw
    # A parsed URL and header mapping built once: aiohttp would otherwise parse them per request.
    url = yarl.URL(target.server + path)
    headers = {"Content-Type": "application/json"}
    sessions = [_client.session(target) for _ in range(clients)]

    def aiohttp_sender(http: Any) -> Send:
        async def send(body: bytes) -> int:
            async with http.post(url, data=body, headers=headers) as resp:
                await resp.read()
                return int(resp.status)

        return send

    async def close_sessions() -> None:
        await asyncio.gather(*(s.close() for s in sessions))

    return [aiohttp_sender(h) for h in sessions], close_sessions


async def _load(
    kubeconfig: str,
    context: str | None,
    auth: str,
    namespace: str,
    prefix: str,
    clients: int,
    duration: float,
    count: int,
    start_at: float,
    server_pid: int | None,
    client_kind: str = "raw",
    kind: str = "configmap",
) -> dict[str, Any]:
    """Run ``clients`` creating tasks from wall time ``start_at`` (shared by all processes)."""
    target = _client.load_kubeconfig(kubeconfig, context=context, auth=auth)
    plural, body_fmt = KINDS[kind]
    senders, close = await _senders(target, namespace, clients, client_kind, plural)
    latencies: list[float] = []
    errors: dict[str, int] = {}
    done = 0
    try:
        # Warm every connection (TLS handshake, first-request costs) before timing.
        await asyncio.gather(
            *(send(body_fmt % f"{prefix}-warm-{i}".encode()) for i, send in enumerate(senders))
        )
        await asyncio.sleep(max(0.0, start_at - time.time()))
        t0 = time.perf_counter()
        deadline = t0 + duration
        cpu0 = time.process_time()
        machine0 = _client.machine_cpu()
        server0 = _client.process_cpu_seconds(server_pid) if server_pid else 0.0

        async def client(c: int, send: Send) -> None:
            nonlocal done
            n = 0
            perf = time.perf_counter
            while True:
                now = perf()
                if now >= deadline or (count and done >= count):
                    return
                status = await send(body_fmt % f"{prefix}-{c}-{n}".encode())
                n += 1
                latencies.append(perf() - now)
                if status == 201:
                    done += 1
                else:
                    errors[str(status)] = errors.get(str(status), 0) + 1

        await asyncio.gather(*(client(c, send) for c, send in enumerate(senders)))
        elapsed = time.perf_counter() - t0
        cpu = time.process_time() - cpu0
        machine = _client.busy_share(machine0, _client.machine_cpu())
        server = _client.process_cpu_seconds(server_pid) - server0 if server_pid else None
    finally:
        await close()
    return {
        "done": done,
        "elapsed": elapsed,
        "latencies": latencies,
        "errors": errors,
        "cpu": cpu,
        "machine": machine,
        "server": server,
    }


def _load_process(args: tuple[Any, ...], conn: Any) -> None:
    conn.send(_client.run(_load(*args)))
    conn.close()


async def _sequential(
    target: _client.Target, namespace: str, prefix: str, samples: int, kind: str = "configmap"
) -> dict[str, Any]:
    plural, body_fmt = KINDS[kind]
    url = f"{target.server}/api/v1/namespaces/{namespace}/{plural}"
    create: list[float] = []
    get: list[float] = []
    async with _client.session(target) as http:
        for i in range(5):  # warm the connection
            await _client.request(http, "POST", url, body=body_fmt % f"{prefix}-seqwarm-{i}".encode())
        for i in range(samples):
            body = body_fmt % f"{prefix}-seq-{i}".encode()
            t = time.perf_counter()
            await _client.request(http, "POST", url, body=body)
            create.append(time.perf_counter() - t)
        for i in range(samples):
            t = time.perf_counter()
            await _client.request(http, "GET", f"{url}/{prefix}-seq-{i}")
            get.append(time.perf_counter() - t)
    return {"create_latency": _client.quantiles_ms(create), "get_latency": _client.quantiles_ms(get)}


_ROLE = (
    b'{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"bench-writer"},'
    b'"rules":[{"apiGroups":[""],"resources":["configmaps"],"verbs":["create","get","list"]}]}'
)
_BINDING = (
    b'{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"bench-writer"},'
    b'"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"bench-writer"},'
    b'"subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"%s"}]}'
)


async def _setup(target: _client.Target, namespace: str, *, delete: bool, writer_user: str = "") -> None:
    async with _client.session(target) as http:
        if delete:
            await _client.delete_namespace(http, target.server, namespace)
            return
        await _client.ensure_namespace(http, target.server, namespace)
        if writer_user:
            base = f"{target.server}/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}"
            await _client.request(http, "POST", f"{base}/roles", body=_ROLE, ok=(201, 409))
            binding = _BINDING % writer_user.encode()
            await _client.request(http, "POST", f"{base}/rolebindings", body=binding, ok=(201, 409))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--context", default=None)
    parser.add_argument("--auth", choices=("auto", "cert", "token"), default="auto")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--processes", type=int, default=1, help="client processes to spread clients over")
    parser.add_argument("--duration", type=float, default=5.0, help="seconds of load (default 5)")
    parser.add_argument("--count", type=int, default=0, help="stop after this many creates (0: no limit)")
    parser.add_argument("--samples", type=int, default=500, help="sequential creates and GETs timed")
    parser.add_argument("--namespace", default=None, help="default: a fresh bench-create-XXXXXX")
    parser.add_argument("--keep", action="store_true", help="do not delete the namespace afterwards")
    parser.add_argument("--server-pid", type=int, default=None, help="report this process's CPU use")
    parser.add_argument("--writer-kubeconfig", default=None, help="run the load as this (non-admin) identity")
    parser.add_argument(
        "--writer-user", default="", help="the user name of --writer-kubeconfig (for its RoleBinding)"
    )
    parser.add_argument(
        "--client",
        choices=("raw", "aiohttp"),
        default="raw",
        help="load generator: raw keep-alive HTTP/1.1 (default, leaves the CPU to the server) or aiohttp",
    )
    parser.add_argument("--kind", choices=tuple(KINDS), default="configmap", help="what to create")
    args = parser.parse_args(argv)

    admin = _client.load_kubeconfig(args.kubeconfig, context=args.context, auth=args.auth)
    namespace = args.namespace or f"bench-create-{uuid.uuid4().hex[:6]}"
    prefix = f"cm-{uuid.uuid4().hex[:6]}"
    if args.writer_kubeconfig and not args.writer_user:
        parser.error("--writer-kubeconfig needs --writer-user")
    _client.run(_setup(admin, namespace, delete=False, writer_user=args.writer_user))
    if args.writer_kubeconfig:
        args.kubeconfig, args.context = args.writer_kubeconfig, None
    target = _client.load_kubeconfig(args.kubeconfig, context=args.context, auth=args.auth)

    procs = max(1, min(args.processes, args.clients))
    start_at = time.time() + 1.0 + 0.5 * procs  # room for every process to connect first
    per_proc_count = -(-args.count // procs) if args.count else 0
    results: list[dict[str, Any]] = []
    if procs == 1:
        results.append(
            _client.run(
                _load(
                    args.kubeconfig,
                    args.context,
                    args.auth,
                    namespace,
                    prefix,
                    args.clients,
                    args.duration,
                    per_proc_count,
                    start_at,
                    args.server_pid,
                    args.client,
                    args.kind,
                )
            )
        )
    else:
        ctx = multiprocessing.get_context("spawn")
        workers = []
        for p in range(procs):
            n = args.clients // procs + (1 if p < args.clients % procs else 0)
            recv, send = ctx.Pipe(duplex=False)
            load_args = (
                args.kubeconfig,
                args.context,
                args.auth,
                namespace,
                f"{prefix}-p{p}",
                n,
                args.duration,
                per_proc_count,
                start_at,
                args.server_pid if p == 0 else None,
                args.client,
                args.kind,
            )
            proc = ctx.Process(target=_load_process, args=(load_args, send))
            proc.start()
            workers.append((proc, recv))
        for proc, recv in workers:
            results.append(recv.recv())
            proc.join()
    server_cpu = results[0]["server"]

    done = sum(r["done"] for r in results)
    elapsed = max(r["elapsed"] for r in results)
    errors: dict[str, int] = {}
    for r in results:
        for k, v in r["errors"].items():
            errors[k] = errors.get(k, 0) + v
    latencies = [x for r in results for x in r["latencies"]]
    seq = _client.run(_sequential(target, namespace, prefix, args.samples, args.kind))
    if not args.keep:
        _client.run(_setup(admin, namespace, delete=True))

    out: dict[str, Any] = {
        "benchmark": "create_throughput",
        "server": target.server,
        "auth": target.auth,
        "identity": args.writer_user or "admin",
        "kind": args.kind,
        "clients": args.clients,
        "processes": procs,
        "client_model": f"{args.client}: each client one keep-alive TLS connection, one request in flight",
        "creates": done,
        "duration_s": round(elapsed, 3),
        "creates_per_s": round(done / elapsed, 1) if elapsed else 0.0,
        "errors": errors,
        "latency_under_load": _client.quantiles_ms(latencies),
        "client_cpu_s": round(sum(r["cpu"] for r in results), 3),
        "client_cpu_us_per_create": round(sum(r["cpu"] for r in results) / max(done, 1) * 1e6, 1),
        "machine_busy": results[0]["machine"],
        **seq,
    }
    if server_cpu is not None:
        out["server_cpu_s"] = round(server_cpu, 3)
        out["server_cpu_us_per_create"] = round(server_cpu / max(done, 1) * 1e6, 1)
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
