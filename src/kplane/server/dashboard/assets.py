"""The dashboard's files, read once from the package and answered from memory.

Contract: ``Assets.response(path)`` answers only names found in ``static/`` when the assets were
loaded (a fixed table: no path from a request ever reaches the file system, so ``..`` and other
tricks find nothing), each with strict security headers (``SECURITY_HEADERS``), an ETag and
``Cache-Control: no-cache`` (a browser revalidates, so an upgraded server's page is seen at once).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from importlib import resources

from aiohttp import web

PREFIX = "/dashboard"
STATIC = PREFIX + "/static/"

# default-src 'self' covers scripts, styles, images and fetch() to the API (same origin); nothing
# inline runs, the page cannot be framed, and no form or <base> can point elsewhere.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Cache-Control": "no-cache",
}

_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
}
MAX_ASSET_BYTES = 1 << 20
"""A file larger than this in ``static/`` is a packaging mistake; loading refuses it."""


@dataclass(frozen=True)
class Asset:
    body: bytes
    content_type: str
    etag: str


class Assets:
    """The files of ``static/`` (one level, known suffixes), keyed by their URL path."""

    def __init__(self) -> None:
        self.files: dict[str, Asset] = {}
        root = resources.files(__package__).joinpath("static")
        for entry in root.iterdir():
            suffix = "." + entry.name.rsplit(".", 1)[-1]
            if not entry.is_file() or suffix not in _TYPES:
                continue
            body = entry.read_bytes()
            if len(body) > MAX_ASSET_BYTES:
                raise ValueError(f"dashboard asset {entry.name} is larger than {MAX_ASSET_BYTES} bytes")
            asset = Asset(body, _TYPES[suffix], '"' + hashlib.sha256(body).hexdigest()[:32] + '"')
            self.files[STATIC + entry.name] = asset
        index = self.files[STATIC + "index.html"]
        self.files[PREFIX] = self.files[PREFIX + "/"] = index

    def response(self, request: web.BaseRequest) -> web.Response:
        """The asset at ``request.path``, 304 when the browser's copy is current, or a plain 404."""
        asset = self.files.get(request.path)
        if asset is None:
            return web.Response(status=404, text="404 page not found\n", headers=SECURITY_HEADERS)
        headers = {**SECURITY_HEADERS, "ETag": asset.etag}
        if request.headers.get("If-None-Match") == asset.etag:
            return web.Response(status=304, headers=headers)
        headers["Content-Type"] = asset.content_type
        return web.Response(body=asset.body, headers=headers)


def is_dashboard_path(path: str) -> bool:
    return path == PREFIX or path.startswith(PREFIX + "/")
