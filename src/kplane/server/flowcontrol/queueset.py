"""The seats and queues of one Limited priority level.

As upstream's queueset (``k8s.io/apiserver/pkg/util/flowcontrol/fairqueuing/queueset``), with one
seat per request: a request takes a free seat at once when no one is waiting; otherwise, with
``limitResponse: Queue``, its flow is dealt a hand of ``handSize`` of the level's ``queues`` by
shuffle sharding (the flow's hash, dealt as upstream's ``shufflesharding.Dealer``) and it joins the
shortest queue of its hand, so one flooding flow fills at most its hand and rarely all of another
flow's. A queue holds ``queueLengthLimit`` requests (beyond: ``queue-full``); a request waits at most
``wait_limit`` seconds (``time-out``); with ``limitResponse: Reject`` nothing waits
(``concurrency-limit``). A freed seat goes to the head of the next non-empty queue in round-robin
order (upstream picks the queue with the earliest virtual finish time; with equal work per request
both serve busy queues equally).
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import hashlib

from kplane._util.clock import Clock


@dataclasses.dataclass(frozen=True)
class Queuing:
    """``limitResponse.queuing``; None on a level means Reject. ``hand_size`` ≤ ``queues``."""

    queues: int
    hand_size: int
    queue_length_limit: int


def deal(hash_value: int, deck_size: int, hand_size: int) -> list[int]:
    """``hand_size`` distinct cards of ``range(deck_size)`` for ``hash_value`` (upstream's dealer:
    mixed-radix digits of the hash, each then skipping the cards already taken)."""
    remainders = []
    for i in range(hand_size):
        hash_value, remainder = divmod(hash_value, deck_size - i)
        remainders.append(remainder)
    hand: list[int] = []
    for i, card in enumerate(remainders):
        for j in range(i, 0, -1):
            if card >= remainders[j - 1]:
                card += 1
        hand.append(card)
    return hand


def flow_hash(schema: str, distinguisher: str) -> int:
    """A stable 64-bit hash of a flow (schema name and distinguisher)."""
    digest = hashlib.sha256(f"{schema}\x00{distinguisher}".encode()).digest()
    return int.from_bytes(digest[:8], "little")


class QueueSet:
    """One Limited level's ``limit`` seats and queues (see the module docstring). Loop-bound."""

    def __init__(self, limit: int, queuing: Queuing | None, wait_limit: float, clock: Clock) -> None:
        self.limit = limit
        self.queuing = queuing
        self.executing = 0
        self._wait = wait_limit
        self._clock = clock
        # queue index -> its waiters; dict order is the round-robin order (a served queue moves last)
        self._queues: dict[int, collections.deque[asyncio.Future[None]]] = {}

    def reconfigure(self, limit: int, queuing: Queuing | None) -> None:
        """New limit and queuing; waiting requests keep their queues, freed seats are handed out."""
        self.limit = limit
        self.queuing = queuing
        self._dispatch()

    def waiting(self) -> int:
        return sum(len(q) for q in self._queues.values())

    async def acquire(self, flow: int) -> str:
        """A seat for the flow of hash ``flow``: "" once held (``release`` it after), else the
        rejection reason. Cancellation while waiting gives nothing back to release."""
        if self.executing < self.limit and not self._queues:
            self.executing += 1
            return ""
        queuing = self.queuing
        if queuing is None or queuing.queue_length_limit <= 0:
            return "concurrency-limit"
        hand = deal(flow, queuing.queues, queuing.hand_size)
        index = min(hand, key=lambda i: len(self._queues.get(i, ())))
        queue = self._queues.get(index)
        if queue is None:
            queue = self._queues[index] = collections.deque()
        elif len(queue) >= queuing.queue_length_limit:
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
                self._forget(index, seat)
            raise
        finally:
            timer.cancel()
        if seat.done():
            return ""
        self._forget(index, seat)
        return "time-out"

    def release(self) -> None:
        """Give a seat back; the next queue in turn (if any) gets it."""
        self.executing -= 1
        self._dispatch()

    def _dispatch(self) -> None:
        while self.executing < self.limit and self._queues:
            index, queue = next(iter(self._queues.items()))
            del self._queues[index]
            seat = queue.popleft()
            if queue:
                self._queues[index] = queue  # back of the round
            if not seat.done():
                seat.set_result(None)
                self.executing += 1

    def _forget(self, index: int, seat: asyncio.Future[None]) -> None:
        seat.cancel()
        queue = self._queues.get(index)
        if queue is not None and seat in queue:
            queue.remove(seat)
            if not queue:
                del self._queues[index]
