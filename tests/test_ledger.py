"""The ledger on SQLite and on a real PostgreSQL: migrations, recording, concurrent writers,
clear errors."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import create_engine, inspect, text

from proof_orchestrator.errors import LedgerError
from proof_orchestrator.goals import Goal, HoleKind, Outcome
from proof_orchestrator.ledger import Ledger
from proof_orchestrator.ledger.models import Base
from proof_orchestrator.scheduler.bandit import ArmStats

GOAL = Goal(Path("/p/A.v"), 3, "a", "Lemma a : True.", HoleKind.ADMITTED, "fp-a")


def test_sqlite_runs_in_wal_mode(ledger: Ledger, tmp_path: Path) -> None:
    with sqlite3.connect(tmp_path / "ledger.sqlite") as connection:
        (mode,) = connection.execute("PRAGMA journal_mode").fetchone()
    assert mode == "wal"


def test_attempts_proofs_and_tactic_cache_are_recorded(any_ledger_url: str) -> None:
    ledger = Ledger(any_ledger_url)
    try:
        _record_and_read(ledger)
    finally:
        ledger.close()


def _record_and_read(ledger: Ledger) -> None:
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
    assert ledger.proved_statements() == [("Lemma a : True.", ("exact I.",))]
    assert ledger.proved_statements("lean") == []
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


def test_migrations_make_exactly_the_models_schema(any_ledger_url: str) -> None:
    Ledger(any_ledger_url).close()
    engine = create_engine(any_ledger_url)
    try:
        with engine.connect() as connection:
            differences = compare_metadata(MigrationContext.configure(connection), Base.metadata)
            (version,) = connection.execute(text("SELECT version_num FROM alembic_version")).one()
    finally:
        engine.dispose()
    assert differences == []
    assert version == "0009"


# the schema written by the first release, before migrations existed
_FIRST_RELEASE = """
CREATE TABLE runs (id INTEGER PRIMARY KEY, command VARCHAR(32) NOT NULL, arguments JSON NOT NULL,
  started_at TIMESTAMP NOT NULL, finished_at TIMESTAMP, status VARCHAR(16) NOT NULL,
  prover_version VARCHAR(64) NOT NULL, summary JSON NOT NULL);
CREATE TABLE goals (id INTEGER PRIMARY KEY, fingerprint VARCHAR(64) NOT NULL, file TEXT NOT NULL,
  name VARCHAR(255) NOT NULL, line INTEGER NOT NULL, statement TEXT NOT NULL,
  language VARCHAR(16) NOT NULL, status VARCHAR(16) NOT NULL, first_seen TIMESTAMP NOT NULL,
  updated_at TIMESTAMP NOT NULL, UNIQUE (file, name, fingerprint));
CREATE INDEX ix_goals_fingerprint ON goals (fingerprint);
CREATE TABLE attempts (id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(id),
  goal_id INTEGER NOT NULL REFERENCES goals(id), fingerprint VARCHAR(64) NOT NULL,
  strategy VARCHAR(64) NOT NULL, tactic TEXT NOT NULL, outcome VARCHAR(16) NOT NULL,
  tactics_tried INTEGER NOT NULL, cpu_seconds FLOAT NOT NULL, wall_seconds FLOAT NOT NULL,
  prover_version VARCHAR(64) NOT NULL, message TEXT NOT NULL, created_at TIMESTAMP NOT NULL);
CREATE INDEX ix_attempts_run_id ON attempts (run_id);
CREATE INDEX ix_attempts_goal_id ON attempts (goal_id);
CREATE INDEX ix_attempts_fp_strategy ON attempts (fingerprint, strategy);
CREATE TABLE proofs (id INTEGER PRIMARY KEY, fingerprint VARCHAR(64) NOT NULL,
  goal_id INTEGER NOT NULL REFERENCES goals(id), run_id INTEGER NOT NULL REFERENCES runs(id),
  sentences JSON NOT NULL, strategy VARCHAR(64) NOT NULL, prover_version VARCHAR(64) NOT NULL,
  diff TEXT NOT NULL, written BOOLEAN NOT NULL, verified_at TIMESTAMP NOT NULL);
CREATE INDEX ix_proofs_fingerprint ON proofs (fingerprint);
CREATE INDEX ix_proofs_goal_id ON proofs (goal_id);
CREATE TABLE tactic_cache (fingerprint VARCHAR(64) NOT NULL, tactic TEXT NOT NULL,
  successes INTEGER NOT NULL, last_used TIMESTAMP NOT NULL, PRIMARY KEY (fingerprint, tactic));
CREATE TABLE bandit_arms (goal_class VARCHAR(128) NOT NULL, strategy VARCHAR(64) NOT NULL,
  pulls INTEGER NOT NULL, successes INTEGER NOT NULL, failures FLOAT NOT NULL,
  cpu_seconds FLOAT NOT NULL, reward FLOAT NOT NULL, PRIMARY KEY (goal_class, strategy));
INSERT INTO runs VALUES (1, 'fill', '{}', '2026-01-01 00:00:00', NULL, 'finished', '8.16.1', '{}');
INSERT INTO goals VALUES (1, 'fp-old', '/p/A.v', 'old', 1, 'Lemma old : True.', 'coq', 'failed',
  '2026-01-01 00:00:00', '2026-01-01 00:00:00');
INSERT INTO attempts VALUES (1, 1, 1, 'fp-old', 'micro', '', 'failed', 3, 1.5, 1.6, '8.16.1', '',
  '2026-01-01 00:00:00');
"""


def test_a_ledger_from_the_first_release_is_upgraded_in_place(any_ledger_url: str) -> None:
    engine = create_engine(any_ledger_url)
    schema = _FIRST_RELEASE
    if engine.dialect.name == "postgresql":  # what create_all made there: serial ids
        schema = schema.replace("id INTEGER PRIMARY KEY", "id SERIAL PRIMARY KEY")
        schema += "SELECT setval('runs_id_seq', 1); SELECT setval('goals_id_seq', 1);"
        schema += "SELECT setval('attempts_id_seq', 1);"
    with engine.begin() as connection:
        for statement in schema.split(";"):
            if statement.strip():
                connection.execute(text(statement))
    engine.dispose()
    ledger = Ledger(any_ledger_url)
    try:
        # the old attempt is still there, and budgets now read as 0
        assert ledger.history("fp-old") == (1, ledger.history("fp-old")[1], 0.0)
        assert ledger.stats()["attempts"] == {"failed": 1}
        run = ledger.start_run("fill", {}, "8.16.1")
        assert ledger.record_attempt(
            run_id=run,
            goal_id=1,
            fingerprint="fp-old",
            strategy="micro",
            outcome=Outcome.FAILED,
            budget_seconds=5.0,
            goal_budget_seconds=20.0,
            attempt_key="k1",
        )
        assert ledger.history("fp-old")[2] == 20.0
    finally:
        ledger.close()
    engine = create_engine(any_ledger_url)
    columns = {c["name"] for c in inspect(engine).get_columns("attempts")}
    engine.dispose()
    assert {"budget_seconds", "goal_budget_seconds", "attempt_key"} <= columns


def test_an_attempt_written_twice_is_recorded_once(any_ledger_url: str) -> None:
    ledger = Ledger(any_ledger_url)
    try:
        run = ledger.start_run("fill", {}, "")
        goal_id = ledger.upsert_goal(GOAL)
        arm = ("class", ArmStats(1, 0, 1.0, 0.5, 0.0))
        for expected in (True, False):
            written = ledger.record_attempt(
                run_id=run,
                goal_id=goal_id,
                fingerprint="fp-a",
                strategy="micro",
                outcome=Outcome.FAILED,
                attempt_key="run-1/goal-1/micro/1",
                arm=arm,
            )
            assert written is expected
        assert ledger.stats()["attempts"] == {"failed": 1}
    finally:
        ledger.close()


def test_concurrent_writers_are_safe(any_ledger_url: str) -> None:
    """Several writers (threads with their own connections) race on one goal, arm and proof."""
    Ledger(any_ledger_url).close()
    errors: list[BaseException] = []
    goal_ids: list[int] = []
    barrier = threading.Barrier(4)

    def writer(index: int) -> None:
        try:
            ledger = Ledger(any_ledger_url, busy_timeout=30)
        except BaseException as exc:
            errors.append(exc)
            barrier.abort()
            return
        try:
            barrier.wait(timeout=60)
            run = ledger.start_run("fill", {"writer": index}, "")
            goal_id = ledger.upsert_goal(GOAL)
            goal_ids.append(goal_id)
            for k in range(10):
                ledger.record_attempt(
                    run_id=run,
                    goal_id=goal_id,
                    fingerprint="fp-a",
                    strategy="micro",
                    outcome=Outcome.FAILED,
                    attempt_key=f"{index}-{k}",
                    arm=("class", ArmStats(k + 1, 0, k + 1.0, 0.1, 0.0)),
                )
            ledger.record_proof(
                run_id=run,
                goal_id=goal_id,
                fingerprint="fp-a",
                sentences=["exact I."],
                strategy="micro",
                prover_version="",
                diff="",
                written=False,
            )
        except BaseException as exc:
            errors.append(exc)
        finally:
            ledger.close()

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(set(goal_ids)) == 1
    ledger = Ledger(any_ledger_url)
    try:
        assert ledger.stats()["attempts"] == {"failed": 40}
        assert ledger.cached_tactics("fp-a") == ["exact I."]
        assert ledger.load_bandit()[("class", "micro")].pulls == 10
    finally:
        ledger.close()


def test_an_unverified_candidate_comes_back_as_recorded_and_each_prover_splits_it(
    ledger: Ledger,
) -> None:
    """The ledger keeps a candidate as the prover's tools joined it and gives it back
    unchanged; only the prover's tools know how to cut it into sentences again."""
    from proof_orchestrator.coq.backend import CoqTools as ProjectTools
    from proof_orchestrator.lean.backend import LeanTools

    run = ledger.start_run("fill", {}, "8.16.1")
    goal_id = ledger.upsert_goal(GOAL)
    coq = ("intros n.", "induction n as [|n IH]; simpl.", "- reflexivity.", "- now rewrite IH.")
    lean = ("intro n", "induction n with\n  | zero => rfl\n  | succ n ih => simp [ih]")
    for fingerprint, tools, sentences in (
        ("fp-coq", ProjectTools, coq),
        ("fp-lean", LeanTools, lean),
    ):
        ledger.record_attempt(
            run_id=run,
            goal_id=goal_id,
            fingerprint=fingerprint,
            strategy="search",
            outcome=Outcome.CANDIDATE,
            tactic=tools.join_script(sentences),
        )
        recorded = ledger.candidate_script(fingerprint)
        assert recorded == tools.join_script(sentences)
    # Coq's bullets are sentences of their own
    assert ProjectTools.split_script(ledger.candidate_script("fp-coq") or "") == (
        "intros n.",
        "induction n as [|n IH]; simpl.",
        "-",
        "reflexivity.",
        "-",
        "now rewrite IH.",
    )
    # Lean's layout survives: one block, its line breaks and indentation intact
    assert LeanTools.split_script(ledger.candidate_script("fp-lean") or "") == ("\n".join(lean),)
    ledger.record_attempt(
        run_id=run,
        goal_id=goal_id,
        fingerprint="fp-coq",
        strategy="verify",
        outcome=Outcome.REJECTED,
        tactic=ProjectTools.join_script(coq),
    )
    assert ledger.candidate_script("fp-coq") is None  # a rejected candidate is not offered again
