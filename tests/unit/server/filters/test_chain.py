"""The filter chain's composition: gates and filters run in list order, a gate can answer, let the
request go on, or hand the rest of the chain to a filter."""

from __future__ import annotations

import pytest
from aiohttp import web
from aiohttp.test_utils import make_mocked_request

from kplane.api import errors
from kplane.server.auth import authn, authz
from kplane.server.endpoints import requestinfo
from kplane.server.filters import chain
from kplane.server.filters.impersonation import impersonation
from kplane.server.filters.requestinfo import request_info
from kplane.server.filters.types import Filter, Gate, Handler


def _recorder(log: list[str]) -> tuple[Gate, Gate, Filter, Handler]:
    def first(request: web.BaseRequest) -> None:
        log.append("gate1")

    def second(request: web.BaseRequest) -> None:
        log.append("gate2")

    async def around(handler: Handler, request: web.BaseRequest) -> web.StreamResponse:
        log.append("around:before")
        resp = await handler(request)
        log.append("around:after")
        return resp

    async def handler(request: web.BaseRequest) -> web.StreamResponse:
        log.append("handler")
        return web.Response(text="done")

    return Gate(first), Gate(second), around, handler


async def test_steps_run_outermost_first_and_filters_see_the_answer() -> None:
    log: list[str] = []
    first, second, around, handler = _recorder(log)
    composed = chain.compose([first, around, second], handler)
    resp = await composed(make_mocked_request("GET", "/api"))
    assert isinstance(resp, web.Response) and resp.text == "done"
    assert log == ["gate1", "around:before", "gate2", "handler", "around:after"]


async def test_a_gate_that_answers_ends_the_request() -> None:
    log: list[str] = []
    _, second, around, handler = _recorder(log)

    def refuse(request: web.BaseRequest) -> web.StreamResponse:
        log.append("refuse")
        return web.Response(status=429, text="busy")

    composed = chain.compose([around, Gate(refuse), second], handler)
    resp = await composed(make_mocked_request("GET", "/api"))
    assert resp.status == 429
    assert log == ["around:before", "refuse", "around:after"]


async def test_a_gate_can_run_the_rest_of_the_chain_under_a_filter() -> None:
    log: list[str] = []
    first, second, _, handler = _recorder(log)

    async def seat(handler: Handler, request: web.BaseRequest) -> web.StreamResponse:
        log.append("seat taken")
        try:
            return await handler(request)
        finally:
            log.append("seat released")

    def queue(request: web.BaseRequest) -> Filter | None:
        log.append("queue")
        return seat if request.method == "POST" else None

    composed = chain.compose([first, Gate(queue), second], handler)
    await composed(make_mocked_request("POST", "/api"))
    assert log == ["gate1", "queue", "seat taken", "gate2", "handler", "seat released"]
    log.clear()
    await composed(make_mocked_request("GET", "/api"))
    assert log == ["gate1", "queue", "gate2", "handler"]


async def test_a_gate_failure_reaches_the_enclosing_filter() -> None:
    seen: list[BaseException] = []

    def deny(request: web.BaseRequest) -> None:
        raise errors.Forbidden("no")

    async def catch(handler: Handler, request: web.BaseRequest) -> web.StreamResponse:
        try:
            return await handler(request)
        except errors.APIError as err:
            seen.append(err)
            return web.Response(status=err.code)

    async def handler(request: web.BaseRequest) -> web.StreamResponse:
        raise AssertionError("not reached")

    resp = await chain.compose([catch, Gate(deny)], handler)(make_mocked_request("GET", "/api"))
    assert resp.status == 403 and len(seen) == 1


def test_requests_to_one_path_share_one_request_info() -> None:
    a = make_mocked_request("POST", "/api/v1/namespaces/default/configmaps")
    b = make_mocked_request("POST", "/api/v1/namespaces/default/configmaps")
    c = make_mocked_request("GET", "/api/v1/namespaces/default/configmaps?watch=1")
    for r in (a, b, c):
        assert request_info.check(r) is None
    assert a[requestinfo.INFO_KEY] is b[requestinfo.INFO_KEY]
    assert a[requestinfo.INFO_KEY].verb == "create"
    assert c[requestinfo.INFO_KEY].verb == "watch"
    long_path = "/api/v1/namespaces/default/configmaps/" + "x" * 300
    d, e = make_mocked_request("GET", long_path), make_mocked_request("GET", long_path)
    for r in (d, e):
        assert request_info.check(r) is None
    assert d[requestinfo.INFO_KEY] == e[requestinfo.INFO_KEY]
    assert d[requestinfo.INFO_KEY] is not e[requestinfo.INFO_KEY]  # long paths are not kept


@pytest.mark.parametrize("name", ["Impersonate-User", "impersonate-user", "IMPERSONATE-USER"])
def test_impersonation_is_found_whatever_the_case_of_the_header(name: str) -> None:
    checked: list[authz.Attributes] = []

    def refuse(attrs: authz.Attributes) -> authz.Decision:
        checked.append(attrs)
        return authz.Decision(authz.Verdict.DENY, "no")

    gate = impersonation(refuse)
    request = make_mocked_request("GET", "/api", headers={name: "bob"})
    request[authn.USER_KEY] = authn.UserInfo(name="alice", groups=("system:authenticated",))
    with pytest.raises(errors.APIError) as refused:
        gate.check(request)
    assert refused.value.code == 403
    assert [(a.verb, a.resource, a.name) for a in checked] == [("impersonate", "users", "bob")]


def test_requests_without_impersonation_headers_go_on() -> None:
    def never(attrs: authz.Attributes) -> authz.Decision:
        raise AssertionError("nothing to authorize")

    request = make_mocked_request("GET", "/api", headers={"User-Agent": "kubectl/v1.32", "X-Other": "1"})
    assert impersonation(never).check(request) is None
