"""A lean aiohttp client for the benchmarks, configured from a kubeconfig.

The benchmarks measure any API server (kplane or a real kube-apiserver), so they read a standard
kubeconfig: the current context (or a named one), the cluster's server and CA, and the user's client
certificate or bearer token. Only what the benchmarks need is supported: inline ``*-data`` fields or
file paths, ``insecure-skip-tls-verify``, ``token`` and ``tokenFile``; no exec or auth-provider
plugins. The client shares the machine with the server, so sessions are built without a cookie jar
and helpers hand back raw bytes: callers decode only what they check.

Every request names what it accepts (``Accept: application/json`` unless a caller asks otherwise)
and asks for no compression: kube-apiserver gzips replies over 128 KiB for clients that send
``Accept-Encoding: gzip`` (aiohttp's default), which would measure compression rather than the
server and hand callers bytes that are not JSON. A server that compresses anyway is still read
correctly: ``decoded_body`` undoes ``Content-Encoding: gzip``.
"""

from __future__ import annotations

import asyncio
import base64
import gzip
import math
import os
import pathlib
import ssl
import statistics
import tempfile
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

import aiohttp
import yaml
import yarl

T = TypeVar("T")


@dataclass(frozen=True)
class Target:
    """Where an API server is and how to authenticate to it."""

    server: str
    ssl_context: ssl.SSLContext | None
    headers: dict[str, str] = field(default_factory=dict)
    auth: str = "none"


def _data_or_file(entry: dict[str, Any], key: str, base: pathlib.Path) -> bytes | None:
    """The bytes of ``key-data`` (base64) or of the file named by ``key``, or None."""
    data = entry.get(f"{key}-data")
    if data:
        return base64.b64decode(str(data))
    path = entry.get(key)
    if path:
        return (base / pathlib.Path(str(path))).expanduser().read_bytes()
    return None


def _pick(items: list[dict[str, Any]], name: str) -> dict[str, Any]:
    for item in items or []:
        if item.get("name") == name:
            value: dict[str, Any] = item
            return value
    raise ValueError(f"kubeconfig has no entry named {name!r}")


def load_kubeconfig(
    path: str | os.PathLike[str], *, context: str | None = None, auth: str = "auto"
) -> Target:
    """Read a kubeconfig and return the target of its current (or the named) context.

    ``auth`` is ``auto`` (client certificate if the user has one, else bearer token), ``cert`` or
    ``token``; upstream clients send both when both are configured, but one is enough and cheaper.
    """
    path = pathlib.Path(path).expanduser()
    config = yaml.safe_load(path.read_text())
    base = path.parent
    ctx_name = context or config.get("current-context")
    if not ctx_name:
        raise ValueError(f"{path}: no current-context and no --context given")
    ctx = _pick(config.get("contexts", []), ctx_name)["context"]
    cluster = _pick(config.get("clusters", []), ctx["cluster"])["cluster"]
    user = _pick(config.get("users", []), ctx["user"])["user"] if ctx.get("user") else {}
    server = str(cluster["server"]).rstrip("/")

    ssl_context: ssl.SSLContext | None = None
    if server.startswith("https://"):
        ssl_context = ssl.create_default_context()
        if cluster.get("insecure-skip-tls-verify"):
            ssl_context.check_hostname = False
            ssl_context.verify_mode = ssl.CERT_NONE
        else:
            ca = _data_or_file(cluster, "certificate-authority", base)
            if ca is not None:
                ssl_context = ssl.create_default_context(cadata=ca.decode())

    cert = _data_or_file(user, "client-certificate", base)
    key = _data_or_file(user, "client-key", base)
    token = user.get("token")
    if not token and user.get("tokenFile"):
        token = (base / user["tokenFile"]).expanduser().read_text().strip()

    headers: dict[str, str] = {}
    used = "none"
    want_cert = auth in ("auto", "cert") and cert is not None and key is not None
    if want_cert and ssl_context is not None and cert is not None and key is not None:
        _load_cert_chain(ssl_context, cert, key)
        used = "cert"
    elif auth in ("auto", "token") and token:
        headers["Authorization"] = f"Bearer {token}"
        used = "token"
    elif auth != "auto":
        raise ValueError(f"kubeconfig user has no {auth} credentials")
    return Target(server=server, ssl_context=ssl_context, headers=headers, auth=used)


def _load_cert_chain(ctx: ssl.SSLContext, cert: bytes, key: bytes) -> None:
    """Load a PEM certificate and key; ``ssl`` only reads them from files, so they live briefly in one."""
    with tempfile.TemporaryDirectory() as tmp:
        cert_path = pathlib.Path(tmp, "cert.pem")
        key_path = pathlib.Path(tmp, "key.pem")
        cert_path.write_bytes(cert)
        key_path.touch(mode=0o600)
        key_path.write_bytes(key)
        ctx.load_cert_chain(cert_path, key_path)


JSON = "application/json"
PROTOBUF = "application/vnd.kubernetes.protobuf"


def session(target: Target, *, connections: int = 1, accept: str = JSON) -> aiohttp.ClientSession:
    """A session with at most ``connections`` keep-alive connections to the target.

    One session with ``connections=1`` behaves like one upstream client: requests are sent one at a
    time over one persistent connection. Requests carry ``Accept: accept`` and no
    ``Accept-Encoding`` (see the module notes).
    """
    connector = aiohttp.TCPConnector(
        limit=connections, ssl=target.ssl_context if target.ssl_context is not None else False
    )
    return aiohttp.ClientSession(
        base_url=None,
        connector=connector,
        headers={"Accept": accept, **target.headers},
        cookie_jar=aiohttp.DummyCookieJar(),
        auto_decompress=False,
        skip_auto_headers=("User-Agent", "Accept-Encoding"),
        timeout=aiohttp.ClientTimeout(total=None, sock_connect=10),
    )


def decoded_body(data: bytes, content_encoding: str | None) -> bytes:
    """A reply body as sent before any ``Content-Encoding`` (gzip is undone; identity kept)."""
    if content_encoding and content_encoding.strip().lower() == "gzip":
        return gzip.decompress(data)
    return data


class HTTPError(Exception):
    """A request answered with an unexpected status."""

    def __init__(self, method: str, url: str, status: int, body: bytes) -> None:
        super().__init__(f"{method} {url}: HTTP {status}: {body[:300]!r}")
        self.status = status


async def request(
    http: aiohttp.ClientSession,
    method: str,
    url: str | yarl.URL,
    *,
    body: bytes | None = None,
    ok: tuple[int, ...] = (200, 201),
) -> bytes:
    """Send one request and return the response body; raise ``HTTPError`` unless the status is ``ok``."""
    headers = {"Content-Type": "application/json"} if body is not None else None
    async with http.request(method, url, data=body, headers=headers) as resp:
        data = decoded_body(await resp.read(), resp.headers.get("Content-Encoding"))
        if resp.status not in ok:
            raise HTTPError(method, str(url), resp.status, data)
        return data


async def ensure_namespace(http: aiohttp.ClientSession, server: str, name: str) -> None:
    """Create namespace ``name`` unless it exists."""
    body = b'{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"%s"}}' % name.encode()
    await request(http, "POST", f"{server}/api/v1/namespaces", body=body, ok=(200, 201, 409))


async def delete_namespace(http: aiohttp.ClientSession, server: str, name: str) -> None:
    """Ask for namespace ``name`` to be deleted (does not wait for it to go)."""
    await request(http, "DELETE", f"{server}/api/v1/namespaces/{name}", ok=(200, 202, 404, 409))


async def namespace_gone(http: aiohttp.ClientSession, server: str, name: str, limit: float) -> float | None:
    """Wait (polling every 0.25 s, at most ``limit`` seconds) until namespace ``name`` no longer
    exists; the seconds waited, or None if it was still there."""
    start = time.monotonic()
    while time.monotonic() - start < limit:
        try:
            await request(http, "GET", f"{server}/api/v1/namespaces/{name}")
        except HTTPError as err:
            if err.status == 404:
                return time.monotonic() - start
            raise
        await asyncio.sleep(0.25)
    return None


def parse_pids(specs: list[str]) -> dict[str, int]:
    """``NAME=PID`` arguments (``--cpu-pid server=123``) as a dict; raises ``ValueError``."""
    pids = {}
    for spec in specs:
        name, sep, pid = spec.partition("=")
        if not sep or not name or not pid.isdigit():
            raise ValueError(f"expected NAME=PID, got {spec!r}")
        pids[name] = int(pid)
    return pids


class CPUMeter:
    """CPU seconds that named processes (``parse_pids``) spend between ``start`` and ``stop``."""

    def __init__(self, pids: dict[str, int]) -> None:
        self.pids = pids
        self._at: dict[str, float] = {}

    def start(self) -> None:
        self._at = {name: process_cpu_seconds(pid) for name, pid in self.pids.items()}

    def stop(self) -> dict[str, float]:
        return {name: process_cpu_seconds(pid) - self._at[name] for name, pid in self.pids.items()}


def quantiles_ms(samples_s: list[float]) -> dict[str, float]:
    """Median, p99 and max of durations in seconds, as milliseconds rounded to 3 decimals."""
    if not samples_s:
        return {"median_ms": float("nan"), "p99_ms": float("nan"), "max_ms": float("nan")}
    ordered = sorted(samples_s)
    p99 = ordered[max(0, math.ceil(0.99 * len(ordered)) - 1)]  # nearest rank
    return {
        "median_ms": round(statistics.median(ordered) * 1000, 3),
        "p99_ms": round(p99 * 1000, 3),
        "max_ms": round(ordered[-1] * 1000, 3),
    }


def run(main: Coroutine[Any, Any, T]) -> T:
    """Run ``main`` on uvloop when it is installed (it is a kplane dependency on Linux), else asyncio."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover - plain asyncio still works
        return asyncio.run(main)
    result: T = uvloop.run(main)
    return result


def machine_cpu() -> tuple[float, float]:
    """(busy, total) CPU jiffies of the whole machine so far, from /proc/stat; (0, 0) if unavailable.

    Sample before and after a phase: ``(busy1 - busy0) / (total1 - total0)`` is the share of all cores
    in use, which shows whether a figure was limited by the machine (shared here with other work).
    """
    try:
        with open("/proc/stat") as f:
            fields = [float(x) for x in f.readline().split()[1:]]
    except OSError:
        return (0.0, 0.0)
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0.0)
    total = sum(fields[:8])
    return (total - idle, total)


def busy_share(before: tuple[float, float], after: tuple[float, float]) -> float | None:
    """The fraction of all cores busy between two ``machine_cpu`` samples, or None."""
    total = after[1] - before[1]
    return round((after[0] - before[0]) / total, 3) if total > 0 else None


def process_cpu_seconds(pid: int, *, thread: int | None = None) -> float:
    """User + system CPU seconds of process ``pid`` so far, or of its thread ``thread`` alone, from
    /proc/PID/stat or /proc/PID/task/TID/stat (Linux only).

    Sample before and after a phase to charge the server's CPU to the work the phase did.
    """
    path = f"/proc/{pid}/stat" if thread is None else f"/proc/{pid}/task/{thread}/stat"
    with open(path) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def thread_cpu_ns(pid: int, thread: int | None = None) -> int:
    """Nanoseconds thread ``thread`` (default: the main thread, whose id is ``pid``) of process
    ``pid`` has run on a CPU, from /proc/PID/task/TID/schedstat (Linux only). Unlike the clock
    ticks of ``process_cpu_seconds`` it resolves a single request's cost."""
    with open(f"/proc/{pid}/task/{thread or pid}/schedstat") as f:
        return int(f.read().split()[0])


def process_rss_mib(pid: int) -> float | None:
    """Resident memory of process ``pid`` in MiB (VmRSS), or None when it reports none (a zombie)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return None


async def closed_loop(
    target: Target, url: str, body: Callable[[], bytes], *, clients: int, duration: float
) -> int:
    """POST ``body()`` to ``url`` from ``clients`` sessions, each sending its next request when the
    previous one is answered, for ``duration`` seconds; returns how many succeeded (a failure raises
    ``HTTPError`` and ends the run)."""
    sessions = [session(target) for _ in range(clients)]
    stop = time.monotonic() + duration
    done = 0

    async def worker(http: aiohttp.ClientSession) -> None:
        nonlocal done
        while time.monotonic() < stop:
            await request(http, "POST", url, body=body())
            done += 1

    try:
        await asyncio.gather(*(worker(s) for s in sessions))
    finally:
        for s in sessions:
            await s.close()
    return done


def create_rate_figures(label: str, rates: list[float], cpu_us: list[float]) -> dict[str, Any]:
    """The figures of one kind of create load over several rounds: ``creates_per_s_<label>`` (the
    median rate), ``creates_per_s_<label>_runs`` (each round's) and, when the server's CPU was
    measured, ``server_cpu_us_per_create_<label>`` (the median)."""
    out: dict[str, Any] = {
        f"creates_per_s_{label}": round(statistics.median(rates), 1),
        f"creates_per_s_{label}_runs": [round(r, 1) for r in rates],
    }
    if cpu_us:
        out[f"server_cpu_us_per_create_{label}"] = round(statistics.median(cpu_us), 1)
    return out
