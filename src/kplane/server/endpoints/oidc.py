"""ServiceAccount issuer discovery: ``/.well-known/openid-configuration`` and ``/openid/v1/jwks``,
with upstream's shapes, media types and caching (``pkg/serviceaccount/openidmetadata.go``).

Served only when the issuer is an ``https`` URL without query or fragment, as upstream. ``jwks_uri``
is ``https://<the server's address>/openid/v1/jwks`` (upstream's default without
``--service-account-jwks-uri``). Both documents are built once: the key does not change while the
server runs.
"""

from __future__ import annotations

import urllib.parse

import orjson
from aiohttp import web

from kplane.server.auth import jwt

CONFIGURATION_PATH = ("", ".well-known", "openid-configuration")
JWKS_PATH = ("openid", "v1", "jwks")
_CACHE = "public, max-age=3600"


def servable(issuer: str) -> bool:
    """Whether upstream would serve discovery for ``issuer``."""
    url = urllib.parse.urlsplit(issuer)
    return url.scheme == "https" and bool(url.netloc) and not url.query and not url.fragment


class Discovery:
    """The two documents of one issuer and key."""

    def __init__(self, issuer: str, key: jwt.SigningKey) -> None:
        self.issuer = issuer
        self._jwks = orjson.dumps({"keys": [key.jwk()]})
        self._config: bytes | None = None

    def configuration(self, server_address: str) -> web.Response:
        if self._config is None:
            self._config = orjson.dumps(
                {
                    "issuer": self.issuer,
                    "jwks_uri": f"https://{server_address}/openid/v1/jwks",
                    "response_types_supported": ["id_token"],
                    "subject_types_supported": ["public"],
                    "id_token_signing_alg_values_supported": ["RS256"],
                }
            )
        return web.Response(
            body=self._config, headers={"Content-Type": "application/json", "Cache-Control": _CACHE}
        )

    def jwks(self) -> web.Response:
        return web.Response(
            body=self._jwks, headers={"Content-Type": "application/jwk-set+json", "Cache-Control": _CACHE}
        )
