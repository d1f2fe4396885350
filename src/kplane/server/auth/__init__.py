"""Server authentication and credentials.

``certs`` keeps the server's PKI in its data directory (CA, serving certificate, admin client
certificate and token); ``kubeconfig`` writes the admin kubeconfig from it; ``authn`` turns a
request's client certificate (verified by ``x509``) or bearer token into a ``UserInfo``. It sits beside the
endpoints: the HTTP layer wires it in, and nothing here knows about HTTP.
"""

from kplane.server.auth.authn import (
    ANONYMOUS_PATHS,
    AUTHENTICATED_GROUP,
    Authenticator,
    InvalidTokenFile,
    RequestAuthenticator,
    TokenTable,
    UserInfo,
    load_token_file,
    parse_token_file,
)
from kplane.server.auth.certs import (
    ADMIN_GROUP,
    ADMIN_USER,
    DEFAULT_HOSTS,
    PKI,
    ensure_pki,
    issue_client_cert,
)
from kplane.server.auth.kubeconfig import admin_kubeconfig, write_admin_kubeconfig

__all__ = [
    "ADMIN_GROUP",
    "ADMIN_USER",
    "ANONYMOUS_PATHS",
    "AUTHENTICATED_GROUP",
    "DEFAULT_HOSTS",
    "PKI",
    "Authenticator",
    "InvalidTokenFile",
    "RequestAuthenticator",
    "TokenTable",
    "UserInfo",
    "admin_kubeconfig",
    "ensure_pki",
    "issue_client_cert",
    "load_token_file",
    "parse_token_file",
    "write_admin_kubeconfig",
]
