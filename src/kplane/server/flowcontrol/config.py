"""The APF configuration in effect: FlowSchemas and priority levels, fed by every write of them.

``FlowControl.apply`` receives each FlowSchema and PriorityLevelConfiguration as storage commits it
(``CachedStorage.listen``), and the tables the filter reads are rebuilt at once: schemas sorted by
precedence then name, leaving out dangling ones (naming no existing level; upstream's
``Dangling`` condition, written by ``registry/flowcontrolconfig``); per Limited level its seats,
upstream's nominal concurrency limit ``ceil(server_limit * shares / sum of shares)`` over every level's
``nominalConcurrencyShares``, and its ``QueueSet`` (kept across changes so waiting requests stay
queued). ``classify`` caches its answer per (user name, groups, request) until the next change,
so a steady client costs one dict lookup. When no schema matches (the mandatory ``catch-all``
deleted and not yet restored) the built-in catch-all applies, as upstream.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from typing import Any

from kplane._util.clock import Clock
from kplane.server.auth import authn
from kplane.server.flowcontrol import bootstrap, matching
from kplane.server.flowcontrol.queueset import QueueSet, Queuing, flow_hash

Object = dict[str, Any]
PREFIX = "/registry/flowcontrol.apiserver.k8s.io/"
_SCHEMAS = PREFIX + "flowschemas/"
_LEVELS = PREFIX + "prioritylevelconfigurations/"
_CACHE_BOUND = 8192
FLOW_SCHEMA_UID = "X-Kubernetes-PF-FlowSchema-UID"
PRIORITY_LEVEL_UID = "X-Kubernetes-PF-PriorityLevel-UID"
_MAX_QUEUES = 10_000_000
_MAX_HAND = 64


@dataclasses.dataclass
class Level:
    """A priority level in effect; ``queue_set`` None for an Exempt level."""

    name: str
    uid: str
    shares: int
    queuing: Queuing | None
    queue_set: QueueSet | None


@dataclasses.dataclass(frozen=True)
class Classification:
    schema: matching.Schema
    level: Level
    flow: int  # the flow's hash
    headers: Mapping[str, str] = dataclasses.field(default_factory=dict, compare=False)
    """The reply's ``X-Kubernetes-PF-FlowSchema-UID`` and ``X-Kubernetes-PF-PriorityLevel-UID``."""


def _dict(value: Any) -> Object:
    return value if isinstance(value, dict) else {}


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _level_spec(obj: Object) -> tuple[bool, int, Queuing | None]:
    """(exempt, nominalConcurrencyShares, queuing or None for Reject) of a level object."""
    spec = _dict(obj.get("spec"))
    if spec.get("type") == "Exempt":
        return True, _int(_dict(spec.get("exempt")).get("nominalConcurrencyShares"), 0), None
    limited = _dict(spec.get("limited"))
    response = _dict(limited.get("limitResponse"))
    queuing = None
    if response.get("type") == "Queue":
        q = _dict(response.get("queuing"))
        # Bounded as upstream's validation bounds them (at most 10^7 queues; a hand within the
        # 64-bit hash's entropy, so far fewer than 64 cards): kplane does not validate these
        # objects at write, so a value upstream refuses is clamped here instead.
        queues = min(max(1, _int(q.get("queues"), 64)), _MAX_QUEUES)
        queuing = Queuing(
            queues=queues,
            hand_size=min(max(1, _int(q.get("handSize"), 8)), queues, _MAX_HAND),
            queue_length_limit=_int(q.get("queueLengthLimit"), 50),
        )
    return False, max(0, _int(limited.get("nominalConcurrencyShares"), 30)), queuing


_FALLBACK_LEVEL = next(o for o in bootstrap.mandatory_levels() if o["metadata"]["name"] == "catch-all")
_FALLBACK_SCHEMA = matching.Schema.compile(
    next(o for o in bootstrap.mandatory_schemas() if o["metadata"]["name"] == "catch-all")
)


class FlowControl:
    """The tables the APF filter reads; see the module docstring. Loop-bound."""

    def __init__(self, server_limit: int, wait_limit: float, clock: Clock) -> None:
        self.server_limit = server_limit
        self._wait = wait_limit
        self._clock = clock
        self._schema_objects: dict[str, Object] = {}
        self._level_objects: dict[str, Object] = {}
        self.levels: dict[str, Level] = {}
        self.schemas: list[matching.Schema] = []
        self._cache: dict[tuple[str, tuple[str, ...], matching.Request], Classification] = {}
        self.on_change: list[Callable[[], None]] = []
        self._rebuild()

    # -- configuration -----------------------------------------------------------------------------

    def apply(self, key: str, obj: Object | None) -> None:
        """A FlowSchema or PriorityLevelConfiguration at ``key`` was written (None: deleted)."""
        if key.startswith(_SCHEMAS):
            table, name = self._schema_objects, key[len(_SCHEMAS) :]
        elif key.startswith(_LEVELS):
            table, name = self._level_objects, key[len(_LEVELS) :]
        else:
            return
        if obj is None:
            if table.pop(name, None) is None:
                return
        else:
            old = table.get(name)
            if old is not None and old.get("spec") == obj.get("spec") and _uid(old) == _uid(obj):
                table[name] = obj  # a status or metadata write: nothing the tables read changed
                return
            table[name] = obj
        self._rebuild()

    def dangling(self) -> dict[str, tuple[str, bool]]:
        """Each FlowSchema's name → (the level it names, whether that level is missing)."""
        out = {}
        for name, obj in self._schema_objects.items():
            level = str(_dict(_dict(obj.get("spec")).get("priorityLevelConfiguration")).get("name", ""))
            out[name] = (level, level not in self._level_objects)
        return out

    def _rebuild(self) -> None:
        specs = {name: _level_spec(obj) for name, obj in self._level_objects.items()}
        if "catch-all" not in specs:
            specs["catch-all"] = _level_spec(_FALLBACK_LEVEL)
        total = sum(shares for _, shares, _ in specs.values()) or 1
        levels: dict[str, Level] = {}
        for name, (exempt, shares, queuing) in specs.items():
            uid = _uid(self._level_objects.get(name, {}))
            if exempt:
                levels[name] = Level(name, uid, shares, None, None)
                continue
            limit = math.ceil(self.server_limit * shares / total)
            previous = self.levels.get(name)
            queue_set = previous.queue_set if previous is not None else None
            if queue_set is None:
                queue_set = QueueSet(limit, queuing, self._wait, self._clock)
            else:
                queue_set.reconfigure(limit, queuing)
            levels[name] = Level(name, uid, shares, queuing, queue_set)
        schemas = [matching.Schema.compile(obj) for obj in self._schema_objects.values()]
        self.schemas = sorted(
            (s for s in schemas if s.level in self._level_objects), key=lambda s: (s.precedence, s.name)
        )
        self.levels = levels
        self._cache = {}
        for hook in self.on_change:
            hook()

    # -- per request -------------------------------------------------------------------------------

    def classify(self, user: authn.UserInfo, request: matching.Request) -> Classification:
        """The schema, level and flow of ``request`` by ``user``."""
        key = (user.name, user.groups, request)
        found = self._cache.get(key)
        if found is not None:
            return found
        schema = matching.first_match(self.schemas, user, request) or _FALLBACK_SCHEMA
        level = self.levels.get(schema.level) or self.levels["catch-all"]
        found = Classification(
            schema,
            level,
            flow_hash(schema.name, schema.flow(user, request)),
            {FLOW_SCHEMA_UID: schema.uid, PRIORITY_LEVEL_UID: level.uid},
        )
        if len(self._cache) >= _CACHE_BOUND:
            self._cache.clear()
        self._cache[key] = found
        return found


def _uid(obj: Object) -> str:
    return str(_dict(obj.get("metadata")).get("uid", ""))
