"""``kplane serve``: run a control plane in this process until interrupted."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
import time
from pathlib import Path
from typing import Any

from kplane._util import gctune
from kplane.cli import kubeconfig
from kplane.server import launch

_T0 = time.monotonic()


def add_parser(sub: Any) -> None:
    p = sub.add_parser("serve", help="run a Kubernetes-compatible API server")
    p.add_argument(
        "--data-dir", type=Path, default=Path(".kplane"), help="state, PKI and kubeconfig (default ./.kplane)"
    )
    p.add_argument("--port", type=int, default=6443, help="HTTPS port (default 6443; 0 picks a free port)")
    p.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1, loopback only)"
    )
    p.add_argument(
        "--storage",
        type=_storage,
        default="sqlite",
        help="storage backend: sqlite (default), memory, or etcd://HOST:PORT[,HOST:PORT...] (an etcd v3"
        " cluster several kplane servers may share)",
    )
    p.add_argument(
        "--pki-dir",
        type=Path,
        default=None,
        help="share this PKI directory (another server's DATA_DIR/pki: CA, serving and signing keys)",
    )
    p.add_argument("--etcd-cafile", type=Path, default=None, help="CA of etcd's serving certificates (TLS)")
    p.add_argument("--etcd-certfile", type=Path, default=None, help="client certificate for etcd")
    p.add_argument("--etcd-keyfile", type=Path, default=None, help="key of --etcd-certfile")
    p.add_argument(
        "--etcd-prefix", default="", help="prefix of every key kplane writes to etcd (default: none)"
    )
    p.add_argument(
        "--etcd-compaction-interval",
        type=_duration,
        default=300,
        help="how often etcd's history is compacted, e.g. 5m (default 5m; 0s: never)",
    )
    p.add_argument(
        "--event-ttl",
        type=_duration,
        default=3600,
        help="how long Events are kept in etcd, e.g. 1h (default 1h)",
    )
    p.add_argument(
        "--insecure-port",
        type=int,
        default=None,
        help="also serve plain HTTP on 127.0.0.1 at this port, without authentication (opt-in)",
    )
    p.add_argument("--token-file", type=Path, default=None, help='static token file: token,user,uid,"g1,g2"')
    p.add_argument(
        "--service-account-issuer",
        default="https://kubernetes.default.svc.cluster.local",
        help="iss of issued ServiceAccount tokens and their default audience"
        " (default https://kubernetes.default.svc.cluster.local)",
    )
    p.add_argument(
        "--service-account-max-token-expiration",
        type=_duration,
        default=None,
        help="longest TokenRequest allowed, e.g. 24h (default: no limit)",
    )
    p.add_argument(
        "--max-requests-inflight",
        type=int,
        default=400,
        help="with --max-mutating-requests-inflight: the seats API Priority and Fairness shares among"
        " priority levels (default 400)",
    )
    p.add_argument(
        "--max-mutating-requests-inflight",
        type=int,
        default=200,
        help="added to --max-requests-inflight for API Priority and Fairness (default 200; both 0: no limit)",
    )
    p.add_argument(
        "--queue-wait-timeout",
        type=float,
        default=15.0,
        help="seconds a queued request waits for a seat before 429 (default 15)",
    )
    p.add_argument("--audit-policy-file", type=Path, default=None, help="audit.k8s.io/v1 Policy")
    p.add_argument(
        "--audit-log-path",
        default=None,
        help="write audit Events here as JSON lines ('-': stdout); off unless given with a policy",
    )
    p.add_argument(
        "--audit-log-maxsize",
        type=int,
        default=0,
        help="MB per audit log file before rotation (default 0: 100)",
    )
    p.add_argument(
        "--audit-log-maxbackup", type=int, default=0, help="rotated audit log files kept (default 0: all)"
    )
    p.add_argument(
        "--encryption-provider-config",
        type=Path,
        default=None,
        help="EncryptionConfiguration (apiserver.config.k8s.io/v1) for encrypting resources at rest",
    )
    p.add_argument(
        "--enable-admission-plugins",
        default="",
        help="admission plugins to enable besides the default ones (comma-separated, upstream's names)",
    )
    p.add_argument(
        "--disable-admission-plugins",
        default="",
        help="default admission plugins to disable (comma-separated, upstream's names)",
    )
    p.add_argument(
        "--history-window",
        type=int,
        default=10_000,
        help="events kept for watch resume; older resourceVersions answer 410 Expired (default 10000)",
    )
    p.add_argument(
        "--history-retention",
        type=parse_retention,
        default=parse_retention(DEFAULT_RETENTION),
        metavar="AGE[,COUNT]",
        help="object history kept in the store (e.g. 24h,100000): compaction removes a past"
        " revision only once it is older than AGE and more than COUNT revisions old"
        f" (default {DEFAULT_RETENTION}; count defaults to 10000)",
    )
    p.add_argument(
        "--no-object-history",
        action="store_true",
        help="record no writer or time per write and keep 5 minutes of history (only to measure their cost)",
    )
    p.add_argument(
        "--watch-bookmark-interval",
        type=float,
        default=60.0,
        help="seconds between BOOKMARK events on watches that allow them (default 60)",
    )
    p.add_argument(
        "--no-schema-validation",
        action="store_true",
        help="skip schema pruning, defaulting and validation (only to measure their cost)",
    )
    p.add_argument(
        "--read-header-timeout",
        type=float,
        default=32.0,
        help="seconds a client has to send a request's headers before it is disconnected (default 32)",
    )
    p.add_argument(
        "--idle-timeout",
        type=float,
        default=90.0,
        help="seconds a kept-alive connection may sit idle between requests (default 90)",
    )
    p.add_argument(
        "--authorization-mode",
        choices=("RBAC", "AlwaysAllow"),
        default="RBAC",
        help="RBAC (default) or AlwaysAllow (every authenticated user may do everything)",
    )
    p.add_argument(
        "--nodes",
        type=int,
        default=3,
        help="simulated nodes to register, with their kubelets (default 3; 0: none)",
    )
    p.add_argument(
        "--no-controllers",
        action="store_true",
        help="serve the bare API: no scheduler, simulated nodes or other built-in controllers",
    )
    p.add_argument(
        "--no-dashboard",
        action="store_true",
        help="do not serve the read-only web dashboard at /dashboard",
    )
    p.add_argument("--log-level", default="WARNING", help="Python logging level (default WARNING)")
    p.set_defaults(func=run)


def _duration(text: str) -> int:
    """Whole seconds of a Go duration (``90m``, ``24h``, ``3600s``)."""
    import re

    units = {"h": 3600, "m": 60, "s": 1}
    parts = re.findall(r"(\d+)([hms])", text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise argparse.ArgumentTypeError(f"invalid duration {text!r} (e.g. 24h, 90m, 3600s)")
    return sum(int(n) * units[u] for n, u in parts)


def _storage(text: str) -> str:
    if text in ("sqlite", "memory"):
        return text
    if text.startswith("etcd://"):
        from kplane.server.storage.etcd.client import parse_endpoints

        try:
            parse_endpoints(text)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
        return text
    raise argparse.ArgumentTypeError(f"invalid storage {text!r} (sqlite, memory or etcd://host:port,...)")


def _endpoints(storage: str) -> tuple[str, ...]:
    if not storage.startswith("etcd://"):
        return ()
    from kplane.server.storage.etcd.client import parse_endpoints

    return tuple(parse_endpoints(storage))


def _start_failure(err: Exception, data_dir: Path) -> str:
    """What failed at start-up, in one line: the address, a file, or the store."""
    from kplane.api import errors
    from kplane.server import connections, storage
    from kplane.server.admission import chain
    from kplane.server.audit.policy import InvalidPolicy
    from kplane.server.storage.encryption.config import InvalidEncryptionConfig

    if isinstance(err, InvalidPolicy):
        return f"cannot start: --audit-policy-file: {err}"
    if isinstance(err, chain.UnknownPlugin):
        return f"cannot start: admission plugins: {err}"
    if isinstance(err, InvalidEncryptionConfig):
        return f"cannot start: --encryption-provider-config: {err}"
    if isinstance(err, connections.ListenError):
        return f"cannot listen on {err.filename}: {err.strerror or err}"
    if isinstance(err, OSError):
        where = err.filename or f"a file in {data_dir}"
        return f"cannot start: {where}: {err.strerror or err}"
    if isinstance(err, storage.StorageError):
        return f"cannot start: {err}"
    if isinstance(err, errors.APIError):
        return f"cannot start: writing its initial objects failed: {err}"
    raise err


DEFAULT_RETENTION = "1h,10000"


def parse_retention(text: str) -> tuple[float, int]:
    """``AGE[,COUNT]`` (``24h``, ``24h,100000``, ``0,500``) as (seconds, revisions); a plain ``0``
    age keeps history by count only. Raises ``argparse.ArgumentTypeError`` otherwise."""
    age, _, count = text.partition(",")
    try:
        seconds = 0.0 if age.strip() == "0" else kubeconfig.parse_duration(age.strip()).total_seconds()
        revisions = int(count) if count else 10_000
    except ValueError as e:
        raise argparse.ArgumentTypeError(
            f"invalid --history-retention {text!r}: use AGE[,COUNT], e.g. 24h,100"
        ) from e
    if revisions < 0:
        raise argparse.ArgumentTypeError(f"invalid --history-retention {text!r}: COUNT must be >= 0")
    return seconds, revisions


def run(args: argparse.Namespace) -> int:
    launch.import_aiohttp_quickly()
    from kplane.server.serverconfig import ServerConfig

    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    config = ServerConfig(
        data_dir=args.data_dir,
        host=args.host,
        port=args.port,
        storage="etcd" if args.storage.startswith("etcd://") else args.storage,
        etcd_servers=_endpoints(args.storage),
        etcd_cafile=args.etcd_cafile,
        etcd_certfile=args.etcd_certfile,
        etcd_keyfile=args.etcd_keyfile,
        etcd_prefix=args.etcd_prefix,
        event_ttl=args.event_ttl,
        etcd_compaction_interval=args.etcd_compaction_interval,
        pki_dir=args.pki_dir,
        insecure_port=args.insecure_port,
        token_file=args.token_file,
        encryption_provider_config=args.encryption_provider_config,
        audit_policy_file=args.audit_policy_file,
        audit_log_path=args.audit_log_path,
        audit_log_maxsize=args.audit_log_maxsize,
        audit_log_maxbackup=args.audit_log_maxbackup,
        max_requests_inflight=args.max_requests_inflight,
        max_mutating_requests_inflight=args.max_mutating_requests_inflight,
        queue_wait_timeout=args.queue_wait_timeout,
        service_account_issuer=args.service_account_issuer,
        service_account_max_token_expiration=args.service_account_max_token_expiration,
        history_window=args.history_window,
        history_retention_seconds=args.history_retention[0],
        history_retention_revisions=args.history_retention[1],
        object_history=not args.no_object_history,
        watch_bookmark_interval=args.watch_bookmark_interval,
        schema_validation=not args.no_schema_validation,
        enable_admission_plugins=args.enable_admission_plugins,
        disable_admission_plugins=args.disable_admission_plugins,
        read_header_timeout=args.read_header_timeout,
        idle_timeout=args.idle_timeout,
        authorization_mode=args.authorization_mode,
        dashboard=not args.no_dashboard,
    )
    try:
        import uvloop

        runner: Any = uvloop.run
    except ImportError:  # pragma: no cover - uvloop is a dependency on Linux
        runner = asyncio.run

    async def main() -> int:
        try:
            server = await launch.launch(config)
        except Exception as err:
            print(f"kplane: {_start_failure(err, config.data_dir)}", file=sys.stderr)
            return 1
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        elapsed = time.monotonic() - _T0
        print(f"kplane: serving {server.url} (ready in {elapsed:.2f}s, storage {config.storage})", flush=True)
        if server.insecure_url:
            print(f"kplane: insecure HTTP (no authentication) on {server.insecure_url}", flush=True)
        if config.authorization_mode == "AlwaysAllow":
            print(
                "kplane: WARNING: --authorization-mode AlwaysAllow:"
                " every authenticated user may do everything",
                file=sys.stderr,
                flush=True,
            )
        print(f"export KUBECONFIG={server.kubeconfig_path.resolve()}", flush=True)
        if config.dashboard:
            print(f"kplane: dashboard at {server.url}/dashboard/", flush=True)
        controllers = None
        if not args.no_controllers:
            from kplane.cli import controlplane

            controllers = await controlplane.start(server, nodes=max(0, args.nodes))
        gctune.tune_for_service()
        await stop.wait()
        if controllers is not None:
            await controlplane.stop(controllers)
        await server.stop()
        return 0

    result: int = runner(main())
    return result
