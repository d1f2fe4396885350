"""Hostile requests for the hostile-input test: a seeded generator and a lean keep-alive client.

The generator builds raw requests over every verb, body type and patch type: bodies nested far too
deep, YAML alias bombs, map keys that are not strings, field names holding NUL or newlines, numbers
too large or negative for their field, values of the wrong type where strategies look, garbage
protobuf, and query parameters out of range. The client speaks HTTP/1.1 on plain sockets, reads
Content-Length and chunked replies, and reports a connection the server closed as ``Dropped``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import random
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass

NS = "hostile"


class Dropped(Exception):
    """The server closed the connection instead of answering."""


@dataclass(frozen=True)
class Request:
    kind: str  # a label for the report
    method: str
    path: str
    body: bytes = b""
    content_type: str = "application/json"
    accept: str = ""


class Connection:
    """One keep-alive HTTP/1.1 connection to the server's plain-HTTP port."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def connect(self) -> None:
        self.reader, self.writer = await asyncio.open_connection(self.host, self.port, limit=2**20)

    async def send(self, req: Request) -> tuple[int, dict[str, str], bytes]:
        assert self.reader is not None and self.writer is not None
        head = f"{req.method} {req.path} HTTP/1.1\r\nHost: {self.host}\r\nUser-Agent: hostile/1.0\r\n"
        if req.accept:
            head += f"Accept: {req.accept}\r\n"
        if req.body or req.method in ("POST", "PUT", "PATCH"):
            head += f"Content-Type: {req.content_type}\r\nContent-Length: {len(req.body)}\r\n"
        self.writer.write(head.encode() + b"\r\n" + req.body)
        try:
            status_line = await self.reader.readline()
            if not status_line:
                raise Dropped(req.kind)
            headers: dict[str, str] = {}
            while True:
                line = await self.reader.readline()
                if not line:
                    raise Dropped(req.kind)
                if line == b"\r\n":
                    break
                name, _, value = line.decode("latin-1").partition(":")
                headers[name.strip().lower()] = value.strip()
            status = int(status_line.split()[1])
            if req.method == "HEAD" or status in (204, 304):
                body = bytearray()
            elif headers.get("transfer-encoding") == "chunked":
                body = bytearray()
                while True:
                    size = int((await self.reader.readline()).split(b";")[0], 16)
                    chunk = await self.reader.readexactly(size + 2)
                    if size == 0:
                        break
                    body += chunk[:-2]
            else:
                body = bytearray(await self.reader.readexactly(int(headers.get("content-length", "0"))))
        except (ConnectionError, asyncio.IncompleteReadError, ValueError) as err:
            raise Dropped(f"{req.kind}: {err!r}") from None
        if headers.get("connection", "").lower() == "close":
            raise Dropped(f"{req.kind}: answered with Connection: close")
        return status, headers, bytes(body)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


def deep_json(depth: int, opener: str = "{") -> str:
    if opener == "{":
        return '{"a":' * depth + "1" + "}" * depth
    return "[" * depth + "1" + "]" * depth


def yaml_bomb(levels: int, fanout: int) -> str:
    lines = ["l0: &a0 [" + ", ".join(["lol"] * fanout) + "]"]
    for i in range(1, levels + 1):
        lines.append(f"l{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * fanout) + "]")
    return "\n".join(lines) + "\n"


_ODD_NAMES = ["a\x00b", "new\nline", "cr\rlf", "tab\tx", 'quo"te', "back\\slash", "", "\u200b", "é🙂", "\x7f"]
_ACCEPTS = [
    "application/json;as=Table;v=v1;g=meta.k8s.io",
    "application/json;as=Table;v=v1;g=meta.k8s.io, application/json",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
    "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io",
    "text/html",
    "*/*;q=0",
    "application/json;q=abc",
]
CRD_GROUP = "hostile.example.com"
CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"widgets.{CRD_GROUP}"},
    "spec": {
        "group": CRD_GROUP,
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {
                    "status": {},
                    "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"},
                },
                "additionalPrinterColumns": [
                    {"name": t.capitalize(), "type": t, "jsonPath": f".spec.{t}"}
                    for t in ("integer", "number", "string", "boolean", "date")
                ],
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                        },
                    }
                },
            }
        ],
    },
}
_NUMBERS = [2**63, 2**64, 2**70, -(2**63) - 1, -1, -(2**31), 1e308, -1e308, 0.5, 10**30]
_WRONG = [None, True, 1, -7, 1.5, "s", [], [1, "x"], {}, {"a": {"b": 1}}]


class Generator:
    """Seeded hostile requests; ``names`` are the objects in namespace ``hostile`` to aim at."""

    def __init__(self, seed: int, names: list[str]) -> None:
        self.rnd = random.Random(seed)
        self.names = names

    def requests(self, count: int) -> Iterator[Request]:
        makers: list[Callable[[], Request]] = [
            self.create_deep,
            self.create_odd_fields,
            self.create_wrong_types,
            self.create_yaml,
            self.create_protobuf,
            self.patch_any,
            self.apply_yaml,
            self.put_any,
            self.delete_any,
            self.read_params,
            self.custom_any,
            self.odd_requests,
        ]
        for _ in range(count):
            req = self.rnd.choice(makers)()
            if self.rnd.random() < 0.3:
                req = dataclasses.replace(req, accept=self.rnd.choice(_ACCEPTS))
            yield req

    # -- helpers ------------------------------------------------------------------------------

    def _q(self, params: dict[str, object]) -> str:
        return "?" + urllib.parse.urlencode({k: str(v) for k, v in params.items()}) if params else ""

    def _validation(self) -> dict[str, object]:
        return {"fieldValidation": self.rnd.choice(["Strict", "Warn", "Ignore"])}

    def _create_params(self) -> dict[str, object]:
        """Most creates are dry runs: the checks all run, but the store does not fill up."""
        params = self._validation()
        if self.rnd.random() < 0.7:
            params["dryRun"] = "All"
        return params

    def _resource(self) -> tuple[str, str]:
        return self.rnd.choice(
            [("configmaps", "ConfigMap"), ("pods", "Pod"), ("services", "Service"), ("secrets", "Secret")]
        )

    def _object(self, kind: str, name: str) -> dict[str, object]:
        obj: dict[str, object] = {"apiVersion": "v1", "kind": kind, "metadata": {"name": name}}
        if kind == "Pod":
            obj["spec"] = {"containers": [{"name": "c", "image": "i"}]}
        if kind == "Service":
            obj["spec"] = {"ports": [{"port": 80}]}
        return obj

    def _fresh(self) -> str:
        return f"h{self.rnd.randrange(10**9)}"

    def _wild(self) -> object:
        choice = self.rnd.randrange(5)
        if choice == 0:
            return self.rnd.choice(_NUMBERS)
        if choice == 1:
            return self.rnd.choice(_WRONG)
        if choice == 2:
            return {self.rnd.choice(_ODD_NAMES): self.rnd.choice(_WRONG)}
        if choice == 3:
            return json.loads(deep_json(self.rnd.randrange(2, 60)))
        return "x" * self.rnd.randrange(0, 300)

    # -- creates ------------------------------------------------------------------------------

    def create_deep(self) -> Request:
        resource, kind = self._resource()
        depth = self.rnd.choice([150, 199, 201, 255, 300, 500, 800, 1000, 1023, 1025, 2000])
        opener = self.rnd.choice("{[")
        body = (
            json.dumps(self._object(kind, self._fresh()))[:-1] + ', "data": ' + deep_json(depth, opener) + "}"
        )
        return Request(
            "create-deep",
            "POST",
            f"/api/v1/namespaces/{NS}/{resource}{self._q(self._create_params())}",
            body.encode(),
        )

    def create_odd_fields(self) -> Request:
        resource, kind = self._resource()
        obj = self._object(kind, self._fresh())
        for _ in range(self.rnd.randrange(1, 20)):
            obj[self.rnd.choice(_ODD_NAMES) + str(self.rnd.randrange(10))] = self._wild()
        meta = obj["metadata"]
        assert isinstance(meta, dict)
        if self.rnd.random() < 0.5:
            meta[self.rnd.choice(_ODD_NAMES)] = self._wild()
        return Request(
            "create-odd",
            "POST",
            f"/api/v1/namespaces/{NS}/{resource}{self._q(self._create_params())}",
            json.dumps(obj).encode(),
        )

    def create_wrong_types(self) -> Request:
        resource, kind = self._resource()
        obj = self._object(kind, self._fresh())
        meta = obj["metadata"]
        assert isinstance(meta, dict)
        target = self.rnd.choice(
            [
                "meta",
                "labels",
                "annotations",
                "finalizers",
                "spec",
                "containers",
                "resources",
                "ports",
                "data",
                "top",
                "gen",
                "owner",
            ]
        )
        value = self._wild()
        if target == "meta":
            obj["metadata"] = value
        elif target in ("labels", "annotations", "finalizers"):
            meta[target] = (
                value if self.rnd.random() < 0.5 else {"k": value} if target != "finalizers" else [value]
            )
        elif target == "gen":
            meta[
                self.rnd.choice(
                    [
                        "generation",
                        "deletionGracePeriodSeconds",
                        "resourceVersion",
                        "uid",
                        "creationTimestamp",
                    ]
                )
            ] = value
        elif target == "owner":
            meta["ownerReferences"] = self.rnd.choice([value, [value]])
        elif target == "spec":
            obj["spec"] = value
        elif target == "containers":
            obj["spec"] = {
                "containers": self.rnd.choice(
                    [value, [value], [{"name": value, "image": "i", "resources": value}]]
                )
            }
        elif target == "resources":
            obj["spec"] = {
                "containers": [
                    {
                        "name": "c",
                        "image": "i",
                        "resources": self.rnd.choice(
                            [value, {"limits": value}, {"requests": value, "limits": {"cpu": value}}]
                        ),
                    }
                ]
            }
        elif target == "ports":
            obj["spec"] = {
                "ports": self.rnd.choice([value, [value], [{"port": value, "nodePort": value}]]),
                "type": self.rnd.choice(["NodePort", value]),
            }
        elif target == "data":
            obj["data"] = value
            obj["stringData"] = self._wild()
        else:
            obj[self.rnd.choice(["apiVersion", "kind", "status"])] = value
        return Request(
            "create-types",
            "POST",
            f"/api/v1/namespaces/{NS}/{resource}{self._q(self._create_params())}",
            json.dumps(obj).encode(),
        )

    def create_yaml(self) -> Request:
        resource, kind = self._resource()
        head = f"apiVersion: v1\nkind: {kind}\nmetadata:\n  name: {self._fresh()}\n"
        tail = self.rnd.choice(
            [
                yaml_bomb(self.rnd.randrange(3, 10), self.rnd.randrange(5, 12)),
                "data: {true: v, 1: w, 1.5: x, null: y}\n",
                "data: {? [a, b] : c}\n",
                "data: {18446744073709551615: v}\n",
                "data: &x {a: *x}\n",
                "data: *missing\n",
                "data: " + "[" * self.rnd.choice([199, 300, 1001]) + "\n",
                "data: !!binary '***'\n",
                "data: {a: !!int foo}\n",
                "data: {a: 123456789012345678901234567890}\n",
                "base: &b {x: '1'}\ndata:\n  <<: *b\n  y: '2'\n",
            ]
        )
        return Request(
            "create-yaml",
            "POST",
            f"/api/v1/namespaces/{NS}/{resource}{self._q(self._create_params())}",
            (head + tail).encode(),
            "application/yaml",
        )

    def create_protobuf(self) -> Request:
        resource, _ = self._resource()
        size = self.rnd.randrange(0, 400)
        body = bytes(self.rnd.randrange(256) for _ in range(size))
        if self.rnd.random() < 0.6:
            body = b"k8s\x00" + body
        return Request(
            "create-protobuf",
            "POST",
            f"/api/v1/namespaces/{NS}/{resource}",
            body,
            "application/vnd.kubernetes.protobuf",
        )

    # -- updates ------------------------------------------------------------------------------

    def patch_any(self) -> Request:
        name = self.rnd.choice(self.names)
        ct = self.rnd.choice(
            [
                "application/json-patch+json",
                "application/merge-patch+json",
                "application/strategic-merge-patch+json",
            ]
        )
        shape = self.rnd.randrange(5)
        if ct == "application/json-patch+json":
            op = self.rnd.choice(
                ["add", "replace", "remove", "test", "move", "copy", 1, None, ["add"], {"x": 1}]
            )
            path = self.rnd.choice(
                ["/data/x", "/metadata/labels", "/metadata", "/data/a~2b", "", "/data/-", 5, None]
            )
            ops: object = [
                {
                    "op": op,
                    "path": path,
                    "value": self._wild(),
                    "from": self.rnd.choice(["/data", 1, "/nope"]),
                }
            ]
            if shape == 1 and self.rnd.random() < 0.15:  # each costs up to ~0.5 s of server CPU
                copies = self.rnd.randrange(1, 40)
                ops = [{"op": "copy", "from": "/data", "path": f"/data/c{i}"} for i in range(copies)]
            body = json.dumps(ops) if shape else deep_json(self.rnd.choice([300, 1000, 1100]), "[")
        else:
            patch: object = {
                "data": self._wild(),
                "metadata": {"labels": self._wild(), "finalizers": self._wild()},
            }
            if shape == 1:
                patch = {
                    "data": {self.rnd.choice(_ODD_NAMES): "v"},
                    "$patch": self.rnd.choice(["replace", "delete", 1]),
                }
            body = (
                json.dumps(patch)
                if shape
                else '{"data": ' + deep_json(self.rnd.choice([300, 600, 1000, 1100])) + "}"
            )
        q = self._validation()
        return Request(
            "patch", "PATCH", f"/api/v1/namespaces/{NS}/configmaps/{name}{self._q(q)}", body.encode(), ct
        )

    def apply_yaml(self) -> Request:
        name = self.rnd.choice([*self.names, self._fresh()])
        head = f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n"
        tail = self.rnd.choice(
            [
                yaml_bomb(self.rnd.randrange(3, 10), self.rnd.randrange(5, 12)),
                "data: {true: v, 1: w, 2.5: x}\n",
                "data: {null: v}\n",
                "data: {a: &x [*x]}\n",
                "data:\n  " + "\n  ".join(f"{n!r}: v" for n in _ODD_NAMES[:3]) + "\n",
                "data: " + "{a: " * 250 + "1" + "}" * 250 + "\n",
                "metadata: [1]\n",
            ]
        )
        q: dict[str, object] = {"fieldManager": self.rnd.choice(["m", "x" * 200, "a\x01b"]), "force": "true"}
        return Request(
            "apply",
            "PATCH",
            f"/api/v1/namespaces/{NS}/configmaps/{name}{self._q(q)}",
            (head + tail).encode(),
            "application/apply-patch+yaml",
        )

    def put_any(self) -> Request:
        name = self.rnd.choice(self.names)
        obj = self._object("ConfigMap", name)
        obj["data"] = self._wild()
        meta = obj["metadata"]
        assert isinstance(meta, dict)
        meta[self.rnd.choice(["resourceVersion", "uid", "labels", "finalizers"])] = self._wild()
        path = f"/api/v1/namespaces/{NS}/configmaps/{name}"
        if self.rnd.random() < 0.2:
            path += "/status"
        return Request("put", "PUT", path + self._q(self._validation()), json.dumps(obj).encode())

    def delete_any(self) -> Request:
        name = self.rnd.choice([*self.names, self._fresh()])
        q: dict[str, object] = {}
        body = b""
        if self.rnd.random() < 0.5:
            q["gracePeriodSeconds"] = self.rnd.choice(["-1", "abc", str(2**63), str(-(2**64)), "1.5", ""])
        else:
            body = json.dumps(
                {
                    "gracePeriodSeconds": self.rnd.choice(_NUMBERS + _WRONG),
                    "preconditions": self.rnd.choice(
                        [{"uid": self._wild(), "resourceVersion": self._wild()}, self._wild()]
                    ),
                    "propagationPolicy": self._wild(),
                }
            ).encode()
        # only dry runs and preconditions that cannot match touch the targets: they stay for patches
        q["dryRun"] = "All"
        return Request("delete", "DELETE", f"/api/v1/namespaces/{NS}/configmaps/{name}{self._q(q)}", body)

    def custom_any(self) -> Request:
        """Custom objects whose free-form spec the printer columns and scale read."""
        base = f"/apis/{CRD_GROUP}/v1/namespaces/{NS}/widgets"
        spec = {t: self._wild() for t in ("integer", "number", "string", "boolean", "date", "replicas")}
        obj = {"apiVersion": f"{CRD_GROUP}/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": spec}
        choice = self.rnd.randrange(5)
        if choice == 0:
            meta = obj["metadata"]
            assert isinstance(meta, dict)
            meta["name"] = self._fresh()
            return Request("custom", "POST", base, json.dumps(obj).encode())
        if choice == 1:
            return Request("custom", "PUT", f"{base}/w", json.dumps(obj).encode())
        if choice == 2:
            body = json.dumps({"spec": spec, "status": {"replicas": self._wild()}}).encode()
            sub = self.rnd.choice(["", "/status"])
            return Request("custom", "PATCH", f"{base}/w{sub}", body, "application/merge-patch+json")
        if choice == 3:
            body = json.dumps({"spec": {"replicas": self._wild()}}).encode()
            return Request(
                "custom",
                self.rnd.choice(["PUT", "PATCH"]),
                f"{base}/w/scale",
                body,
                "application/merge-patch+json",
            )
        return Request("custom", "GET", self.rnd.choice([base, f"{base}/w", f"{base}/w/scale"]))

    def odd_requests(self) -> Request:
        """Odd paths, methods, content types and subresources, with hostile bodies and parameters."""
        raw = self.rnd.choice(
            [*self.names, "A" * 300, "UPPER", "a..b", "\x00", "/", "é", "x" * 64, "-a", " "]
        )
        name = urllib.parse.quote(raw, safe="")  # a request target is ASCII: clients percent-encode
        body = json.dumps(
            {"metadata": {"name": self.rnd.choice([name, "t0"])}, "data": self._wild()}
        ).encode()
        choice = self.rnd.randrange(9)
        if choice == 0:
            path = self.rnd.choice(
                [
                    f"/api/v1/namespaces/{NS}/configmaps/{name}",
                    f"/api/v1/namespaces/{name}/configmaps",
                    f"/apis/nope.example.com/v1/namespaces/{NS}/things",
                    f"/api/v1/namespaces/{NS}/configmaps/{name}/nosuch",
                    "/api/v2/pods",
                    f"/api/v1/namespaces/{NS}/pods/{name}/log",
                ]
            )
            method = self.rnd.choice(["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD"])
            ct = self.rnd.choice(
                [
                    "application/json",
                    "text/plain",
                    "multipart/form-data",
                    "application/json; charset=utf-16",
                    "application/x-www-form-urlencoded",
                    "",
                    "application/json-patch+json",
                ]
            )
            req_body = b"" if method == "HEAD" else body
            return Request("odd", method, path, req_body, ct or "application/octet-stream")
        if choice == 1:
            q = {
                k: self.rnd.choice(["-1", "abc", str(2**63), "0", "1e9", "true"])
                for k in ("tailLines", "limitBytes", "sinceSeconds", "previous", "timestamps")
            }
            return Request("odd", "GET", f"/api/v1/namespaces/{NS}/pods/{name}/log{self._q(q)}")
        if choice == 2:
            evict = {
                "apiVersion": "policy/v1",
                "kind": "Eviction",
                "metadata": {"name": name},
                "deleteOptions": self._wild(),
            }
            return Request(
                "odd", "POST", f"/api/v1/namespaces/{NS}/pods/{name}/eviction", json.dumps(evict).encode()
            )
        if choice == 3:
            binding = {
                "apiVersion": "v1",
                "kind": "Binding",
                "metadata": {"name": self._wild()},
                "target": self._wild(),
            }
            return Request(
                "odd", "POST", f"/api/v1/namespaces/{NS}/pods/{name}/binding", json.dumps(binding).encode()
            )
        if choice == 4:
            finalize = {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": "nope"},
                "spec": {"finalizers": self._wild()},
            }
            return Request("odd", "PUT", "/api/v1/namespaces/nope/finalize", json.dumps(finalize).encode())
        if choice == 5:
            q = {
                "labelSelector": self.rnd.choice(["a in (", "a", "!a", "a=" + "b" * 70]),
                "dryRun": self.rnd.choice(["All", "x"]),
                "propagationPolicy": self.rnd.choice(["Orphan", "x", ""]),
            }
            return Request(
                "odd",
                "DELETE",
                f"/api/v1/namespaces/{NS}/configmaps{self._q(q)}",
                self.rnd.choice([b"", body]),
            )
        if choice == 6:
            pod = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": name},
                "status": self._wild(),
                "spec": self._wild(),
            }
            return Request(
                "odd", "PUT", f"/api/v1/namespaces/{NS}/pods/{name}/status", json.dumps(pod).encode()
            )
        if choice == 7:
            q = {
                "watch": "1",
                "timeoutSeconds": "-1",
                "allowWatchBookmarks": self.rnd.choice(["true", "x"]),
                "sendInitialEvents": self.rnd.choice(["true", "x"]),
                "resourceVersionMatch": self.rnd.choice(["NotOlderThan", "Exact", "x"]),
            }
            return Request(
                "odd",
                "GET",
                f"/api/v1/namespaces/{NS}/configmaps{self._q(q)}",
                accept=self.rnd.choice(_ACCEPTS),
            )
        q = {"dryRun": "All", "fieldManager": self.rnd.choice(["a", "é" * 200, "x\ty"])}
        return Request(
            "odd", "POST", f"/api/v1/namespaces/{NS}/serviceaccounts/{name}/token{self._q(q)}", body
        )

    def read_params(self) -> Request:
        bad = [str(2**63), str(2**64 + 1), "-1", str(-(2**63) - 1), "abc", "1e3", " 5", "0x10", "9" * 40, ""]
        q: dict[str, object] = {}
        params = ["limit", "timeoutSeconds", "labelSelector", "fieldSelector", "continue", "resourceVersion"]
        for param in self.rnd.sample(params, 3):
            if param in ("labelSelector", "fieldSelector"):
                q[param] = self.rnd.choice(
                    ["a in (", "x=\x00", "!", "a==b==c", "metadata.name=" + "x" * 70, "a notin ()"]
                )
            elif param == "resourceVersion":
                q[param] = self.rnd.choice(["-1", "abc", "0", "1.5", str(2**64)])
            else:
                q[param] = self.rnd.choice(bad)
        if self.rnd.random() < 0.3:
            q["watch"] = "true"
            q["timeoutSeconds"] = self.rnd.choice(["-1", "-100", "abc", str(2**64)])
            q.pop("resourceVersion", None)
        path = self.rnd.choice(
            [
                f"/api/v1/namespaces/{NS}/configmaps",
                "/api/v1/pods",
                f"/api/v1/namespaces/{NS}/configmaps/{self.rnd.choice(self.names)}",
            ]
        )
        return Request("read", "GET", path + self._q(q))
