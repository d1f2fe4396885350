"""The built-in controllers' identities, least privilege as upstream's control plane runs them.

``kplane serve`` (``write_credentials``) issues, as kubeadm does for its components' kubeconfigs,
client certificates signed by the cluster CA and writes them as kubeconfigs (mode 0600) in
``DATA_DIR/controllers`` (0700): ``kube-controller-manager.kubeconfig`` (user
``system:kube-controller-manager``: the shared informers, the Lease, and minting the controllers'
tokens), ``kube-scheduler.kubeconfig`` (``system:kube-scheduler``) and ``nodes.kubeconfig`` (one
context per simulated node, user ``system:node:<node>`` in the group ``system:nodes``).

``kplane controllers`` with ``--use-service-account-credentials`` (``ServiceAccountIdentities``)
then gives each controller the ServiceAccount ``kube-system/<controller>`` (created if missing) and
a token from TokenRequest, renewed before it expires, as kube-controller-manager does with that
flag: RBAC then grants each controller only its ``system:controller:<controller>`` role.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import logging
from pathlib import Path
from typing import Any

from kplane.api import errors
from kplane.server.auth.rbac_policy import KCM_USER, NODE_USER_PREFIX, NODES_GROUP, SCHEDULER_USER

log = logging.getLogger(__name__)

NAMESPACE = "kube-system"

KCM_FILE = "kube-controller-manager.kubeconfig"
SCHEDULER_FILE = "kube-scheduler.kubeconfig"
NODES_FILE = "nodes.kubeconfig"

CERT_VALIDITY = datetime.timedelta(days=365)
"""kubeadm's validity of the components' client certificates."""
TOKEN_SECONDS = 3600
"""The lifetime asked of each controller token (upstream's ``defaultExpirationSeconds``)."""
RENEW_AT = 0.8
"""Tokens are renewed once this fraction of their lifetime has passed (upstream's 20 % leeway)."""
RETRY_SECONDS = 10.0
"""Wait before asking again after a failed renewal."""


def write_credentials(data_dir: Path, directory: Path, server_url: str, nodes: list[str]) -> None:
    """Write the three kubeconfigs (module docstring) into ``directory``, issued by the CA of
    ``data_dir``'s PKI. Blocking (certificate issuing): run it in a thread."""
    import yaml

    from kplane.cli import kubeconfig
    from kplane.server.auth import certs

    def write(name: str, identities: list[tuple[str, str, list[str]]]) -> None:
        config = kubeconfig.build_many(data_dir, identities, CERT_VALIDITY, server_url)
        text = yaml.safe_dump(config, sort_keys=False)
        certs.write_atomic(directory / name, text.encode(), 0o600)

    write(KCM_FILE, [(KCM_USER, KCM_USER, [])])
    write(SCHEDULER_FILE, [(SCHEDULER_USER, SCHEDULER_USER, [])])
    if nodes:
        write(NODES_FILE, [(node, NODE_USER_PREFIX + node, [NODES_GROUP]) for node in nodes])


def node_clients(path: Path) -> dict[str, Any]:
    """A client per context of ``path`` (``nodes.kubeconfig``), keyed by the context's (node's) name.
    The file is read once; each client opens its connections on first use."""
    import base64

    import yaml

    from kplane.client import config as config_mod
    from kplane.client import typed

    doc = yaml.safe_load(path.read_text())
    cluster = doc["clusters"][0]["cluster"]
    users = {u["name"]: u["user"] for u in doc["users"]}
    out: dict[str, Any] = {}
    for ctx in doc["contexts"]:
        user = users[ctx["context"]["user"]]
        config = config_mod.Config(
            host=cluster["server"],
            ca_data=base64.b64decode(cluster["certificate-authority-data"]),
            cert_data=base64.b64decode(user["client-certificate-data"]),
            key_data=base64.b64decode(user["client-key-data"]),
            qps=0.0,
        )
        out[ctx["name"]] = typed.Client(config)
    return out


@dataclasses.dataclass
class _Token:
    value: str
    renew_at: float  # monotonic
    issued: float  # monotonic


class _Source:
    """A ``Config.token_source``: the current token of one ServiceAccount, renewed on demand."""

    def __init__(self, accounts: ServiceAccountIdentities, name: str) -> None:
        self.accounts, self.name = accounts, name

    def __call__(self) -> str:
        return self.accounts._tokens[self.name].value

    def invalidate(self) -> None:
        self.accounts.invalidate(self.name)


class ServiceAccountIdentities:
    """Each controller's own client: ServiceAccount ``kube-system/<name>`` and a TokenRequest token,
    renewed in the background (a manager runnable, ``start``) before it expires.

    ``manager`` is the one whose client (the kube-controller-manager's identity) creates the
    ServiceAccounts and requests the tokens; ``identity(name)`` returns a ``with_api`` view of it
    acting as that ServiceAccount. Tokens are bound to the ServiceAccount's UID: one deleted and
    recreated is noticed at the next renewal (or when the server refuses the old token, 401 → the
    client asks again).
    """

    def __init__(self, manager: Any) -> None:
        self.manager = manager
        self.clock = manager.clock
        self._tokens: dict[str, _Token] = {}
        self._wake = asyncio.Event()
        base = manager.api.config
        self._base = dataclasses.replace(
            base, cert_data=b"", cert_file="", key_data=b"", key_file="", token="", token_file=""
        )

    async def identity(self, name: str) -> Any:
        """The manager view acting as ``system:serviceaccount:kube-system:<name>``."""
        from kplane.client import typed

        await self._ensure_account(name)
        await self._renew(name)
        config = dataclasses.replace(self._base, token_source=_Source(self, name))
        return self.manager.with_api(typed.Client(config))

    def need_leader_election(self) -> bool:
        return False  # a standby's controllers need their tokens the moment they lead

    async def start(self) -> None:
        """Renew each token once ``RENEW_AT`` of its lifetime passed, or at once when the server
        refused it (``invalidate``); until cancelled."""
        while True:
            now = self.clock.monotonic()
            due = [n for n, t in self._tokens.items() if t.renew_at <= now]
            for name in due:
                try:
                    await self._ensure_account(name)
                    await self._renew(name)
                except (errors.APIError, OSError, KeyError, TypeError) as err:
                    log.warning("renewing the token of %s/%s: %s", NAMESPACE, name, err)
                    self._tokens[name].renew_at = now + RETRY_SECONDS
            nxt = min((t.renew_at for t in self._tokens.values()), default=now + TOKEN_SECONDS)
            self._wake.clear()
            sleep = asyncio.ensure_future(self.clock.sleep(max(0.0, nxt - self.clock.monotonic())))
            woken = asyncio.ensure_future(self._wake.wait())
            try:
                await asyncio.wait({sleep, woken}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                sleep.cancel()
                woken.cancel()

    def invalidate(self, name: str) -> None:
        """The server refused ``name``'s token (401: its ServiceAccount was deleted, say): renew it
        now, unless it was issued less than ``RETRY_SECONDS`` ago."""
        token = self._tokens.get(name)
        if token is None or self.clock.monotonic() - token.issued < RETRY_SECONDS:
            return
        token.renew_at = 0.0
        self._wake.set()

    async def _ensure_account(self, name: str) -> None:
        from kplane.client import dynamic

        resource = dynamic.Resource("", "v1", "serviceaccounts", "ServiceAccount", namespaced=True)
        accounts = self.manager.api.dynamic.resource(resource, NAMESPACE)
        try:
            await accounts.get(name)
        except errors.NotFound:
            body = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}}
            try:
                await accounts.create(body)
            except errors.AlreadyExists:
                pass

    async def _renew(self, name: str) -> None:
        path = f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/{name}/token"
        body = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"expirationSeconds": TOKEN_SECONDS},
        }
        answer = await self.manager.api.rest.request("POST", path, body=body)
        token = str(answer["status"]["token"])
        lifetime = TOKEN_SECONDS
        expires = answer["status"].get("expirationTimestamp")
        if isinstance(expires, str):
            left = datetime.datetime.fromisoformat(expires) - self.clock.now()
            lifetime = max(1, int(left.total_seconds()))
        now = self.clock.monotonic()
        self._tokens[name] = _Token(token, now + lifetime * RENEW_AT, now)
