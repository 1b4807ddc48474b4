"""Readable output: ``orch --help`` names both provers; strategies that cannot run are skipped,
not attempted; ``orch stats`` prints tables with local times and durations."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from proof_orchestrator.cli import app
from proof_orchestrator.coq.strategies import hammer
from proof_orchestrator.coq.strategies.hammer import (
    NO_HAMMER_TACTICS,
    HammerStrategy,
    SautoStrategy,
)
from proof_orchestrator.goals import Budget, Outcome
from proof_orchestrator.ledger import Ledger
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
    options = FillOptions(budget=Budget(cpu_seconds=5.0, tactic_seconds=1.0))
    report = await fill([path], ledger, options, strategies=[SautoStrategy()])
    (goal,) = report.goals
    assert goal.outcome is not Outcome.PROVED
    assert _attempts(ledger.url) == [("sauto", "skipped", NO_HAMMER_TACTICS, 0.0, 0)]
    assert path.read_text(encoding="utf-8") == EASY


async def test_hammer_where_coqhammer_does_not_load_is_skipped_with_its_reason(
    tmp_path: Path, ledger: Ledger, monkeypatch: pytest.MonkeyPatch
) -> None:
    # stands for a machine without CoqHammer: the sentence that loads it fails
    monkeypatch.setattr(hammer, "HAMMER_PREAMBLE", ("From NoSuchHammer Require Import Hammer.",))
    path = tmp_path / "Easy.v"
    path.write_text(EASY, encoding="utf-8")
    options = FillOptions(budget=Budget(cpu_seconds=5.0, tactic_seconds=1.0))
    report = await fill([path], ledger, options, strategies=[HammerStrategy()])
    (goal,) = report.goals
    assert goal.outcome is not Outcome.PROVED
    ((strategy, outcome, message, cpu, tried),) = _attempts(ledger.url)
    assert (strategy, outcome, cpu, tried) == ("hammer", "skipped", 0.0, 0)
    assert message.startswith("CoqHammer does not load in this file: ")
    assert "NoSuchHammer" in message
