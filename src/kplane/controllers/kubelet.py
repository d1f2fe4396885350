"""The simulated kubelet of every simulated node: runs no containers, but moves bound pods
through the states a real kubelet reports (kwok's spirit, with restarts and exits).

A pod bound to a simulated node starts at once: ``startTime``, a pod IP from the node's pod CIDR,
``hostIP``, conditions PodReadyToStartContainers, Initialized, ContainersReady, Ready (True) after
PodScheduled, and per container ``running`` with ``startedAt``, ``ready``, ``started``, an
``imageID`` and a ``containerID``; init containers are reported completed. Status is written with
one merge PATCH of ``pods/status`` per change.

Pod annotations (``kplane.controllers.common``) script the containers: ``kplane.dev/run-seconds``
(exit after that long), ``kplane.dev/exit-code``, ``kplane.dev/output`` (what each instance
prints, written to its log file, read by the server's ``pods/log``),
``kplane.dev/termination-seconds`` (time to stop after SIGTERM). An exit is restarted per
``restartPolicy`` (Always; OnFailure when non-zero; Never), the first restart at once and later ones
after upstream's back-off (10 s doubling to 5 min, reset after 10 min of running), waiting
``CrashLoopBackOff`` meanwhile. The phase is upstream's ``getPhase``.

Graceful deletion: once ``deletionTimestamp`` is set, the containers stop (after their
termination time, at most the grace period) and the kubelet sends the final DELETE with
``gracePeriodSeconds=0`` and the pod's UID as precondition. Pods on a node whose heartbeat is
stopped are left alone, as on a lost node.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import hashlib
import ipaddress
import shutil
from pathlib import Path
from typing import Any

from kplane import runtime
from kplane._util import clock as clock_mod
from kplane.api import errors, podlogs
from kplane.client import events
from kplane.controllers import common, nodes

BACKOFF_START = 10.0
BACKOFF_MAX = 300.0
BACKOFF_RESET = 600.0


@dataclasses.dataclass
class _Instance:
    """One container's current run and its history."""

    name: str
    restarts: int = 0
    started: datetime.datetime | None = None
    waiting_until: datetime.datetime | None = None
    backoff: float = 0.0  # the wait before the next restart
    wait: float = 0.0  # the wait of the current back-off
    last: common.Object | None = None  # the previous instance's ``terminated``
    ended: common.Object | None = None  # this instance's ``terminated``, once it exited


@dataclasses.dataclass
class _PodRun:
    uid: str
    node: str
    start: str
    ip: str
    containers: dict[str, _Instance]
    killed_at: datetime.datetime | None = None
    logs: bool = False  # whether a log file may exist (removed with the pod)


def _hex(seed: str) -> str:
    return hashlib.sha256(seed.encode()).hexdigest()


def _image_ref(image: str) -> tuple[str, str]:
    """(image as the runtime reports it, its repository for the digest): ``nginx`` →
    ``docker.io/library/nginx:latest``."""
    name, _, digest = image.partition("@")
    if digest:
        return image, name
    repo, tag = name, "latest"
    last = name.rsplit("/", 1)[-1]
    if ":" in last:
        repo, tag = name.rsplit(":", 1)
    first = repo.split("/", 1)[0]
    if "/" not in repo:
        repo = f"docker.io/library/{repo}"
    elif "." not in first and ":" not in first and first != "localhost":
        repo = f"docker.io/{repo}"
    return f"{repo}:{tag}", repo


def _annotation_number(pod: common.Object, key: str) -> float | None:
    raw = ((pod.get("metadata") or {}).get("annotations") or {}).get(key)
    try:
        return float(raw) if raw is not None else None
    except ValueError:
        return None


def _time(when: datetime.datetime) -> str:
    return when.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Kubelet:
    """The reconciler (module docstring) for pods bound to ``simulator``'s nodes."""

    def __init__(
        self, manager: runtime.Manager, simulator: nodes.NodeSimulator, log_dir: Path | None
    ) -> None:
        self.manager = manager
        self.clock: clock_mod.Clock = manager.clock
        self.simulator = simulator
        self.node_index = {name: i for i, name in enumerate(simulator.names)}
        self.log_dir = log_dir
        self._runs: dict[str, _PodRun] = {}
        self._ips: dict[str, set[str]] = {}
        self._next_ip: dict[str, int] = {}
        self._recorders: dict[str, events.EventRecorder] = {}
        self._pods: Any = None

    async def setup(self) -> runtime.Controller:
        self._pods = await self.manager.cache.informer(common.PODS)
        return await (
            runtime.Builder(self.manager)
            .named("kubelet")
            .for_(common.PODS, predicates=[self._mine])
            .with_options(runtime.ControllerOptions(max_concurrent_reconciles=8, need_leader_election=False))
            .complete(self)
        )

    def _mine(self, pod: Any) -> bool:
        return (pod.get("spec") or {}).get("nodeName") in self.node_index

    def _recorder(self, node: str) -> events.EventRecorder:
        rec = self._recorders.get(node)
        if rec is None:
            rec = self._recorders[node] = events.EventRecorder(
                self.simulator.api(node).dynamic.resource(common.EVENTS),
                events.EventSource("kubelet", node),
                clock=self.clock,
            )
        return rec

    async def reconcile(self, request: runtime.Request) -> runtime.Result:
        key = f"{request.namespace}/{request.name}"
        pod = self._pods.store.get_by_key(key)
        if pod is None or not self._mine(pod):
            self._forget(key)
            return runtime.Result()
        node = pod["spec"]["nodeName"]
        if self.simulator.is_stopped(node):
            return runtime.Result(requeue_after=nodes.RENEW_INTERVAL)
        run = self._runs.get(key)
        if run is not None and run.uid != pod["metadata"].get("uid"):
            self._forget(key)
            run = None
        if run is None:
            if common.is_terminal(pod):
                return runtime.Result()
            run = self._runs[key] = self._adopt(pod, node)
        now = self.clock.now()
        if pod["metadata"].get("deletionTimestamp"):
            return await self._terminate(pod, run, now)
        wake = self._advance(pod, run, now)
        await self._write_status(pod, run, now)
        if wake is None:
            return runtime.Result()
        return runtime.Result(requeue_after=max(0.001, (wake - now).total_seconds()))

    # Starting.

    def _allocate_ip(self, node: str) -> str:
        """The next free address of the node's pod CIDR after the last one given out, wrapping
        around (CNI host-local IPAM's order); the first host address is the node's gateway."""
        network = ipaddress.IPv4Network(nodes.pod_cidr(self.node_index[node]))
        used = self._ips.setdefault(node, set())
        first = int(network.network_address) + 2
        size = int(network.broadcast_address) - first
        start = self._next_ip.get(node, 0)
        for step in range(size):
            offset = (start + step) % size
            host = str(ipaddress.IPv4Address(first + offset))
            if host not in used:
                used.add(host)
                self._next_ip[node] = offset + 1
                return host
        return str(network.network_address + 1)  # the CIDR is full: share the gateway's address

    def _adopt(self, pod: common.Object, node: str) -> _PodRun:
        """State for a pod first seen: new, or already running (a restarted kplane)."""
        status = pod.get("status") or {}
        ip = status.get("podIP")
        if ip:
            self._ips.setdefault(node, set()).add(ip)
        else:
            ip = self._allocate_ip(node)
        known = {cs.get("name"): cs for cs in status.get("containerStatuses") or []}
        containers: dict[str, _Instance] = {}
        now = self.clock.now()
        # a pod already running when this kubelet started may have logs from the previous one
        logs = bool(known)
        for c in pod["spec"].get("containers") or []:
            inst = _Instance(c["name"])
            cs = known.get(c["name"])
            running = ((cs or {}).get("state") or {}).get("running")
            if cs and running:
                inst.restarts = int(cs.get("restartCount") or 0)
                inst.started = common.parse_time(running.get("startedAt")) or now
                inst.last = (cs.get("lastState") or {}).get("terminated")
            else:
                logs |= self._start(pod, node, inst, now, first=True)
            containers[c["name"]] = inst
        uid = pod["metadata"].get("uid", "")
        return _PodRun(uid, node, status.get("startTime") or _time(now), ip, containers, logs=logs)

    def _start(
        self, pod: common.Object, node: str, inst: _Instance, now: datetime.datetime, first: bool
    ) -> bool:
        """Start a new instance of ``inst``'s container: its output goes to its log file, which is
        written only when there is output (``pods/log`` reads a missing file as an empty log).
        Whether a log file was written."""
        inst.started, inst.ended, inst.waiting_until = now, None, None
        image = next((c.get("image", "") for c in pod["spec"]["containers"] if c["name"] == inst.name), "")
        ref = {"kind": "Pod", **_ref(pod), "fieldPath": f"spec.containers{{{inst.name}}}"}
        rec = self._recorder(node)
        if first:
            rec.event(ref, "Normal", "Pulled", f'Container image "{image}" already present on machine')
        rec.event(ref, "Normal", "Created", f"Created container {inst.name}")
        rec.event(ref, "Normal", "Started", f"Started container {inst.name}")
        output = ((pod.get("metadata") or {}).get("annotations") or {}).get(common.OUTPUT)
        if self.log_dir is None or not output:
            return False
        meta = pod["metadata"]
        path = podlogs.instance_path(
            self.log_dir, meta["namespace"], meta["name"], meta.get("uid", ""), inst.name, inst.restarts
        )
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("ab") as f:
                for line in output.splitlines():
                    f.write(podlogs.encode_line(now, line))
            # Only this instance and the previous one are kept (what `logs` and `logs --previous`
            # read), as the kubelet garbage-collects older dead containers: a crash loop must not
            # fill the disk one file per restart.
            if inst.restarts >= 2:
                path.with_name(f"{inst.restarts - 2}.log").unlink(missing_ok=True)
        except OSError:
            pass
        return True

    # Running.

    def _advance(self, pod: common.Object, run: _PodRun, now: datetime.datetime) -> datetime.datetime | None:
        """Apply exits and restarts due by ``now``; the next time something is due, or None."""
        run_seconds = _annotation_number(pod, common.RUN_SECONDS)
        exit_code = int(_annotation_number(pod, common.EXIT_CODE) or 0)
        policy = pod["spec"].get("restartPolicy") or "Always"
        node = pod["spec"]["nodeName"]
        wakes: list[datetime.datetime] = []
        for inst in run.containers.values():
            while True:
                if inst.waiting_until is not None:
                    if now < inst.waiting_until:
                        wakes.append(inst.waiting_until)
                        break
                    inst.restarts += 1
                    run.logs |= self._start(pod, node, inst, inst.waiting_until, first=False)
                    continue
                if inst.ended is not None or inst.started is None or run_seconds is None:
                    break
                exit_at = inst.started + datetime.timedelta(seconds=run_seconds)
                if now < exit_at:
                    wakes.append(exit_at)
                    break
                if (exit_at - inst.started).total_seconds() >= BACKOFF_RESET:
                    inst.backoff = 0.0
                inst.ended = {
                    "exitCode": exit_code,
                    "reason": "Completed" if exit_code == 0 else "Error",
                    "startedAt": _time(inst.started),
                    "finishedAt": _time(exit_at),
                    "containerID": self._container_id(run, inst),
                }
                if policy == "Never" or (policy == "OnFailure" and exit_code == 0):
                    break
                inst.last = inst.ended
                # The first restart is immediate; each later one waits the back-off, doubled.
                inst.wait = inst.backoff
                inst.waiting_until = exit_at + datetime.timedelta(seconds=inst.wait)
                inst.backoff = min(BACKOFF_MAX, inst.backoff * 2) if inst.backoff else BACKOFF_START
                if inst.waiting_until <= exit_at:
                    inst.restarts += 1
                    run.logs |= self._start(pod, node, inst, exit_at, first=False)
                    continue
        return min(wakes) if wakes else None

    @staticmethod
    def _container_id(run: _PodRun, inst: _Instance) -> str:
        return "containerd://" + _hex(f"{run.uid}/{inst.name}/{inst.restarts}")

    def _container_status(self, pod: common.Object, run: _PodRun, spec: common.Object) -> common.Object:
        inst = run.containers[spec["name"]]
        image, repo = _image_ref(spec.get("image", ""))
        meta = pod["metadata"]
        status: common.Object = {
            "name": inst.name,
            "image": image,
            "imageID": f"{repo}@sha256:{_hex(image)}",
            "containerID": self._container_id(run, inst),
            "restartCount": inst.restarts,
            "lastState": {"terminated": inst.last} if inst.last else {},
        }
        if inst.waiting_until is not None:
            status["state"] = {
                "waiting": {
                    "reason": "CrashLoopBackOff",
                    "message": f"back-off {_duration(inst.wait)} restarting failed "
                    f"container={inst.name} pod={meta['name']}_{meta['namespace']}({meta.get('uid', '')})",
                }
            }
            status["containerID"] = inst.last["containerID"] if inst.last else status["containerID"]
        elif inst.ended is not None:
            status["state"] = {"terminated": inst.ended}
        else:
            status["state"] = {"running": {"startedAt": _time(inst.started or self.clock.now())}}
        running = "running" in status["state"]
        status["ready"] = running
        status["started"] = running
        return status

    def _phase(self, pod: common.Object, statuses: list[common.Object]) -> str:
        """Upstream's ``getPhase`` for containers that are all known."""
        policy = pod["spec"].get("restartPolicy") or "Always"
        running = sum(1 for s in statuses if "running" in s["state"])
        ended = [s["state"].get("terminated") or s["lastState"].get("terminated") for s in statuses]
        waiting = sum(
            1 for s, e in zip(statuses, ended, strict=True) if "waiting" in s["state"] and e is None
        )
        if waiting:
            return "Pending"
        if running:
            return "Running"
        if policy == "Always":
            return "Running"
        if all(e and e.get("exitCode") == 0 for e in ended):
            return "Succeeded"
        if policy == "Never":
            return "Failed"
        return "Running"

    async def _write_status(self, pod: common.Object, run: _PodRun, now: datetime.datetime) -> None:
        spec = pod["spec"]
        node = spec["nodeName"]
        old = pod.get("status") or {}
        statuses = [self._container_status(pod, run, c) for c in spec.get("containers") or []]
        phase = self._phase(pod, statuses)
        unready = [s["name"] for s in statuses if not s["ready"]]
        before = {c.get("type"): c for c in old.get("conditions") or []}

        def condition(kind: str, ok: bool, reason: str = "", message: str = "") -> common.Object:
            value = "True" if ok else "False"
            prior = before.get(kind)
            since = prior["lastTransitionTime"] if prior and prior.get("status") == value else _time(now)
            # No ``lastProbeTime: null``: in a merge patch null removes the field, so the stored
            # condition has none, and what is compared below must be what is stored.
            c: common.Object = {"type": kind, "status": value, "lastTransitionTime": since}
            if reason:
                c.update(reason=reason, message=message)
            return c

        terminal = phase in ("Succeeded", "Failed")
        if terminal:
            reason, message = ("PodCompleted" if phase == "Succeeded" else "PodFailed"), ""
        else:
            reason, message = "ContainersNotReady", f"containers with unready status: [{' '.join(unready)}]"
        ready = not unready and not terminal
        conditions = [
            condition("PodReadyToStartContainers", not terminal),
            condition("Initialized", True),
            condition("Ready", ready, "" if ready else reason, "" if ready else message),
            condition("ContainersReady", ready, "" if ready else reason, "" if ready else message),
        ]
        conditions += [
            c for c in old.get("conditions") or [] if c.get("type") not in {x["type"] for x in conditions}
        ]
        host_ip = nodes.internal_ip(self.node_index[node])
        status: common.Object = {
            "phase": phase,
            "conditions": conditions,
            "hostIP": host_ip,
            "hostIPs": [{"ip": host_ip}],
            "podIP": run.ip,
            "podIPs": [{"ip": run.ip}],
            "startTime": run.start,
            "containerStatuses": statuses,
        }
        if spec.get("initContainers"):
            status["initContainerStatuses"] = [_init_status(c, run) for c in spec["initContainers"]]
        if all(old.get(k) == v for k, v in status.items()):
            return
        pods = self.simulator.api(pod["spec"]["nodeName"]).dynamic.resource(
            common.PODS, pod["metadata"]["namespace"]
        )
        with contextlib.suppress(errors.NotFound):
            await pods.patch(
                pod["metadata"]["name"], {"status": status}, patch_type="merge", subresource="status"
            )

    # Stopping.

    async def _terminate(self, pod: common.Object, run: _PodRun, now: datetime.datetime) -> runtime.Result:
        """Stop the containers (SIGTERM, SIGKILL at the deadline), then the final DELETE."""
        meta = pod["metadata"]
        if run.killed_at is None:
            run.killed_at = now
            rec = self._recorder(pod["spec"]["nodeName"])
            for inst in run.containers.values():
                if inst.ended is None and inst.waiting_until is None:
                    ref = {"kind": "Pod", **_ref(pod), "fieldPath": f"spec.containers{{{inst.name}}}"}
                    rec.event(ref, "Normal", "Killing", f"Stopping container {inst.name}")
        grace = meta.get("deletionGracePeriodSeconds") or 0
        stop = min(float(grace), _annotation_number(pod, common.TERMINATION_SECONDS) or 0.0)
        done_at = run.killed_at + datetime.timedelta(seconds=stop)
        if now < done_at:
            return runtime.Result(requeue_after=max(0.001, (done_at - now).total_seconds()))
        pods = self.simulator.api(pod["spec"]["nodeName"]).dynamic.resource(common.PODS, meta["namespace"])
        with contextlib.suppress(errors.NotFound, errors.Conflict):
            await pods.delete(
                meta["name"], grace_period_seconds=0, preconditions={"uid": meta.get("uid", "")}
            )
        return runtime.Result()

    def _forget(self, key: str) -> None:
        run = self._runs.pop(key, None)
        if run is None:
            return
        self._ips.get(run.node, set()).discard(run.ip)
        if self.log_dir is not None and run.logs:
            namespace, name = key.split("/", 1)
            shutil.rmtree(podlogs.pod_dir(self.log_dir, namespace, name, run.uid), ignore_errors=True)


def _ref(pod: common.Object) -> common.Object:
    meta = pod["metadata"]
    return {
        "apiVersion": "v1",
        "namespace": meta.get("namespace", ""),
        "name": meta.get("name", ""),
        "uid": meta.get("uid", ""),
        "resourceVersion": meta.get("resourceVersion", ""),
    }


def _init_status(spec: common.Object, run: _PodRun) -> common.Object:
    image, repo = _image_ref(spec.get("image", ""))
    cid = "containerd://" + _hex(f"{run.uid}/{spec['name']}/init")
    return {
        "name": spec["name"],
        "image": image,
        "imageID": f"{repo}@sha256:{_hex(image)}",
        "containerID": cid,
        "ready": True,
        "started": False,
        "restartCount": 0,
        "lastState": {},
        "state": {
            "terminated": {
                "exitCode": 0,
                "reason": "Completed",
                "startedAt": run.start,
                "finishedAt": run.start,
                "containerID": cid,
            }
        },
    }


def _duration(seconds: float) -> str:
    """Go's ``time.Duration`` text for whole seconds: ``10s``, ``1m20s``, ``5m0s``."""
    whole = int(seconds)
    if whole < 60:
        return f"{whole}s"
    return f"{whole // 60}m{whole % 60}s"
