"""The pieces under ``RESTClient``: the pooled HTTP session, the client-side rate limit, Warning headers.

Each piece is small and separately testable; ``kplane.client.rest`` composes them into requests.

* ``new_session`` builds one ``aiohttp.ClientSession`` per client: a keep-alive pool of up to
  ``POOL_LIMIT`` connections, TLS from ``Config.ssl_context()`` (client certificate included), the
  configured ``tls_server_name`` checked instead of the URL's host, and ``proxy_url`` if set.
* ``TokenBucket`` is client-go's ``flowcontrol`` token bucket: ``qps`` tokens a second, up to
  ``burst`` saved; a request waits for a token, on the injected clock.
* ``parse_warnings`` reads RFC 7234 ``Warning`` headers (``299 - "text"``, possibly several per
  header) and ``WarningDeduplicator`` is the default handler: it logs each distinct text once.
* ``retry_after`` is client-go's ``checkWait``: a 429 or a 5xx reply with an integral
  ``Retry-After`` header asks for a retry after that many seconds.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Protocol

from kplane._util import aiohttpimport
from kplane._util import clock as clock_mod
from kplane.client import config as config_mod

if TYPE_CHECKING:
    import aiohttp
else:  # without parsing the system CA bundle when that changes nothing (see aiohttpimport)
    aiohttp = aiohttpimport.import_aiohttp()

POOL_LIMIT = 100
"""Connections kept per client (client-go's transport allows 25 idle per host; aiohttp pools per client)."""

log = logging.getLogger("kplane.client")

SessionFactory = Callable[[], Awaitable[aiohttp.ClientSession]]
"""Builds the session a client uses; called once, lazily, inside the running event loop."""


async def new_session(config: config_mod.Config) -> aiohttp.ClientSession:
    """A pooled session for ``config``: TLS, client certificate, its proxy, no session-level timeout.

    Authentication headers are not baked in (they rotate); the caller adds them per request.
    """
    connector: aiohttp.TCPConnector
    if config.host.startswith("https://"):
        ssl_ctx = config.ssl_context(client_cert=await config.client_cert())
        connector = aiohttp.TCPConnector(limit=POOL_LIMIT, ssl=ssl_ctx, enable_cleanup_closed=True)
    else:
        connector = aiohttp.TCPConnector(limit=POOL_LIMIT)
    return aiohttp.ClientSession(
        connector=connector,
        timeout=aiohttp.ClientTimeout(total=None),
        headers={"User-Agent": config.user_agent},
        skip_auto_headers=("Content-Type",),
        auto_decompress=True,
        proxy=config.proxy_url or None,
    )


class TokenBucket:
    """client-go's token-bucket rate limiter: ``qps`` per second on average, bursts up to ``burst``.

    ``acquire()`` returns once a token is available; waiters are served in call order because each
    reserves its token (possibly going into debt) before sleeping. ``qps <= 0`` never waits.
    """

    def __init__(self, qps: float, burst: int, *, clock: clock_mod.Clock) -> None:
        self._qps = qps
        self._burst = max(1, burst)
        self._clock = clock
        self._tokens = float(self._burst)
        self._last = clock.monotonic()

    async def acquire(self) -> None:
        if self._qps <= 0:
            return
        now = self._clock.monotonic()
        self._tokens = min(float(self._burst), self._tokens + (now - self._last) * self._qps)
        self._last = now
        self._tokens -= 1.0
        if self._tokens < 0:
            await self._clock.sleep(-self._tokens / self._qps)


class WarningHandler(Protocol):
    """Receives each warning a server attaches to a response (``code`` is 299 for API warnings)."""

    def __call__(self, code: int, agent: str, text: str) -> None: ...


class WarningDeduplicator:
    """The default ``WarningHandler``: logs each distinct warning text once, at WARNING level."""

    def __init__(self) -> None:
        self._seen: set[str] = set()

    def __call__(self, code: int, agent: str, text: str) -> None:
        if text in self._seen:
            return
        self._seen.add(text)
        log.warning("Warning: %s", text)


_WARNING = re.compile(
    r"""\s*(?P<code>\d{3})\s+(?P<agent>\S+)\s+"(?P<text>(?:[^"\\]|\\.)*)"(?:\s+"[^"]*")?\s*(?:,|$)"""
)


def parse_warnings(values: Iterable[str]) -> list[tuple[int, str, str]]:
    """Every ``(code, agent, text)`` in the given ``Warning`` header values, in order.

    Malformed entries are skipped (client-go drops what it cannot parse); ``\\"`` and ``\\\\``
    escapes in the quoted text are undone.
    """
    out: list[tuple[int, str, str]] = []
    for value in values:
        pos = 0
        while pos < len(value):
            m = _WARNING.match(value, pos)
            if m is None:
                break
            text = re.sub(r"\\(.)", r"\1", m.group("text"))
            out.append((int(m.group("code")), m.group("agent"), text))
            pos = m.end()
    return out


MAX_RETRIES = 10
"""client-go's ``maxRetries`` for replies that carry ``Retry-After``."""


def retry_after(status: int, header: str | None) -> float | None:
    """Seconds to wait before retrying a reply, or None if it must not be retried (``checkWait``)."""
    if status != 429 and status < 500:
        return None
    if header is None:
        return None
    try:
        seconds = int(header.strip())
    except ValueError:
        return None
    return float(max(0, seconds))
