"""New-connection cost: TLS handshake + one authenticated GET per connection; one JSON line.

    python benchmarks/tls_connect.py --kubeconfig PATH [--auth auto|cert|token] [--count 300]
        [--path /api] [--server-pid PID]

Every request opens a fresh TCP + TLS connection (no session resumption), sends ``GET --path``
with the kubeconfig's credential and ``Connection: close``, and reads the reply to the end, one at
a time, as a kubectl invocation does. With a client certificate this measures the handshake, the
server's verification of the certificate and the request; with ``--auth token`` the same without
a certificate. Reports connections/s, latency (median, p99) and, with ``--server-pid``, the server's
CPU microseconds per connection (from /proc). Runs against any server (kplane or kube-apiserver).
"""

from __future__ import annotations

import argparse
import json
import socket
import ssl
import time
import urllib.parse

import _client


def _one(host: str, port: int, ctx: ssl.SSLContext, request: bytes) -> int:
    with (
        socket.create_connection((host, port), timeout=30) as raw,
        ctx.wrap_socket(raw, server_hostname=host) as tls,
    ):
        tls.sendall(request)
        chunks = []
        while chunk := tls.recv(65536):
            chunks.append(chunk)
    head = b"".join(chunks)[:12]
    return int(head[9:12]) if head.startswith(b"HTTP/1.1 ") else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--auth", default="auto", choices=["auto", "cert", "token"])
    parser.add_argument("--count", type=int, default=300)
    parser.add_argument("--path", default="/api")
    parser.add_argument("--server-pid", type=int, default=None)
    args = parser.parse_args(argv)
    target = _client.load_kubeconfig(args.kubeconfig, auth=args.auth)
    assert target.ssl_context is not None, "an https server is needed"
    url = urllib.parse.urlsplit(target.server)
    host, port = url.hostname or "127.0.0.1", url.port or 443
    headers = "".join(f"{k}: {v}\r\n" for k, v in target.headers.items())
    request = (
        f"GET {args.path} HTTP/1.1\r\nHost: {url.netloc}\r\nAccept: application/json\r\n{headers}"
        "Connection: close\r\n\r\n"
    ).encode()
    for _ in range(10):  # warm-up: first-use imports and caches on either side
        _one(host, port, target.ssl_context, request)
    cpu0 = _client.process_cpu_seconds(args.server_pid) if args.server_pid else 0.0
    latencies: list[float] = []
    codes: dict[int, int] = {}
    start = time.perf_counter()
    for _ in range(args.count):
        t = time.perf_counter()
        code = _one(host, port, target.ssl_context, request)
        latencies.append(time.perf_counter() - t)
        codes[code] = codes.get(code, 0) + 1
    elapsed = time.perf_counter() - start
    out: dict[str, object] = {
        "benchmark": "tls_connect",
        "auth": target.auth,
        "connections": args.count,
        "connections_per_s": round(args.count / elapsed, 1),
        "latency_ms": _client.quantiles_ms(latencies),
        "codes": {str(k): v for k, v in sorted(codes.items())},
    }
    if args.server_pid:
        out["server_cpu_us_per_connection"] = round(
            (_client.process_cpu_seconds(args.server_pid) - cpu0) / args.count * 1e6
        )
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
