"""Dynamic admission webhooks end to end: a real ``kplane serve``, a test HTTPS webhook server with a
self-signed certificate (``caBundle``), the real kubectl.

Expected texts are upstream's (apiserver 1.32): denials from ``webhook/errors/statuserror.go``
``ToStatusErr``, call failures from ``util/webhook/error.go`` ``ErrCallingWebhook`` wrapped by
``apierrors.NewInternalError`` in ``webhook/{mutating,validating}/dispatcher.go``, dry-run refusals from
``statuserror.go`` ``NewDryRunUnsupportedErr``, configuration checks from kubernetes
``pkg/apis/admissionregistration/validation/validation.go``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import Server, requires_kubectl, start_server
from tests.e2e.helpers import Kube, assert_status, configmap, unique
from tests.e2e.webhookserver import Review, Slow, WebhookServer, allow, deny, patch

pytestmark = requires_kubectl

VWC = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
MWC = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"
SVC_NS = "wh-services"


@pytest.fixture(scope="module")
def hooks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebhookServer]:
    srv = WebhookServer(tmp_path_factory.mktemp("webhook"), ("127.0.0.1", f"hooks.{SVC_NS}.svc")).start()
    yield srv
    srv.stop()


@pytest.fixture
def ns(api: Kube) -> str:
    """A namespace of its own, labelled so only this test's webhooks select it."""
    name = unique("wh")
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": {"wh-test": name}}}
    api.ok("POST", "/api/v1/namespaces", body)
    return name


@pytest.fixture
def configs(api: Kube) -> Iterator[list[str]]:
    """Paths of webhook configurations to delete after the test."""
    made: list[str] = []
    yield made
    for path in made:
        api.delete(path)


def _hook(name: str, ns: str, url: str, ca: str, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "clientConfig": {"url": url, "caBundle": ca},
        "rules": [
            {"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}
        ],
        "namespaceSelector": {"matchLabels": {"wh-test": ns}},
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        **extra,
    }


def _install(api: Kube, configs: list[str], path: str, *hooks: dict[str, Any]) -> str:
    kind = "ValidatingWebhookConfiguration" if path == VWC else "MutatingWebhookConfiguration"
    name = unique("cfg")
    body = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": name},
        "webhooks": list(hooks),
    }
    api.ok("POST", path, body)
    configs.append(f"{path}/{name}")
    return name


def test_validating_webhook_gets_the_review_and_its_denial_reaches_kubectl(
    server: Server, api: Kube, hooks: WebhookServer, ns: str, configs: list[str]
) -> None:
    """The review carries upstream's request fields; a denial is kubectl's error with upstream's text."""
    hooks.handlers["/deny"] = lambda review: deny(review, "no configmaps here")
    _install(api, configs, VWC, _hook("deny.example.com", ns, hooks.url("/deny"), hooks.ca_bundle))
    res = server.kubectl("create", "configmap", "c1", "-n", ns, "--from-literal=a=b", check=False)
    assert res.returncode == 1
    # statuserror.go ToStatusErr: "admission webhook %q denied the request: %s"; kubectl prints a
    # Status without reason as "Error from server: <message>".
    assert res.stderr.strip() == (
        'error: failed to create configmap: admission webhook "deny.example.com" denied the request: '
        "no configmaps here"
    )
    (review,) = hooks.received["/deny"]
    assert review["apiVersion"] == "admission.k8s.io/v1" and review["kind"] == "AdmissionReview"
    req = review["request"]
    assert req["kind"] == {"group": "", "version": "v1", "kind": "ConfigMap"}
    assert req["resource"] == {"group": "", "version": "v1", "resource": "configmaps"}
    assert req["requestKind"] == req["kind"] and req["requestResource"] == req["resource"]
    assert (req["name"], req["namespace"], req["operation"]) == ("c1", ns, "CREATE")
    assert req["object"]["data"] == {"a": "b"} and req["oldObject"] is None
    assert req["dryRun"] is False
    assert req["options"]["kind"] == "CreateOptions"
    assert req["userInfo"]["username"] == "kplane-admin"
    assert "system:masters" in req["userInfo"]["groups"]
    assert server.kubectl("get", "configmap", "c1", "-n", ns, check=False).returncode == 1


def test_denial_status_code_and_warnings(
    api: Kube, hooks: WebhookServer, ns: str, configs: list[str]
) -> None:
    """A denial's code is the webhook's (at least 400); warnings reach the Warning header."""
    hooks.handlers["/deny-422"] = lambda review: deny(review, "bad", code=422)
    hooks.handlers["/warn"] = lambda review: allow(review, warnings=["careful now"])
    _install(api, configs, VWC, _hook("warn.example.com", ns, hooks.url("/warn"), hooks.ca_bundle))
    created = api.post(f"/api/v1/namespaces/{ns}/configmaps", configmap("ok", ns))
    assert created.status == 201
    assert "careful now" in created.headers.get("warning", "")
    _install(api, configs, VWC, _hook("deny422.example.com", ns, hooks.url("/deny-422"), hooks.ca_bundle))
    st = api.post(f"/api/v1/namespaces/{ns}/configmaps", configmap("no", ns)).json()
    assert (
        st["code"] == 422
        and st["message"] == 'admission webhook "deny422.example.com" denied the request: bad'
    )


def test_mutating_webhook_patch_is_applied(
    server: Server, api: Kube, hooks: WebhookServer, ns: str, configs: list[str]
) -> None:
    """A JSONPatch answer changes the stored object; a v1beta1-only webhook gets a v1beta1 review."""
    hooks.handlers["/label"] = lambda review: patch(
        review, [{"op": "add", "path": "/metadata/labels", "value": {"patched": "yes"}}]
    )
    hooks.handlers["/annotate"] = lambda review: patch(
        review,
        [
            {
                "op": "add",
                "path": "/metadata/annotations",
                "value": {"seen-labels": json.dumps(review["request"]["object"]["metadata"].get("labels"))},
            }
        ],
    )
    _install(
        api,
        configs,
        MWC,
        _hook("label.example.com", ns, hooks.url("/label"), hooks.ca_bundle),
        _hook(
            "annotate.example.com",
            ns,
            hooks.url("/annotate"),
            hooks.ca_bundle,
            admissionReviewVersions=["v1beta1"],
        ),
    )
    server.kubectl("create", "configmap", "m1", "-n", ns, "--from-literal=a=b")
    got = json.loads(server.kubectl("get", "configmap", "m1", "-n", ns, "-o", "json").stdout)
    assert got["metadata"]["labels"] == {"patched": "yes"}
    # the second webhook saw the first one's patch (called in sequence)
    assert got["metadata"]["annotations"] == {"seen-labels": '{"patched": "yes"}'}
    assert hooks.received["/annotate"][-1]["apiVersion"] == "admission.k8s.io/v1beta1"


def test_a_webhook_patch_is_pruned_and_validated(
    api: Kube, hooks: WebhookServer, ns: str, configs: list[str]
) -> None:
    """What a webhook adds is pruned and validated as the client's body is (unknown fields dropped,
    an invalid value refused with 422)."""

    def mutate(review: Review) -> Review:
        name = review["request"]["name"]
        value = "bad key" if name == "invalid" else "ok"
        return patch(
            review,
            [
                {"op": "add", "path": "/unknownField", "value": 1},
                {"op": "add", "path": f"/data/{value}", "value": "x"},
            ],
        )

    hooks.handlers["/extra"] = mutate
    _install(api, configs, MWC, _hook("extra.example.com", ns, hooks.url("/extra"), hooks.ca_bundle))
    created = api.ok("POST", f"/api/v1/namespaces/{ns}/configmaps", configmap("pruned", ns))
    assert "unknownField" not in created and created["data"] == {"k": "v", "ok": "x"}
    st = assert_status(
        api.post(f"/api/v1/namespaces/{ns}/configmaps", configmap("invalid", ns)), 422, "Invalid"
    )
    assert [c["field"] for c in st["details"]["causes"]] == ["data[bad key]"], st


def test_a_webhook_cannot_move_an_object_to_another_namespace(
    api: Kube, hooks: WebhookServer, ns: str, configs: list[str]
) -> None:
    """rest.BeforeCreate checks the namespace after admission: a webhook's move is refused."""
    hooks.handlers["/move"] = lambda review: patch(
        review, [{"op": "replace", "path": "/metadata/namespace", "value": "default"}]
    )
    _install(api, configs, MWC, _hook("move.example.com", ns, hooks.url("/move"), hooks.ca_bundle))
    resp = api.post(f"/api/v1/namespaces/{ns}/configmaps", configmap("moved", ns))
    st = assert_status(resp, 400, "BadRequest")
    assert (
        st["message"]
        == "the namespace of the provided object does not match the namespace sent on the request"
    )


def test_reinvocation_if_needed(api: Kube, hooks: WebhookServer, ns: str, configs: list[str]) -> None:
    """An IfNeeded webhook is called again when a later webhook changed the object."""
    calls: list[Any] = []

    def first(review: Review) -> Review:
        calls.append(review["request"]["object"]["metadata"].get("labels"))
        return allow(review)

    hooks.handlers["/first"] = first
    hooks.handlers["/second"] = lambda review: patch(
        review, [{"op": "add", "path": "/metadata/labels", "value": {"b": "1"}}]
    )
    _install(
        api,
        configs,
        MWC,
        _hook("first.example.com", ns, hooks.url("/first"), hooks.ca_bundle, reinvocationPolicy="IfNeeded"),
        _hook("second.example.com", ns, hooks.url("/second"), hooks.ca_bundle),
    )
    api.ok("POST", f"/api/v1/namespaces/{ns}/configmaps", configmap("r1", ns))
    assert calls == [None, {"b": "1"}]


def test_a_webhook_change_reruns_the_builtin_plugins(
    api: Kube, hooks: WebhookServer, ns: str, configs: list[str]
) -> None:
    """A webhook's change makes the whole mutating pass run again (admission/reinvocation.go): the
    tolerations a webhook removed are added back by DefaultTolerationSeconds."""
    hooks.handlers["/untolerate"] = lambda review: patch(
        review, [{"op": "remove", "path": "/spec/tolerations"}]
    )
    hook = _hook("untolerate.example.com", ns, hooks.url("/untolerate"), hooks.ca_bundle)
    hook["rules"][0]["resources"] = ["pods"]
    _install(api, configs, MWC, hook)
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p1"},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    }
    created = api.ok("POST", f"/api/v1/namespaces/{ns}/pods", pod)
    assert [t["key"] for t in created["spec"]["tolerations"]] == [
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    ]
    (review,) = hooks.received["/untolerate"][-1:]
    assert review["request"]["object"]["spec"]["tolerations"]  # the webhook saw them, removed them


@pytest.mark.parametrize("policy", ["Fail", "Ignore"])
def test_failure_policy_against_a_dead_webhook(
    api: Kube, ns: str, configs: list[str], policy: str, hooks: WebhookServer
) -> None:
    """Fail refuses with upstream's 500; Ignore lets the write through."""
    _install(
        api,
        configs,
        VWC,
        _hook("dead.example.com", ns, "https://127.0.0.1:1/x", hooks.ca_bundle, failurePolicy=policy),
    )
    resp = api.post(f"/api/v1/namespaces/{ns}/configmaps", configmap("d1", ns))
    if policy == "Ignore":
        assert resp.status == 201
        return
    st = assert_status(resp, 500, "InternalError")
    assert st["message"] == (
        'Internal error occurred: failed calling webhook "dead.example.com": failed to call webhook: '
        'Post "https://127.0.0.1:1/x?timeout=10s": dial tcp 127.0.0.1:1: connect: connection refused'
    )


@pytest.mark.slow
@pytest.mark.parametrize("policy", ["Fail", "Ignore"])
def test_failure_policy_against_a_slow_webhook(
    api: Kube, hooks: WebhookServer, ns: str, configs: list[str], policy: str
) -> None:
    """A webhook slower than timeoutSeconds fails with context deadline exceeded (or is ignored)."""

    def slow(review: Review) -> Review:
        raise Slow(3, allow(review))

    hooks.handlers["/slow"] = slow
    _install(
        api,
        configs,
        MWC,
        _hook(
            "slow.example.com",
            ns,
            hooks.url("/slow"),
            hooks.ca_bundle,
            failurePolicy=policy,
            timeoutSeconds=1,
        ),
    )
    resp = api.post(f"/api/v1/namespaces/{ns}/configmaps", configmap("s1", ns), timeout=20)
    if policy == "Ignore":
        assert resp.status == 201
        return
    st = assert_status(resp, 500, "InternalError")
    assert st["message"] == (
        'Internal error occurred: failed calling webhook "slow.example.com": failed to call webhook: '
        f'Post "{hooks.url("/slow")}?timeout=1s": context deadline exceeded'
    )


def test_untrusted_certificate_fails_the_call(
    api: Kube, hooks: WebhookServer, ns: str, configs: list[str]
) -> None:
    """Without the right caBundle the TLS handshake fails and failurePolicy Fail refuses."""
    hooks.handlers["/allow"] = allow
    _install(api, configs, VWC, _hook("tls.example.com", ns, hooks.url("/allow"), ""))
    st = assert_status(
        api.post(f"/api/v1/namespaces/{ns}/configmaps", configmap("t1", ns)), 500, "InternalError"
    )
    assert "x509: certificate signed by unknown authority" in st["message"]


def test_dry_run_reaches_webhooks_without_side_effects(
    api: Kube, hooks: WebhookServer, ns: str, configs: list[str]
) -> None:
    """A dry run is sent with dryRun true to a NoneOnDryRun webhook; sideEffects Some is refused at write."""
    hooks.handlers["/dry"] = allow
    _install(
        api,
        configs,
        VWC,
        _hook("dry.example.com", ns, hooks.url("/dry"), hooks.ca_bundle, sideEffects="NoneOnDryRun"),
    )
    api.ok("POST", f"/api/v1/namespaces/{ns}/configmaps", configmap("dr", ns), query={"dryRun": "All"})
    assert hooks.received["/dry"][-1]["request"]["dryRun"] is True
    body = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": unique("some")},
        "webhooks": [_hook("some.example.com", ns, hooks.url("/dry"), hooks.ca_bundle, sideEffects="Some")],
    }
    st = assert_status(api.post(VWC, body), 422, "Invalid")
    assert st["details"]["causes"] == [
        {
            "reason": "FieldValueNotSupported",
            "message": 'Unsupported value: "Some": supported values: "None", "NoneOnDryRun"',
            "field": "webhooks[0].sideEffects",
        }
    ]


def test_selectors_and_match_conditions(api: Kube, hooks: WebhookServer, ns: str, configs: list[str]) -> None:
    """objectSelector, namespaceSelector and matchConditions decide which requests a webhook sees."""
    hooks.handlers["/no"] = lambda review: deny(review, "denied")
    _install(
        api,
        configs,
        VWC,
        _hook(
            "select.example.com",
            ns,
            hooks.url("/no"),
            hooks.ca_bundle,
            objectSelector={"matchLabels": {"deny": "yes"}},
            matchConditions=[{"name": "not-skipped", "expression": "object.metadata.name != 'skip-me'"}],
        ),
    )
    path = f"/api/v1/namespaces/{ns}/configmaps"
    assert api.post(path, configmap("plain", ns)).status == 201
    assert api.post(path, configmap("skip-me", ns, labels={"deny": "yes"})).status == 201
    assert api.post(path, configmap("caught", ns, labels={"deny": "yes"})).status == 403
    other = unique("wh-other")
    api.ok(
        "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": other}}
    )
    assert (
        api.post(
            f"/api/v1/namespaces/{other}/configmaps", configmap("caught", other, labels={"deny": "yes"})
        ).status
        == 201
    )


def test_match_conditions_ask_the_servers_authorizer(
    api: Kube, hooks: WebhookServer, ns: str, configs: list[str]
) -> None:
    """``authorizer`` in a matchCondition is the server's RBAC, asked as the request's user."""
    hooks.handlers["/no-secret-readers"] = lambda review: deny(review, "secret readers may not")
    rbac = f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}"
    api.ok("POST", f"{rbac}/roles", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "cm-writer"},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create"]}],
    })  # fmt: skip
    api.ok("POST", f"{rbac}/rolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "cm-writer"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "cm-writer"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "writer"}],
    })  # fmt: skip
    condition = f"authorizer.group('').resource('secrets').namespace('{ns}').check('list').allowed()"
    _install(
        api,
        configs,
        VWC,
        _hook("authz.example.com", ns, hooks.url("/no-secret-readers"), hooks.ca_bundle,
              matchConditions=[{"name": "reads-secrets", "expression": condition}]),
    )  # fmt: skip
    path = f"/api/v1/namespaces/{ns}/configmaps"
    as_writer = {"Impersonate-User": "writer"}
    assert api.post(path, configmap("by-writer", ns), headers=as_writer).status == 201
    st = api.post(path, configmap("by-admin", ns)).json()
    assert st["message"] == 'admission webhook "authz.example.com" denied the request: secret readers may not'


def test_match_condition_error_fails_closed(
    api: Kube, hooks: WebhookServer, ns: str, configs: list[str]
) -> None:
    """A matchCondition that errors refuses the request with 403 (failurePolicy Fail)."""
    hooks.handlers["/allow"] = allow
    _install(
        api,
        configs,
        VWC,
        _hook(
            "cond.example.com",
            ns,
            hooks.url("/allow"),
            hooks.ca_bundle,
            matchConditions=[{"name": "bad", "expression": "object.data.missing == 'x'"}],
        ),
    )
    st = assert_status(api.post(f"/api/v1/namespaces/{ns}/configmaps", configmap("e1", ns)), 403, "Forbidden")
    assert st["message"] == (
        "configmaps \"e1\" is forbidden: expression 'object.data.missing == 'x'' resulted in error: "
        "no such key: missing"
    )


def test_service_reference_resolves_through_endpoints(
    api: Kube, hooks: WebhookServer, ns: str, configs: list[str]
) -> None:
    """clientConfig.service reaches the webhook at the Service's Endpoints (127.0.0.1 here), with TLS
    server name <service>.<namespace>.svc."""
    hooks.handlers["/svc"] = lambda review: deny(review, "via service")
    svc_ns = SVC_NS  # the certificate names hooks.<SVC_NS>.svc
    api.ok(
        "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": svc_ns}}
    )
    api.ok("POST", f"/api/v1/namespaces/{svc_ns}/services", {
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "hooks"},
        "spec": {"ports": [{"name": "https", "port": 443, "targetPort": hooks.port}]},
    })  # fmt: skip
    api.ok("POST", f"/api/v1/namespaces/{svc_ns}/endpoints", {
        "apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "hooks"},
        "subsets": [{"addresses": [{"ip": "127.0.0.1"}], "ports": [{"name": "https", "port": hooks.port}]}],
    })  # fmt: skip
    hook = _hook("svc.example.com", ns, "", hooks.ca_bundle)
    hook["clientConfig"] = {
        "service": {"namespace": svc_ns, "name": "hooks", "path": "/svc"},
        "caBundle": hooks.ca_bundle,
    }
    _install(api, configs, VWC, hook)
    st = api.post(f"/api/v1/namespaces/{ns}/configmaps", configmap("v1", ns)).json()
    assert st["message"] == 'admission webhook "svc.example.com" denied the request: via service', st


AUDIT_POLICY = """
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Metadata
    resources:
      - group: ""
        resources: [configmaps]
  - level: None
"""


@pytest.mark.slow
def test_audit_annotations_reach_the_audit_log(tmp_path: Path, hooks: WebhookServer) -> None:
    """A webhook's auditAnnotations are recorded on the request's audit event as
    ``<webhook name>/<key>`` (validating/dispatcher.go callHook)."""
    (tmp_path / "policy.yaml").write_text(AUDIT_POLICY)
    log = tmp_path / "audit.log"
    srv = start_server(
        tmp_path / "data", "--audit-policy-file", str(tmp_path / "policy.yaml"), "--audit-log-path", str(log)
    )
    try:
        api = Kube.from_kubeconfig(srv.kubeconfig, tmp_path / "pki")
        hooks.handlers["/audited"] = lambda review: allow(
            review, auditAnnotations={"decision": "looked fine"}
        )
        ns = unique("wh")
        labels = {"wh-test": ns}
        api.ok(
            "POST",
            "/api/v1/namespaces",
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": labels}},
        )
        hooks.handlers["/stamp"] = lambda review: patch(
            review, [{"op": "add", "path": "/metadata/labels", "value": {"s": "1"}}]
        )
        _install(api, [], VWC, _hook("audit.example.com", ns, hooks.url("/audited"), hooks.ca_bundle))
        _install(
            api,
            [],
            VWC,
            _hook("dead.example.com", ns, "https://127.0.0.1:1/x", hooks.ca_bundle, failurePolicy="Ignore"),
        )
        mutating = _install(
            api, [], MWC, _hook("stamp.example.com", ns, hooks.url("/stamp"), hooks.ca_bundle)
        )
        api.ok("POST", f"/api/v1/namespaces/{ns}/configmaps", configmap("a1", ns))
        events = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
        (event,) = [e for e in events if e.get("verb") == "create" and e["objectRef"].get("name") == "a1"]
        notes = event["annotations"]
        assert notes["audit.example.com/decision"] == "looked fine"
        # upstream's own annotations (webhook/mutating/dispatcher.go webhookAnnotator, validating
        # dispatcher's failed-open key)
        assert json.loads(notes["mutation.webhook.admission.k8s.io/round_0_index_0"]) == {
            "configuration": mutating,
            "webhook": "stamp.example.com",
            "mutated": True,
        }
        failed_open = {
            k: v
            for k, v in notes.items()
            if k.startswith("failed-open.validating.webhook.admission.k8s.io/round_0_index_")
        }
        assert list(failed_open.values()) == ["dead.example.com"]
    finally:
        srv.stop()
