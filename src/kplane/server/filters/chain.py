"""The filter chain, written once, outermost first (the order a request passes through).

Filters are coroutines around the rest of the chain (``types.Filter``) or ``types.Gate`` checks
that need nothing after the request; ``build`` runs each run of consecutive gates in one step, so
a request passes few coroutines whatever the number of filters."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Sequence

from aiohttp import web

from kplane._util.clock import Clock, RealClock
from kplane.server.auth import authn, authz
from kplane.server.dashboard import assets
from kplane.server.endpoints import metrics as metrics_mod
from kplane.server.filters.authentication import authentication
from kplane.server.filters.authorization import authorization
from kplane.server.filters.dashboard import dashboard as dashboard_filter
from kplane.server.filters.flowcontrol import priority_and_fairness
from kplane.server.filters.impersonation import impersonation
from kplane.server.filters.metrics import metrics
from kplane.server.filters.recovery import recovery
from kplane.server.filters.requestinfo import request_info
from kplane.server.filters.types import Filter, Gate, Handler
from kplane.server.flowcontrol.config import FlowControl


def filters(
    authenticator: authn.RequestAuthenticator,
    extra: Sequence[Filter] = (),
    *,
    authorizer: authz.Authorizer = authz.always_allow,
    sink: metrics_mod.APIMetrics = metrics_mod.DEFAULT,
    clock: Clock | None = None,
    flow_control: FlowControl | None = None,
    audit: Filter | None = None,
    dashboard: assets.Assets | None = None,
    record_writer: bool = True,
) -> list[Filter | Gate]:
    """Outermost first: recovery -> dashboard (its public files, when ``dashboard`` is given:
    ``filters.dashboard``) -> request info -> metrics -> authentication -> audit (when
    given: ``filters.audit``) -> impersonation ->
    priority and fairness (``flow_control``; none when not given) -> authorization -> ``extra``
    (upstream's relative order). ``extra`` filters (test hooks such as
    fault injection) see only authenticated
    requests, with ``request[INFO_KEY]`` parsed, and their failures still become a Status.
    """
    clock = clock or RealClock()
    measure = metrics(sink, clock)
    return [
        recovery,
        *([dashboard_filter(authenticator, dashboard)] if dashboard is not None else []),
        request_info,
        measure,
        authentication(authenticator),
        *([audit] if audit is not None else []),
        impersonation(authorizer),
        *([priority_and_fairness(flow_control, sink)] if flow_control is not None else []),
        authorization(authorizer, record_writer=record_writer, record_decision=audit is not None),
        *extra,
    ]


def build(
    authenticator: authn.RequestAuthenticator,
    handler: Handler,
    *,
    extra: Sequence[Filter] = (),
    authorizer: authz.Authorizer = authz.always_allow,
    sink: metrics_mod.APIMetrics = metrics_mod.DEFAULT,
    clock: Clock | None = None,
    flow_control: FlowControl | None = None,
    audit: Filter | None = None,
    dashboard: assets.Assets | None = None,
    record_writer: bool = True,
) -> Handler:
    """``handler`` wrapped in every filter, so a request passes them in list order."""
    steps = filters(
        authenticator,
        extra,
        authorizer=authorizer,
        sink=sink,
        clock=clock,
        flow_control=flow_control,
        audit=audit,
        dashboard=dashboard,
        record_writer=record_writer,
    )
    return compose(steps, handler)


def compose(steps: Sequence[Filter | Gate], handler: Handler) -> Handler:
    """``handler`` behind ``steps`` (outermost first); consecutive gates share one coroutine."""
    gates: list[Gate] = []
    for step in reversed(steps):
        if isinstance(step, Gate):
            gates.insert(0, step)
            continue
        if gates:
            handler = _gated(gates, handler)
            gates = []
        handler = functools.partial(step, handler)
    return _gated(gates, handler) if gates else handler


def _gated(gates: Sequence[Gate], handler: Handler) -> Handler:
    # each gate paired with what follows it, for a gate that hands the request to a filter
    rests = [_gated(gates[i + 1 :], handler) if i + 1 < len(gates) else handler for i in range(len(gates))]
    steps = tuple(zip((g.check for g in gates), rests, strict=True))

    # Not a coroutine: it returns the awaitable of what follows, so a request costs no frame per
    # run of gates. A gate's error is raised from the call, inside the caller's await expression:
    # the enclosing filters see it exactly as if it came out of the await.
    def gated(request: web.BaseRequest) -> Awaitable[web.StreamResponse]:
        for check, rest in steps:
            answer = check(request)
            if answer is not None:
                if isinstance(answer, web.StreamResponse):
                    return _answered(answer)
                return answer(rest, request)
        return handler(request)

    return gated


async def _answered(response: web.StreamResponse) -> web.StreamResponse:
    return response
