"""``orch market``: the helper-lemma tickets that ``fill --profile 2`` publishes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from ..ledger import Ledger
from .common import (
    EXIT_BAD_INPUT,
    fail,
    open_ledger,
    out,
)
from .options import (
    LedgerOpt,
)

market_app = typer.Typer(help="The helper-lemma market: tickets published by `fill --profile 2`.")


def _market_ledger(db: str | None) -> Ledger:
    return open_ledger(db, Path.cwd())


@market_app.command("list")
def market_list_command(
    state: Annotated[str | None, typer.Option(help="only tickets in this state")] = None,
    db: LedgerOpt = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Every ticket: state, helper name, statement, who holds it."""
    ledger = _market_ledger(db)
    try:
        expired = ledger.expire_leases()
        rows = ledger.tickets(state)
    finally:
        ledger.close()
    if as_json:
        out.print_json(
            json.dumps(
                [
                    {"id": t.id, "state": t.state, "name": t.name, "statement": t.statement}
                    for t in rows
                ]
            )
        )
        return
    table = Table(title="helper-lemma tickets")
    for column in ("#", "state", "helper", "statement", "claimed by"):
        table.add_column(column, overflow="fold")
    for t in rows:
        table.add_row(str(t.id), t.state, t.name, t.statement, t.claimed_by or "")
    out.print(table)
    if expired:
        out.print(f"{expired} expired lease(s) returned to open")


@market_app.command("show")
def market_show_command(ticket_id: int, db: LedgerOpt = None) -> None:
    """One ticket in full, with its proof when completed."""
    ledger = _market_ledger(db)
    try:
        ticket = ledger.ticket(ticket_id)
    finally:
        ledger.close()
    if ticket is None:
        raise fail(f"no ticket {ticket_id}", EXIT_BAD_INPUT)
    out.print(f"ticket {ticket.id}: {ticket.state}")
    out.print(f"helper    {ticket.name}")
    out.print(f"statement {ticket.statement}")
    out.print(f"for goal  {ticket.parent_goal_id}")
    out.print(f"priority  {ticket.priority}")
    if ticket.claimed_by:
        out.print(f"claimed by {ticket.claimed_by} until {ticket.lease_until}")
    if ticket.proof:
        out.print("proof     " + " ".join(ticket.proof))


@market_app.command("cancel")
def market_cancel_command(ticket_id: int, db: LedgerOpt = None) -> None:
    """Cancel an open or claimed ticket."""
    ledger = _market_ledger(db)
    try:
        cancelled = ledger.cancel_ticket(ticket_id)
    finally:
        ledger.close()
    if not cancelled:
        raise fail(f"ticket {ticket_id} does not exist or is not open or claimed", EXIT_BAD_INPUT)
    out.print(f"ticket {ticket_id} cancelled")
