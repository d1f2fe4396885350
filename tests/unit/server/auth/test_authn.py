from __future__ import annotations

from pathlib import Path

import pytest

import kplane.server.auth
from kplane._util.clock import RealClock
from kplane.server.auth import authn, certs, x509

from .conftest import TLSServerFactory, present


@pytest.fixture
def pki(tmp_path: Path) -> certs.PKI:
    return certs.ensure_pki(tmp_path / "data")


@pytest.fixture
def certificates() -> x509.ClientCertificates:
    return x509.ClientCertificates(RealClock())


@pytest.fixture
def authenticator(
    pki: certs.PKI, tmp_path: Path, certificates: x509.ClientCertificates
) -> authn.Authenticator:
    tokens = tmp_path / "tokens.csv"
    tokens.write_text('bobtoken,bob,uid-bob,"devs,viewers"\n')
    return authn.Authenticator.from_pki(pki, token_file=tokens, certificates=certificates)


async def test_cert_user(
    authenticator: authn.Authenticator,
    certificates: x509.ClientCertificates,
    pki: certs.PKI,
    tls_server: TLSServerFactory,
    tmp_path: Path,
) -> None:
    """A cert of our CA, presented in a handshake, maps CN to the user name and each O to a group,
    plus system:authenticated."""
    cert, key = certs.issue_client_cert(pki, "alice", ["devs", "ops"])
    srv = await present(tls_server, pki, certificates, cert, key, tmp_path)
    user = authenticator.authenticate_certificate(srv.peerders[0], srv.peercerts[0] or {})
    assert user == authn.UserInfo(name="alice", groups=("devs", "ops", "system:authenticated"))


async def test_cert_of_another_ca_is_an_error(
    authenticator: authn.Authenticator,
    certificates: x509.ClientCertificates,
    pki: certs.PKI,
    tls_server: TLSServerFactory,
    tmp_path: Path,
) -> None:
    """A cert signed by another CA completes the handshake but is an error (the request gets
    401), not "no credentials"; so is one no handshake of this server presented."""
    other = certs.ensure_pki(tmp_path / "other")
    cert, key = certs.issue_client_cert(other, "mallory", ["system:masters"])
    srv = await present(tls_server, pki, certificates, cert, key, tmp_path)
    with pytest.raises(ValueError, match="unable to get local issuer certificate"):
        authenticator.authenticate_certificate(srv.peerders[0], srv.peercerts[0] or {})
    with pytest.raises(ValueError):
        authenticator.authenticate_certificate(b"\x30\x03garbage", {})


def test_certificates_refused_without_verifier() -> None:
    """An authenticator built without a certificate verifier accepts no certificate."""
    with pytest.raises(ValueError):
        authn.Authenticator(authn.TokenTable()).authenticate_certificate(b"\x30\x00", {})


def test_admin_token(authenticator: authn.Authenticator, pki: certs.PKI) -> None:
    """The PKI's admin token authenticates kplane-admin in system:masters."""
    user = authenticator.authenticate(f"Bearer {pki.admin_token()}")
    assert user == authn.UserInfo(name="kplane-admin", groups=("system:masters", "system:authenticated"))


def test_token_file_user(authenticator: authn.Authenticator) -> None:
    """A token from the token file authenticates its user, uid and groups; the scheme is case-insensitive."""
    user = authenticator.authenticate("bearer   bobtoken ")
    assert user == authn.UserInfo(
        name="bob", uid="uid-bob", groups=("devs", "viewers", "system:authenticated")
    )


def test_a_token_gives_the_same_user_each_time(authenticator: authn.Authenticator) -> None:
    """A token's user (system:authenticated added) is one object across requests, so the memos that
    key on a user's identity (authorization attributes, a write's requester) hit for token clients."""
    first = authenticator.authenticate("Bearer bobtoken")
    again = authenticator.authenticate("Bearer bobtoken")
    assert first is not None and first is again
    assert first.groups == ("devs", "viewers", "system:authenticated")


@pytest.mark.parametrize(
    "header",
    [None, "", "Bearer", "Bearer ", "Bearer wrong", "Bearer bobtoke", "Bearer bobtokenx",
     "Basic Ym9iOng=", "Bearer bob token", "bobtoken"],
    ids=["none", "empty", "no-token", "blank-token", "wrong", "prefix", "longer",
         "basic", "space", "no-scheme"],
)  # fmt: skip
def test_no_valid_credentials(authenticator: authn.Authenticator, header: str | None) -> None:
    """Anything but a known bearer token is anonymous (None)."""
    assert authenticator.authenticate(header) is None


def test_token_table_lookup() -> None:
    """The table finds exact tokens only, and a re-added token maps to its new user."""
    table = authn.TokenTable([("t1", authn.UserInfo("a")), ("t2", authn.UserInfo("b"))])
    table.add("t1", authn.UserInfo("c"))
    assert len(table) == 2
    assert table.lookup("t1") == authn.UserInfo("c")
    assert table.lookup("t2") == authn.UserInfo("b")
    assert table.lookup("t3") is None
    with pytest.raises(ValueError):
        table.add("", authn.UserInfo("d"))


def test_parse_token_file() -> None:
    """Upstream's CSV: quoted group lists, optional groups, blank lines and a BOM are handled."""
    text = '\ufefftok1,alice,1001,"devs, ops,,devs"\n\ntok2, bob ,1002\n"tok,3",carol,,viewers,extra\n'
    entries = authn.parse_token_file(text)
    assert entries == [
        ("tok1", authn.UserInfo(name="alice", uid="1001", groups=("devs", "ops"))),
        ("tok2", authn.UserInfo(name="bob", uid="1002")),
        ("tok,3", authn.UserInfo(name="carol", uid="", groups=("viewers",))),
    ]


@pytest.mark.parametrize(
    "text",
    ["tok1,alice\n", "ok,a,1\n,bob,1\n", "tok,,1\n", 'tok,"alice,1\n'],
    ids=["two-columns", "empty-token", "empty-user", "unclosed-quote"],
)
def test_parse_token_file_errors(text: str) -> None:
    """Malformed lines raise InvalidTokenFile naming the source."""
    with pytest.raises(authn.InvalidTokenFile, match=r"tokens\.csv"):
        authn.parse_token_file(text, source="tokens.csv")


def test_load_token_file_names_line(tmp_path: Path) -> None:
    """Errors from a file name the file and the line number."""
    path = tmp_path / "t.csv"
    path.write_text("a,b,c\nshort\n")
    with pytest.raises(authn.InvalidTokenFile, match=r"t\.csv:2:"):
        authn.load_token_file(path)


def test_anonymous_paths() -> None:
    """Only the public info endpoints are open to anonymous requests."""
    assert {"/version", "/healthz", "/livez", "/readyz"} <= authn.ANONYMOUS_PATHS
    assert "/api" not in authn.ANONYMOUS_PATHS and "/healthz/etcd" not in authn.ANONYMOUS_PATHS


def test_public_surface() -> None:
    """The package exports exactly its documented names, each of which exists."""
    assert sorted(kplane.server.auth.__all__) == sorted(
        [
            "ADMIN_GROUP", "ADMIN_USER", "ANONYMOUS_PATHS", "AUTHENTICATED_GROUP", "DEFAULT_HOSTS", "PKI",
            "Authenticator", "InvalidTokenFile", "RequestAuthenticator", "TokenTable", "UserInfo",
            "admin_kubeconfig", "ensure_pki", "issue_client_cert", "load_token_file", "parse_token_file",
            "write_admin_kubeconfig",
        ]
    )  # fmt: skip
    for name in kplane.server.auth.__all__:
        assert hasattr(kplane.server.auth, name), name
