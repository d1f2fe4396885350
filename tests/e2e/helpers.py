"""Raw HTTPS access to a running kplane server for end-to-end tests.

``Kube`` speaks plain HTTP/1.1 over TLS with the credentials of the server's admin kubeconfig (client
certificate by default, or the bearer token, or nothing), so tests can assert exact status codes, headers
and bodies that the official clients would hide. ``WatchStream`` reads a chunked watch response one
newline-delimited JSON event at a time, with a per-read timeout so a missing event fails the test
instead of hanging it.
"""

from __future__ import annotations

import base64
import http.client
import json
import queue
import ssl
import tempfile
import threading
import time
import urllib.parse
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

Auth = Literal["cert", "token", "none"] | str
"""``cert`` (client certificate), ``token`` (the kubeconfig's bearer token), ``none``, or a literal token."""

TABLE_ACCEPT = "application/json;as=Table;v=v1;g=meta.k8s.io"


def unique(prefix: str) -> str:
    """A DNS-1123 name that no other test uses: ``prefix`` plus eight hex digits."""
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        """The body decoded as JSON; fails the test with the raw body when it is not JSON."""
        try:
            return json.loads(self.body)
        except ValueError as exc:
            raise AssertionError(f"not JSON (HTTP {self.status}): {self.body[:500]!r}") from exc

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "")


def assert_status(resp: Response, code: int, reason: str | None = None) -> dict[str, Any]:
    """Assert ``resp`` is a Kubernetes ``Status`` failure with HTTP and body code ``code``; return it."""
    assert resp.status == code, f"expected HTTP {code}, got {resp.status}: {resp.body[:800]!r}"
    assert resp.content_type.startswith("application/json"), resp.content_type
    st: dict[str, Any] = resp.json()
    assert st.get("kind") == "Status", st
    assert st.get("apiVersion") == "v1", st
    assert st.get("status") == "Failure", st
    assert st.get("code") == code, st
    if reason is not None:
        assert st.get("reason") == reason, st
    return st


@dataclass
class Kube:
    """Connection details of one server, read from its admin kubeconfig."""

    host: str
    port: int
    token: str
    ca_file: Path
    cert_file: Path
    key_file: Path
    _contexts: dict[str, ssl.SSLContext] = field(default_factory=dict)

    @classmethod
    def from_kubeconfig(cls, path: Path, workdir: Path | None = None) -> Kube:
        """Parse ``path`` (inline ``*-data`` or file references) and write the PEMs under ``workdir``."""
        cfg = yaml.safe_load(path.read_text())
        cluster = cfg["clusters"][0]["cluster"]
        user = cfg["users"][0]["user"]
        out = Path(workdir or tempfile.mkdtemp(prefix="kplane-e2e-"))
        out.mkdir(parents=True, exist_ok=True)

        def pem(data_key: str, file_key: str, section: Mapping[str, Any], name: str) -> Path:
            if data_key in section:
                target = out / name
                target.write_bytes(base64.b64decode(section[data_key]))
                target.chmod(0o600)
                return target
            return Path(section[file_key])

        url = urllib.parse.urlsplit(cluster["server"])
        assert url.hostname is not None and url.port is not None, cluster["server"]
        return cls(
            host=url.hostname,
            port=url.port,
            token=user.get("token", ""),
            ca_file=pem("certificate-authority-data", "certificate-authority", cluster, "ca.pem"),
            cert_file=pem("client-certificate-data", "client-certificate", user, "client.pem"),
            key_file=pem("client-key-data", "client-key", user, "client-key.pem"),
        )

    def _ssl(self, with_cert: bool) -> ssl.SSLContext:
        key = "cert" if with_cert else "plain"
        if key not in self._contexts:
            ctx = ssl.create_default_context(cafile=str(self.ca_file))
            if with_cert:
                ctx.load_cert_chain(str(self.cert_file), str(self.key_file))
            self._contexts[key] = ctx
        return self._contexts[key]

    def _connect(self, auth: Auth, timeout: float) -> tuple[http.client.HTTPSConnection, dict[str, str]]:
        headers: dict[str, str] = {}
        if auth == "token":
            headers["Authorization"] = f"Bearer {self.token}"
        elif auth not in ("cert", "none"):
            headers["Authorization"] = f"Bearer {auth}"
        conn = http.client.HTTPSConnection(
            self.host, self.port, context=self._ssl(auth == "cert"), timeout=timeout
        )
        return conn, headers

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        query: Mapping[str, str | int] | None = None,
        headers: Mapping[str, str] | None = None,
        content_type: str | None = None,
        auth: Auth = "cert",
        timeout: float = 10,
    ) -> Response:
        """Send one request; ``body`` may be bytes, str, or anything JSON-encodable (sent as JSON)."""
        conn, hdrs = self._connect(auth, timeout)
        data: bytes | None
        if body is None:
            data = None
        elif isinstance(body, bytes):
            data = body
        elif isinstance(body, str):
            data = body.encode()
        else:
            data = json.dumps(body).encode()
        if data is not None and content_type != "":  # "" sends the body with no Content-Type at all
            hdrs["Content-Type"] = content_type or "application/json"
        hdrs.setdefault("Accept", "application/json")
        hdrs.update(headers or {})
        try:
            conn.request(method, with_query(path, query), body=data, headers=hdrs)
            resp = conn.getresponse()
            payload = resp.read()
            return Response(resp.status, {k.lower(): v for k, v in resp.getheaders()}, payload)
        finally:
            conn.close()

    def get(self, path: str, **kw: Any) -> Response:
        return self.request("GET", path, **kw)

    def post(self, path: str, body: Any, **kw: Any) -> Response:
        return self.request("POST", path, body, **kw)

    def put(self, path: str, body: Any, **kw: Any) -> Response:
        return self.request("PUT", path, body, **kw)

    def patch(self, path: str, body: Any, ptype: str = "merge", **kw: Any) -> Response:
        ctype = {
            "merge": "application/merge-patch+json",
            "json": "application/json-patch+json",
            "strategic": "application/strategic-merge-patch+json",
            "apply": "application/apply-patch+yaml",
        }.get(ptype, ptype)
        return self.request("PATCH", path, body, content_type=ctype, **kw)

    def delete(self, path: str, body: Any = None, **kw: Any) -> Response:
        return self.request("DELETE", path, body, **kw)

    def ok(self, method: str, path: str, body: Any = None, **kw: Any) -> dict[str, Any]:
        """Send a request that must succeed (2xx) and return its JSON body."""
        resp = self.request(method, path, body, **kw)
        assert 200 <= resp.status < 300, f"{method} {path}: HTTP {resp.status}: {resp.body[:800]!r}"
        out: dict[str, Any] = resp.json()
        return out

    @contextmanager
    def watch(
        self,
        path: str,
        query: Mapping[str, str | int] | None = None,
        *,
        headers: Mapping[str, str] | None = None,
        auth: Auth = "cert",
        read_timeout: float = 5,
    ) -> Iterator[WatchStream]:
        """Open a watch (``watch=true`` is added unless ``query`` sets ``watch``) and yield its stream."""
        q: dict[str, str | int] = {"watch": "true", **(query or {})}
        conn, hdrs = self._connect(auth, read_timeout)
        hdrs["Accept"] = "application/json"
        hdrs.update(headers or {})
        conn.request("GET", with_query(path, q), headers=hdrs)
        resp = conn.getresponse()
        try:
            yield WatchStream(resp, {k.lower(): v for k, v in resp.getheaders()})
        finally:
            conn.close()


class WatchStream:
    """Newline-delimited watch events from one HTTP response, read with a socket timeout."""

    def __init__(self, resp: http.client.HTTPResponse, headers: dict[str, str]) -> None:
        self.resp = resp
        self.status = resp.status
        self.headers = headers

    def next(self) -> dict[str, Any] | None:
        """The next event, or ``None`` when the server ended the stream; a read timeout fails the test."""
        try:
            line = self.resp.readline()
        except TimeoutError as exc:
            raise AssertionError("no watch event before the read timeout") from exc
        if not line:
            return None
        if not line.strip():
            return self.next()
        event: dict[str, Any] = json.loads(line)
        return event

    def until(self, pred: Callable[[dict[str, Any]], bool], limit: int = 200) -> dict[str, Any]:
        """Read events until one satisfies ``pred``; return it (the ones before it are dropped)."""
        seen: list[str] = []
        for _ in range(limit):
            ev = self.next()
            assert ev is not None, f"stream ended before the expected event; saw {seen}"
            if pred(ev):
                return ev
            seen.append(f"{ev.get('type')}:{ev.get('object', {}).get('metadata', {}).get('name')}")
        raise AssertionError(f"expected event not among {limit}: {seen}")

    def rest(self) -> list[dict[str, Any]]:
        """All remaining events up to the end of the stream."""
        out = []
        while (ev := self.next()) is not None:
            out.append(ev)
        return out


class LineReader:
    """Reads a text stream (a subprocess pipe) on a thread so tests can wait for a line with a timeout."""

    def __init__(self, stream: Any) -> None:
        self._lines: queue.Queue[str | None] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._pump, args=(stream,), daemon=True).start()

    def _pump(self, stream: Any) -> None:
        for line in stream:
            self._lines.put(line)
        self._lines.put(None)

    def next(self, timeout: float = 10) -> str:
        """The next line (without its newline); fails the test on timeout or end of stream."""
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty as exc:
            raise AssertionError(f"no line within {timeout}s; seen so far: {self.seen}") from exc
        assert line is not None, f"stream ended; seen: {self.seen}"
        self.seen.append(line.rstrip("\n"))
        return self.seen[-1]

    def until(self, pred: Callable[[str], bool], timeout: float = 10) -> str:
        """Skip lines until one satisfies ``pred``; return it."""
        deadline = time.monotonic() + timeout
        while True:
            line = self.next(max(0.01, deadline - time.monotonic()))
            if pred(line):
                return line


def with_query(path: str, query: Mapping[str, str | int] | None) -> str:
    if not query:
        return path
    sep = "&" if "?" in path else "?"
    return path + sep + urllib.parse.urlencode({k: str(v) for k, v in query.items()})


def named(ev: dict[str, Any], etype: str, name: str) -> bool:
    """Whether ``ev`` is a ``etype`` event for an object called ``name``."""
    return ev.get("type") == etype and ev.get("object", {}).get("metadata", {}).get("name") == name


def poll(fn: Callable[[], Any], timeout: float = 5, interval: float = 0.05) -> Any:
    """Call ``fn`` until it returns a truthy value (returned) or ``timeout`` passes (test fails)."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = fn()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"condition not met within {timeout}s; last value {last!r}")


def configmap(name: str, ns: str = "default", **extra: Any) -> dict[str, Any]:
    """A ConfigMap manifest; ``labels``/``annotations``/``data`` go where they belong."""
    meta: dict[str, Any] = {"name": name, "namespace": ns}
    for key in ("labels", "annotations", "finalizers"):
        if key in extra:
            meta[key] = extra.pop(key)
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": meta,
        "data": extra.pop("data", {"k": "v"}),
        **extra,
    }


def deployment(
    name: str,
    ns: str = "default",
    replicas: int = 1,
    image: str = "nginx:1.25",
    labels: dict[str, str] | None = None,
    container: str = "main",
) -> dict[str, Any]:
    """A minimal valid apps/v1 Deployment selecting ``app=<name>``, one container running ``image``."""
    sel = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": ns, "labels": labels or sel},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": sel},
            "template": {
                "metadata": {"labels": sel},
                "spec": {"containers": [{"name": container, "image": image}]},
            },
        },
    }


def open_crd(group: str, kind: str) -> dict[str, Any]:
    """A namespaced, single-version CRD of ``kind`` (plural: lowercase kind + "s") whose schema keeps
    every field (``x-kubernetes-preserve-unknown-fields``): for tests about the API, not the schema."""
    singular = kind.lower()
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{singular}s.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": f"{singular}s", "singular": singular, "kind": kind},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                    },
                }
            ],
        },
    }


def cm_path(ns: str = "default", name: str | None = None) -> str:
    base = f"/api/v1/namespaces/{ns}/configmaps"
    return f"{base}/{name}" if name else base


def until(check: Callable[[], Any], timeout: float = 30.0, interval: float = 0.1) -> Any:
    """Call ``check`` until it returns something truthy or ``timeout`` seconds pass; its last result."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result or time.monotonic() > deadline:
            return result
        time.sleep(interval)
