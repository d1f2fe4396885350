"""The authorization gate: the attributes it asks about, shared between requests only where the
request's path and user alone decide them."""

from __future__ import annotations

import pytest
from aiohttp.test_utils import make_mocked_request

from kplane.api import errors
from kplane.server.auth import authn, authz
from kplane.server.endpoints import requestinfo
from kplane.server.filters.authorization import authorization
from kplane.server.filters.requestinfo import request_info

ALICE = authn.UserInfo(name="alice", groups=("system:authenticated",))


class Recorder:
    def __init__(self, allow: bool = True) -> None:
        self.seen: list[authz.Attributes] = []
        self.allow = allow

    def __call__(self, attributes: authz.Attributes) -> authz.Decision:
        self.seen.append(attributes)
        return authz.Decision(authz.Verdict.ALLOW if self.allow else authz.Verdict.NO_OPINION)


def _ask(recorder: Recorder, method: str, url: str, user: authn.UserInfo = ALICE) -> None:
    request = make_mocked_request(method, url)
    request_info.check(request)
    request[authn.USER_KEY] = user
    assert authorization(recorder, record_writer=False).check(request) is None


def test_a_lists_field_selector_names_the_object_each_time() -> None:
    """Two lists of one path by one user, selecting different names: each is asked about its own."""
    recorder = Recorder()
    _ask(recorder, "GET", "/api/v1/namespaces/n/configmaps?fieldSelector=metadata.name%3Da")
    _ask(recorder, "GET", "/api/v1/namespaces/n/configmaps?fieldSelector=metadata.name%3Db")
    assert [a.name for a in recorder.seen] == ["a", "b"]
    assert all(a.verb == "list" for a in recorder.seen)


def test_repeated_requests_are_asked_the_same_and_users_are_told_apart() -> None:
    recorder = Recorder()
    bob = authn.UserInfo(name="bob", groups=())
    _ask(recorder, "POST", "/api/v1/namespaces/n/configmaps")
    _ask(recorder, "POST", "/api/v1/namespaces/n/configmaps")
    _ask(recorder, "POST", "/api/v1/namespaces/n/configmaps", bob)
    _ask(recorder, "GET", "/api/v1/namespaces/n/configmaps/c")
    first, second, third, get = recorder.seen
    assert (
        first
        == second
        == authz.Attributes(ALICE, "create", version="v1", resource="configmaps", namespace="n")
    )
    assert third.user is bob
    assert (get.verb, get.name) == ("get", "c")
    assert recorder.seen[0].user is ALICE


def test_refused_with_the_attributes_asked() -> None:
    request = make_mocked_request("DELETE", "/api/v1/namespaces/n/secrets/s")
    request_info.check(request)
    request[authn.USER_KEY] = ALICE
    with pytest.raises(errors.Forbidden) as info:
        authorization(Recorder(allow=False), record_writer=False).check(request)
    assert 'cannot delete resource "secrets"' in str(info.value)
    assert request[requestinfo.INFO_KEY].name == "s"
