"""Deterministic, seeded fault injection at the server side of a test control plane.

Design note. Production throws 409 Conflicts at writers racing each other, drops watches
(load balancers, apiserver restarts, the watch timeout), answers a watch resumed from an old
resourceVersion with 410 Expired (compaction), and is sometimes slow to write. A ``FaultPlan`` makes
each of these happen on purpose, inside the real server, so that a controller's correctness under
them is an ordinary unit test. It is a server filter (``ServerConfig.filters``) given to
``ControlPlane(faults=...)``: it sees every authenticated request after its ``RequestInfo`` is
parsed, and nothing is monkeypatched.

Replay. Whether a rule fires on a request is drawn from a generator seeded with
``(seed, rule index, verb, path, n)`` where ``n`` counts earlier requests with the same verb and
path. Decisions therefore depend on what each object saw, not on how requests to different objects
interleaved, and the same seed replays the same faults. ``plan.log`` lists every injection;
``str(plan)`` names the seed so a failing run can be repeated with ``FaultPlan(seed=...)``.

Rules (each limited by a ``Match``: verbs, resources, namespaces):

* ``Conflicts``: a write is refused with upstream's 409 "the object has been modified" Status;
* ``DropWatches``: a watch stream is cut (connection closed) after a number of lines;
* ``ExpireOnResume``: a watch from a resourceVersion other than ``""``/``"0"`` gets one ERROR event
  (410 Expired, ``too old resource version``) on a 200 stream, as the upstream watch cache answers;
* ``SlowWrites``: a write waits on the plan's clock before it is served.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import random
from collections.abc import Iterator
from typing import Any

import orjson
from aiohttp import web

from kplane._util import clock as clock_mod
from kplane.api import errors
from kplane.api.gvk import GroupResource
from kplane.server.endpoints import requestinfo
from kplane.server.filters.types import Handler

WRITE_VERBS = ("create", "update", "patch", "delete", "deletecollection")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Match:
    """Which requests a rule may touch; an empty field matches everything.

    ``resources`` are ``plural`` or ``plural.group`` (``"configmaps"``, ``"deployments.apps"``);
    ``subresource`` ``None`` matches any, ``""`` only the main resource.
    """

    verbs: tuple[str, ...] = ()
    resources: tuple[str, ...] = ()
    namespaces: tuple[str, ...] = ()
    subresource: str | None = None

    def matches(self, info: Any) -> bool:
        if not info.is_resource:
            return False
        qualified = f"{info.resource}.{info.group}" if info.group else info.resource
        return (
            (not self.verbs or info.verb in self.verbs)
            and (not self.resources or qualified in self.resources or info.resource in self.resources)
            and (not self.namespaces or info.namespace in self.namespaces)
            and (self.subresource is None or info.subresource == self.subresource)
        )


@dataclasses.dataclass(frozen=True, kw_only=True)
class Conflicts:
    """Refuse matching writes with 409 Conflict (``probability`` per request)."""

    probability: float = 0.5
    match: Match = Match(verbs=("update", "patch"))


@dataclasses.dataclass(frozen=True, kw_only=True)
class DropWatches:
    """Cut matching watches after between ``after_lines[0]`` and ``after_lines[1]`` lines (inclusive)."""

    after_lines: tuple[int, int] = (1, 10)
    probability: float = 1.0
    match: Match = Match(verbs=("watch",))


@dataclasses.dataclass(frozen=True, kw_only=True)
class ExpireOnResume:
    """Answer a matching watch resumed from a resourceVersion with 410 Expired."""

    probability: float = 1.0
    match: Match = Match(verbs=("watch",))


@dataclasses.dataclass(frozen=True, kw_only=True)
class SlowWrites:
    """Delay matching writes by a duration drawn uniformly from ``delay`` (seconds, plan's clock)."""

    delay: tuple[float, float] = (0.01, 0.1)
    probability: float = 1.0
    match: Match = Match(verbs=WRITE_VERBS)


Rule = Conflicts | DropWatches | ExpireOnResume | SlowWrites


@dataclasses.dataclass(frozen=True)
class Injection:
    """One fault injected: the request's sequence number, the rule, the request, and what was done."""

    seq: int
    rule: str
    verb: str
    path: str
    detail: str


class FaultPlan:
    """A seeded set of fault rules; ``filter`` is the server filter that applies them.

    Rules are tried in order; the first whose ``Match`` matches and whose draw fires acts on the
    request (at most one fault per request, except that a slow write may also conflict).
    ``paused()`` lets set-up code run without faults. Safe to use from one event loop only.
    """

    def __init__(self, *rules: Rule, seed: int = 0, clock: clock_mod.Clock | None = None) -> None:
        self.seed = seed
        self.rules = rules
        self.log: list[Injection] = []
        self.requests = 0
        self._clock = clock or clock_mod.RealClock()
        self._seen: collections.Counter[tuple[str, str]] = collections.Counter()
        self._paused = 0

    def __repr__(self) -> str:
        rules = ", ".join(repr(r) for r in self.rules)
        return f"FaultPlan({rules}, seed={self.seed})"

    def __str__(self) -> str:
        return f"FaultPlan(seed={self.seed}): {len(self.log)} faults injected in {self.requests} requests"

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """No fault is injected (and no draw consumed) inside this block."""
        self._paused += 1
        try:
            yield
        finally:
            self._paused -= 1

    def count(self, rule: type[Rule]) -> int:
        """How many faults of this rule type were injected so far."""
        return sum(1 for i in self.log if i.rule == rule.__name__)

    async def filter(self, handler: Handler, request: web.BaseRequest) -> web.StreamResponse:
        """The server filter: decide, record and apply this request's fault, if any."""
        info = request[requestinfo.INFO_KEY]
        if self._paused or not info.is_resource:
            return await handler(request)
        self.requests += 1
        key = (info.verb, request.path)
        n = self._seen[key]
        self._seen[key] += 1
        for index, rule in enumerate(self.rules):
            if not rule.match.matches(info):
                continue
            rng = random.Random(f"{self.seed}|{index}|{info.verb}|{request.path}|{n}")
            if rng.random() >= rule.probability:
                continue
            match rule:
                case SlowWrites(delay=(low, high)):
                    seconds = rng.uniform(low, high)
                    self._record(rule, info, request, f"delayed {seconds:.3f}s")
                    await self._clock.sleep(seconds)
                    continue  # A slow write may still meet a later rule.
                case Conflicts():
                    self._record(rule, info, request, "409 Conflict")
                    gr = GroupResource(info.group, info.resource)
                    raise errors.modified_conflict(gr, info.name or "unknown")
                case ExpireOnResume():
                    rv = request.query.get("resourceVersion", "")
                    if rv in ("", "0") or not rv.isdigit():
                        continue
                    self._record(rule, info, request, f"410 Expired at resourceVersion {rv}")
                    return await _expired(request, int(rv))
                case DropWatches(after_lines=(low, high)):
                    lines = rng.randint(low, high)
                    self._record(rule, info, request, f"cut after {lines} lines")
                    cutting = _CuttingWriter(request, request._payload_writer, lines)
                    request._payload_writer = cutting  # type: ignore[assignment]
                    return await handler(request)
        return await handler(request)

    def _record(self, rule: Rule, info: Any, request: web.BaseRequest, detail: str) -> None:
        self.log.append(Injection(self.requests, type(rule).__name__, info.verb, request.path_qs, detail))


async def _expired(request: web.BaseRequest, rv: int) -> web.StreamResponse:
    """A 200 watch stream of one ERROR event, as the watch cache answers a compacted resourceVersion."""
    # Upstream: staging/src/k8s.io/apiserver/pkg/storage/errors.go NewTooLargeResourceVersionError /
    # cacher's "too old resource version: %d (%d)", sent as a watch ERROR event with code 410.
    status = errors.Gone(f"too old resource version: {rv} ({rv + 1})").to_status()
    resp = web.StreamResponse(headers={"Content-Type": "application/json"})
    resp.enable_chunked_encoding()
    await resp.prepare(request)
    await resp.write(orjson.dumps({"type": "ERROR", "object": status}) + b"\n")
    await resp.write_eof()
    return resp


class _CuttingWriter:
    """A response writer that closes the connection instead of writing line ``limit + 1``.

    aiohttp's handler API has no hook between a streaming handler and its socket, so the request's
    payload writer (a documented attribute of aiohttp's request, set once per request) is wrapped.
    A chunk may hold several events (the server writes a burst at once): JSON lines or protobuf
    frames (4-byte length, then the frame) are counted one by one, and those past the limit are
    not written.
    """

    def __init__(self, request: web.BaseRequest, inner: Any, limit: int) -> None:
        self._request = request
        self._inner = inner
        self._left = limit

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def write(self, chunk: Any, *args: Any, **kwargs: Any) -> None:
        events = _events(bytes(chunk))
        kept = events[: max(self._left, 0)]
        self._left -= len(kept)
        if kept:
            await self._inner.write(b"".join(kept), *args, **kwargs)
        if len(kept) < len(events):
            transport = self._request.transport
            if transport is not None:
                transport.abort()
            raise ConnectionResetError("watch cut by kplane.testing fault plan")


def _events(chunk: bytes) -> list[bytes]:
    """The watch events in ``chunk``: newline-terminated JSON lines, else length-prefixed frames."""
    if chunk.endswith(b"\n"):
        return [line + b"\n" for line in chunk[:-1].split(b"\n")]
    out, at = [], 0
    while at + 4 <= len(chunk):
        end = at + 4 + int.from_bytes(chunk[at : at + 4], "big")
        out.append(chunk[at:end])
        at = end
    if at < len(chunk):
        out.append(chunk[at:])
    return out or [chunk]
