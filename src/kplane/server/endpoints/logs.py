"""``pods/log``: container output as text, read from the files the simulated kubelet writes
(``kplane.api.podlogs``: one CRI-format file per container instance under the server's pod log
directory), as a kubelet serves ``/containerLogs`` from ``/var/log/pods``.

Checks and refusals are upstream's, in its order: the container (a name is required when the pod
has several; an unknown name is refused), a node (400 ``does not have a host assigned``), then the
kubelet's: a container that never started is ``waiting to start``, ``previous`` needs a terminated
instance. ``timestamps``, ``tailLines``, ``limitBytes``, ``sinceSeconds``/``sinceTime`` apply as
upstream; ``follow`` keeps the response open, sending what the container writes, until that
container instance ends (its status leaves ``running``) or the pod goes.
"""

from __future__ import annotations

import collections
import datetime
from pathlib import Path
from typing import Any, BinaryIO

from aiohttp import web

from kplane.api import errors, podlogs
from kplane.server.endpoints.scope import Scope

FOLLOW_POLL = 0.2
"""Seconds between looks at a followed log file (and at its container's status)."""
_CHUNK = 64 * 1024
_MAX_TAIL = 100_000


def _container_names(pod: dict[str, Any]) -> list[str]:
    spec = pod.get("spec") or {}
    names = []
    for field in ("initContainers", "containers", "ephemeralContainers"):
        names += [c.get("name", "") for c in spec.get(field) or [] if isinstance(c, dict)]
    return names


def _int_param(scope: Scope, name: str, minimum: int) -> int | None:
    raw = scope.query.get(name)
    if raw is None or raw == "":
        return None
    try:
        value = int(raw)
    except ValueError:
        raise errors.BadRequest(f'strconv.ParseInt: parsing "{raw}": invalid syntax') from None
    if value < minimum:
        raise errors.invalid_object(
            "PodLogOptions",
            "",
            "",
            [errors.invalid(name, value, f"must be greater than or equal to {minimum}")],
        )
    return value


def _status_of(pod: dict[str, Any], container: str) -> dict[str, Any] | None:
    status = pod.get("status") or {}
    for field in ("containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses"):
        for cs in status.get(field) or []:
            if isinstance(cs, dict) and cs.get("name") == container:
                return cs
    return None


def _instance(pod: dict[str, Any], container: str, previous: bool) -> int:
    """Which instance's file to read (its restartCount), or the kubelet's 400."""
    name = pod["metadata"]["name"]
    cs = _status_of(pod, container) or {}
    state = cs.get("state") or {}
    count = cs.get("restartCount") or 0
    crashed = "terminated" in (cs.get("lastState") or {})
    if previous:
        if not crashed:
            raise errors.BadRequest(f'previous terminated container "{container}" in pod "{name}" not found')
        return int(count) if "waiting" in state else int(count) - 1
    if not state or ("waiting" in state and not crashed):
        reason = (state.get("waiting") or {}).get("reason") or "ContainerCreating"
        raise errors.BadRequest(f'container "{container}" in pod "{name}" is waiting to start: {reason}')
    return int(count)


def _running(pod: dict[str, Any] | None, container: str, instance: int, uid: str) -> bool:
    if pod is None or pod["metadata"].get("uid") != uid:
        return False
    cs = _status_of(pod, container) or {}
    return "running" in (cs.get("state") or {}) and cs.get("restartCount", 0) == instance


class _Writer:
    """Applies ``timestamps``, ``sinceTime`` and ``limitBytes`` to lines on their way out."""

    def __init__(self, response: web.StreamResponse, timestamps: bool, since: str, limit: int | None) -> None:
        self.response = response
        self.timestamps = timestamps
        self.since = since
        self.left = limit

    @property
    def done(self) -> bool:
        return self.left is not None and self.left <= 0

    async def line(self, raw: bytes) -> None:
        when, text = podlogs.parse_line(raw)
        if self.since and when and when < self.since:
            return
        out = f"{when} ".encode() + text if self.timestamps and when else text
        if self.left is not None:
            out = out[: self.left]
            self.left -= len(out)
        await self.response.write(out)


def _since(scope: Scope) -> str:
    seconds = _int_param(scope, "sinceSeconds", 1)
    if seconds is not None:
        when = scope.clock.now() - datetime.timedelta(seconds=seconds)
        return podlogs.format_time(when)
    raw = scope.query.get("sinceTime", "")
    if raw:
        try:
            parsed = datetime.datetime.fromisoformat(raw.replace("Z", "+00:00"))
        except ValueError:
            raise errors.BadRequest(
                f'parsing time "{raw}" as "2006-01-02T15:04:05Z07:00": cannot parse'
            ) from None
        return podlogs.format_time(parsed)
    return ""


def _read_lines(handle: BinaryIO, pending: bytes) -> tuple[list[bytes], bytes, bool]:
    """Complete lines read from ``handle``, the partial last line kept for the next read, and
    whether anything was read. A partial line is bounded: past one chunk it counts as a line."""
    data = handle.read(_CHUNK)
    if not data:
        return [], pending, False
    lines = (pending + data).split(b"\n")
    rest = lines.pop()
    if len(rest) > _CHUNK:
        lines.append(rest)
        rest = b""
    return [line + b"\n" for line in lines], rest, True


async def get(scope: Scope) -> web.StreamResponse:
    pod = await scope.registry.get(scope.record, scope.info.namespace, scope.info.name)
    name = scope.info.name
    wanted = scope.query.get("container", "")
    main = [c.get("name", "") for c in (pod.get("spec") or {}).get("containers") or [] if isinstance(c, dict)]
    if not wanted:
        if len(main) != 1:
            raise errors.BadRequest(
                f"a container name must be specified for pod {name}, choose one of: [{' '.join(main)}]"
            )
        wanted = main[0]
    elif wanted not in _container_names(pod):
        raise errors.BadRequest(f"container {wanted} is not valid for pod {name}")
    if not (pod.get("spec") or {}).get("nodeName"):
        raise errors.BadRequest(f'pod "{name}" does not have a host assigned')
    tail = _int_param(scope, "tailLines", 0)
    limit = _int_param(scope, "limitBytes", 1)
    since = _since(scope)
    follow = scope.query.get("follow") in ("true", "1")
    instance = _instance(pod, wanted, scope.query.get("previous") in ("true", "1"))
    uid = str(pod["metadata"].get("uid", ""))
    path = None
    if scope.pod_logs is not None:
        path = podlogs.instance_path(scope.pod_logs, scope.info.namespace, name, uid, wanted, instance)
    response = web.StreamResponse(headers={"Content-Type": "text/plain"})
    await response.prepare(scope.request)
    writer = _Writer(response, scope.query.get("timestamps") in ("true", "1"), since, limit)
    try:
        handle = path.open("rb") if path is not None else None
    except OSError:
        handle = None
    try:
        await _send(
            scope,
            writer,
            handle,
            tail,
            follow and _running(pod, wanted, instance, uid),
            (wanted, instance, uid),
        )
    finally:
        if handle is not None:
            handle.close()
    await response.write_eof()
    return response


async def _send(
    scope: Scope,
    writer: _Writer,
    handle: BinaryIO | None,
    tail: int | None,
    follow: bool,
    which: tuple[str, int, str],
) -> None:
    """Everything in the file (its last ``tail`` lines), then, following, what comes until the
    container instance ``which`` (container, instance, pod uid) stops running."""
    pending = b""
    if handle is not None:
        last: collections.deque[bytes] | None = (
            collections.deque(maxlen=min(tail, _MAX_TAIL)) if tail is not None else None
        )
        while not writer.done:
            lines, pending, more = _read_lines(handle, pending)
            if not more:
                break
            for line in lines:
                if last is not None:
                    last.append(line)
                elif not writer.done:
                    await writer.line(line)
        for line in last or ():
            if not writer.done:
                await writer.line(line)
    while follow and not writer.done:
        await scope.clock.sleep(FOLLOW_POLL)
        if handle is None:
            handle = _open(scope, which)
        if handle is not None:
            lines, pending, more = _read_lines(handle, pending)
            for line in lines:
                if not writer.done:
                    await writer.line(line)
            if more:
                continue
        try:
            pod: dict[str, Any] | None = await scope.registry.get(
                scope.record, scope.info.namespace, scope.info.name
            )
        except errors.NotFound:
            pod = None
        follow = _running(pod, *which)


def _open(scope: Scope, which: tuple[str, int, str]) -> BinaryIO | None:
    if scope.pod_logs is None:
        return None
    container, instance, uid = which
    path: Path = podlogs.instance_path(
        scope.pod_logs, scope.info.namespace, scope.info.name, uid, container, instance
    )
    try:
        return path.open("rb")
    except OSError:
        return None
