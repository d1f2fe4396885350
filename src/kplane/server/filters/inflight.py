"""Overload protection: in-flight limits with fair queuing per user.

kube-apiserver bounds the requests it serves at once (``--max-requests-inflight`` 400 reads,
``--max-mutating-requests-inflight`` 200 writes) and, with API Priority and Fairness, queues what
exceeds them in per-flow queues served fairly, so one noisy client cannot starve the others. kplane
keeps the two limits and APF's spirit in one simpler mechanism (a departure from APF's flow
schemas and priority levels, documented in ARCHITECTURE.md):

* a request beyond its kind's limit waits in its user's queue (APF's default flow distinguisher is
  the user); when a seat frees, the queues are served round-robin, one request per user in turn;
* each queue holds at most ``queue_length`` requests (APF's ``queueLengthLimit``, 50) and a request
  waits at most ``wait_timeout`` seconds (upstream: a quarter of the 60 s request timeout); beyond
  either it gets upstream's 429: ``Retry-After: 1`` and the plain-text body ``Too many requests,
  please try again later.``;
* long-running requests (watches, ``log``, ``exec``, ``attach``, ``portforward``, ``proxy``:
  upstream's ``BasicLongRunningRequestCheck``) and ``system:masters`` (upstream's max-in-flight
  exemption, APF's ``exempt`` level) are never limited.

A limit of 0 means no limit, as upstream. Rejections are counted in ``sink``
(``apiserver_flowcontrol_rejected_requests_total``, labelled by request kind and reason).
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Callable
from dataclasses import dataclass

from aiohttp import web

from kplane._util.clock import Clock
from kplane.server.auth import authn
from kplane.server.endpoints import requestinfo
from kplane.server.filters.types import Filter, Handler

LONG_RUNNING_SUBRESOURCES = frozenset({"attach", "exec", "log", "portforward", "proxy"})
_READ_ONLY = frozenset({"get", "list", "watch"})
EXEMPT_GROUP = "system:masters"
MAX_FLOWS = 1024  # distinct users queued at once; beyond, a new user's request is refused
TOO_MANY = "Too many requests, please try again later.\n"

Reject = Callable[[str, str], None]
"""``reject(request kind, reason)``: counts one refused request."""


@dataclass(frozen=True)
class Limits:
    """Seats per request kind (0: unlimited), queue bound per user, longest wait in seconds."""

    read_only: int = 400
    mutating: int = 200
    queue_length: int = 50
    wait_timeout: float = 15.0


class FairLimiter:
    """At most ``limit`` holders; waiters queued per flow and admitted round-robin across flows."""

    def __init__(self, limit: int, queue_length: int, wait_timeout: float, clock: Clock) -> None:
        self.limit = limit
        self.in_use = 0
        self._queue_length = queue_length
        self._wait = wait_timeout
        self._clock = clock
        # flow -> its waiters; dict order is the round-robin order (a served flow moves to the end)
        self._queues: dict[str, collections.deque[asyncio.Future[None]]] = {}

    def queued(self) -> int:
        return sum(len(q) for q in self._queues.values())

    async def acquire(self, flow: str) -> str:
        """Take a seat for ``flow``: "" once held (call ``release`` after), else why not
        ("queue-full" or "time-out"). Cancellation while waiting gives nothing back to release."""
        if self.in_use < self.limit and not self._queues:
            self.in_use += 1
            return ""
        queue = self._queues.get(flow)
        if queue is None:
            if self._queue_length <= 0 or len(self._queues) >= MAX_FLOWS:
                return "queue-full"
            queue = self._queues[flow] = collections.deque()
        elif len(queue) >= self._queue_length:
            return "queue-full"
        seat: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        queue.append(seat)
        timer = asyncio.ensure_future(self._clock.sleep(self._wait))
        try:
            await asyncio.wait((seat, timer), return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            if seat.done() and not seat.cancelled():
                self.release()  # granted as we were cancelled: hand it on
            else:
                self._forget(flow, seat)
            raise
        finally:
            timer.cancel()
        if seat.done():
            return ""
        self._forget(flow, seat)
        return "time-out"

    def release(self) -> None:
        """Give a seat back; the next flow in turn (if any) gets it."""
        self.in_use -= 1
        while self.in_use < self.limit and self._queues:
            flow, queue = next(iter(self._queues.items()))
            del self._queues[flow]
            seat = queue.popleft()
            if queue:
                self._queues[flow] = queue  # back of the round
            if not seat.done():
                seat.set_result(None)
                self.in_use += 1

    def _forget(self, flow: str, seat: asyncio.Future[None]) -> None:
        seat.cancel()
        queue = self._queues.get(flow)
        if queue is not None and seat in queue:
            queue.remove(seat)
            if not queue:
                del self._queues[flow]


def long_running(info: requestinfo.RequestInfo) -> bool:
    return info.verb == "watch" or info.subresource in LONG_RUNNING_SUBRESOURCES


def max_in_flight(limits: Limits, clock: Clock, reject: Reject) -> Filter:
    """The filter; it needs ``requestinfo`` and an authenticated user on the request."""
    pools = {
        "readOnly": FairLimiter(limits.read_only, limits.queue_length, limits.wait_timeout, clock),
        "mutating": FairLimiter(limits.mutating, limits.queue_length, limits.wait_timeout, clock),
    }

    async def limit(request: web.BaseRequest, handler: Handler) -> web.StreamResponse:
        info = request[requestinfo.INFO_KEY]
        user = request.get(authn.USER_KEY)
        if long_running(info) or user is None or EXEMPT_GROUP in user.groups:
            return await handler(request)
        kind = "readOnly" if (info.verb in _READ_ONLY or not info.is_resource) else "mutating"
        pool = pools[kind]
        if pool.limit <= 0:
            return await handler(request)
        refused = await pool.acquire(user.name)
        if refused:
            reject(kind, refused)
            return web.Response(
                status=429,
                text=TOO_MANY,
                headers={"Retry-After": "1", "X-Content-Type-Options": "nosniff"},
            )
        try:
            return await handler(request)
        finally:
            pool.release()

    return limit
