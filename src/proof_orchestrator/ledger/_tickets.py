"""The helper-lemma market: tickets that workers claim with a lease, prove and complete."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from sqlalchemy import insert, select, update

from ._core import LedgerCore, retrying
from .models import Ticket, utcnow

__all__ = ["TicketMarket"]


class TicketMarket(LedgerCore):
    """Publishing, claiming, completing, releasing and cancelling tickets."""

    @retrying
    def publish_ticket(
        self,
        *,
        fingerprint: str,
        statement: str,
        name: str,
        parent_goal_id: int | None,
        priority: float = 0.0,
    ) -> tuple[int, bool]:
        """Open a ticket unless one for the same fingerprint is alive; (id, is_new)."""
        alive = ("open", "claimed", "completed")
        with self._transaction() as connection:
            found = connection.execute(
                select(Ticket.id)
                .where(Ticket.fingerprint == fingerprint, Ticket.state.in_(alive))
                .order_by(Ticket.id)
                .limit(1)
            ).scalar()
            if found is not None:
                return int(found), False
            now = utcnow()
            result = connection.execute(
                insert(Ticket)
                .values(
                    fingerprint=fingerprint,
                    statement=statement,
                    name=name,
                    parent_goal_id=parent_goal_id,
                    priority=priority,
                    state="open",
                    created_at=now,
                    updated_at=now,
                )
                .returning(Ticket.id)
            )
            return int(result.scalar_one()), True

    @retrying
    def claim_ticket(
        self, worker: str, lease_seconds: float, ticket_id: int | None = None
    ) -> Ticket | None:
        """Claim the best open ticket (or ``ticket_id``) for ``worker``; None if none is free.

        The claim is one conditional ``UPDATE``: of several workers racing for a
        ticket, exactly one changes the row and wins. A claimed ticket whose
        lease ran out counts as open.
        """
        now = utcnow()
        free = (Ticket.state == "open") | ((Ticket.state == "claimed") & (Ticket.lease_until < now))
        with self._transaction() as connection:
            query = select(Ticket.id).where(free).order_by(Ticket.priority.desc(), Ticket.id)
            if ticket_id is not None:
                query = query.where(Ticket.id == ticket_id)
            for (candidate,) in connection.execute(query.limit(20)).all():
                won = connection.execute(
                    update(Ticket)
                    .where(Ticket.id == candidate, free)
                    .values(
                        state="claimed",
                        claimed_by=worker,
                        lease_until=now + timedelta(seconds=lease_seconds),
                        updated_at=now,
                    )
                ).rowcount
                if won == 1:
                    row = connection.execute(select(Ticket).where(Ticket.id == candidate)).one()
                    return Ticket(**row._asdict())
        return None

    def _update_held(self, ticket_id: int, worker: str, **values: object) -> bool:
        """Set ``values`` on ``ticket_id`` if ``worker`` holds its claim; whether it did."""
        with self._transaction() as connection:
            held = connection.execute(
                update(Ticket)
                .where(
                    Ticket.id == ticket_id,
                    Ticket.state == "claimed",
                    Ticket.claimed_by == worker,
                )
                .values(**values, updated_at=utcnow())
            )
            return held.rowcount == 1

    @retrying
    def renew_lease(self, ticket_id: int, worker: str, lease_seconds: float) -> bool:
        """Extend ``worker``'s lease on ``ticket_id`` to ``lease_seconds`` from now (the
        heartbeat of :class:`~.leases.Lease`); False if the worker no longer holds it
        (completed, released, or claimed by another after the lease ran out)."""
        until = utcnow() + timedelta(seconds=lease_seconds)
        return self._update_held(ticket_id, worker, lease_until=until)

    @retrying
    def complete_ticket(self, ticket_id: int, worker: str, proof: Sequence[str]) -> bool:
        """Record the helper's proof; only the worker holding the claim may."""
        return self._update_held(ticket_id, worker, state="completed", proof=list(proof))

    @retrying
    def release_ticket(self, ticket_id: int, worker: str) -> None:
        """Give a claimed ticket back (the worker could not prove it)."""
        with self._transaction() as connection:
            connection.execute(
                update(Ticket)
                .where(Ticket.id == ticket_id, Ticket.claimed_by == worker)
                .values(state="open", claimed_by=None, lease_until=None, updated_at=utcnow())
            )

    @retrying
    def expire_leases(self) -> int:
        """Return every claimed ticket whose lease ran out to ``open``; how many."""
        now = utcnow()
        with self._transaction() as connection:
            return int(
                connection.execute(
                    update(Ticket)
                    .where(Ticket.state == "claimed", Ticket.lease_until < now)
                    .values(state="open", claimed_by=None, lease_until=None, updated_at=now)
                ).rowcount
            )

    @retrying
    def cancel_ticket(self, ticket_id: int) -> bool:
        with self._transaction() as connection:
            return (
                connection.execute(
                    update(Ticket)
                    .where(Ticket.id == ticket_id, Ticket.state.in_(("open", "claimed")))
                    .values(state="cancelled", updated_at=utcnow())
                ).rowcount
                == 1
            )

    @retrying
    def tickets(self, state: str | None = None) -> list[Ticket]:
        with self._session() as s:
            query = select(Ticket).order_by(Ticket.id)
            if state is not None:
                query = query.where(Ticket.state == state)
            return list(s.scalars(query))

    @retrying
    def ticket(self, ticket_id: int) -> Ticket | None:
        with self._session() as s:
            return s.get(Ticket, ticket_id)
