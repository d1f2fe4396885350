"""The resource metrics API (``metrics.k8s.io/v1beta1`` PodMetrics and NodeMetrics), served as
metrics-server serves it, from usage the simulated kubelets report.

Upstream, metrics-server scrapes every kubelet's ``/metrics/resource`` every 15 s, keeps the
latest samples in memory and answers get/list by joining them with the pods and nodes it
watches. kplane's server never calls its controllers, so the direction is turned around: each
simulated kubelet PUTs its node's report (node usage, and per running pod the usage of each
container) to ``/kplane/v1/nodes/<node>/resource-usage``, and ``UsageStore`` keeps the latest
report of each node in memory (nothing is stored, as upstream). Reads join the reports with the
pods and nodes in storage, as metrics-server does: a pod is listed only while Running and reported
(under the same UID), a node only while reported; reports older than ``stale_after`` are dropped,
as metrics-server forgets a node it can no longer scrape.

Memory is bounded: a report is accepted only for an existing Node, with at most
``MAX_PODS_PER_REPORT`` pods of at most ``MAX_CONTAINERS`` containers, and replaces that node's
previous report.
"""

from __future__ import annotations

import dataclasses
import datetime
from decimal import Decimal
from typing import Any

import orjson
from aiohttp import web

from kplane._util.clock import Clock
from kplane.api import errors, fields, labels, quantity
from kplane.api.gvk import GroupResource
from kplane.server import storage
from kplane.server.auth import authn
from kplane.server.auth.rbac_policy import NODE_USER_PREFIX
from kplane.server.endpoints.scope import Scope

Object = dict[str, Any]

GROUP = "metrics.k8s.io"
VERSION = "v1beta1"
API_VERSION = f"{GROUP}/{VERSION}"
FEED_PREFIX = ("kplane", "v1", "nodes")
"""``PUT /kplane/v1/nodes/<node>/resource-usage``: a simulated kubelet's report (``UsageStore.put``)."""
FEED_LEAF = "resource-usage"
MAX_PODS_PER_REPORT = 1000
MAX_CONTAINERS = 100
_NAME_MAX = 253
_RESOURCES = ("cpu", "memory")
_NODES_KEY = "/registry/core/nodes/"
_PODS_KEY = "/registry/core/pods/"


@dataclasses.dataclass(frozen=True, slots=True)
class _PodUsage:
    uid: str
    containers: tuple[Object, ...]


@dataclasses.dataclass(frozen=True, slots=True)
class _Report:
    received: datetime.datetime
    timestamp: str
    window: str
    usage: Object
    pods: dict[tuple[str, str], _PodUsage]


def _usage(raw: Any, where: str) -> Object:
    """``{"cpu": q, "memory": q}`` canonicalized (cpu decimal, memory binary); 400 otherwise."""
    if not isinstance(raw, dict):
        raise errors.BadRequest(f"{where}: usage must be an object")
    out: Object = {}
    for name in _RESOURCES:
        value = raw.get(name, "0")
        parsed = quantity.parse(value) if isinstance(value, str) and len(value) <= 64 else None
        if parsed is None or parsed < 0:
            raise errors.BadRequest(f"{where}: {name} usage {str(value)[:64]!r} is not a quantity")
        out[name] = quantity.canonical(parsed, binary=name == "memory")
    return out


def _name(raw: Any, where: str) -> str:
    if not isinstance(raw, str) or not raw or len(raw) > _NAME_MAX:
        raise errors.BadRequest(f"{where}: a name is required (at most {_NAME_MAX} characters)")
    return raw


def _window(raw: Any) -> str:
    if not isinstance(raw, str) or not raw.endswith("s") or len(raw) > 32:
        raise errors.BadRequest("window must be a duration in seconds, such as 15s")
    try:
        seconds = Decimal(raw[:-1])
    except ArithmeticError:
        raise errors.BadRequest("window must be a duration in seconds, such as 15s") from None
    if not seconds.is_finite() or seconds <= 0:
        raise errors.BadRequest("window must be positive")
    return raw


class UsageStore:
    """The latest usage report of each node (module docstring). Not thread-safe: one event loop."""

    def __init__(self, store: storage.Storage, clock: Clock, *, stale_after: float = 60.0) -> None:
        self.storage = store
        self.clock = clock
        self.stale_after = datetime.timedelta(seconds=stale_after)
        self._reports: dict[str, _Report] = {}

    async def put(self, node: str, body: bytes) -> None:
        """Replace ``node``'s report with ``body`` (JSON: ``timestamp``, ``window``, ``usage`` and
        ``pods``: ``[{namespace, name, uid, containers: [{name, usage}]}]``). 404 when the Node does
        not exist, 400 when the report is malformed or too large."""
        try:
            await self.storage.get(_NODES_KEY + node)
        except storage.KeyNotFound:
            raise errors.not_found(GroupResource("", "nodes"), node) from None
        try:
            doc = orjson.loads(body)
        except orjson.JSONDecodeError as err:
            raise errors.BadRequest(f"the report is not JSON: {err}") from None
        if not isinstance(doc, dict):
            raise errors.BadRequest("the report must be a JSON object")
        timestamp = doc.get("timestamp")
        if not isinstance(timestamp, str) or _parse_time(timestamp) is None:
            raise errors.BadRequest("timestamp must be an RFC 3339 time")
        raw_pods = doc.get("pods") or []
        if not isinstance(raw_pods, list) or len(raw_pods) > MAX_PODS_PER_REPORT:
            raise errors.BadRequest(f"pods must be a list of at most {MAX_PODS_PER_REPORT} entries")
        pods: dict[tuple[str, str], _PodUsage] = {}
        for i, raw in enumerate(raw_pods):
            if not isinstance(raw, dict):
                raise errors.BadRequest(f"pods[{i}] must be an object")
            ns = _name(raw.get("namespace"), f"pods[{i}].namespace")
            name = _name(raw.get("name"), f"pods[{i}]")
            containers = raw.get("containers") or []
            if not isinstance(containers, list) or len(containers) > MAX_CONTAINERS:
                raise errors.BadRequest(f"pods[{i}].containers: at most {MAX_CONTAINERS} containers")
            entries = []
            for j, c in enumerate(containers):
                where = f"pods[{i}].containers[{j}]"
                if not isinstance(c, dict):
                    raise errors.BadRequest(f"{where} must be an object")
                entries.append({"name": _name(c.get("name"), where), "usage": _usage(c.get("usage"), where)})
            uid = raw.get("uid")
            pods[(ns, name)] = _PodUsage(uid if isinstance(uid, str) else "", tuple(entries))
        window, usage = _window(doc.get("window", "15s")), _usage(doc.get("usage"), "usage")
        self._reports[node] = _Report(self.clock.now(), timestamp, window, usage, pods)
        self._prune()

    def _prune(self) -> None:
        cutoff = self.clock.now() - self.stale_after
        for node in [n for n, r in self._reports.items() if r.received < cutoff]:
            del self._reports[node]

    def _fresh(self) -> dict[str, _Report]:
        self._prune()
        return self._reports

    def pod_metrics(self, pod: Object, now: str) -> Object | None:
        """The PodMetrics of ``pod`` (a stored Pod), or None when it is not Running or unreported."""
        meta = pod.get("metadata") or {}
        if (pod.get("status") or {}).get("phase") != "Running":
            return None
        report = self._fresh().get((pod.get("spec") or {}).get("nodeName") or "")
        if report is None:
            return None
        usage = report.pods.get((meta.get("namespace", ""), meta.get("name", "")))
        if usage is None or (usage.uid and usage.uid != meta.get("uid")):
            return None
        return _metrics("PodMetrics", meta, now, report, containers=[dict(c) for c in usage.containers])

    def node_metrics(self, node: Object, now: str) -> Object | None:
        """The NodeMetrics of ``node`` (a stored Node), or None when it is unreported."""
        meta = node.get("metadata") or {}
        report = self._fresh().get(meta.get("name", ""))
        if report is None:
            return None
        return _metrics("NodeMetrics", meta, now, report, usage=dict(report.usage))


def _metrics(kind: str, meta: Object, now: str, report: _Report, **payload: Any) -> Object:
    # metrics-server: name, namespace and labels of the pod or node, created "now"
    out: Object = {"name": meta.get("name", "")}
    if meta.get("namespace"):
        out["namespace"] = meta["namespace"]
    out["creationTimestamp"] = now
    if meta.get("labels"):
        out["labels"] = dict(meta["labels"])
    return {
        "kind": kind,
        "apiVersion": API_VERSION,
        "metadata": out,
        "timestamp": report.timestamp,
        "window": report.window,
        **payload,
    }


def _parse_time(text: str) -> datetime.datetime | None:
    try:
        return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def _now(scope: Scope) -> str:
    return scope.clock.now().astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _selectors(scope: Scope) -> tuple[labels.Selector, fields.FieldSelector]:
    try:
        label_sel = labels.parse(scope.query.get("labelSelector", ""))
    except ValueError as err:
        raise errors.BadRequest(f"unable to parse requirement: {err}") from None
    try:
        field_sel = fields.parse(scope.query.get("fieldSelector", ""))
    except ValueError as err:
        raise errors.BadRequest(str(err)) from None
    return label_sel, field_sel


def _is_pods(scope: Scope) -> bool:
    return scope.record.plural == "pods"


async def get(scope: Scope, *, store: UsageStore) -> web.StreamResponse:
    """GET of one PodMetrics or NodeMetrics: 404 for a missing object or one without metrics, as
    metrics-server (the pod's or node's own NotFound when it does not exist)."""
    ns, name = scope.info.namespace, scope.info.name
    target = "pods" if _is_pods(scope) else "nodes"
    key = f"/registry/core/{target}/" + (f"{ns}/{name}" if ns else name)
    try:
        obj = await store.storage.get(key)
    except storage.KeyNotFound:
        raise errors.not_found(GroupResource("", target), name) from None
    now = _now(scope)
    found = store.pod_metrics(obj, now) if _is_pods(scope) else store.node_metrics(obj, now)
    if found is None:
        shown = f"{ns}/{name}" if ns else name
        raise errors.not_found(scope.record.group_resource, shown)
    return scope.respond(found)


async def list_(scope: Scope, *, store: UsageStore) -> web.StreamResponse:
    """LIST of PodMetrics (in a namespace or all) or NodeMetrics, selected by the pods' or nodes'
    labels and metadata fields, sorted by namespace and name as metrics-server sorts them."""
    label_sel, field_sel = _selectors(scope)
    if _is_pods(scope):
        prefix = _PODS_KEY + (f"{scope.info.namespace}/" if scope.info.namespace else "")
    else:
        prefix = _NODES_KEY
    now = _now(scope)
    items: list[Object] = []
    for obj in (await store.storage.list(prefix)).items:
        meta = obj.get("metadata") or {}
        if not label_sel.matches(meta.get("labels")):
            continue
        meta_fields = {"metadata.name": meta.get("name", "")}
        if _is_pods(scope):
            meta_fields["metadata.namespace"] = meta.get("namespace", "")
        if not field_sel.matches(meta_fields):
            continue
        found = store.pod_metrics(obj, now) if _is_pods(scope) else store.node_metrics(obj, now)
        if found is not None:
            items.append(found)
    items.sort(key=lambda m: (m["metadata"].get("namespace", ""), m["metadata"]["name"]))
    return scope.respond_items(items)


async def feed(request: web.BaseRequest, node: str, store: UsageStore) -> web.StreamResponse:
    """``PUT /kplane/v1/nodes/<node>/resource-usage``: 200 with an empty Status on success. A node
    identity (``system:node:<name>``) may report only its own node (403 otherwise)."""
    if request.method != "PUT":
        raise errors.method_not_allowed()
    user = request.get(authn.USER_KEY)
    reporter = user.name.removeprefix(NODE_USER_PREFIX) if user is not None else ""
    if user is not None and user.name.startswith(NODE_USER_PREFIX) and reporter != node:
        # NodeRestriction's rule (plugin/pkg/admission/noderestriction): a node speaks for itself only
        raise errors.Forbidden(
            f'nodes "{node}" is forbidden: node "{reporter}" is not allowed to modify node "{node}"',
            details={"name": node, "kind": "nodes"},
        )
    try:
        body = await request.read()
    except web.HTTPRequestEntityTooLarge:
        raise errors.RequestEntityTooLarge(
            "the request body is too large: at most 3145728 bytes are accepted"
        ) from None
    await store.put(node, body)
    return web.json_response(
        {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 200}
    )
