"""Connection settings for one API server: where it is, how to trust it, how to authenticate.

``Config`` is client-go's ``rest.Config`` as a frozen value. It is built from a kubeconfig context
(``from_kubeconfig``), from a pod's service account (``in_cluster``), or by choosing between them
as controller-runtime's ``GetConfig`` does (``load``): an explicit ``$KUBECONFIG``, else the
in-cluster account when running in a pod, else ``~/.kube/config``.

Client-side rate limiting is off by default (``qps=0``), as controller-runtime sets it (QPS -1): the
server's priority and fairness protects it, and client-go's 5 QPS made a script creating 1,000
objects take minutes. Set ``qps``/``burst`` to get client-go's token bucket back.

Credentials that change over time live behind the value: a token file is re-read at most once a
minute (client-go's cached file token source, so projected service-account tokens rotate), and an
exec plugin's credential is cached until it expires. ``auth_headers()`` and ``client_cert()`` are
async for that reason; a transport calls them per request, and they are cheap when cached.
"""

from __future__ import annotations

import base64
import dataclasses
import os
import pathlib
import ssl
import sys
import tempfile
from collections.abc import Callable

import kplane
from kplane._util import clock as clock_mod
from kplane.client import exec_plugin, kubeconfig

SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
"""Where a pod's service-account token, ``ca.crt`` and ``namespace`` are mounted."""

TOKEN_FILE_PERIOD = 60.0
"""Seconds a token read from ``token_file`` is reused before the file is read again."""

DEFAULT_USER_AGENT = f"kplane/{kplane.__version__} (python {sys.version_info[0]}.{sys.version_info[1]})"

ClientCert = tuple[bytes, bytes]
"""A client certificate chain and its private key, both PEM."""


class ConfigError(Exception):
    """No usable configuration could be built (missing files, no context, not in a cluster)."""


class _AuthState:
    """Mutable credential caches behind a frozen ``Config`` (a copy made with ``replace`` starts empty)."""

    def __init__(self) -> None:
        self.file_token = ""
        self.file_token_read_at: float | None = None
        self.exec: exec_plugin.ExecAuthenticator | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class Config:
    """How to reach and authenticate to one API server.

    TLS material is given as PEM bytes (``*_data``) or file paths (``*_file``); data wins when both
    are set. Authentication, in order of precedence: ``token_file`` (re-read periodically; falls
    back to ``token`` while unreadable), ``token_source`` (called for each request: a token kept
    current in memory, e.g. renewed through TokenRequest), ``token``, ``exec_provider``,
    ``username``/``password``.
    ``qps``/``burst`` are client-go's client-side token bucket; ``qps <= 0`` (the default) disables it.
    ``timeout`` is a per-request timeout in seconds (``None``: none). ``proxy_url`` (the kubeconfig's
    ``proxy-url``) sends every request through that HTTP(S) proxy (CONNECT for https servers);
    other schemes (``socks5://``) are refused with ``ConfigError``.
    """

    host: str
    ca_data: bytes = b""
    ca_file: str = ""
    cert_data: bytes = b""
    cert_file: str = ""
    key_data: bytes = b""
    key_file: str = ""
    token: str = dataclasses.field(default="", repr=False)
    token_file: str = ""
    token_source: Callable[[], str] | None = dataclasses.field(default=None, compare=False, repr=False)
    username: str = ""
    password: str = dataclasses.field(default="", repr=False)
    exec_provider: kubeconfig.ExecConfig | None = None
    insecure: bool = False
    tls_server_name: str = ""
    proxy_url: str = ""
    namespace: str = "default"
    user_agent: str = DEFAULT_USER_AGENT
    qps: float = 0.0
    burst: int = 10
    timeout: float | None = None
    _clock: clock_mod.Clock = dataclasses.field(
        default_factory=clock_mod.RealClock, compare=False, repr=False
    )
    _auth: _AuthState = dataclasses.field(default_factory=_AuthState, init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        if "://" not in self.host:
            object.__setattr__(self, "host", "https://" + self.host)
        if self.insecure and (self.ca_data or self.ca_file):
            raise ConfigError("specifying a root certificates file with the insecure flag is not allowed")
        scheme = self.proxy_url.partition("://")[0].lower() if "://" in self.proxy_url else ""
        if self.proxy_url and scheme not in ("http", "https"):
            # client-go also dials socks5; aiohttp cannot, and a silently ignored proxy would send
            # the requests straight to the server instead.
            raise ConfigError(
                f"proxy-url {self.proxy_url!r}: only http:// and https:// proxies are supported"
            )

    # Construction.

    @classmethod
    def from_kubeconfig(
        cls,
        path: str | os.PathLike[str] | None = None,
        context: str | None = None,
        *,
        _clock: clock_mod.Clock | None = None,
    ) -> Config:
        """The config of ``context`` (default: current) in ``path`` (default: ``$KUBECONFIG`` merged)."""
        try:
            loaded = kubeconfig.load(path)
            if loaded.is_empty():
                raise kubeconfig.KubeconfigError("invalid configuration: no configuration has been provided")
            _, ctx, cluster, user = loaded.context(context)
        except kubeconfig.KubeconfigError as e:
            raise ConfigError(str(e)) from e
        for what, file in (
            ("certificate-authority", cluster.certificate_authority),
            ("client-certificate", user.client_certificate),
            ("client-key", user.client_key),
        ):
            if file and not os.access(file, os.R_OK):
                raise ConfigError(f"unable to read {what} {file}")
        cfg = cls(
            host=cluster.server,
            ca_data=cluster.certificate_authority_data,
            ca_file=cluster.certificate_authority,
            cert_data=user.client_certificate_data,
            cert_file=user.client_certificate,
            key_data=user.client_key_data,
            key_file=user.client_key,
            token=user.token,
            token_file=user.token_file,
            username=user.username,
            password=user.password,
            exec_provider=user.exec,
            insecure=cluster.insecure_skip_tls_verify,
            tls_server_name=cluster.tls_server_name,
            proxy_url=cluster.proxy_url,
            namespace=ctx.namespace or "default",
            _clock=_clock or clock_mod.RealClock(),
        )
        if user.exec is not None:
            cfg._auth.exec = exec_plugin.ExecAuthenticator(user.exec, cluster=cluster, clock=cfg._clock)
        return cfg

    @classmethod
    def in_cluster(cls, *, _clock: clock_mod.Clock | None = None) -> Config:
        """The config of the pod's service account (client-go ``rest.InClusterConfig``).

        Host from ``KUBERNETES_SERVICE_HOST``/``KUBERNETES_SERVICE_PORT``; the token file is
        re-read as it rotates; the namespace is ``$POD_NAMESPACE``, else the mounted one.
        """
        host = os.environ.get("KUBERNETES_SERVICE_HOST", "")
        port = os.environ.get("KUBERNETES_SERVICE_PORT", "")
        if not host or not port:
            raise ConfigError(
                "unable to load in-cluster configuration, KUBERNETES_SERVICE_HOST and "
                "KUBERNETES_SERVICE_PORT must be defined"
            )
        root = pathlib.Path(SERVICE_ACCOUNT_DIR)
        token_path = root / "token"
        try:
            token = token_path.read_text().strip()
        except OSError as e:
            raise ConfigError(f"unable to read service account token {token_path}: {e}") from e
        ca_path = root / "ca.crt"
        namespace = os.environ.get("POD_NAMESPACE", "")
        if not namespace:
            try:
                namespace = (root / "namespace").read_text().strip()
            except OSError:
                namespace = ""
        netloc = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        return cls(
            host=f"https://{netloc}",
            ca_file=str(ca_path) if ca_path.is_file() else "",
            token=token,
            token_file=str(token_path),
            namespace=namespace or "default",
            _clock=_clock or clock_mod.RealClock(),
        )

    @classmethod
    def load(cls, context: str | None = None, *, _clock: clock_mod.Clock | None = None) -> Config:
        """Find the config as controller-runtime's ``GetConfigWithContext`` does.

        ``$KUBECONFIG`` set and non-empty: its files, merged (no fallback). Otherwise the pod's
        service account when in a cluster, else ``~/.kube/config`` (home from ``$HOME``, else the
        user database). ``context`` picks a kubeconfig context (default: the current one). The
        ``--kubeconfig`` flag has no equivalent: pass a path to ``from_kubeconfig``.
        """
        if os.environ.get("KUBECONFIG"):
            return cls.from_kubeconfig(context=context, _clock=_clock)
        try:
            return cls.in_cluster(_clock=_clock)
        except ConfigError as in_cluster_error:
            try:
                return cls.from_kubeconfig(context=context, _clock=_clock)
            except ConfigError as e:
                raise ConfigError(f"{e} (and not in a cluster: {in_cluster_error})") from e

    # Credentials.

    async def auth_headers(self) -> dict[str, str]:
        """The ``Authorization`` header to send (empty when the config has no credentials)."""
        token = self._current_token()
        if not token and self.exec_provider is not None:
            cred = await self._exec().credential()
            token = cred.token
        if token:
            return {"Authorization": f"Bearer {token}"}
        if self.username or self.password:
            basic = base64.b64encode(f"{self.username}:{self.password}".encode()).decode()
            return {"Authorization": f"Basic {basic}"}
        return {}

    async def client_cert(self) -> ClientCert | None:
        """The client certificate and key to present: configured ones, else an exec plugin's."""
        cert = self.cert_data or _read_bytes(self.cert_file)
        key = self.key_data or _read_bytes(self.key_file)
        if cert and key:
            return cert, key
        if self.exec_provider is not None and not (self.token or self.token_file):
            cred = await self._exec().credential()
            if cred.client_certificate_data:
                return cred.client_certificate_data, cred.client_key_data
        return None

    def invalidate_credentials(self) -> None:
        """Drop cached credentials after the server rejected them (HTTP 401)."""
        self._auth.file_token_read_at = None
        if self._auth.exec is not None:
            self._auth.exec.invalidate()
        invalidate = getattr(self.token_source, "invalidate", None)
        if invalidate is not None:
            invalidate()  # a token source that can renew (``invalidate()``) is told to

    def ssl_context(self, *, client_cert: ClientCert | None = None) -> ssl.SSLContext:
        """A client TLS context: the configured CA (else the system roots), TLS >= 1.2.

        ``client_cert`` (from ``await client_cert()``) is presented when given; otherwise the
        statically configured certificate, if any. With ``insecure`` the server is not verified.
        The server name to check is ``tls_server_name`` when set: pass it as the connection's
        ``server_hostname``.
        """
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        if self.insecure:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        elif self.ca_data:
            ctx.load_verify_locations(cadata=self.ca_data.decode())
        elif self.ca_file:
            ctx.load_verify_locations(cafile=self.ca_file)
        else:
            ctx.load_default_certs(ssl.Purpose.SERVER_AUTH)
        if client_cert is None:
            if self.cert_data or self.key_data:
                client_cert = (
                    (self.cert_data or _read_bytes(self.cert_file)),
                    (self.key_data or _read_bytes(self.key_file)),
                )
            elif self.cert_file and self.key_file:
                ctx.load_cert_chain(self.cert_file, self.key_file)
        if client_cert is not None:
            _load_cert_from_data(ctx, *client_cert)
        return ctx

    def _current_token(self) -> str:
        if not self.token_file:
            if self.token_source is not None:
                return self.token_source() or self.token
            return self.token
        state = self._auth
        now = self._clock.monotonic()
        if state.file_token_read_at is None or now - state.file_token_read_at >= TOKEN_FILE_PERIOD:
            try:
                fresh = pathlib.Path(self.token_file).read_text().strip()
            except OSError as e:
                if state.file_token or self.token:
                    return state.file_token or self.token  # Keep the last good token.
                raise ConfigError(f"unable to read token file {self.token_file}: {e}") from e
            state.file_token, state.file_token_read_at = fresh, now
        return state.file_token or self.token

    def _exec(self) -> exec_plugin.ExecAuthenticator:
        assert self.exec_provider is not None
        if self._auth.exec is None:
            cluster = kubeconfig.Cluster(
                server=self.host,
                certificate_authority_data=self.ca_data,
                insecure_skip_tls_verify=self.insecure,
                tls_server_name=self.tls_server_name,
                proxy_url=self.proxy_url,
            )
            self._auth.exec = exec_plugin.ExecAuthenticator(
                self.exec_provider, cluster=cluster, clock=self._clock
            )
        return self._auth.exec


def _read_bytes(path: str) -> bytes:
    if not path:
        return b""
    try:
        return pathlib.Path(path).read_bytes()
    except OSError as e:
        raise ConfigError(f"unable to read {path}: {e}") from e


def _load_cert_from_data(ctx: ssl.SSLContext, cert: bytes, key: bytes) -> None:
    """``load_cert_chain`` needs a file: write both PEMs to a private temp file, load, delete."""
    fd, path = tempfile.mkstemp(prefix="kplane-cert-", suffix=".pem")  # Mode 0600.
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(cert.rstrip(b"\n") + b"\n" + key)
        ctx.load_cert_chain(path)
    finally:
        os.unlink(path)
