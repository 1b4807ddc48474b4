"""The ledger on SQLite: WAL mode, recording, clear errors."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from proof_orchestrator.errors import LedgerError
from proof_orchestrator.goals import Goal, HoleKind, Outcome
from proof_orchestrator.ledger import Ledger

GOAL = Goal(Path("/p/A.v"), 3, "a", "Lemma a : True.", HoleKind.ADMITTED, "fp-a")


def test_sqlite_runs_in_wal_mode(ledger: Ledger, tmp_path: Path) -> None:
    with sqlite3.connect(tmp_path / "ledger.sqlite") as connection:
        (mode,) = connection.execute("PRAGMA journal_mode").fetchone()
    assert mode == "wal"


def test_attempts_proofs_and_tactic_cache_are_recorded(ledger: Ledger) -> None:
    run = ledger.start_run("fill", {"paths": ["A.v"]}, "8.16.1")
    goal_id = ledger.upsert_goal(GOAL)
    assert ledger.upsert_goal(GOAL) == goal_id  # same file, name and fingerprint: same row
    ledger.record_attempt(
        run_id=run,
        goal_id=goal_id,
        fingerprint="fp-a",
        strategy="micro",
        outcome=Outcome.FAILED,
        cpu_seconds=0.5,
    )
    assert ledger.verified_proof("fp-a") is None
    for _ in range(2):  # the same proof twice: one cache entry, counted twice
        ledger.record_proof(
            run_id=run,
            goal_id=goal_id,
            fingerprint="fp-a",
            sentences=["exact I."],
            strategy="micro",
            prover_version="8.16.1",
            diff="",
            written=True,
        )
    ledger.finish_run(run, "finished", {"proved": 1})
    assert ledger.verified_proof("fp-a") == ("exact I.",)
    assert ledger.cached_tactics("fp-a") == ["exact I."]
    stats = ledger.stats()
    assert stats["goals"] == {"proved": 1}
    assert stats["attempts"] == {"failed": 1}
    assert stats["recent_runs"][0]["status"] == "finished"


def test_unopenable_ledger_is_a_ledger_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(LedgerError, match="cannot open the ledger"):
        Ledger(f"sqlite:///{blocker / 'sub' / 'ledger.sqlite'}")


def test_corrupt_ledger_is_a_ledger_error(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(LedgerError, match="cannot open the ledger"):
        Ledger(f"sqlite:///{path}")


def test_locked_ledger_is_a_ledger_error(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite"
    ledger = Ledger(f"sqlite:///{path}", busy_timeout=0.2)
    holder = sqlite3.connect(path, timeout=0.1)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(LedgerError, match="could not be written"):
            ledger.start_run("fill", {}, "")
    finally:
        holder.rollback()
        holder.close()
        ledger.close()
