"""Leader election with a ``coordination.k8s.io/v1`` Lease, client-go's algorithm and defaults.

Design note. Candidates race to write themselves into one Lease; the resourceVersion of the Lease
they last read makes each write an optimistic compare-and-swap, so at most one wins. Remote
timestamps are never trusted: a candidate notes, on its own monotonic clock, when it last saw the
Lease *change*, and treats the holder as alive until ``leaseDurationSeconds`` after that. So clock
skew between machines does not matter, only the rate of time does.

Numbers (reference/controllers.md §4): lease 15 s, renew deadline 10 s, retry 2 s; candidates retry
every ``retry_period * (1 + rand * 1.2)``; the leader renews every ``retry_period`` and gives up
(leadership lost) if no renewal succeeded within ``renew_deadline``. Validation: lease duration >
renew deadline > 1.2 x retry period > 0.

Where kplane differs from client-go: ``release_on_cancel`` defaults to True. Cancelling ``run()``
(a clean shutdown) writes an empty holder with ``leaseDurationSeconds=1``, so a standby takes over
at its next retry instead of after a whole lease duration; a crashed leader still costs one lease
duration. When leadership is lost instead, ``run()`` returns after ``on_stopped_leading``; the
usual reaction is to exit the process (controller-runtime does), because work started as leader
may still be running elsewhere in it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import inspect
import logging
import math
import random
import socket
import uuid
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Protocol

from kplane._util import backoff as backoff_mod
from kplane._util import clock as clock_mod
from kplane.api import errors

log = logging.getLogger(__name__)

Object = dict[str, Any]
JITTER_FACTOR = 1.2
MICRO_TIME_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"


class LeaseClient(Protocol):
    """The verbs a Lease lock needs; a namespaced ``DynamicClient`` resource client for leases fits."""

    async def get(self, name: str) -> Object: ...

    async def create(self, obj: Object) -> Object: ...

    async def update(self, obj: Object) -> Object: ...


@dataclasses.dataclass(frozen=True)
class LeaderElectionRecord:
    """The election state a Lease's spec holds; times are wall-clock UTC."""

    holder_identity: str = ""
    lease_duration_seconds: int = 0
    acquire_time: datetime.datetime | None = None
    renew_time: datetime.datetime | None = None
    leader_transitions: int = 0

    @classmethod
    def from_lease(cls, lease: Object) -> LeaderElectionRecord:
        spec = lease.get("spec") or {}
        return cls(
            holder_identity=str(spec.get("holderIdentity") or ""),
            lease_duration_seconds=int(spec.get("leaseDurationSeconds") or 0),
            acquire_time=_parse_time(spec.get("acquireTime")),
            renew_time=_parse_time(spec.get("renewTime")),
            leader_transitions=int(spec.get("leaseTransitions") or 0),
        )

    def to_spec(self) -> Object:
        spec: Object = {
            "holderIdentity": self.holder_identity,
            "leaseDurationSeconds": self.lease_duration_seconds,
            "leaseTransitions": self.leader_transitions,
        }
        if self.acquire_time is not None:
            spec["acquireTime"] = _format_time(self.acquire_time)
        if self.renew_time is not None:
            spec["renewTime"] = _format_time(self.renew_time)
        return spec


class LeaseLock:
    """The Lease ``namespace/name`` as a lock; ``identity`` names this candidate (unique per process)."""

    def __init__(self, client: LeaseClient, *, namespace: str, name: str, identity: str = "") -> None:
        self.client = client
        self.namespace = namespace
        self.name = name
        self.identity = identity or default_identity()
        self._lease: Object | None = None

    async def get(self) -> LeaderElectionRecord:
        """The current record; raises ``errors.NotFound`` when the Lease does not exist."""
        self._lease = await self.client.get(self.name)
        return LeaderElectionRecord.from_lease(self._lease)

    async def create(self, record: LeaderElectionRecord) -> None:
        lease = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": record.to_spec(),
        }
        self._lease = await self.client.create(lease)

    async def update(self, record: LeaderElectionRecord) -> None:
        """PUT ``record`` over the last Lease read or written (so a concurrent writer → Conflict)."""
        if self._lease is None:
            raise errors.NotFound(f'leases.coordination.k8s.io "{self.name}" not read yet')
        lease = {**self._lease, "spec": {**(self._lease.get("spec") or {}), **record.to_spec()}}
        self._lease = await self.client.update(lease)


@dataclasses.dataclass(frozen=True)
class LeaderCallbacks:
    """What to do as leadership comes and goes.

    ``on_started_leading`` is a coroutine function run as a task while this candidate leads; it is
    cancelled when leadership ends. If it returns by itself, the candidate steps down (releasing the
    lease if ``release_on_cancel``). ``on_stopped_leading`` runs whenever ``run()`` ends, even if this
    candidate never led. ``on_new_leader`` receives each newly observed holder identity; it runs
    inline, so keep it quick. The last two may be plain or async functions.
    """

    on_started_leading: Callable[[], Coroutine[Any, Any, None]]
    on_stopped_leading: Callable[[], Awaitable[None] | None] | None = None
    on_new_leader: Callable[[str], Awaitable[None] | None] | None = None


@dataclasses.dataclass(frozen=True)
class LeaderElectionConfig:
    """Timing of an election, in seconds (defaults: controller-runtime's)."""

    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    release_on_cancel: bool = True
    name: str = ""

    def __post_init__(self) -> None:
        if self.retry_period <= 0:
            raise ValueError("retry period must be greater than zero")
        if self.renew_deadline <= JITTER_FACTOR * self.retry_period:
            raise ValueError(f"renew deadline must be greater than retry period * {JITTER_FACTOR}")
        if self.lease_duration <= self.renew_deadline:
            raise ValueError("lease duration must be greater than renew deadline")


class LeaderElector:
    """Runs one candidate's election on ``lock``; ``run()`` once, then build a new elector."""

    def __init__(
        self,
        lock: LeaseLock,
        callbacks: LeaderCallbacks,
        config: LeaderElectionConfig | None = None,
        *,
        clock: clock_mod.Clock | None = None,
        _rand: backoff_mod.Rand = random.random,
    ) -> None:
        self.lock = lock
        self.callbacks = callbacks
        self.config = config or LeaderElectionConfig()
        self._clock: clock_mod.Clock = clock or clock_mod.RealClock()
        self._rand = _rand
        self._observed = LeaderElectionRecord()
        self._observed_time = -math.inf
        self._reported_leader = ""

    def is_leader(self) -> bool:
        """Whether the last observed record names this candidate."""
        return self._observed.holder_identity == self.lock.identity

    @property
    def leader(self) -> str:
        """The identity of the last observed holder (``""`` if none)."""
        return self._observed.holder_identity

    async def run(self) -> None:
        """Acquire, lead until leadership is lost or the work ends, then return; cancel to stop.

        Cancellation (or the leading work ending) releases the lease when ``release_on_cancel``.
        """
        work: asyncio.Task[None] | None = None
        renewing: asyncio.Task[None] | None = None
        lost = False
        try:
            await self._acquire()
            loop = asyncio.get_running_loop()
            work = loop.create_task(self.callbacks.on_started_leading())
            renewing = loop.create_task(self._renew())
            await asyncio.wait({work, renewing}, return_when=asyncio.FIRST_COMPLETED)
            lost = renewing.done()
            if lost:
                log.warning("%s: leader election lost", self.lock.identity)
            elif not work.cancelled() and work.exception() is not None:
                log.error("%s: the leading work failed", self.lock.identity, exc_info=work.exception())
        finally:
            for task in (work, renewing):
                if task is not None and not task.done():
                    task.cancel()
                    await asyncio.gather(task, return_exceptions=True)
            if not lost:
                await asyncio.shield(self._release())
            if self.callbacks.on_stopped_leading is not None:
                await _call(self.callbacks.on_stopped_leading)

    # The loops.

    async def _acquire(self) -> None:
        while not await self._try_acquire_or_renew():
            delay = backoff_mod.jittered(self.config.retry_period, JITTER_FACTOR, rand=self._rand)
            await self._clock.sleep(delay)
        log.info("%s: acquired lease %s/%s", self.lock.identity, self.lock.namespace, self.lock.name)

    async def _renew(self) -> None:
        """Renew every retry period; return when a renewal could not succeed within the deadline."""
        cfg = self.config
        while True:
            deadline = self._clock.monotonic() + cfg.renew_deadline
            while True:
                remaining = deadline - self._clock.monotonic()
                if remaining <= 0:
                    return
                try:
                    async with asyncio.timeout(max(min(remaining, max(cfg.renew_deadline / 2, 1.0)), 0.001)):
                        renewed = await self._try_acquire_or_renew()
                except TimeoutError:
                    renewed = False
                if renewed:
                    break
                if not self.is_leader() and self._observed.holder_identity:
                    return  # someone else holds it now
                await self._clock.sleep(cfg.retry_period)
            await self._clock.sleep(cfg.retry_period)

    async def _try_acquire_or_renew(self) -> bool:
        now = self._clock.now()
        desired = LeaderElectionRecord(
            holder_identity=self.lock.identity,
            lease_duration_seconds=math.ceil(self.config.lease_duration),
            acquire_time=now,
            renew_time=now,
        )
        if self.is_leader() and self._lease_valid():
            renewed = dataclasses.replace(
                desired,
                acquire_time=self._observed.acquire_time,
                leader_transitions=self._observed.leader_transitions,
            )
            try:
                await self.lock.update(renewed)
            except errors.APIError as err:
                log.info("%s: fast-path renewal failed (%s)", self.lock.identity, err)
            else:
                await self._observe(renewed)
                return True
        try:
            current = await self.lock.get()
        except errors.NotFound:
            try:
                await self.lock.create(desired)
            except errors.APIError as err:
                log.info("%s: creating the lease failed (%s)", self.lock.identity, err)
                return False
            await self._observe(desired)
            return True
        except Exception as err:
            log.info("%s: reading the lease failed (%s)", self.lock.identity, err)
            return False
        if current != self._observed:
            await self._observe(current)
        if current.holder_identity and current.holder_identity != self.lock.identity and self._lease_valid():
            return False
        if current.holder_identity == self.lock.identity:
            desired = dataclasses.replace(
                desired, acquire_time=current.acquire_time, leader_transitions=current.leader_transitions
            )
        else:
            desired = dataclasses.replace(desired, leader_transitions=current.leader_transitions + 1)
        try:
            await self.lock.update(desired)
        except Exception as err:
            log.info("%s: updating the lease failed (%s)", self.lock.identity, err)
            return False
        await self._observe(desired)
        return True

    async def _release(self) -> None:
        """Give the lease up (empty holder, 1 s duration) if this candidate holds it."""
        if not self.config.release_on_cancel or not self.is_leader():
            return
        now = self._clock.now()
        released = LeaderElectionRecord(
            lease_duration_seconds=1,
            acquire_time=now,
            renew_time=now,
            leader_transitions=self._observed.leader_transitions,
        )
        for _ in range(2):
            try:
                await self.lock.update(released)
            except errors.Conflict:
                try:
                    if (await self.lock.get()).holder_identity != self.lock.identity:
                        return
                except Exception:
                    return
                continue
            except Exception as err:
                log.warning("%s: releasing the lease failed (%s)", self.lock.identity, err)
                return
            self._observed = released
            self._observed_time = self._clock.monotonic()
            log.info("%s: released lease %s/%s", self.lock.identity, self.lock.namespace, self.lock.name)
            return

    async def _observe(self, record: LeaderElectionRecord) -> None:
        self._observed = record
        self._observed_time = self._clock.monotonic()
        holder = record.holder_identity
        if holder != self._reported_leader:
            self._reported_leader = holder
            if holder and self.callbacks.on_new_leader is not None:
                await _call(self.callbacks.on_new_leader, holder)

    def _lease_valid(self) -> bool:
        return self._observed_time + self._observed.lease_duration_seconds > self._clock.monotonic()


async def _call(fn: Callable[..., Awaitable[None] | None], *args: Any) -> None:
    try:
        result = fn(*args)
        if inspect.isawaitable(result):
            await result
    except Exception:
        log.exception("leader election callback %r failed", fn)


def default_identity() -> str:
    """``hostname_uuid``, as controller-runtime builds identities."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


def _format_time(t: datetime.datetime) -> str:
    return t.astimezone(datetime.UTC).strftime(MICRO_TIME_FORMAT)


def _parse_time(value: Any) -> datetime.datetime | None:
    if not value:
        return None
    text = str(value).replace("Z", "+00:00")
    try:
        return datetime.datetime.fromisoformat(text)
    except ValueError:
        return None
