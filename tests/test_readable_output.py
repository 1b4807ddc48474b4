"""Readable output: ``orch --help`` names both provers; strategies that cannot run are skipped,
not attempted; ``orch stats`` prints tables with local times and durations."""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest
from sqlalchemy import update
from typer.testing import CliRunner

from proof_orchestrator.cli import app
from proof_orchestrator.cli.info import duration, local_time
from proof_orchestrator.config import Settings
from proof_orchestrator.coq.strategies import hammer
from proof_orchestrator.coq.strategies.hammer import (
    NO_HAMMER_TACTICS,
    HammerStrategy,
    SautoStrategy,
)
from proof_orchestrator.goals import Goal, HoleKind, Outcome, fingerprint_of
from proof_orchestrator.ledger import Ledger, LedgerReader
from proof_orchestrator.ledger.models import Run
from proof_orchestrator.run.pipeline import FillOptions, fill

runner = CliRunner()

EASY = "Lemma easy : forall n : nat, n = n.\nAdmitted.\n"


def test_help_names_both_provers() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    text = " ".join(result.stdout.split())
    assert "Coq files (Admitted.)" in text
    assert "Lean 4 files (sorry)" in text


def _attempts(url: str) -> list[tuple[str, str, str, float, int]]:
    with sqlite3.connect(url.removeprefix("sqlite:///")) as connection:
        return connection.execute(
            "SELECT strategy, outcome, message, cpu_seconds, tactics_tried FROM attempts"
        ).fetchall()


async def test_sauto_in_a_file_without_coqhammers_tactics_is_skipped_with_its_reason(
    tmp_path: Path, ledger: Ledger
) -> None:
    path = tmp_path / "Easy.v"
    path.write_text(EASY, encoding="utf-8")
    options = FillOptions(orch=Settings(budget=5.0, tactic_timeout=1.0))
    report = await fill([path], ledger, options, strategies=[SautoStrategy()])
    (goal,) = report.goals
    assert goal.outcome is not Outcome.PROVED
    assert _attempts(ledger.url) == [("sauto", "skipped", NO_HAMMER_TACTICS, 0.0, 0)]
    assert path.read_text(encoding="utf-8") == EASY
    # not an attempt: apart in the stats, with its reason; the goal has no attempt
    stats = ledger.stats()
    assert stats["attempts"] == {}
    assert stats["skipped"] == 1
    (sauto,) = stats["strategies"]
    assert (sauto["attempts"], sauto["cpu_seconds"], sauto["skipped"]) == (0, 0.0, 1)
    assert sauto["skipped_reason"] == NO_HAMMER_TACTICS
    assert [g["attempts"] for g in LedgerReader(ledger).goals()] == [0]


async def test_hammer_where_coqhammer_does_not_load_is_skipped_with_its_reason(
    tmp_path: Path, ledger: Ledger, monkeypatch: pytest.MonkeyPatch
) -> None:
    # stands for a machine without CoqHammer: the sentence that loads it fails
    monkeypatch.setattr(hammer, "HAMMER_PREAMBLE", ("From NoSuchHammer Require Import Hammer.",))
    path = tmp_path / "Easy.v"
    path.write_text(EASY, encoding="utf-8")
    options = FillOptions(orch=Settings(budget=5.0, tactic_timeout=1.0))
    report = await fill([path], ledger, options, strategies=[HammerStrategy()])
    (goal,) = report.goals
    assert goal.outcome is not Outcome.PROVED
    ((strategy, outcome, message, cpu, tried),) = _attempts(ledger.url)
    assert (strategy, outcome, cpu, tried) == ("hammer", "skipped", 0.0, 0)
    assert message.startswith("CoqHammer does not load in this file: ")
    assert "NoSuchHammer" in message


# -- orch stats ---------------------------------------------------------------------------------


@pytest.fixture
def berlin(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Local time is Berlin's (UTC+1 in November)."""
    monkeypatch.setenv("TZ", "Europe/Berlin")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_times_and_durations_read_as_a_person_writes_them(berlin: None) -> None:
    del berlin
    assert local_time("2026-11-24T14:27:26.017345") == "2026-11-24 15:27:26"  # naive: UTC
    assert local_time("2026-11-24T14:27:26+00:00") == "2026-11-24 15:27:26"
    assert local_time(None) == ""
    assert [duration(s) for s in (0.04, 3.25, 12.4, 192, 3600, 7505, 90000)] == [
        "0.0 s",
        "3.2 s",
        "12 s",
        "3 min 12 s",
        "1 h",
        "2 h 5 min",
        "1 d 1 h",
    ]


def _ledger_with_a_run(ledger: Ledger, root: Path) -> None:
    """One finished run (14:27:26 to 14:30:38 UTC), two goals, attempts, a skip, a proof."""
    run = ledger.start_run("fill", {}, "8.16.1")
    ids = []
    for k, name in enumerate(("easy", "hard")):
        statement = f"Lemma {name} : {k} = {k}."
        goal = Goal(
            root / "A.v", k + 1, name, statement, HoleKind.ADMITTED, fingerprint_of(statement)
        )
        ids.append((ledger.upsert_goal(goal), goal.fingerprint))
    for (goal_id, fingerprint), outcome, cpu in (
        (ids[0], Outcome.CANDIDATE, 1.5),
        (ids[1], Outcome.FAILED, 200.0),
        (ids[1], Outcome.TIMEOUT, 40.0),
    ):
        ledger.record_attempt(
            run_id=run,
            goal_id=goal_id,
            fingerprint=fingerprint,
            strategy="micro" if outcome is Outcome.CANDIDATE else "search",
            outcome=outcome,
            cpu_seconds=cpu,
        )
    for goal_id, fingerprint in ids:
        ledger.record_attempt(
            run_id=run,
            goal_id=goal_id,
            fingerprint=fingerprint,
            strategy="sauto",
            outcome=Outcome.SKIPPED,
            message=NO_HAMMER_TACTICS,
        )
    goal_id, fingerprint = ids[0]
    ledger.record_proof(
        run_id=run,
        goal_id=goal_id,
        fingerprint=fingerprint,
        sentences=("reflexivity.",),
        strategy="micro",
        prover_version="8.16.1",
        diff="",
        written=True,
    )
    ledger.set_goal_status(goal_id, "proved")
    ledger.set_goal_status(ids[1][0], "failed")
    ledger.finish_run(run, "finished", {})
    with ledger.engine.begin() as connection:
        connection.execute(
            update(Run)
            .where(Run.id == run)
            .values(
                started_at=datetime(2026, 11, 24, 14, 27, 26, 17345),
                finished_at=datetime(2026, 11, 24, 14, 30, 38, 17345),
            )
        )


def test_stats_prints_tables_with_local_times_durations_and_skips_apart(
    tmp_path: Path, ledger: Ledger, berlin: None
) -> None:
    del berlin
    _ledger_with_a_run(ledger, tmp_path)
    shown = runner.invoke(app, ["stats", str(tmp_path), "--db", ledger.url], env={"COLUMNS": "120"})
    assert shown.exit_code == 0, shown.output
    text = shown.stdout
    assert "{" not in text  # no Python dict reprs
    assert "2026-11-24T" not in text  # no ISO strings
    assert re.search(r"2026-11-24 15:27:26 .* 2026-11-24 15:30:38 .* 3 min 12 s", text), text
    assert re.search(r"goals .* 2 \(1 proved\)", text)
    assert re.search(r"attempts .* 3\b", text)  # the skips are not attempts
    assert re.search(r"skipped .* 2 \(strategies that cannot run there; not attempts\)", text)
    assert re.search(r"prover CPU .* 4 min 2 s", text)  # 241.5 s: the skips have none
    strategies = text[text.index("Strategies") : text.index("Skipped")]
    assert re.search(r"search .* 2 .* 0 .* 4 min .* –", strategies)
    assert re.search(r"micro .* 1 .* 1 .* 1.5 s .* 1.5 s", strategies)
    assert "sauto" not in strategies
    skipped = text[text.index("Skipped") : text.index("Recent runs")]
    assert re.search(r"sauto .* 2 .* the file does not load CoqHammer's tactics", skipped)
    for table in ("Goals by status", "Attempts by outcome", "Recent runs (local time)"):
        assert table in text
    as_json = runner.invoke(app, ["stats", str(tmp_path), "--db", ledger.url, "--json"])
    assert '"skipped": 2' in as_json.stdout
