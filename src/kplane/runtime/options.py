"""The manager's options, with controller-runtime's defaults except where a comment says why not."""

from __future__ import annotations

import dataclasses
from typing import Any

from kplane.runtime.webhook.server import WebhookServerOptions


@dataclasses.dataclass(frozen=True)
class ManagerOptions:
    """How a ``Manager`` caches, serves and elects.

    Cache: ``namespace`` limits every informer to one namespace (None: all); ``sync_period`` is the
    informers' resync (controller-runtime: 10 h); ``cache_sync_timeout`` bounds the initial sync.

    Endpoints: ``metrics_bind_address`` serves ``/metrics`` (``"0"`` disables; port 0 picks a free
    port). controller-runtime binds ``:8080`` on every interface; kplane binds loopback by default,
    as ``kplane serve`` does, and serving further is an explicit choice. ``health_probe_bind_address``
    serves ``/healthz`` and ``/readyz`` (``""`` disables, as upstream). ``process_metrics`` adds the
    ``process_*`` families to ``/metrics``, as controller-runtime's registry has them. ``/readyz``
    fails while an informer has not synced, has stopped, or has kept failing to list and watch for
    longer than ``watch_failure_grace`` seconds (its cache no longer follows the server; upstream
    has no such check: kplane's, so a replica cut off from the API server leaves the Service's
    endpoints).

    Leader election (off by default): the Lease ``leader_election_namespace/leader_election_id``
    (the namespace defaults to the pod's, read from its service account, as upstream's does),
    timings 15/10/2 s. ``leader_election_release_on_cancel`` defaults to True where upstream's is
    False: a clean stop hands over at once instead of after a lease duration.

    ``webhook``: the webhook server's options (port 9443, cert dir...), used when a webhook is
    registered (``Manager.webhook_server``).

    Tracing: ``reconcile_traces`` is how many finished reconcile traces the manager keeps (why each
    ran, what it wrote: ``kplane.runtime.tracing``; 0 turns tracing off), served as JSON at
    ``/debug/kplane/traces`` beside ``/metrics``. ``tracer_provider``, an OpenTelemetry
    ``TracerProvider`` (with the user's exporter), also exports each reconcile as a span.

    ``graceful_shutdown_timeout`` bounds the stop (negative: wait forever). ``field_manager`` names
    this manager's writes in managedFields. ``skip_name_validation`` allows two controllers of one name.
    """

    namespace: str | None = None
    sync_period: float = 10 * 3600.0
    cache_sync_timeout: float = 120.0
    watch_failure_grace: float = 60.0
    process_metrics: bool = True
    metrics_bind_address: str = "127.0.0.1:8080"
    health_probe_bind_address: str = ""
    leader_election: bool = False
    leader_election_id: str = ""
    leader_election_namespace: str = ""
    leader_election_identity: str = ""
    leader_election_release_on_cancel: bool = True
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    graceful_shutdown_timeout: float = 30.0
    webhook: WebhookServerOptions = dataclasses.field(default_factory=WebhookServerOptions)
    field_manager: str = "kplane-manager"
    skip_name_validation: bool = False
    reconcile_traces: int = 1000
    tracer_provider: Any = None
