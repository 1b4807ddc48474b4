"""The helper-lemma market: tickets in the ledger (both backends) and a proof through it
with real Coq."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from typer.testing import CliRunner

from proof_orchestrator.cli import app
from proof_orchestrator.coq.strategies.market import canonical_statement
from proof_orchestrator.goals import Goal, HoleKind
from proof_orchestrator.ledger import Ledger

from .conftest import coqc_ok

runner = CliRunner()

GOAL = Goal(Path("/p/A.v"), 3, "a", "Lemma a : True.", HoleKind.ADMITTED, "fp-a")

# A commutativity proof that needs two auxiliary lemmas, each by its own induction.
# The type is the file's own, so no library hint applies.
NUM = """\
Inductive num : Type := zero : num | succ : num -> num.

Fixpoint plus (n m : num) : num :=
  match n with
  | zero => m
  | succ p => succ (plus p m)
  end.

Lemma plus_comm : forall n m : num, plus n m = plus m n.
Proof.
Admitted.

Lemma after : forall n : num, plus n zero = plus zero n.
Proof.
Admitted.
"""


def _publish(ledger: Ledger, statement: str = "forall m : num, m = plus m zero") -> int:
    goal_id = ledger.upsert_goal(GOAL)
    ticket_id, new = ledger.publish_ticket(
        fingerprint=canonical_statement(statement),
        statement=statement,
        name="a_helper1",
        parent_goal_id=goal_id,
        priority=2.0,
    )
    assert new
    return ticket_id


def test_requests_are_deduplicated_up_to_renaming(any_ledger_url: str) -> None:
    ledger = Ledger(any_ledger_url)
    try:
        first = _publish(ledger)
        again, new = ledger.publish_ticket(
            fingerprint=canonical_statement("forall x : num, x = plus x zero"),
            statement="forall x : num, x = plus x zero",
            name="b_helper1",
            parent_goal_id=None,
        )
        assert (again, new) == (first, False)
        assert canonical_statement("forall (a b : num), plus a b = plus b a") == (
            canonical_statement("forall (n m : num), plus n m = plus m n")
        )
    finally:
        ledger.close()


def test_two_workers_racing_for_one_ticket_exactly_one_wins(any_ledger_url: str) -> None:
    ledger = Ledger(any_ledger_url)
    ticket_id = _publish(ledger)
    ledger.close()
    winners: list[str] = []
    barrier = threading.Barrier(2)

    def worker(name: str) -> None:
        mine = Ledger(any_ledger_url, busy_timeout=30)
        try:
            barrier.wait(timeout=30)
            for _ in range(20):  # many attempts each, to give the race every chance
                claimed = mine.claim_ticket(name, 300, ticket_id)
                if claimed is not None:
                    winners.append(name)
        finally:
            mine.close()

    threads = [threading.Thread(target=worker, args=(f"w{i}",)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(winners) == 1
    ledger = Ledger(any_ledger_url)
    try:
        ticket = ledger.ticket(ticket_id)
        assert ticket is not None
        assert ticket.state == "claimed"
        assert ticket.claimed_by == winners[0]
        # only the holder may complete it
        loser = "w1" if winners[0] == "w0" else "w0"
        assert not ledger.complete_ticket(ticket_id, loser, ["auto."])
        assert ledger.complete_ticket(ticket_id, winners[0], ["auto."])
    finally:
        ledger.close()


def test_an_expired_lease_returns_the_ticket_to_open(any_ledger_url: str) -> None:
    ledger = Ledger(any_ledger_url)
    try:
        ticket_id = _publish(ledger)
        # a lease long enough that a loaded machine cannot let it run out between
        # the two claims (0.2 s did, on a fresh clone's CI-like run)
        claimed = ledger.claim_ticket("slow-worker", 2.0, ticket_id)
        assert claimed is not None
        assert ledger.claim_ticket("other", 300, ticket_id) is None  # leased
        time.sleep(2.3)
        assert ledger.expire_leases() == 1
        ticket = ledger.ticket(ticket_id)
        assert ticket is not None
        assert (ticket.state, ticket.claimed_by) == ("open", None)
        again = ledger.claim_ticket("other", 300, ticket_id)
        assert again is not None
        assert again.claimed_by == "other"
        assert not ledger.complete_ticket(ticket_id, "slow-worker", ["auto."])
    finally:
        ledger.close()


def test_a_goal_is_proved_through_helper_lemmas(tmp_path: Path) -> None:
    path = tmp_path / "Num.v"
    path.write_text(NUM, encoding="utf-8")
    db = f"sqlite:///{tmp_path / 'ledger.db'}"
    # the default profile (quick tactics, search; no hammer without CoqHammer loaded) cannot
    quick = runner.invoke(app, ["fill", str(path), "--profile", "1", "--db", db])
    assert quick.exit_code == 0, quick.output
    assert "Admitted." in path.read_text(encoding="utf-8").split("Lemma after")[0]
    result = runner.invoke(app, ["fill", str(path), "--profile", "2", "--db", db])
    assert result.exit_code == 0, result.output
    text = path.read_text(encoding="utf-8")
    assert "Admitted." not in text.split("Lemma after")[0]
    # the helpers sit just before the lemma that needed them
    helpers = text.index("Lemma plus_comm_helper1"), text.index("Lemma plus_comm_helper2")
    assert max(helpers) < text.index("Lemma plus_comm :")
    assert "exact plus_comm_helper" in text
    assert coqc_ok(path)
    listed = runner.invoke(app, ["market", "list", "--db", db])
    assert listed.exit_code == 0
    assert listed.output.count("completed") >= 2
    ledger = Ledger(db)
    try:
        completed = ledger.tickets("completed")
        assert {t.name for t in completed} >= {"plus_comm_helper1", "plus_comm_helper2"}
        assert all(t.proof for t in completed)
        shown = runner.invoke(app, ["market", "show", str(completed[0].id), "--db", db])
        assert "proof" in shown.output
    finally:
        ledger.close()


def test_market_cancel(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'ledger.db'}"
    ledger = Ledger(db)
    try:
        ticket_id = _publish(ledger)
    finally:
        ledger.close()
    assert runner.invoke(app, ["market", "cancel", str(ticket_id), "--db", db]).exit_code == 0
    again = runner.invoke(app, ["market", "cancel", str(ticket_id), "--db", db])
    assert again.exit_code == 2
    listed = runner.invoke(app, ["market", "list", "--json", "--db", db])
    assert '"cancelled"' in listed.stdout
