"""The builder: a controller wired to the manager's cache in a few declarative lines.

    controller = await (
        Builder(manager)
        .for_("webapps.example.kplane.dev")   # reconcile these (EnqueueRequestForObject)
        .owns(apps_v1.Deployment)             # their changes enqueue the controlling owner
        .watches("configmaps", map_fn)        # anything else, mapped to requests
        .with_event_filter(GenerationChanged())
        .with_options(ControllerOptions(max_concurrent_reconciles=8))
        .complete(reconciler)
    )

Rules as controller-runtime's builder (reference/controllers.md §6.2): ``owns`` needs ``for_``;
the name defaults to the lowercase kind of ``for_`` (else ``named`` is required); a controller with
no watch is an error; event-filter predicates apply to every watch, before its own. ``complete``
resolves every resource through the REST mapper and creates the shared informers, so the manager's
cache syncs them before the controller starts; each existing object is then reconciled once.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from kplane.runtime import client as client_mod
from kplane.runtime import controller as controller_mod
from kplane.runtime import handler as handler_mod
from kplane.runtime import manager as manager_mod
from kplane.runtime import predicate as predicate_mod
from kplane.runtime import reconcile
from kplane.runtime import source as source_mod

PredicateLike = predicate_mod.Predicate | predicate_mod.ObjectFilter


@dataclasses.dataclass(frozen=True)
class _Watch:
    ref: client_mod.Ref
    handler: handler_mod.EventHandler | None  # None: EnqueueRequestForOwner of the for_ kind
    predicates: tuple[PredicateLike, ...]
    only_controller: bool = True


class Builder:
    """Collects watches and options; ``complete`` builds the controller and adds it to the manager."""

    def __init__(self, manager: manager_mod.Manager) -> None:
        self._manager = manager
        self._for: _Watch | None = None
        self._owns: list[_Watch] = []
        self._watches: list[_Watch] = []
        self._filters: list[PredicateLike] = []
        self._options = controller_mod.ControllerOptions()
        self._name = ""

    def for_(self, ref: client_mod.Ref, *, predicates: Sequence[PredicateLike] = ()) -> Builder:
        """Reconcile objects of ``ref``: each event enqueues the object itself."""
        if self._for is not None:
            raise ValueError("for_() may only be called once")
        self._for = _Watch(ref, handler_mod.EnqueueRequestForObject(), tuple(predicates))
        return self

    def owns(
        self, ref: client_mod.Ref, *, predicates: Sequence[PredicateLike] = (), only_controller: bool = True
    ) -> Builder:
        """Watch objects of ``ref`` and enqueue their controlling owner of the ``for_`` kind."""
        self._owns.append(_Watch(ref, None, tuple(predicates), only_controller))
        return self

    def watches(
        self,
        ref: client_mod.Ref,
        handler: handler_mod.EventHandler | handler_mod.MapFunc,
        *,
        predicates: Sequence[PredicateLike] = (),
    ) -> Builder:
        """Watch objects of ``ref``; ``handler`` (or a map function) says which requests they cause."""
        self._watches.append(_Watch(ref, handler_mod.as_handler(handler), tuple(predicates)))
        return self

    def with_event_filter(self, *predicates: PredicateLike) -> Builder:
        """Predicates applied to every watch of this controller."""
        self._filters.extend(predicates)
        return self

    def with_options(self, options: controller_mod.ControllerOptions) -> Builder:
        self._options = options
        return self

    def named(self, name: str) -> Builder:
        """The controller's name (metrics, logs, the work queue); must be unique in the manager."""
        self._name = name
        return self

    async def complete(
        self, reconciler: reconcile.Reconciler | reconcile.ReconcileFunc
    ) -> controller_mod.Controller:
        """Build the controller, create its informers and add it to the manager."""
        if self._owns and self._for is None:
            raise ValueError("owns() requires for_() to be set")
        if self._for is None and not self._watches:
            raise ValueError("there are no watches configured, controller will never get triggered")
        cache = self._manager.cache
        owner = await cache.resource(client_mod.resource_ref(self._for.ref)) if self._for else None
        name = self._name or (owner.kind.lower() if owner else "")
        if not name:
            raise ValueError("one of for_() or named() must be called")
        ctrl = controller_mod.Controller(
            name,
            reconciler,
            self._options,
            metrics=self._manager.metrics,
            clock=self._manager.clock,
            tracer=self._manager.tracer,
        )
        watches = ([self._for] if self._for else []) + self._owns + self._watches
        for w in watches:
            handler = w.handler
            if handler is None:
                assert owner is not None
                handler = handler_mod.EnqueueRequestForOwner(
                    owner.group,
                    owner.kind,
                    owner_namespaced=owner.namespaced,
                    only_controller=w.only_controller,
                )
            ref = client_mod.resource_ref(w.ref)
            await cache.informer(ref)
            ctrl.watch(
                source_mod.Kind(
                    _informer_getter(cache, ref),
                    handler,
                    [predicate_mod.as_predicate(p) for p in (*self._filters, *w.predicates)],
                    description=str(ref),
                )
            )
        self._manager.add(ctrl)
        return ctrl


def _informer_getter(cache: Any, ref: Any) -> source_mod.InformerGetter:
    async def get() -> Any:
        return await cache.informer(ref)

    return get
