"""The API server's configuration: every choice ``APIServer`` is built from, with upstream's
defaults where upstream has a flag for it (``kplane serve`` maps its flags onto these fields)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from kplane._util.clock import Clock, RealClock
from kplane.server import connections
from kplane.server.auth import serviceaccounts
from kplane.server.filters.types import Filter


@dataclass
class ServerConfig:
    """How to run a server. Defaults: HTTPS on 127.0.0.1:6443, SQLite in ``./.kplane``."""

    data_dir: Path = Path(".kplane")
    host: str = "127.0.0.1"
    port: int = 6443
    storage: Literal["sqlite", "memory", "etcd"] = "sqlite"
    etcd_servers: Sequence[str] = ()
    """``host:port`` of etcd members (``storage="etcd"``); calls fail over from one to the next."""
    etcd_cafile: Path | None = None
    """CA bundle that signed etcd's serving certificates (TLS to etcd when any etcd file is given)."""
    etcd_certfile: Path | None = None
    """Client certificate presented to etcd."""
    etcd_keyfile: Path | None = None
    """Key of ``etcd_certfile``."""
    etcd_prefix: str = ""
    """Prepended to every key in etcd (several kplane clusters may share one etcd)."""
    etcd_request_timeout: float = 5.0
    """Seconds one etcd call may take before the request fails (504)."""
    event_ttl: int = 3600
    """Seconds Events are kept in etcd (upstream's ``--event-ttl``, 1 h)."""
    etcd_compaction_interval: float = 300.0
    """Seconds between two compactions of etcd's history (upstream's 5 m; 0: kplane never compacts)."""
    pki_dir: Path | None = None
    """Another server's ``pki`` directory to share (several servers of one etcd cluster): ``data_dir/pki``
    becomes a link to it."""
    insecure_port: int | None = None
    token_file: Path | None = None
    service_account_issuer: str = serviceaccounts.DEFAULT_ISSUER
    """``iss`` of the ServiceAccount tokens issued, and the API audience they default to."""
    service_account_max_token_expiration: int | None = None
    """Seconds a TokenRequest may ask at most (longer requests are shortened, with a warning)."""
    max_requests_inflight: int = 400
    max_mutating_requests_inflight: int = 200
    """With ``max_requests_inflight``: API Priority and Fairness shares their sum among the
    priority levels, as upstream (both 0: no limit)."""
    queue_wait_timeout: float = 15.0
    """Seconds a queued request waits for a seat before its 429 (upstream: a quarter of the
    60 s request timeout)."""
    audit_policy_file: Path | None = None
    """Upstream's audit.k8s.io/v1 Policy; with ``audit_log_path``, requests are audited."""
    audit_log_path: str | None = None
    """Where audit Events go, one JSON line each (``-``: standard output). Off unless given."""
    audit_log_maxsize: int = 0
    """Megabytes per audit log file before it is rotated (0: 100, as upstream's lumberjack)."""
    audit_log_maxbackup: int = 0
    """Rotated audit log files kept (0: all)."""
    encryption_provider_config: Path | None = None
    """Upstream's EncryptionConfiguration: which resources are encrypted at rest, with which keys."""
    watch_bookmark_interval: float = 60.0
    history_window: int = 10_000
    """Events the cache keeps for watch resume (older resourceVersions: 410 Expired)."""
    history_retention_seconds: float = 3600.0
    history_retention_revisions: int = 10_000
    """Object history the SQLite store keeps (``--history-retention``): a past revision is compacted
    only once it is older than the seconds and more than this many revisions behind."""
    object_history: bool = True
    """False only to measure what history costs: writes record no user and no time, and the store
    keeps 5 minutes (``history_retention_*`` ignored), as before history was kept."""
    kubeconfig_path: Path | None = None
    schema_validation: bool = True  # False only to measure what validation costs
    enable_admission_plugins: str = ""
    """Comma list of admission plugins enabled besides the default-on ones (upstream's names)."""
    disable_admission_plugins: str = ""
    """Comma list of default-on admission plugins to disable."""
    read_header_timeout: float = connections.READ_HEADER_TIMEOUT  # seconds to send request headers
    idle_timeout: float = connections.IDLE_TIMEOUT  # seconds a kept-alive connection may sit idle
    clock: Clock = field(default_factory=RealClock)
    shutdown_timeout: float = 1.0
    """Seconds ``stop`` lets in-flight requests (open watches included) finish before cancelling them.

    Must be > 0: aiohttp reads 0 as "wait without limit"."""
    authorization_mode: Literal["RBAC", "AlwaysAllow"] = "RBAC"
    """``RBAC`` (default), or ``AlwaysAllow``: every authenticated user may do everything.
    ``system:masters`` may do everything in either mode."""
    pod_logs_dir: Path | None = None
    """Where the simulated kubelet writes container output, read by ``pods/log`` (default
    ``<data_dir>/pod-logs``)."""
    dashboard: bool = True
    """Serve the web dashboard's page at ``/dashboard`` (its data comes through the API)."""
    filters: Sequence[Filter] = ()
    """Extra filters run after authentication, outermost first (test hooks: ``kplane.testing`` faults)."""
