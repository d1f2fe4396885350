"""kubeconfig files: parsing, and merging a ``KUBECONFIG`` list as client-go's ``clientcmd`` does.

Merge rules (client-go ``tools/clientcmd/loader.go``):

* the files are read in order; missing files in ``$KUBECONFIG`` are skipped, an explicit path that
  is missing is an error; an empty file is an empty config, an unparsable one an error naming it;
* for ``clusters``, ``users`` and ``contexts`` the **first** file that defines a name wins;
* ``current-context`` comes from the first file that sets it;
* relative paths (``certificate-authority``, ``client-certificate``, ``client-key``,
  ``tokenFile``, and an exec ``command`` that contains a path separator) are resolved against the
  directory of the file that declares them.

The result is plain frozen values; ``Config.from_kubeconfig`` turns one context into a ``Config``.
"""

from __future__ import annotations

import base64
import dataclasses
import os
import pathlib
from collections.abc import Mapping, Sequence
from typing import Any

import yaml


class KubeconfigError(Exception):
    """A kubeconfig could not be read, parsed, or resolved to a usable context."""


@dataclasses.dataclass(frozen=True, slots=True)
class Cluster:
    """A ``clusters[].cluster`` entry. ``*_data`` fields hold decoded bytes (PEM)."""

    server: str = ""
    certificate_authority: str = ""
    certificate_authority_data: bytes = b""
    insecure_skip_tls_verify: bool = False
    tls_server_name: str = ""
    proxy_url: str = ""
    extensions: Mapping[str, Any] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True, slots=True)
class ExecConfig:
    """A ``users[].user.exec`` entry: how to run a client-go credential plugin."""

    command: str
    api_version: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    install_hint: str = ""
    provide_cluster_info: bool = False
    interactive_mode: str = "IfAvailable"


@dataclasses.dataclass(frozen=True, slots=True)
class AuthInfo:
    """A ``users[].user`` entry. ``*_data`` fields hold decoded bytes (PEM)."""

    client_certificate: str = ""
    client_certificate_data: bytes = b""
    client_key: str = ""
    client_key_data: bytes = b""
    token: str = ""
    token_file: str = ""
    username: str = ""
    password: str = ""
    exec: ExecConfig | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class Context:
    """A ``contexts[].context`` entry."""

    cluster: str = ""
    user: str = ""
    namespace: str = ""


@dataclasses.dataclass(frozen=True, slots=True)
class Kubeconfig:
    """A parsed (possibly merged) kubeconfig. ``users`` is upstream's ``AuthInfos``."""

    clusters: Mapping[str, Cluster] = dataclasses.field(default_factory=dict)
    users: Mapping[str, AuthInfo] = dataclasses.field(default_factory=dict)
    contexts: Mapping[str, Context] = dataclasses.field(default_factory=dict)
    current_context: str = ""

    def is_empty(self) -> bool:
        """True when nothing at all is configured (client-go then tries in-cluster config)."""
        return not (self.clusters or self.users or self.contexts or self.current_context)

    def context(self, name: str | None = None) -> tuple[str, Context, Cluster, AuthInfo]:
        """Resolve context ``name`` (default: ``current-context``) to its cluster and user.

        A context naming a user that is not defined gets an empty user (client-go does the same);
        a missing context or cluster is a ``KubeconfigError``.
        """
        ctx_name = name or self.current_context
        if not ctx_name:
            raise KubeconfigError("invalid configuration: no configuration has been provided")
        ctx = self.contexts.get(ctx_name)
        if ctx is None:
            raise KubeconfigError(f'context was not found for specified context: "{ctx_name}"')
        cluster = self.clusters.get(ctx.cluster)
        if cluster is None:
            raise KubeconfigError(f'cluster "{ctx.cluster}" not found (context "{ctx_name}")')
        if not cluster.server:
            raise KubeconfigError(f'no server found for cluster "{ctx.cluster}"')
        return ctx_name, ctx, cluster, self.users.get(ctx.user, AuthInfo())


def default_paths() -> list[pathlib.Path]:
    """The files client-go reads: each entry of ``$KUBECONFIG`` if set, else ``~/.kube/config``."""
    env = os.environ.get("KUBECONFIG", "")
    if env:
        seen: list[pathlib.Path] = []
        for entry in env.split(os.pathsep):
            if entry and pathlib.Path(entry) not in seen:
                seen.append(pathlib.Path(entry))
        return seen
    return [pathlib.Path.home() / ".kube" / "config"]


def load(path: str | os.PathLike[str] | None = None) -> Kubeconfig:
    """Load ``path`` (must exist), or merge the ``default_paths()`` that exist."""
    if path is not None:
        p = pathlib.Path(path)
        if not p.is_file():
            raise KubeconfigError(f"stat {p}: no such file or directory")
        return load_file(p)
    return merge([load_file(p) for p in default_paths() if p.is_file()])


def load_file(path: str | os.PathLike[str]) -> Kubeconfig:
    """Parse one kubeconfig file, resolving its relative paths against its directory."""
    p = pathlib.Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise KubeconfigError(f"error loading config file {p}: {e}") from e
    return parse(text, base_dir=p.absolute().parent, source=str(p))


def parse(text: str, *, base_dir: pathlib.Path | None = None, source: str = "<string>") -> Kubeconfig:
    """Parse kubeconfig YAML; relative paths are resolved against ``base_dir`` when given."""
    try:
        doc = yaml.safe_load(text) if text.strip() else {}
    except yaml.YAMLError as e:
        raise KubeconfigError(f"error loading config file {source}: {e}") from e
    if doc is None:
        doc = {}
    if not isinstance(doc, dict):
        raise KubeconfigError(f"error loading config file {source}: not a mapping")
    try:
        return Kubeconfig(
            clusters=_named(doc, "clusters", "cluster", lambda d: _cluster(d, base_dir)),
            users=_named(doc, "users", "user", lambda d: _auth_info(d, base_dir)),
            contexts=_named(doc, "contexts", "context", _context),
            current_context=str(doc.get("current-context") or ""),
        )
    except (TypeError, ValueError, KeyError) as e:
        raise KubeconfigError(f"error loading config file {source}: {e}") from e


def merge(configs: Sequence[Kubeconfig]) -> Kubeconfig:
    """Merge in order: the first definition of each name wins, and the first ``current-context``."""
    clusters: dict[str, Cluster] = {}
    users: dict[str, AuthInfo] = {}
    contexts: dict[str, Context] = {}
    current = ""
    for cfg in configs:
        for name, cluster in cfg.clusters.items():
            clusters.setdefault(name, cluster)
        for name, user in cfg.users.items():
            users.setdefault(name, user)
        for name, ctx in cfg.contexts.items():
            contexts.setdefault(name, ctx)
        current = current or cfg.current_context
    return Kubeconfig(clusters=clusters, users=users, contexts=contexts, current_context=current)


# Parsing helpers.


def _named(doc: Mapping[str, Any], section: str, field: str, build: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for entry in doc.get(section) or []:
        if not isinstance(entry, dict) or not entry.get("name"):
            raise ValueError(f"{section}: every entry needs a name")
        name = str(entry["name"])
        if name not in out:  # A duplicate name within one file: the first one wins too.
            out[name] = build(entry.get(field) or {})
    return out


def _resolve(path: str, base_dir: pathlib.Path | None) -> str:
    if not path or base_dir is None or os.path.isabs(path):
        return path
    return str(base_dir / path)


def _b64(value: Any) -> bytes:
    return base64.b64decode(value, validate=False) if value else b""


def _cluster(d: Mapping[str, Any], base_dir: pathlib.Path | None) -> Cluster:
    return Cluster(
        server=str(d.get("server") or ""),
        certificate_authority=_resolve(str(d.get("certificate-authority") or ""), base_dir),
        certificate_authority_data=_b64(d.get("certificate-authority-data")),
        insecure_skip_tls_verify=bool(d.get("insecure-skip-tls-verify", False)),
        tls_server_name=str(d.get("tls-server-name") or ""),
        proxy_url=str(d.get("proxy-url") or ""),
        extensions={str(e["name"]): e.get("extension") for e in d.get("extensions") or [] if "name" in e},
    )


def _auth_info(d: Mapping[str, Any], base_dir: pathlib.Path | None) -> AuthInfo:
    return AuthInfo(
        client_certificate=_resolve(str(d.get("client-certificate") or ""), base_dir),
        client_certificate_data=_b64(d.get("client-certificate-data")),
        client_key=_resolve(str(d.get("client-key") or ""), base_dir),
        client_key_data=_b64(d.get("client-key-data")),
        token=str(d.get("token") or ""),
        token_file=_resolve(str(d.get("tokenFile") or ""), base_dir),
        username=str(d.get("username") or ""),
        password=str(d.get("password") or ""),
        exec=_exec(d["exec"], base_dir) if d.get("exec") else None,
    )


def _exec(d: Mapping[str, Any], base_dir: pathlib.Path | None) -> ExecConfig:
    command = str(d.get("command") or "")
    if not command:
        raise ValueError("exec: command is required")
    if os.sep in command:  # Only a command with a separator is a path; a bare name uses $PATH.
        command = _resolve(command, base_dir)
    return ExecConfig(
        command=command,
        api_version=str(d.get("apiVersion") or ""),
        args=tuple(str(a) for a in d.get("args") or []),
        env=tuple((str(e["name"]), str(e.get("value", ""))) for e in d.get("env") or []),
        install_hint=str(d.get("installHint") or ""),
        provide_cluster_info=bool(d.get("provideClusterInfo", False)),
        interactive_mode=str(d.get("interactiveMode") or "IfAvailable"),
    )


def _context(d: Mapping[str, Any]) -> Context:
    return Context(
        cluster=str(d.get("cluster") or ""),
        user=str(d.get("user") or ""),
        namespace=str(d.get("namespace") or ""),
    )
