"""``pods/binding`` and ``bindings`` (what a scheduler posts), ``pods/eviction`` (what ``kubectl
drain`` posts), and the connect subresources ``pods/{exec,attach,portforward,proxy}``,
``nodes/proxy`` and ``services/proxy``.

Binding sets ``spec.nodeName`` once with condition ``PodScheduled`` True (409 if the pod is already
bound or being deleted). Eviction deletes the pod with
the eviction's ``deleteOptions``; PodDisruptionBudgets are not consulted yet (no disruption
controller maintains their status), so an eviction is never refused with 429. Both answer 201 with
a ``Status`` of ``Success``, as upstream.

Connect subresources check what upstream checks before it dials a kubelet or a pod (the pod
exists, the container is valid, the pod has a node, the node exists; a pod proxy needs a pod IP),
with upstream's messages (``pkg/registry/core/pod/strategy.go``, ``.../node/strategy.go``,
``.../service/storage/rest.go``). kplane has no kubelets and never proxies, so a request that
passes every check is answered 503 saying so.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from kplane.api import errors
from kplane.api.builtin.records import BUILTIN_RECORDS
from kplane.server.endpoints import negotiation
from kplane.server.endpoints.scope import Scope
from kplane.server.registry.deletion import DeleteOptions

SUCCESS = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}


_CORE = {r.plural: r for r in BUILTIN_RECORDS if r.group == "" and r.version == "v1"}
PODS = _CORE["pods"]
NODES = _CORE["nodes"]
SERVICES = _CORE["services"]
ENDPOINTS = _CORE["endpoints"]


async def bind(scope: Scope) -> web.StreamResponse:
    """``pods/<name>/binding`` or ``bindings`` (the pod named by the body's ``metadata.name``)."""
    content_type = scope.request.headers.get("Content-Type")
    body = negotiation.decode_object(await scope.body(), content_type, kind="Binding")
    meta = body.get("metadata")
    body_name = meta.get("name") if isinstance(meta, dict) else None
    name = scope.info.name
    if not name:
        name = body_name if isinstance(body_name, str) else ""
        if not name:
            raise errors.invalid_object(
                "Binding", "", "", [errors.required("metadata.name", "name or generateName is required")]
            )
    elif body_name not in (None, "", name):
        # upstream pkg/registry/core/pod/storage/storage.go BindingREST.Create
        raise errors.BadRequest("name in URL does not match name in Binding object")
    target = body.get("target")
    node = target.get("name") if isinstance(target, dict) else None
    if not node:
        raise errors.invalid_object("Binding", "", name, [errors.required("target.name")])

    now = scope.clock.now().strftime("%Y-%m-%dT%H:%M:%SZ")

    def assign(pod: dict[str, Any]) -> dict[str, Any]:
        spec = pod.get("spec") or {}
        if (pod.get("metadata") or {}).get("deletionTimestamp"):
            # upstream pkg/registry/core/pod/storage/storage.go assignPod
            raise errors.conflict(
                scope.record.group_resource,
                name,
                f"pod {name} is being deleted, cannot be assigned to a host",
            )
        if spec.get("nodeName"):
            raise errors.conflict(
                scope.record.group_resource,
                name,
                f'pod {name} is already assigned to node "{spec["nodeName"]}"',
            )
        # The same write sets condition PodScheduled True, as upstream's assignPod does.
        status = dict(pod.get("status") or {})
        scheduled = {
            "type": "PodScheduled",
            "status": "True",
            "lastProbeTime": None,
            "lastTransitionTime": now,
        }
        others = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
        status["conditions"] = [*others, scheduled]
        return {**pod, "spec": {**spec, "nodeName": node}, "status": status}

    await scope.registry.update(
        PODS, scope.info.namespace, name, assign, subresource="binding", opts=scope.write_options()
    )
    return scope.respond_plain(SUCCESS, 201)


async def evict(scope: Scope) -> web.StreamResponse:
    content_type = scope.request.headers.get("Content-Type")
    body = negotiation.decode_object(await scope.body(), content_type, kind="Eviction")
    raw = body.get("deleteOptions") or {}
    if not isinstance(raw, dict):
        raise errors.BadRequest("deleteOptions must be an object")
    pre = raw.get("preconditions") or {}
    opts = DeleteOptions(
        grace_period_seconds=raw.get("gracePeriodSeconds"),
        propagation_policy=raw.get("propagationPolicy"),
        uid=pre.get("uid") if isinstance(pre, dict) else None,
        resource_version=pre.get("resourceVersion") if isinstance(pre, dict) else None,
        dry_run=bool(raw.get("dryRun")) or scope.dry_run(),
        requester=scope.requester(),
    )
    await scope.registry.delete(scope.record, scope.info.namespace, scope.info.name, opts)
    return scope.respond_plain(SUCCESS, 201)


def _names(containers: Any) -> list[str]:
    return [c.get("name", "") for c in containers or () if isinstance(c, dict)]


def _no_backend(what: str) -> errors.APIError:
    return errors.ServiceUnavailable(f"error dialing backend: kplane runs no {what} to connect to")


async def pod_connect(scope: Scope) -> web.StreamResponse:
    """``pods/{exec,attach,portforward,proxy}``: upstream's checks, in upstream's order."""
    name, sub = scope.info.name, scope.info.subresource
    if sub == "proxy":
        # The proxy name may be "pod", "pod:port" or "scheme:pod:port".
        parts = name.split(":")
        if len(parts) > 3 or not all(parts):
            raise errors.BadRequest(f'invalid pod request "{name}"')
        name = parts[1] if len(parts) == 3 else parts[0]
    pod = await scope.registry.get(PODS, scope.info.namespace, name)
    raw_spec = pod.get("spec")
    spec: dict[str, Any] = raw_spec if isinstance(raw_spec, dict) else {}
    if sub == "proxy":
        status = pod.get("status")
        if not isinstance(status, dict) or not status.get("podIP"):
            raise errors.BadRequest("address not allowed")
        raise _no_backend("pod network")
    if sub in ("exec", "attach"):
        container = scope.query.get("container", "")
        containers = _names(spec.get("containers"))
        if not container:
            if not containers:
                raise errors.BadRequest(f"a container name must be specified for pod {name}")
            if len(containers) > 1:
                text = (
                    f"a container name must be specified for pod {name}, "
                    f"choose one of: [{' '.join(containers)}]"
                )
                init = _names(spec.get("initContainers"))
                if init:
                    text += f" or one of the init containers: [{' '.join(init)}]"
                raise errors.BadRequest(text)
        elif container not in containers + _names(spec.get("initContainers")) + _names(
            spec.get("ephemeralContainers")
        ):
            raise errors.BadRequest(f"container {container} is not valid for pod {name}")
    node = spec.get("nodeName")
    if not node:
        raise errors.BadRequest(f"pod {name} does not have a host assigned")
    await scope.registry.get(NODES, "", node)
    raise errors.ServiceUnavailable(
        f"error dialing backend: kplane's simulated kubelet runs no containers: "
        f"cannot {_VERBS.get(sub, sub)} pod {name} on node {node}"
    )


_VERBS = {"exec": "exec into", "attach": "attach to", "portforward": "port-forward to"}


async def node_proxy(scope: Scope) -> web.StreamResponse:
    """``nodes/<name>/proxy``: the node must exist; there is no kubelet behind it."""
    parts = scope.info.name.split(":")
    await scope.registry.get(NODES, "", parts[1] if len(parts) == 3 else parts[0])
    raise _no_backend("kubelet")


async def service_proxy(scope: Scope) -> web.StreamResponse:
    """``services/<name>/proxy``: 404 without the service, 503 without endpoints (upstream's
    message), else 503 as kplane does not proxy."""
    parts = scope.info.name.split(":")
    name = parts[1] if len(parts) == 3 else parts[0]
    await scope.registry.get(SERVICES, scope.info.namespace, name)
    try:
        endpoints = await scope.registry.get(ENDPOINTS, scope.info.namespace, name)
    except errors.NotFound:
        endpoints = {}
    subsets = endpoints.get("subsets")
    if not subsets:
        raise errors.ServiceUnavailable(f'no endpoints available for service "{name}"')
    raise _no_backend("service network")
