"""orch golf with real Coq: shorter proofs, kept only when the whole file verifies."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from proof_orchestrator.cli import app

from .conftest import coqc_ok

runner = CliRunner()

SOURCE = """\
Require Import Arith List.
Lemma zero_l : forall n : nat, 0 + n = n.
Proof.
  intros n. simpl. reflexivity.
Qed.

Lemma useless_step : forall b : bool, andb b true = b.
Proof.
  intros b. destruct b.
  - simpl. simpl. reflexivity.
  - reflexivity.
Qed.

Lemma already_short : True.
Proof. auto. Qed.
"""


def test_golf_shortens_proofs_and_the_file_still_compiles(tmp_path: Path) -> None:
    path = tmp_path / "G.v"
    path.write_text(SOURCE, encoding="utf-8")
    result = runner.invoke(
        app, ["golf", str(path), "--json", "--db", f"sqlite:///{tmp_path / 'l.db'}"]
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["proofs"] == 3
    assert summary["shortened"] == 2
    assert summary["chars_after"] < summary["chars_before"]
    assert summary["sentences_after"] < summary["sentences_before"]
    after = {p["name"]: p["after"] for p in summary["proofs_shortened"]}
    assert len(after["zero_l"]) < len("intros n. simpl. reflexivity.")
    # bullets are kept: the proof keeps its shape
    assert after["useless_step"].count("-") == 2
    assert "simpl" not in after["useless_step"]
    text = path.read_text(encoding="utf-8")
    assert "Proof. auto. Qed." in text
    assert coqc_ok(path)


def test_golf_dry_run_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "G.v"
    path.write_text(SOURCE, encoding="utf-8")
    result = runner.invoke(
        app,
        [
            "golf",
            str(path),
            "--dry-run",
            "--only",
            "zero_l",
            "--db",
            f"sqlite:///{tmp_path / 'l.db'}",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "1/1 proofs would be shortened" in " ".join(result.output.split())
    assert path.read_text(encoding="utf-8") == SOURCE
