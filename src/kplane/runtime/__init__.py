"""kplane runtime: controller-runtime and kubebuilder for Python.

Sits above the client stack (``kplane.client``, ``kplane.informers``, ``kplane.workqueue``) and below
the built-in controllers; it never imports ``kplane.server``: it reaches an API server over HTTP.
A ``Manager`` owns one shared cache, a client that reads from it and writes to the server, metrics,
probes and leader election; ``Builder`` wires a ``Reconciler`` to watches on it; the helpers
(finalizers, owner references, conditions, create-or-update) are what reconcilers use.
"""

from kplane.runtime import conditions, finalizers, log, ownership, predicate
from kplane.runtime.builder import Builder
from kplane.runtime.cache import Cache
from kplane.runtime.client import Client
from kplane.runtime.controller import CacheSyncTimeout, Controller, ControllerOptions
from kplane.runtime.handler import (
    EnqueueRequestForObject,
    EnqueueRequestForOwner,
    EnqueueRequestsFromMapFunc,
    EventHandler,
)
from kplane.runtime.log import logger
from kplane.runtime.manager import LeaderElectionLost, Manager, Runnable
from kplane.runtime.metrics import Metrics
from kplane.runtime.mutating import OperationResult, create_or_patch, create_or_update
from kplane.runtime.options import ManagerOptions
from kplane.runtime.ownership import AlreadyOwnedError, set_controller_reference, set_owner_reference
from kplane.runtime.predicate import (
    AnnotationsChanged,
    GenerationChanged,
    LabelsChanged,
    Predicate,
    ResourceVersionChanged,
    and_,
    not_,
    or_,
)
from kplane.runtime.reconcile import Reconciler, Request, Result, TerminalError

__all__ = [
    "AlreadyOwnedError",
    "AnnotationsChanged",
    "Builder",
    "Cache",
    "CacheSyncTimeout",
    "Client",
    "Controller",
    "ControllerOptions",
    "EnqueueRequestForObject",
    "EnqueueRequestForOwner",
    "EnqueueRequestsFromMapFunc",
    "EventHandler",
    "GenerationChanged",
    "LabelsChanged",
    "LeaderElectionLost",
    "Manager",
    "ManagerOptions",
    "Metrics",
    "OperationResult",
    "Predicate",
    "Reconciler",
    "Request",
    "ResourceVersionChanged",
    "Result",
    "Runnable",
    "TerminalError",
    "and_",
    "conditions",
    "create_or_patch",
    "create_or_update",
    "finalizers",
    "log",
    "logger",
    "not_",
    "or_",
    "ownership",
    "predicate",
    "set_controller_reference",
    "set_owner_reference",
]
