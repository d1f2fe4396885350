"""The dashboard in headless Chromium against ``kplane serve`` with its controllers: token login,
a Deployment's pods turning Ready live, its revisions and their diff, the reconcile trace of a
revision, controllers' plots, events,
and an unauthenticated visit that sees only the login form. No console error at SEVERE level.

Screenshots go to ``$KPLANE_ARTIFACTS_DIR/dashboard`` (default ``.artifacts/dashboard`` in the
checkout, ignored by git). Skipped, saying why, where Chromium or ChromeDriver is absent.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from kplane.testing import browser as browser_mod
from tests.e2e.conftest import Server, requires_kubectl
from tests.e2e.test_dashboard import NOBODY_TOKEN, TOKEN, served

__all__ = ["served"]  # the module-scoped server fixture, shared with test_dashboard

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(180),
    pytest.mark.skipif(browser_mod.missing() is not None, reason=str(browser_mod.missing())),
]

ARTIFACTS = (
    Path(os.environ.get("KPLANE_ARTIFACTS_DIR", Path(__file__).parents[2] / ".artifacts")) / "dashboard"
)


@pytest.fixture
def browser() -> Iterator[browser_mod.Browser]:
    with browser_mod.Browser() as b:
        yield b
        # collected before the browser closes; each test asserts on them itself too
        severe = b.console("SEVERE")
        assert not severe, f"console errors: {severe}"


def _sign_in(b: browser_mod.Browser, url: str, token: str = TOKEN) -> None:
    b.get(url + "/dashboard/")
    b.wait("the login form", lambda: b.find("#login").is_displayed())
    b.find("#token").send_keys(token)
    b.find("#sign-in").click()
    b.wait("the signed-in page", lambda: b.find("#app").is_displayed() and b.find("#whoami").text != "")


def test_unauthenticated_visit_sees_only_the_login_page(served: Server, browser: browser_mod.Browser) -> None:
    """Without a token or certificate, the page shows the login form, draws no view and makes no
    API request at all."""
    b = browser
    b.get(served.url + "/dashboard/")
    b.wait("the login form", lambda: b.find("#login").is_displayed())
    assert not b.find("#app").is_displayed()
    assert b.script("return document.getElementById('view').children.length") == 0
    requested = b.script("return performance.getEntriesByType('resource').map(e => new URL(e.name).pathname)")
    assert all(p.startswith("/dashboard/") for p in requested), requested
    b.screenshot(ARTIFACTS / "login.png")


def test_a_wrong_token_is_refused(served: Server, browser: browser_mod.Browser) -> None:
    """A token the server does not accept leaves the user on the login form, with a message."""
    b = browser
    b.get(served.url + "/dashboard/")
    b.wait("the login form", lambda: b.find("#login").is_displayed())
    b.find("#token").send_keys("not-a-token")
    b.find("#sign-in").click()
    b.wait("the refusal", lambda: "does not accept" in b.find("#login-error").text)
    assert not b.find("#app").is_displayed()
    assert b.script("return sessionStorage.length") == 0
    # the 401 of the sign-in attempt is the only console error, and an expected one
    assert all("401" in e["message"] for e in b.console("SEVERE"))
    b.logs.clear()


@requires_kubectl
def test_deployment_pods_turn_ready_live_and_history_diff(
    served: Server, browser: browser_mod.Browser
) -> None:
    """Signed in with a token (kept in sessionStorage, no cookie), the Deployment's page shows its
    pods appear and turn Ready without a reload (each row changed in place), the diff of its
    revisions shows the scale, and a revision the controller wrote leads to its reconcile trace."""
    b = browser
    served.kubectl("create", "deployment", "web", "--image=registry.example/web:1", "--replicas=0")
    _sign_in(b, served.url)
    assert b.script("return sessionStorage.getItem('kplane.token')") == TOKEN
    assert b.script("return document.cookie") == ""
    b.get(served.url + "/dashboard/#/object?r=apps/v1/deployments&ns=default&name=web")
    b.wait("the Deployment's YAML", lambda: "replicas: 0" in b.find("#yaml").text)
    b.script("window.__loaded = true")  # gone if the page reloads
    served.kubectl("scale", "deployment", "web", "--replicas=3")

    def ready_pods() -> int:
        rows = b.find_all("#pods tr[data-ready]")
        return sum(r.get_attribute("data-ready") == "true" for r in rows) if len(rows) == 3 else 0

    # a row, once drawn, is changed in place as its pod changes (never redrawn: no DOM churn)
    first_row = b.wait("a pod's row", lambda: b.find_all("#pods tr[data-ready]"), timeout=60)[0]
    first_pod = first_row.get_attribute("data-name")
    b.wait("3 Ready pods", lambda: ready_pods() == 3, timeout=60)
    assert first_row.get_attribute("data-name") == first_pod  # raises if the <tr> was replaced
    assert first_row.get_attribute("data-ready") == "true"
    # the simulated kubelet's events about the Deployment's ReplicaSet scaling it show up too
    b.wait("the Deployment's events", lambda: "ScalingReplicaSet" in b.find("#object-events").text)
    assert b.script("return window.__loaded") is True
    b.script("document.getElementById('pods').scrollIntoView()")
    b.screenshot(ARTIFACTS / "deployment-pods-ready.png")
    b.script("window.scrollTo(0, 0)")

    b.wait("two revisions", lambda: len(b.find_all("#rev-from option")) >= 2)
    # from the first revision (0 replicas) to the newest (3 Ready): the scale is in the diff
    b.script(
        "const s = document.getElementById('rev-from');"
        " s.selectedIndex = 0; s.dispatchEvent(new Event('change'))"
    )
    b.wait("the diff of the scale", lambda: "+   replicas: 3" in b.find(".diff").text)
    assert "-   replicas: 0" in b.find(".diff").text
    b.screenshot(ARTIFACTS / "deployment-history-diff.png")

    # why did it change? a revision the Deployment controller wrote links to the reconcile that
    # wrote it: its trigger and its write (with that resourceVersion) in the traces view
    by_controller = b.wait(
        "a revision written by the controllers",
        lambda: [li for li in b.find_all("#revisions li[data-rv]") if "(kplane)" in li.text],
    )
    rv = by_controller[-1].get_attribute("data-rv")
    by_controller[-1].find_element("css selector", "a").click()
    b.wait("the reconcile that wrote it", lambda: b.find("#traces tr[data-controller='deployment']"))
    row = b.find("#traces tr[data-controller='deployment']")
    assert "default/web" in row.text and f"→ {rv}" in row.text
    assert "Deployment default/web" in row.text or "ReplicaSet default/web-" in row.text  # its trigger
    b.screenshot(ARTIFACTS / "reconcile-trace.png")
    row.find_element("css selector", "button").click()
    b.wait("the trace's details", lambda: "traceID:" in b.find("#trace-detail").text)

    b.get(served.url + "/dashboard/#/resources?ns=default&r=apps/v1/deployments")
    b.wait(
        "the Deployment row", lambda: b.find("tr[data-name='web']").get_attribute("data-status") == "Ready"
    )
    b.screenshot(ARTIFACTS / "resources.png")
    assert not b.console("SEVERE")


def test_cluster_controllers_and_events_views(served: Server, browser: browser_mod.Browser) -> None:
    """Nodes with pod counts, controllers with plots from /metrics, and events render live."""
    b = browser
    _sign_in(b, served.url)
    b.get(served.url + "/dashboard/#/cluster")
    b.wait("the node", lambda: b.find("#nodes td").text == "kplane-node-0")
    b.screenshot(ARTIFACTS / "cluster.png")
    b.get(served.url + "/dashboard/#/controllers")
    b.wait(
        "the deployment controller's plots",
        lambda: len(b.find_all("tr[data-controller='deployment'] svg polyline")) == 4,
    )
    b.wait(
        "a reconcile rate", lambda: "/s" in b.find("tr[data-controller='deployment'] td:nth-child(3)").text
    )
    b.screenshot(ARTIFACTS / "controllers.png")
    b.get(served.url + "/dashboard/#/events")
    b.wait("the events table", lambda: b.find("#events table"))
    b.screenshot(ARTIFACTS / "events.png")
    assert not b.console("SEVERE")


def test_sign_out_forgets_the_token(served: Server, browser: browser_mod.Browser) -> None:
    """Signing out removes the token and returns to the login form."""
    b = browser
    _sign_in(b, served.url)
    b.find("#sign-out").click()
    b.wait("the login form", lambda: b.find("#login").is_displayed())
    assert b.script("return sessionStorage.getItem('kplane.token')") is None
    b.get(served.url + "/dashboard/")
    b.wait("the login form after a reload", lambda: b.find("#login").is_displayed())


def test_rbac_decides_what_the_page_shows(served: Server, browser: browser_mod.Browser) -> None:
    """A user RBAC grants nothing signs in (SelfSubjectReview is everyone's) but sees the API's
    refusals, not data: the page reads with the user's own credentials."""
    b = browser
    _sign_in(b, served.url, NOBODY_TOKEN)
    assert b.find("#whoami").text == "dash-nobody"
    b.get(served.url + "/dashboard/#/resources?r=apps/v1/deployments")
    # upstream's RBAC refusal (k8s.io/apiserver endpoints/handlers/responsewriters/errors.go forbidden)
    b.wait(
        "the API's refusal",
        lambda: (
            'deployments.apps is forbidden: User "dash-nobody" cannot list resource "deployments"'
            in b.find("#list-error").text
        ),
    )
    assert not b.find_all("tr[data-name]")
    b.screenshot(ARTIFACTS / "forbidden.png")
    # the refusals are expected console errors here (403 responses)
    assert all("403" in e["message"] for e in b.console("SEVERE"))
    b.logs.clear()
