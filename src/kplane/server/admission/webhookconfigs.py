"""The webhook configurations in force, compiled once per change (upstream's webhook managers).

A ``Source`` follows one kind (Mutating- or ValidatingWebhookConfiguration) through the cache's
synchronous event listener, so a configuration written by one request applies to the next. Each
configuration is compiled when it changes (rules, selectors, ``matchConditions`` CEL programs,
client target); ``hooks()`` returns every webhook of every configuration, configurations in name
order (upstream sorts them so), as one tuple rebuilt only after a change. Before its first use the
source loads the configurations from the cache; afterwards a request with no configuration costs
one attribute read (``empty``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from kplane.api import labels
from kplane.api.cel import admission as celadmission
from kplane.api.cel import engine
from kplane.server import storage
from kplane.server.admission import matching
from kplane.server.webhooks import client as webhookclient

log = logging.getLogger(__name__)
Object = dict[str, Any]

MUTATING_PREFIX = "/registry/admissionregistration.k8s.io/mutatingwebhookconfigurations/"
VALIDATING_PREFIX = "/registry/admissionregistration.k8s.io/validatingwebhookconfigurations/"


@dataclass(frozen=True, slots=True)
class Condition:
    """One ``matchCondition``; ``program`` is None when the stored expression does not compile
    (``error`` says why; it then fails as an evaluation error would)."""

    name: str
    expression: str
    program: engine.Program | None
    error: str = ""


@dataclass(frozen=True, slots=True)
class Hook:
    """One webhook of a configuration, ready to match and call."""

    name: str
    configuration: str
    uid: str
    rules: tuple[matching.Rule, ...]
    namespace_selector: labels.Selector | None
    object_selector: labels.Selector | None
    selector_error: str
    conditions: tuple[Condition, ...]
    fail_open: bool
    equivalent: bool
    side_effects: str | None
    timeout: int
    review_versions: tuple[str, ...]
    reinvoke: bool
    target: webhookclient.Target


def _selector(raw: Any) -> tuple[labels.Selector | None, str]:
    try:
        return matching.selector(raw), ""
    except ValueError as exc:
        return None, str(exc)


def _conditions(raw: Any) -> tuple[Condition, ...]:
    out = []
    for cond in raw if isinstance(raw, list) else ():
        if not isinstance(cond, dict):
            continue
        expression = str(cond.get("expression") or "")
        try:
            program = celadmission.compile(expression, celadmission.WEBHOOK_MATCH, stored=True)
            out.append(Condition(str(cond.get("name") or ""), expression, program))
        except engine.CompileError as exc:
            out.append(Condition(str(cond.get("name") or ""), expression, None, f"compilation failed: {exc}"))
    return tuple(out)


def compile_configuration(obj: Object, mutating: bool) -> tuple[Hook, ...]:
    """The webhooks of one stored configuration (as written: validation already passed)."""
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    assert isinstance(meta, dict)
    config_name = str(meta.get("name") or "")
    hooks = []
    raw_hooks = obj.get("webhooks")
    for i, raw in enumerate(raw_hooks if isinstance(raw_hooks, list) else ()):
        if not isinstance(raw, dict):
            continue
        ns_sel, ns_err = _selector(raw.get("namespaceSelector"))
        obj_sel, obj_err = _selector(raw.get("objectSelector"))
        timeout = raw.get("timeoutSeconds")
        versions = raw.get("admissionReviewVersions")
        cc = raw.get("clientConfig")
        hooks.append(
            Hook(
                name=str(raw.get("name") or ""),
                configuration=config_name,
                uid=f"{meta.get('uid') or config_name}/{i}",
                rules=matching.parse_rules(raw.get("rules")),
                namespace_selector=ns_sel,
                object_selector=obj_sel,
                selector_error=ns_err or obj_err,
                conditions=_conditions(raw.get("matchConditions")),
                fail_open=raw.get("failurePolicy") == "Ignore",
                equivalent=raw.get("matchPolicy", "Equivalent") == "Equivalent",
                side_effects=raw.get("sideEffects") if isinstance(raw.get("sideEffects"), str) else None,
                timeout=timeout if isinstance(timeout, int) and timeout > 0 else 10,
                review_versions=tuple(v for v in versions if isinstance(v, str))
                if isinstance(versions, list)
                else (),
                reinvoke=mutating and raw.get("reinvocationPolicy") == "IfNeeded",
                target=webhookclient.Target.parse(cc if isinstance(cc, dict) else {}),
            )
        )
    return tuple(hooks)


class Source:
    """The compiled webhooks of one configuration kind, kept current from the cache's events."""

    def __init__(
        self, store: storage.Storage, prefix: str, *, mutating: bool, client: webhookclient.Client
    ) -> None:
        self._storage = store
        self._prefix = prefix
        self._mutating = mutating
        self._client = client
        self._by_key: dict[str, tuple[Hook, ...]] = {}
        self._hooks: tuple[Hook, ...] = ()
        self._loaded = False
        self.empty = False
        """True once loaded and no configuration exists: the write path's whole cost then."""
        listen = getattr(store, "listen", None)
        self._follows = listen is not None
        if listen is not None:
            listen(self._on_event, self._prefix)

    @property
    def client(self) -> webhookclient.Client:
        return self._client

    def _on_event(self, event: storage.Event) -> None:
        if not event.key.startswith(self._prefix):
            return
        if event.type == storage.DELETED:
            self._by_key.pop(event.key, None)
        else:
            self._by_key[event.key] = self._compile(event.object)
        self._rebuild()

    def _compile(self, obj: Object) -> tuple[Hook, ...]:
        try:
            return compile_configuration(obj, self._mutating)
        except Exception:  # a listener must not raise; a broken object is logged and skipped
            log.exception("cannot compile webhook configuration %s", obj.get("metadata"))
            return ()

    def _rebuild(self) -> None:
        self._hooks = tuple(h for key in sorted(self._by_key) for h in self._by_key[key])
        self.empty = self._loaded and self._follows and not self._hooks
        self._client.retain(h.target for h in self._hooks)

    async def hooks(self) -> tuple[Hook, ...]:
        """Every webhook in force, configurations in name order."""
        if not self._loaded or not self._follows:
            pairs = (await self._storage.list(self._prefix)).items
            # No await between reading and installing the snapshot: events applied by the
            # listener before it are contained in it.
            by_key = {}
            for obj in pairs:
                meta = obj.get("metadata") or {}
                by_key[self._prefix + str(meta.get("name") or "")] = self._compile(obj)
            self._by_key = by_key
            self._loaded = True
            self._rebuild()
        return self._hooks
