"""Leases that live as long as their work: a heartbeat renews every ticket a worker holds.

A ticket of the helper-lemma market is claimed with a lease
(:meth:`~.store.Ledger.claim_ticket`); a claimed ticket whose lease ran out
counts as open again. :class:`Leases` claims through the ledger and, while it
is open, renews each ticket it holds every ``lease_seconds / beats`` seconds
(:meth:`~.store.Ledger.renew_lease`), so a proof that runs longer than one
lease keeps its ticket, and a worker that dies (its heartbeat with it) loses
it after at most one lease. The heartbeat is one task, owned by the
:class:`Leases` and awaited when it closes; nothing is left running.

A holder may also say when its worker is alive (``alive``): the MCP tools
renew an agent's claim while that agent keeps calling them.
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import TracebackType

from ..errors import LedgerError
from .models import Ticket
from .store import Ledger

__all__ = ["BEATS_PER_LEASE", "LeaseState", "Leases"]

#: renewals per lease: a beat may be late by most of a lease and the ticket stays held
BEATS_PER_LEASE = 3


class LeaseState(enum.StrEnum):
    #: made, not yet entered: claims work, nothing renews them
    NEW = "new"
    #: entered: the heartbeat renews every held ticket
    OPEN = "open"
    #: closed: the heartbeat stopped (the held tickets run out); cannot be reopened
    CLOSED = "closed"


@dataclass(slots=True)
class _Held:
    worker: str
    #: whether the worker is still at it (None: as long as the lease keeper is open)
    alive: Callable[[], bool] | None


class Leases:
    """Claims tickets for workers and renews their leases while the block runs.

    ``async with Leases(ledger, 300.0) as leases: ticket = leases.claim(worker, id)``;
    :meth:`complete` and :meth:`release` end a claim (and its renewals).
    """

    def __init__(self, ledger: Ledger, lease_seconds: float, *, beats: int = BEATS_PER_LEASE):
        if lease_seconds <= 0 or beats < 1:
            raise ValueError(f"a lease needs seconds > 0 and beats >= 1: {lease_seconds}, {beats}")
        self.ledger = ledger
        self.lease_seconds = lease_seconds
        self.interval = lease_seconds / beats
        self.state = LeaseState.NEW
        #: tickets whose renewal found them no longer held by their worker
        self.lost: set[int] = set()
        #: the last ledger error a renewal met (the lease runs out if the ledger stays away)
        self.error: LedgerError | None = None
        self._held: dict[int, _Held] = {}
        self._beat: asyncio.Task[None] | None = None

    # -- lifetime --------------------------------------------------------------------

    async def __aenter__(self) -> Leases:
        if self.state is not LeaseState.NEW:
            raise RuntimeError(f"the lease keeper is {self.state.value}; it cannot be reopened")
        self._beat = asyncio.create_task(self._heartbeat(), name="ticket-leases")
        self.state = LeaseState.OPEN
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stop the heartbeat and wait for it (idempotent). The held tickets are not
        released: their leases run out, unless their worker ended them."""
        self.state = LeaseState.CLOSED
        beat, self._beat = self._beat, None
        if beat is None:
            return
        beat.cancel()
        await asyncio.wait([beat])  # a cancellation of aclose itself still propagates
        error = None if beat.cancelled() else beat.exception()
        if error is not None:
            raise error

    # -- claims ----------------------------------------------------------------------

    def claim(
        self,
        worker: str,
        ticket_id: int | None = None,
        *,
        alive: Callable[[], bool] | None = None,
    ) -> Ticket | None:
        """Claim ``ticket_id`` (or the best open ticket) for ``worker`` and keep it leased;
        None if it is not free."""
        if self.state is LeaseState.CLOSED:
            raise RuntimeError("the lease keeper is closed: nothing would renew the claim")
        ticket = self.ledger.claim_ticket(worker, self.lease_seconds, ticket_id)
        if ticket is not None:
            self._held[ticket.id] = _Held(worker, alive)
            self.lost.discard(ticket.id)
        return ticket

    def holds(self, ticket_id: int) -> bool:
        return ticket_id in self._held

    def complete(self, ticket_id: int, worker: str, proof: Sequence[str]) -> bool:
        """Record the helper's proof (only the worker holding the claim may); the claim ends."""
        self._held.pop(ticket_id, None)
        return self.ledger.complete_ticket(ticket_id, worker, proof)

    def release(self, ticket_id: int, worker: str) -> None:
        """Give the ticket back to the market at once."""
        self._held.pop(ticket_id, None)
        self.ledger.release_ticket(ticket_id, worker)

    # -- the heartbeat -----------------------------------------------------------------

    def renew(self) -> None:
        """One beat: extend every held ticket whose worker is alive by one lease."""
        for ticket_id, held in list(self._held.items()):
            if held.alive is not None and not held.alive():
                continue  # its worker went quiet: the lease runs out
            try:
                kept = self.ledger.renew_lease(ticket_id, held.worker, self.lease_seconds)
            except LedgerError as exc:
                self.error = exc
                continue
            if not kept:
                self._held.pop(ticket_id, None)
                self.lost.add(ticket_id)

    async def _heartbeat(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            self.renew()
