"""ServiceAccount tokens end to end: ``kubectl create token`` (TokenRequest, protobuf body), the JWT's
header and claims as upstream lays them out (admission.md §3.2), the token as kubectl's credential,
binding to a Secret, issuer discovery, legacy token Secrets, and hostile credentials (401, never
5xx, never a hang)."""

from __future__ import annotations

import base64
import datetime
import json
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from kplane._util.clock import FakeClock
from kplane.server.auth import certs, jwt
from tests.e2e.conftest import Server, requires_kubectl
from tests.e2e.helpers import Kube, assert_status, poll, unique

pytestmark = requires_kubectl

ISSUER = "https://kubernetes.default.svc.cluster.local"  # upstream's default --service-account-issuer


def _claims(token: str) -> tuple[dict[str, Any], dict[str, Any]]:
    h, p, _ = token.split(".")
    pad = lambda s: s + "=" * (-len(s) % 4)  # noqa: E731
    return json.loads(base64.urlsafe_b64decode(pad(h))), json.loads(base64.urlsafe_b64decode(pad(p)))


def _token_kubeconfig(server: Server, token: str, path: Path) -> dict[str, str]:
    cfg = yaml.safe_load(server.kubeconfig.read_text())
    cfg["users"][0]["user"] = {"token": token}
    path.write_text(yaml.safe_dump(cfg))
    return {"KUBECONFIG": str(path)}


def _sa(server: Server, ns: str = "default") -> str:
    name = unique("bot")
    server.kubectl("create", "serviceaccount", name, "-n", ns)
    return name


def test_create_token_claims_and_credential(server: Server, api: Kube, tmp_path: Path) -> None:
    """kubectl create token prints an RS256 JWT with upstream's claims; kubectl can use it as its
    credential; deleting the ServiceAccount revokes it (401)."""
    name = _sa(server)
    token = server.kubectl("create", "token", name).stdout.strip()
    header, claims = _claims(token)
    assert header["alg"] == "RS256" and set(header) == {"alg", "kid"}  # no "typ", as upstream
    sa = json.loads(server.kubectl("get", "sa", name, "-o", "json").stdout)
    assert claims["iss"] == ISSUER and claims["aud"] == [ISSUER]
    assert claims["sub"] == f"system:serviceaccount:default:{name}"
    assert claims["exp"] - claims["iat"] == 3600 and claims["nbf"] == claims["iat"]
    assert claims["kubernetes.io"] == {
        "namespace": "default",
        "serviceaccount": {"name": name, "uid": sa["metadata"]["uid"]},
    }
    assert len(claims["jti"]) == 36
    env = _token_kubeconfig(server, token, tmp_path / "kc")
    review = json.loads(server.kubectl("auth", "whoami", "-o", "json", env=env).stdout)
    info = review["status"]["userInfo"]
    assert info["username"] == f"system:serviceaccount:default:{name}"
    assert info["uid"] == sa["metadata"]["uid"]
    assert info["groups"] == [
        "system:serviceaccounts",
        "system:serviceaccounts:default",
        "system:authenticated",
    ]
    assert info["extra"] == {"authentication.kubernetes.io/credential-id": [f"JTI={claims['jti']}"]}
    server.kubectl("delete", "sa", name)
    res = server.kubectl("auth", "whoami", env=env, check=False)
    assert res.returncode != 0 and "You must be logged in to the server" in res.stderr
    assert_status(api.get("/api", auth=token), 401, "Unauthorized")


def test_duration_audience_and_validation(server: Server, api: Kube) -> None:
    """--duration sets expirationSeconds; under ten minutes is upstream's 422; a token for another
    audience does not authenticate to the API."""
    name = _sa(server)
    token = server.kubectl("create", "token", name, "--duration", "20m").stdout.strip()
    _, claims = _claims(token)
    assert claims["exp"] - claims["iat"] == 1200
    assert api.get("/api", auth=token).status == 200
    res = server.kubectl("create", "token", name, "--duration", "5m", check=False)
    # pkg/apis/authentication/validation/validation.go ValidateTokenRequest
    assert "spec.expirationSeconds: Invalid value: 300: may not specify a duration less than 10 minutes" in (
        res.stderr
    )
    other = server.kubectl("create", "token", name, "--audience", "vault").stdout.strip()
    assert _claims(other)[1]["aud"] == ["vault"]
    assert_status(api.get("/api", auth=other), 401, "Unauthorized")
    missing = server.kubectl("create", "token", "nobody-here", check=False)
    assert 'serviceaccounts "nobody-here" not found' in missing.stderr


def test_secret_bound_token(server: Server, api: Kube) -> None:
    """A token bound to a Secret carries it in its claims and dies with it."""
    name = _sa(server)
    secret = unique("bound")
    server.kubectl("create", "secret", "generic", secret, "--from-literal=a=b")
    uid = server.kubectl("get", "secret", secret, "-o", "jsonpath={.metadata.uid}").stdout
    token = server.kubectl(
        "create", "token", name, "--bound-object-kind", "Secret", "--bound-object-name", secret
    ).stdout.strip()
    assert _claims(token)[1]["kubernetes.io"]["secret"] == {"name": secret, "uid": uid}
    assert api.get("/api", auth=token).status == 200
    server.kubectl("delete", "secret", secret)
    assert_status(api.get("/api/v1/namespaces", auth=token), 401, "Unauthorized")
    res = server.kubectl(
        "create", "token", name, "--bound-object-kind", "Secret", "--bound-object-name", secret, check=False
    )
    assert f'secrets "{secret}" not found' in res.stderr


def test_pod_bound_token_requires_same_serviceaccount(server: Server) -> None:
    """A pod running as another ServiceAccount cannot be bound (upstream's 400 text)."""
    name = _sa(server)
    pod = unique("p")
    server.kubectl("run", pod, "--image=nginx", "--restart=Never")
    res = server.kubectl(
        "create", "token", name, "--bound-object-kind", "Pod", "--bound-object-name", pod, check=False
    )
    assert (
        f'cannot bind token for serviceaccount "{name}" to pod running with different serviceaccount name.'
        in (res.stderr)
    )


def test_issuer_discovery(server: Server, api: Kube) -> None:
    """/.well-known/openid-configuration and /openid/v1/jwks have upstream's shapes and headers, and
    the JWKS key verifies a token's signature."""
    resp = api.get("/.well-known/openid-configuration")
    assert resp.status == 200 and resp.content_type == "application/json"
    assert resp.headers["cache-control"] == "public, max-age=3600"
    doc = resp.json()
    assert doc == {
        "issuer": ISSUER,
        "jwks_uri": f"https://{api.host}:{api.port}/openid/v1/jwks",
        "response_types_supported": ["id_token"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["RS256"],
    }
    jwks = api.get("/openid/v1/jwks")
    assert jwks.content_type == "application/jwk-set+json"
    (key,) = jwks.json()["keys"]
    assert list(key) == ["use", "kty", "kid", "alg", "n", "e"] and key["e"] == "AQAB"
    token = server.kubectl("create", "token", _sa(server)).stdout.strip()
    assert _claims(token)[0]["kid"] == key["kid"]
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import padding, rsa

    n = int.from_bytes(base64.urlsafe_b64decode(key["n"] + "=="), "big")
    public = rsa.RSAPublicNumbers(65537, n).public_key()
    h, p, s = token.split(".")
    public.verify(
        base64.urlsafe_b64decode(s + "=="), f"{h}.{p}".encode(), padding.PKCS1v15(), hashes.SHA256()
    )
    assert_status(api.get("/openid/v1/jwks", auth="none"), 401, "Unauthorized")
    # system:service-account-issuer-discovery lets every ServiceAccount read both documents.
    assert api.get("/openid/v1/jwks", auth=token).status == 200
    assert api.get("/.well-known/openid-configuration", auth=token).status == 200
    mode = (server.data_dir / "pki" / "sa.key").stat().st_mode & 0o777
    assert mode == 0o600


def test_legacy_token_secret(server: Server, api: Kube) -> None:
    """A kubernetes.io/service-account-token Secret is filled (token, ca.crt, namespace, uid
    annotation) and its token authenticates until the Secret is deleted."""
    name = _sa(server)
    secret = unique("legacy")
    manifest = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": secret, "annotations": {"kubernetes.io/service-account.name": name}},
        "type": "kubernetes.io/service-account-token",
    }
    server.kubectl("apply", "-f", "-", input=json.dumps(manifest))

    def filled() -> dict[str, Any] | None:
        obj: dict[str, Any] = json.loads(server.kubectl("get", "secret", secret, "-o", "json").stdout)
        return obj if "token" in (obj.get("data") or {}) else None

    obj = poll(filled, timeout=10)
    data = obj["data"]
    assert base64.b64decode(data["namespace"]) == b"default"
    assert base64.b64decode(data["ca.crt"]).startswith(b"-----BEGIN CERTIFICATE-----")
    sa_uid = server.kubectl("get", "sa", name, "-o", "jsonpath={.metadata.uid}").stdout
    assert obj["metadata"]["annotations"]["kubernetes.io/service-account.uid"] == sa_uid
    token = base64.b64decode(data["token"]).decode()
    assert _claims(token)[1]["iss"] == "kubernetes/serviceaccount"
    assert api.get("/api", auth=token).status == 200
    server.kubectl("delete", "secret", secret)
    assert_status(api.get("/api/v1/namespaces", auth=token), 401, "Unauthorized")


def _forged(server: Server, claims: dict[str, Any], key: jwt.SigningKey | None = None) -> str:
    own = jwt.load_pem((server.data_dir / "pki" / "sa.key").read_bytes())
    return (key or own).sign(claims)


def test_hostile_tokens_are_401(server: Server, api: Kube, tmp_path: Path) -> None:
    """Garbage, expired, wrong-signature, wrong-audience and alg-none tokens: upstream's 401 Status
    (``Unauthorized``), quickly, never a 5xx."""
    name = _sa(server)
    good = server.kubectl("create", "token", name).stdout.strip()
    _, claims = _claims(good)
    now = int(time.time())
    expired = _forged(server, {**claims, "iat": now - 7200, "nbf": now - 7200, "exp": now - 3600})
    future = _forged(server, {**claims, "iat": now + 3600, "nbf": now + 3600, "exp": now + 7200})
    other_key = jwt.ensure_key(tmp_path)
    wrong_sig = _forged(server, claims, other_key)
    wrong_aud = _forged(server, {**claims, "aud": ["https://elsewhere.example"]})
    h, p, _ = good.split(".")
    none_header = base64.urlsafe_b64encode(b'{"alg":"none"}').rstrip(b"=").decode()
    alg_none = f"{none_header}.{p}."
    forged_payload = base64.urlsafe_b64encode(json.dumps({**claims, "sub": "x"}).encode())
    tampered = f"{h}.{forged_payload.decode().rstrip('=')}.{good.split('.')[2]}"
    hostile = [
        "garbage",
        "a.b.c",
        "x" * 7000 + ".y.z",
        "....",
        expired,
        future,
        wrong_sig,
        wrong_aud,
        alg_none,
        tampered,
        good + "x",
        "eyJhbGciOiJSUzI1NiJ9.bm90IGpzb24.AAAA",
    ]
    for token in hostile:
        start = time.monotonic()
        st = assert_status(api.get("/api/v1/namespaces", auth=token), 401, "Unauthorized")
        assert st["message"] == "Unauthorized"
        assert time.monotonic() - start < 5
    assert api.get("/api", auth=good).status == 200


# Upstream's body for a failed authentication (apiserver endpoints/handlers/responsewriters
# Unauthorized via filters/authentication.go), byte for byte as json.Encoder writes it.
UNAUTHORIZED_BODY = (
    b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
    b'"message":"Unauthorized","reason":"Unauthorized","code":401}\n'
)


@pytest.mark.parametrize("which", ["other-ca", "expired", "not-yet-valid"])
def test_hostile_client_certificates(server: Server, api: Kube, tmp_path: Path, which: str) -> None:
    """A client certificate from another CA, expired or not yet valid never authenticates: the
    handshake completes (upstream requests the certificate without verifying it,
    ``tls.RequestClientCert``) and the request gets upstream's 401 Status, even on a public path
    (the union authenticator's error is not made anonymous); a valid bearer token on the same
    connection still authenticates. kubectl prints upstream's message. Never a 5xx, never a hang."""
    if which == "other-ca":
        other = certs.ensure_pki(tmp_path / "other")
        cert, key = certs.issue_client_cert(other, "mallory", ["system:masters"])
    else:
        shift = datetime.timedelta(days=-800 if which == "expired" else 30)
        clock = FakeClock(datetime.datetime.now(datetime.UTC) + shift)
        cert, key = certs.issue_client_cert(
            certs.PKI.at(server.data_dir), "mallory", ["system:masters"], clock=clock
        )
    (tmp_path / "c.pem").write_bytes(cert)
    (tmp_path / "k.pem").write_bytes(key)
    bad = Kube(api.host, api.port, api.token, api.ca_file, tmp_path / "c.pem", tmp_path / "k.pem")
    start = time.monotonic()
    for path in ("/api/v1/namespaces", "/version"):
        resp = bad.get(path)
        assert (resp.status, resp.body) == (401, UNAUTHORIZED_BODY), (path, resp.status, resp.body)
    assert time.monotonic() - start < 5
    good = server.kubectl("create", "token", _sa(server)).stdout.strip()
    assert bad.get("/api", headers={"Authorization": f"Bearer {good}"}).status == 200
    cfg = yaml.safe_load(server.kubeconfig.read_text())
    cfg["users"][0]["user"] = {
        "client-certificate-data": base64.b64encode(cert).decode(),
        "client-key-data": base64.b64encode(key).decode(),
    }
    (tmp_path / "kubeconfig").write_text(yaml.safe_dump(cfg))
    # With discovery cached (warmed by the admin), kubectl's list gets the Status and prints its
    # reason; a cold discovery request would print client-go's generic 401 text instead.
    server.kubectl("get", "namespaces")
    res = server.kubectl("get", "namespaces", check=False, env={"KUBECONFIG": str(tmp_path / "kubeconfig")})
    assert res.returncode == 1
    assert res.stderr.strip().splitlines()[-1] == "error: You must be logged in to the server (Unauthorized)"
    assert api.get("/api/v1/namespaces", auth="cert").status == 200


def test_serviceaccount_token_gets_exactly_its_role(server: Server, tmp_path: Path) -> None:
    """A namespace-scoped identity (a ServiceAccount token through kubectl) does what its Role grants
    and gets upstream's 403 otherwise (RBAC's Forbidden text, plugin/pkg/auth/authorizer/rbac)."""
    ns = unique("team")
    server.kubectl("create", "namespace", ns)
    server.kubectl("create", "serviceaccount", "bot", "-n", ns)
    server.kubectl("create", "role", "cm-editor", "-n", ns, "--verb=get,list,create", "--resource=configmaps")
    server.kubectl(
        "create", "rolebinding", "bot-cm", "-n", ns, "--role=cm-editor", f"--serviceaccount={ns}:bot"
    )
    token = server.kubectl("create", "token", "bot", "-n", ns).stdout.strip()
    env = _token_kubeconfig(server, token, tmp_path / "kc")
    server.kubectl("create", "configmap", "c1", "-n", ns, "--from-literal=a=b", env=env)
    assert "c1" in server.kubectl("get", "configmaps", "-n", ns, env=env).stdout
    user = f"system:serviceaccount:{ns}:bot"
    denied = server.kubectl("get", "secrets", "-n", ns, env=env, check=False)
    assert denied.returncode != 0
    assert (
        f'Error from server (Forbidden): secrets is forbidden: User "{user}" cannot list resource "secrets"'
        f' in API group "" in the namespace "{ns}"'
    ) in denied.stderr
    elsewhere = server.kubectl("get", "configmaps", "-n", "default", env=env, check=False)
    assert (
        f'configmaps is forbidden: User "{user}" cannot list resource "configmaps" in API group ""'
        ' in the namespace "default"'
    ) in elsewhere.stderr
    delete = server.kubectl("delete", "configmap", "c1", "-n", ns, env=env, check=False)
    assert (
        f'configmaps "c1" is forbidden: User "{user}" cannot delete resource "configmaps" in API group ""'
        f' in the namespace "{ns}"'
    ) in delete.stderr
    assert server.kubectl("auth", "can-i", "create", "configmaps", "-n", ns, env=env).stdout.strip() == "yes"
    assert (
        server.kubectl(
            "auth", "can-i", "create", "deployments", "-n", ns, env=env, check=False
        ).stdout.strip()
        == "no"
    )


def test_token_review(server: Server, api: Kube) -> None:
    """TokenReview (JSON through kubectl, protobuf from a raw request) answers who a token is, for
    which audiences; invalid tokens and a missing token as upstream's tokenreview storage."""
    from kplane.api import protobuf

    name = _sa(server)
    token = server.kubectl("create", "token", name).stdout.strip()
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}}
    out = json.loads(server.kubectl("create", "-f", "-", "-o", "json", input=json.dumps(review)).stdout)
    status = out["status"]
    assert status["authenticated"] is True
    assert status["user"]["username"] == f"system:serviceaccount:default:{name}"
    assert status["user"]["groups"] == [
        "system:serviceaccounts",
        "system:serviceaccounts:default",
        "system:authenticated",
    ]
    assert status["audiences"] == [ISSUER]
    other = server.kubectl("create", "token", name, "--audience", "vault").stdout.strip()
    body = protobuf.encode({**review, "spec": {"token": other, "audiences": ["vault", "nope"]}})
    resp = api.post(
        "/apis/authentication.k8s.io/v1/tokenreviews",
        body,
        content_type="application/vnd.kubernetes.protobuf",
    )
    assert resp.status == 201, resp.body
    assert resp.json()["status"]["audiences"] == ["vault"]
    bad = api.post("/apis/authentication.k8s.io/v1/tokenreviews", {**review, "spec": {"token": "garbage"}})
    assert bad.status == 201 and bad.json()["status"] == {"user": {}, "error": "invalid bearer token"}
    missing = api.post("/apis/authentication.k8s.io/v1/tokenreviews", {**review, "spec": {}})
    st = assert_status(missing, 400, "BadRequest")
    assert st["message"] == "token is required for TokenReview in authentication"
