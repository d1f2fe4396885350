"""Config: every kubeconfig auth method, in-cluster config, load (GetConfig's order), and working TLS."""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import datetime
import pathlib
import ssl
import sys
import tempfile
from typing import Any

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from kplane._util import clock
from kplane.client import Client, config
from kplane.testing import ThreadedControlPlane


@dataclasses.dataclass(frozen=True)
class PKI:
    ca: bytes
    server_cert: bytes
    server_key: bytes
    client_cert: bytes
    client_key: bytes


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _issue(
    ca_key: ec.EllipticCurvePrivateKey | None,
    ca_name: x509.Name | None,
    cn: str,
    *,
    is_ca: bool = False,
    server: bool = False,
) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(ca_name or name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=is_ca, path_length=None), critical=True)
    )
    if server:
        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False
        ).add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
    elif not is_ca:
        builder = builder.add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False
        )
    cert = builder.sign(ca_key or key, hashes.SHA256())
    return key, cert


@pytest.fixture(scope="module")
def pki() -> PKI:
    ca_key, ca = _issue(None, None, "test-ca", is_ca=True)
    skey, scert = _issue(ca_key, ca.subject, "localhost", server=True)
    ckey, ccert = _issue(ca_key, ca.subject, "alice")
    pem = serialization.Encoding.PEM
    return PKI(
        ca=ca.public_bytes(pem),
        server_cert=scert.public_bytes(pem),
        server_key=_key_pem(skey),
        client_cert=ccert.public_bytes(pem),
        client_key=_key_pem(ckey),
    )


def _kubeconfig(
    tmp_path: pathlib.Path,
    user: dict[str, Any],
    *,
    cluster: dict[str, Any] | None = None,
    namespace: str = "",
) -> pathlib.Path:
    ctx: dict[str, Any] = {"cluster": "c", "user": "u"}
    if namespace:
        ctx["namespace"] = namespace
    doc = {
        "clusters": [{"name": "c", "cluster": {"server": "https://localhost:6443", **(cluster or {})}}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "ctx", "context": ctx}],
        "current-context": "ctx",
    }
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(doc))
    return path


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


async def test_token_auth(tmp_path: pathlib.Path) -> None:
    """A kubeconfig token becomes a Bearer header; namespace defaults to "default"."""
    cfg = config.Config.from_kubeconfig(_kubeconfig(tmp_path, {"token": "abc"}))
    assert await cfg.auth_headers() == {"Authorization": "Bearer abc"}
    assert cfg.host == "https://localhost:6443"
    assert cfg.namespace == "default"
    assert "abc" not in repr(cfg)


async def test_context_namespace_and_explicit_context(tmp_path: pathlib.Path) -> None:
    """The context's namespace is used; naming a missing context is a ConfigError."""
    path = _kubeconfig(tmp_path, {"token": "abc"}, namespace="team")
    assert config.Config.from_kubeconfig(path, context="ctx").namespace == "team"
    with pytest.raises(config.ConfigError, match="context was not found"):
        config.Config.from_kubeconfig(path, context="other")


async def test_token_file_is_reread_after_a_minute(tmp_path: pathlib.Path) -> None:
    """A rotated token file is picked up once the one-minute cache period has passed."""
    fake = clock.FakeClock()
    token = tmp_path / "token"
    token.write_text("one\n")
    cfg = config.Config.from_kubeconfig(_kubeconfig(tmp_path, {"tokenFile": "token"}), _clock=fake)
    assert await cfg.auth_headers() == {"Authorization": "Bearer one"}
    token.write_text("two")
    fake.step(59)
    assert await cfg.auth_headers() == {"Authorization": "Bearer one"}
    fake.step(1)
    assert await cfg.auth_headers() == {"Authorization": "Bearer two"}
    token.unlink()
    fake.step(60)
    assert await cfg.auth_headers() == {"Authorization": "Bearer two"}  # Last good token kept.


async def test_unreadable_token_file_without_fallback_fails(tmp_path: pathlib.Path) -> None:
    """A token file that never could be read is an error naming it."""
    cfg = config.Config(host="https://h", token_file=str(tmp_path / "missing"))
    with pytest.raises(config.ConfigError, match="missing"):
        await cfg.auth_headers()


async def test_basic_auth_and_no_auth() -> None:
    """username/password become Basic auth; no credentials give no header."""
    cfg = config.Config(host="h:443", username="alice", password="pw")
    assert await cfg.auth_headers() == {"Authorization": "Basic YWxpY2U6cHc="}
    assert cfg.host == "https://h:443"
    assert await config.Config(host="https://h").auth_headers() == {}


async def test_exec_plugin_token(tmp_path: pathlib.Path) -> None:
    """An exec user runs its plugin and sends the returned token."""
    script = tmp_path / "plugin.py"
    cred = {
        "apiVersion": "client.authentication.k8s.io/v1",
        "kind": "ExecCredential",
        "status": {"token": "from-plugin"},
    }
    script.write_text(f"#!{sys.executable}\nimport json\nprint(json.dumps({cred!r}))\n")
    script.chmod(0o755)
    exec_cfg = {
        "apiVersion": "client.authentication.k8s.io/v1",
        "command": "./plugin.py",
        "interactiveMode": "Never",
    }
    cfg = config.Config.from_kubeconfig(_kubeconfig(tmp_path, {"exec": exec_cfg}))
    assert await cfg.auth_headers() == {"Authorization": "Bearer from-plugin"}
    assert await cfg.client_cert() is None


def test_insecure_skip_tls_verify(tmp_path: pathlib.Path) -> None:
    """insecure-skip-tls-verify turns off server verification."""
    path = _kubeconfig(tmp_path, {"token": "t"}, cluster={"insecure-skip-tls-verify": True})
    ctx = config.Config.from_kubeconfig(path).ssl_context()
    assert ctx.verify_mode == ssl.CERT_NONE
    assert not ctx.check_hostname


def test_proxy_url_and_tls_server_name(tmp_path: pathlib.Path) -> None:
    """proxy-url and tls-server-name are carried from the cluster entry."""
    path = _kubeconfig(
        tmp_path,
        {"token": "t"},
        cluster={"proxy-url": "http://p:3128", "tls-server-name": "kubernetes"},
    )
    cfg = config.Config.from_kubeconfig(path)
    assert (cfg.proxy_url, cfg.tls_server_name) == ("http://p:3128", "kubernetes")


def test_insecure_with_ca_is_refused(pki: PKI) -> None:
    """A CA together with insecure is a configuration error, as in client-go."""
    with pytest.raises(config.ConfigError, match="insecure"):
        config.Config(host="https://h", ca_data=pki.ca, insecure=True)


def test_missing_certificate_file_is_reported(tmp_path: pathlib.Path) -> None:
    """A kubeconfig naming an unreadable certificate file fails at load time."""
    path = _kubeconfig(tmp_path, {"client-certificate": "nope.crt", "client-key": "nope.key"})
    with pytest.raises(config.ConfigError, match="client-certificate"):
        config.Config.from_kubeconfig(path)


def test_mismatched_client_key_fails(pki: PKI) -> None:
    """A key that does not belong to the certificate is rejected when building TLS."""
    other_key = _key_pem(ec.generate_private_key(ec.SECP256R1()))
    cfg = config.Config(host="https://h", ca_data=pki.ca, cert_data=pki.client_cert, key_data=other_key)
    with pytest.raises(ssl.SSLError):
        cfg.ssl_context()


async def _handshake(pki: PKI, tmp_path: pathlib.Path, cfg: config.Config) -> str:
    """Connect to a loopback TLS server that requires a client cert; return the client's CN."""
    (tmp_path / "srv.crt").write_bytes(pki.server_cert)
    (tmp_path / "srv.key").write_bytes(pki.server_key)
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(tmp_path / "srv.crt", tmp_path / "srv.key")
    server_ctx.load_verify_locations(cadata=pki.ca.decode())
    server_ctx.verify_mode = ssl.CERT_REQUIRED
    seen: list[str] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peercert")
        seen.append(dict(x[0] for x in peer["subject"])["commonName"])
        writer.write(b"ok")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=server_ctx)
    port = server.sockets[0].getsockname()[1]
    try:
        ctx = cfg.ssl_context(client_cert=await cfg.client_cert())
        reader, writer = await asyncio.open_connection(
            "127.0.0.1", port, ssl=ctx, server_hostname="localhost"
        )
        assert await asyncio.wait_for(reader.read(), 5) == b"ok"
        writer.close()
    finally:
        server.close()
        await server.wait_closed()
    return seen[0]


async def test_tls_with_ca_and_client_cert_data(
    pki: PKI, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CA and client certificate/key data complete a mutual-TLS handshake; no temp file remains."""
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    path = _kubeconfig(
        tmp_path,
        {"client-certificate-data": _b64(pki.client_cert), "client-key-data": _b64(pki.client_key)},
        cluster={"certificate-authority-data": _b64(pki.ca)},
    )
    cfg = config.Config.from_kubeconfig(path)
    assert await _handshake(pki, tmp_path, cfg) == "alice"
    assert list(temp.iterdir()) == []


async def test_tls_with_ca_and_client_cert_files(pki: PKI, tmp_path: pathlib.Path) -> None:
    """CA, certificate and key files (relative to the kubeconfig) complete a handshake."""
    pki_dir = tmp_path / "pki"
    pki_dir.mkdir()
    (pki_dir / "ca.crt").write_bytes(pki.ca)
    (pki_dir / "c.crt").write_bytes(pki.client_cert)
    (pki_dir / "c.key").write_bytes(pki.client_key)
    path = _kubeconfig(
        tmp_path,
        {"client-certificate": "pki/c.crt", "client-key": "pki/c.key"},
        cluster={"certificate-authority": "pki/ca.crt"},
    )
    cfg = config.Config.from_kubeconfig(path)
    assert cfg.ca_file == str(pki_dir / "ca.crt")
    assert await _handshake(pki, tmp_path, cfg) == "alice"


async def test_untrusted_server_is_rejected(pki: PKI, tmp_path: pathlib.Path) -> None:
    """Without the right CA the handshake fails verification."""
    other_ca = _issue(None, None, "other-ca", is_ca=True)[1].public_bytes(serialization.Encoding.PEM)
    cfg = config.Config(
        host="https://localhost", ca_data=other_ca, cert_data=pki.client_cert, key_data=pki.client_key
    )
    with pytest.raises(ssl.SSLCertVerificationError):
        await _handshake(pki, tmp_path, cfg)


@pytest.fixture
def service_account(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> pathlib.Path:
    sa = tmp_path / "sa"
    sa.mkdir()
    (sa / "token").write_text("pod-token\n")
    (sa / "ca.crt").write_text("CA")
    (sa / "namespace").write_text("apps")
    monkeypatch.setattr(config, "SERVICE_ACCOUNT_DIR", str(sa))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    monkeypatch.delenv("POD_NAMESPACE", raising=False)
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return sa


async def test_in_cluster(service_account: pathlib.Path) -> None:
    """In a pod: host from the env, the mounted token (as a file), CA and namespace."""
    cfg = config.Config.in_cluster()
    assert cfg.host == "https://10.0.0.1:443"
    assert cfg.token_file == str(service_account / "token")
    assert cfg.ca_file == str(service_account / "ca.crt")
    assert cfg.namespace == "apps"
    assert await cfg.auth_headers() == {"Authorization": "Bearer pod-token"}


def test_in_cluster_ipv6_and_pod_namespace(
    service_account: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An IPv6 service host is bracketed; POD_NAMESPACE overrides the mounted namespace."""
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "fd00::1")
    monkeypatch.setenv("POD_NAMESPACE", "override")
    cfg = config.Config.in_cluster()
    assert cfg.host == "https://[fd00::1]:443"
    assert cfg.namespace == "override"


def test_in_cluster_outside_a_pod(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the service env variables in_cluster fails with client-go's message."""
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(config.ConfigError, match="KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT"):
        config.Config.in_cluster()


def test_load_prefers_in_cluster_over_home_kubeconfig(
    service_account: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    """In a pod with no $KUBECONFIG, load uses the service account even if ~/.kube/config exists."""
    home_kube = tmp_path / "home" / ".kube"
    home_kube.mkdir(parents=True)
    _kubeconfig(tmp_path, {"token": "t"}).rename(home_kube / "config")
    assert config.Config.load().host == "https://10.0.0.1:443"


def test_load_uses_explicit_kubeconfig_first(
    service_account: pathlib.Path, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An explicit $KUBECONFIG wins over in-cluster config."""
    monkeypatch.setenv("KUBECONFIG", str(_kubeconfig(tmp_path, {"token": "t"})))
    assert config.Config.load().host == "https://localhost:6443"


def test_load_does_not_fall_back_from_a_broken_kubeconfig_env(
    service_account: pathlib.Path, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A $KUBECONFIG naming nothing usable is an error even in a pod (controller-runtime's loadConfig)."""
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing"))
    with pytest.raises(config.ConfigError, match="no configuration has been provided"):
        config.Config.load()


def test_client_rate_limit_is_off_by_default() -> None:
    """Like controller-runtime (QPS -1), no client-side token bucket unless asked for."""
    assert config.Config(host="https://h").qps <= 0


def test_load_outside_a_pod_reads_home_kubeconfig(
    service_account: pathlib.Path, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Outside a pod load reads ~/.kube/config, and fails clearly when there is none."""
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST")
    with pytest.raises(config.ConfigError, match="no configuration has been provided"):
        config.Config.load()
    home_kube = tmp_path / "home" / ".kube"
    home_kube.mkdir(parents=True)
    _kubeconfig(tmp_path, {"token": "t"}).rename(home_kube / "config")
    assert config.Config.load().host == "https://localhost:6443"


def test_public_surface() -> None:
    """kplane.client exports the config, options and event names users need, and each resolves."""
    import kplane.client as pkg

    assert {"Config", "ConfigError", "ExecPluginError", "KubeconfigError"} <= set(pkg.__all__)
    assert {"ALL", "Backoff", "Client", "ListOptions", "Resource", "WatchEvent"} <= set(pkg.__all__)
    assert all(getattr(pkg, name) is not None for name in pkg.__all__)


async def test_client_without_a_config_loads_one(
    kplane_session: ThreadedControlPlane, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``Client()`` finds its config as ``Config.load()`` does: here through $KUBECONFIG."""
    monkeypatch.setenv("KUBECONFIG", str(kplane_session.kubeconfig))
    async with Client() as c:
        assert c.config.host == kplane_session.url
        assert (await c.resource("namespaces").get("default"))["metadata"]["name"] == "default"
