"""The API server: configuration, assembly of its parts, and its lifecycle.

``APIServer.start`` opens storage, fills the cache, bootstraps namespaces, generates (or reuses) the
PKI and admin kubeconfig, and listens; ``ready`` is true once requests can be served; ``stop``
closes listeners first, then watches, then storage, so no acknowledged write is lost.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aiohttp import web

from kplane.api.builtin import builtin_catalog
from kplane.api.catalog import Catalog
from kplane.server import connections, storage
from kplane.server.admission import chain as admission_chain
from kplane.server.admission import plugin, priority
from kplane.server.auth import (
    authn,
    authz,
    certs,
    jwt,
    kubeconfig,
    rbac,
    rbac_escalation,
    serviceaccounts,
    x509,
)
from kplane.server.dashboard import assets as dashboard_assets
from kplane.server.endpoints import (
    health,
    history,
    installer,
    metrics,
    nonresource,
    oidc,
    resourcemetrics,
    scope,
    tokenreview,
)
from kplane.server.endpoints.negotiation import MAX_BODY_BYTES
from kplane.server.filters import chain
from kplane.server.filters.types import Filter
from kplane.server.flowcontrol import config as flowcontrol_config
from kplane.server.flowcontrol.config import FlowControl
from kplane.server.registry import (
    apibootstrap,
    apistrategies,
    bootstrap,
    converting,
    crds,
    flowcontrolconfig,
    policystatus,
    quotas,
    rbacpolicy,
)
from kplane.server.registry.crds import CRDController
from kplane.server.registry.fieldschema import SchemaStep
from kplane.server.registry.namespaces import NamespaceLifecycle
from kplane.server.registry.store import Registry
from kplane.server.registry.tokensecrets import TokenSecrets
from kplane.server.serverconfig import ServerConfig
from kplane.server.storage.cacher import CachedStorage
from kplane.server.storage.instrumented import InstrumentedStorage
from kplane.server.webhooks import client as webhookclient
from kplane.server.webhooks import conversion, resolving

log = logging.getLogger("kplane.server")

# Post-start hooks reported by /healthz, /livez and /readyz: upstream's names for the start-up
# steps kplane has (CRD serving, APF and APIService objects, the `kubernetes` Service).
_HOOKS = (
    "start-apiextensions-controllers",
    "crd-informer-synced",
    "bootstrap-controller",
    "priority-and-fairness-config-producer",
    "apiservice-registration-controller",
)


class APIServer:
    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self.catalog: Catalog = builtin_catalog()
        self.catalog.replace_group_resource(None, [history.RECORD])
        self.storage: CachedStorage | None = None
        self.registry: Registry | None = None
        self.pki: certs.PKI | None = None
        self.service_accounts: serviceaccounts.Tokens | None = None
        self.url = ""
        self.insecure_url = ""
        self.port = 0
        self._runner: web.ServerRunner | None = None
        self._namespaces: NamespaceLifecycle | None = None
        self._crds: CRDController | None = None
        self._policy_status: policystatus.PolicyStatus | None = None
        self._aggregator: rbacpolicy.Aggregator | None = None
        self._unlisten_rbac: Any = None
        self._unlisten_flowcontrol: Any = None
        self._dangling: flowcontrolconfig.DanglingConditions | None = None
        self.rbac = rbac.RBACIndex()
        self._token_secrets: TokenSecrets | None = None
        self._audit_log: Any = None
        self._ready = False
        self._stopping = False
        self._hooks: set[str] = set()
        self._crd_apiservices: apibootstrap.CRDAPIServices | None = None
        self._quotas: quotas.QuotaController | None = None
        self.metrics_sources: list[Callable[[], bytes]] = []
        """Prometheus text sources appended to ``/metrics`` (``kplane serve`` adds its controllers')."""
        self._webhooks: webhookclient.Client | None = None
        self.nonresource: nonresource.NonResource | None = None
        """Non-resource paths; ``nonresource.traces`` may be set once controllers run in-process."""

    @property
    def kubeconfig_path(self) -> Path:
        return self.config.kubeconfig_path or self.config.data_dir / "kubeconfig"

    @property
    def pod_logs_dir(self) -> Path:
        return self.config.pod_logs_dir or self.config.data_dir / "pod-logs"

    def ready(self) -> bool:
        return self._ready

    async def start(self) -> None:
        cfg = self.config
        cfg.data_dir.mkdir(parents=True, exist_ok=True)
        os.chmod(cfg.data_dir, 0o700)
        hosts = list(certs.DEFAULT_HOSTS)
        if cfg.host not in hosts and cfg.host not in ("0.0.0.0", "::"):
            hosts.append(cfg.host)

        # The PKI (on a first start: importing cryptography, generating keys, fsyncing files) is
        # prepared in a thread while storage opens and the cache loads.
        def prepare_keys() -> tuple[certs.PKI, jwt.SigningKey]:
            if cfg.pki_dir is not None:
                certs.share_pki(cfg.data_dir, cfg.pki_dir)
            pki = certs.ensure_pki(cfg.data_dir, hosts=hosts, clock=cfg.clock)
            return pki, jwt.ensure_key(pki.ca_cert_file.parent)

        pki_ready = asyncio.ensure_future(asyncio.to_thread(prepare_keys))
        backend: Any
        if cfg.storage == "memory":
            from kplane.server.storage.memory import MemoryStorage

            backend = MemoryStorage(window=cfg.history_window, clock=cfg.clock)
        elif cfg.storage == "etcd":
            backend = await self._open_etcd()
        else:
            from kplane.server.storage.sqlite import SQLiteStorage

            backend = SQLiteStorage(
                str(cfg.data_dir / "state.db"),
                history_window=cfg.history_retention_revisions if cfg.object_history else cfg.history_window,
                history_seconds=cfg.history_retention_seconds if cfg.object_history else 300.0,
                record_writes=cfg.object_history,
                clock=cfg.clock,
            )
        if cfg.encryption_provider_config is not None:
            from kplane.server.storage.encryption import config as encryption
            from kplane.server.storage.encryption.storage import EncryptedStorage

            backend = EncryptedStorage(backend, encryption.load(cfg.encryption_provider_config))
        timed = InstrumentedStorage(backend, metrics.DEFAULT.storage_request, cfg.clock)
        self.storage = CachedStorage(timed, window=cfg.history_window, clock=cfg.clock)
        cache = self.storage
        metrics.DEFAULT.object_counts = lambda: {
            metrics.resource_of_key(prefix): n for prefix, n in cache.object_counts().items()
        }
        await self.storage.start()
        self._webhooks = webhookclient.Client(resolving.EndpointResolver(self.storage.peek))
        # The RBAC index fills from the cache in _start_rbac; the authorizer only reads it.
        authorizer: authz.Authorizer = (
            authz.always_allow
            if cfg.authorization_mode == "AlwaysAllow"
            else authz.chain([authz.privileged, rbac.RBACAuthorizer(self.rbac)])
        )
        admission = admission_chain.build(
            admission_chain.enabled([cfg.enable_admission_plugins], [cfg.disable_admission_plugins]),
            plugin.Context(
                self.storage, self.catalog, cfg.clock, webhook_client=self._webhooks, authorizer=authorizer
            ),
        )
        self.registry = Registry(
            self.storage,
            cfg.clock,
            admission=admission,
            strategies={**apistrategies.table(cfg.clock), **crds.strategies(cfg.clock)},
            schema=SchemaStep(enabled=cfg.schema_validation),
            conversion=converting.Conversion(conversion.WebhookConverter(self._webhooks)),
        )
        self._namespaces = NamespaceLifecycle(self.registry, self.catalog, cfg.clock)
        await self._namespaces.bootstrap()
        self._crds = CRDController(self.registry, self.catalog, cfg.clock)
        await self._crds.start()
        self._policy_status = policystatus.PolicyStatus(self.registry, self.catalog)
        self._hooks.update(("start-apiextensions-controllers", "crd-informer-synced"))
        self._quotas = quotas.QuotaController(self.registry, self.catalog)
        await self._quotas.start()
        self._crd_apiservices = apibootstrap.CRDAPIServices(self.registry, self.catalog)
        await self._start_rbac(authorizer)
        flow_control = await self._start_flowcontrol()
        await apibootstrap.ensure_api_objects(self.registry, self.catalog)
        await priority.ensure_system_classes(self.registry, self.catalog)
        await self._crd_apiservices.reconcile()
        self._hooks.update(("priority-and-fairness-config-producer", "apiservice-registration-controller"))

        self.pki, sa_key = await pki_ready
        self.service_accounts = serviceaccounts.Tokens(
            sa_key, clock=cfg.clock, issuer=cfg.service_account_issuer, lookup=self.storage.peek
        )
        tokens = self.service_accounts
        self._token_secrets = TokenSecrets(self.registry, tokens.legacy, self.pki.ca_pem())
        client_certificates = x509.ClientCertificates(cfg.clock)
        tls = self.pki.ssl_server_context()
        client_certificates.install(tls)
        authenticator = authn.Authenticator.from_pki(
            self.pki,
            token_file=cfg.token_file,
            certificates=client_certificates,
        )
        authenticator.bearer = tokens

        usage = resourcemetrics.UsageStore(self.storage, cfg.clock)
        nonres = nonresource.NonResource(
            self.catalog,
            health=self._health(timed),
            metrics=metrics.DEFAULT,
            metrics_sources=self.metrics_sources,
            resource_metrics=usage,
        )
        self.nonresource = nonres
        if oidc.servable(cfg.service_account_issuer):
            nonres.issuer_discovery = oidc.Discovery(cfg.service_account_issuer, sa_key)
        handler = installer.APIHandler(
            catalog=self.catalog,
            authorizer=authorizer,
            rules_for=authz.all_rules if cfg.authorization_mode == "AlwaysAllow" else self.rbac.rules_for,
            registry=self.registry,
            clock=cfg.clock,
            nonresource=nonres,
            watch_bookmark_interval=cfg.watch_bookmark_interval,
            service_accounts=tokens,
            max_token_seconds=cfg.service_account_max_token_expiration,
            token_review=functools.partial(tokenreview.review, tokens, authenticator),
            pod_logs=self.pod_logs_dir,
            resource_metrics=usage,
        )
        # aiohttp's low-level server: routing is ours (RequestInfo + catalog), so the Application
        # router and middleware machinery would only add per-request cost.
        server = connections.Server(
            chain.build(
                authenticator,
                handler,
                extra=cfg.filters,
                authorizer=authorizer,
                clock=cfg.clock,
                audit=self._audit(),
                record_writer=cfg.object_history,
                dashboard=dashboard_assets.Assets() if cfg.dashboard else None,
                flow_control=flow_control,
            ),
            request_factory=_request_factory,
            access_log=None,
            read_header_timeout=cfg.read_header_timeout,
            idle_timeout=cfg.idle_timeout,
        )
        self._runner = web.ServerRunner(server, handle_signals=False, shutdown_timeout=cfg.shutdown_timeout)
        await self._runner.setup()

        sock = connections.bind(cfg.host, cfg.port)
        self.port = sock.getsockname()[1]
        site = connections.SockSite(
            self._runner,
            sock,
            ssl_context=tls,
            handshake_timeout=cfg.read_header_timeout,
        )
        await site.start()
        host_for_url = f"[{cfg.host}]" if ":" in cfg.host else cfg.host
        if cfg.host in ("0.0.0.0", "::"):
            host_for_url = "127.0.0.1"
        self.url = f"https://{host_for_url}:{self.port}"
        nonres.server_address = f"{host_for_url}:{self.port}"
        if cfg.insecure_port is not None:
            isock = connections.bind("127.0.0.1", cfg.insecure_port)
            await web.SockSite(self._runner, isock).start()
            self.insecure_url = f"http://127.0.0.1:{isock.getsockname()[1]}"
        endpoint_host = cfg.host if cfg.host not in ("0.0.0.0", "::") else "127.0.0.1"
        await bootstrap.ensure_kubernetes_service(
            self.registry, self.catalog, host=endpoint_host, port=self.port
        )
        self._hooks.add("bootstrap-controller")
        kubeconfig.write_admin_kubeconfig(self.pki, self.url, self.kubeconfig_path)
        self._ready = True

    async def _start_flowcontrol(self) -> FlowControl | None:
        """Load the APF configuration from the cache and keep it current, restore the bootstrap
        objects, keep the FlowSchemas' Dangling conditions; None when both limits are 0."""
        assert self.storage is not None and self.registry is not None
        cfg = self.config
        server_limit = cfg.max_requests_inflight + cfg.max_mutating_requests_inflight
        control = FlowControl(max(server_limit, 1), cfg.queue_wait_timeout, cfg.clock)
        pairs, _ = await self.storage.list_keyed(flowcontrol_config.PREFIX)
        for key, obj in pairs:
            control.apply(key, obj)

        def on_event(event: storage.Event) -> None:
            control.apply(event.key, None if event.type == storage.DELETED else event.object)

        self._unlisten_flowcontrol = self.storage.listen(on_event, flowcontrol_config.PREFIX)
        self._dangling = flowcontrolconfig.DanglingConditions(self.registry, self.catalog, control, cfg.clock)
        await flowcontrolconfig.ensure_bootstrap(self.registry, self.catalog)
        await self._dangling.start()
        metrics.DEFAULT.flowcontrol_levels = lambda: [
            (lv.name, lv.queue_set.executing, lv.queue_set.waiting(), lv.queue_set.limit)
            for lv in control.levels.values()
            if lv.queue_set is not None
        ]
        return control if server_limit > 0 else None

    async def _start_rbac(self, authorizer: authz.Authorizer) -> None:
        """Load the RBAC index from the cache and keep it current, reconcile the bootstrap policy,
        start aggregation; ``authorizer`` (the server's, reading the index) guards RBAC writes."""
        assert self.storage is not None and self.registry is not None
        index = self.rbac
        # The cache answers list_keyed without yielding, so no event falls between the snapshot
        # and the listener.
        pairs, _ = await self.storage.list_keyed(rbac.PREFIX)
        for key, obj in pairs:
            index.apply(key, obj)
        aggregator = self._aggregator = rbacpolicy.Aggregator(
            self.registry, self.catalog, index.cluster_roles
        )

        def on_event(event: storage.Event) -> None:
            index.apply(event.key, None if event.type == storage.DELETED else event.object)
            if event.key.startswith(rbac.PREFIX + "clusterroles/"):
                aggregator.poke()

        self._unlisten_rbac = self.storage.listen(on_event, rbac.PREFIX)
        await rbacpolicy.reconcile_bootstrap(self.registry, self.catalog)
        await aggregator.sync()
        aggregator.start()
        if self.config.authorization_mode != "AlwaysAllow":
            self.registry.write_guards.append(rbac_escalation.EscalationCheck(index, authorizer))

    def _audit(self) -> Filter | None:
        """The audit filter, when both a policy and a log path are configured (upstream needs both)."""
        cfg = self.config
        if cfg.audit_policy_file is None or not cfg.audit_log_path:
            return None
        from kplane.server.audit import policy
        from kplane.server.audit.log import AuditLog
        from kplane.server.filters.audit import audit

        rules = policy.load(cfg.audit_policy_file)
        self._audit_log = AuditLog(
            cfg.audit_log_path,
            cfg.clock,
            max_size_mb=cfg.audit_log_maxsize,
            max_backups=cfg.audit_log_maxbackup,
        )
        return audit(rules, self._audit_log, cfg.clock)

    async def _open_etcd(self) -> Any:
        from kplane.server.storage import etcd

        cfg = self.config
        files = (cfg.etcd_cafile, cfg.etcd_certfile, cfg.etcd_keyfile)
        tls = etcd.TLSFiles(*files) if any(f is not None for f in files) else None
        client = etcd.EtcdClient(cfg.etcd_servers, tls=tls, timeout=cfg.etcd_request_timeout)
        backend = etcd.EtcdStorage(
            client,
            key_prefix=cfg.etcd_prefix,
            event_ttl=cfg.event_ttl,
            compaction_interval=cfg.etcd_compaction_interval,
            clock=cfg.clock,
        )
        try:
            await backend.start()
        except BaseException:
            await backend.close()
            raise
        return backend

    def _health(self, backend: Any) -> health.Health:
        """kube-apiserver's checks, for what kplane has: the storage answers a read (``etcd``),
        the cache is loaded, each start-up step is done, the server is not stopping."""

        async def ping() -> None:
            return None

        probe = getattr(backend, "check_health", None)

        async def etcd() -> None:
            if probe is not None:
                await probe()
                return
            try:
                await backend.get("/registry/core/namespaces/default")
            except storage.KeyNotFound:
                pass

        async def cache_loaded() -> None:
            if self.storage is None:
                raise RuntimeError("the cache is not loaded")

        async def not_stopping() -> None:
            if self._stopping:
                raise RuntimeError("the server is shutting down")

        def hook(name: str) -> health.NamedCheck:
            async def done() -> None:
                if name not in self._hooks:
                    raise RuntimeError("not finished")

            return health.NamedCheck(f"poststarthook/{name}", done)

        ready_only = ("readyz",)
        return health.Health(
            [
                health.NamedCheck("ping", ping),
                health.NamedCheck("log", ping),
                health.NamedCheck("etcd", etcd),
                health.NamedCheck("etcd-readiness", etcd, ready_only),
                health.NamedCheck("informer-sync", cache_loaded, ready_only),
                *(hook(name) for name in _HOOKS),
                health.NamedCheck("shutdown", not_stopping, ready_only),
            ]
        )

    async def stop(self) -> None:
        self._ready = False
        self._stopping = True
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._namespaces is not None:
            await self._namespaces.close()
        if self._crds is not None:
            await self._crds.close()
        if self._policy_status is not None:
            await self._policy_status.close()
        if self._token_secrets is not None:
            await self._token_secrets.close()
        if self._quotas is not None:
            await self._quotas.close()
        if self._audit_log is not None:
            self._audit_log.close()
            self._audit_log = None
        if self._crd_apiservices is not None:
            await self._crd_apiservices.close()
        if self._aggregator is not None:
            await self._aggregator.close()
        if self._unlisten_rbac is not None:
            self._unlisten_rbac()
        if self._webhooks is not None:
            await self._webhooks.close()
        if self._unlisten_flowcontrol is not None:
            self._unlisten_flowcontrol()
        if self._dangling is not None:
            await self._dangling.close()
        if self.storage is not None:
            await self.storage.close()
            self.storage = None

    async def __aenter__(self) -> APIServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


def _request_factory(message: Any, payload: Any, protocol: Any, writer: Any, task: Any) -> web.BaseRequest:
    """Requests that accept bodies up to the API's 3 MiB limit (aiohttp's default is 1 MiB), with
    an empty set of audit annotations (admission records into it; the audit filter, when on,
    replaces it with the one it logs), so that reading it never raises and catches a KeyError."""
    return web.BaseRequest(
        message,
        payload,
        protocol,
        writer,
        task,
        asyncio.get_running_loop(),
        client_max_size=MAX_BODY_BYTES,
        state={scope.AUDIT_ANNOTATIONS: {}},
    )
