"""Lean files through `orch fill` and `orch lean setup`, on a machine without Lean."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from proof_orchestrator.cli import app
from proof_orchestrator.goals import Outcome
from proof_orchestrator.ledger import Ledger
from proof_orchestrator.run.pipeline import FileStatus, collect_files, fill

runner = CliRunner()

NO_LEAN = pytest.mark.skipif(
    shutil.which("lean") is not None or shutil.which("lake") is not None,
    reason="checks the messages given when Lean is missing; Lean is installed here",
)
TEXT = "theorem t (p : Prop) (h : p) : p := by sorry\n"


def test_collect_files_finds_lean_sources_and_skips_build_folders(tmp_path: Path) -> None:
    (tmp_path / "Proj").mkdir()
    (tmp_path / "Proj" / "A.lean").write_text(TEXT, encoding="utf-8")
    (tmp_path / "Proj" / "B.v").write_text("Lemma b : True.\nAdmitted.\n", encoding="utf-8")
    (tmp_path / "Proj" / ".lake" / "packages" / "x").mkdir(parents=True)
    (tmp_path / "Proj" / ".lake" / "packages" / "x" / "C.lean").write_text(TEXT, encoding="utf-8")
    (tmp_path / "Proj" / "lake-packages").mkdir()
    (tmp_path / "Proj" / "lake-packages" / "D.lean").write_text(TEXT, encoding="utf-8")
    found = [p.name for p in collect_files([tmp_path / "Proj"])]
    assert found == ["A.lean", "B.v"]


@NO_LEAN
def test_fill_on_a_lean_file_without_lean_exits_2_and_says_what_to_do(tmp_path: Path) -> None:
    path = tmp_path / "A.lean"
    path.write_text(TEXT, encoding="utf-8")
    result = runner.invoke(app, ["fill", str(path), "--db", f"sqlite:///{tmp_path / 'l.db'}"])
    assert result.exit_code == 2
    assert "elan" in result.output
    assert "orch lean setup" in " ".join(result.output.split())
    assert path.read_text(encoding="utf-8") == TEXT


@NO_LEAN
async def test_the_pipeline_reports_a_missing_lean_per_file(tmp_path: Path) -> None:
    lean = tmp_path / "A.lean"
    lean.write_text(TEXT, encoding="utf-8")
    coq = tmp_path / "B.v"
    coq.write_text("Lemma b : True.\nAdmitted.\n", encoding="utf-8")
    ledger = Ledger(f"sqlite:///{tmp_path / 'l.db'}")
    try:
        report = await fill([tmp_path], ledger)
    finally:
        ledger.close()
    by_name = {f.path.name: f for f in report.files}
    assert by_name["A.lean"].status is FileStatus.NO_PROVER
    assert "lean" in by_name["A.lean"].message
    assert [g.outcome for g in by_name["A.lean"].goals] == [Outcome.ERROR]
    assert lean.read_text(encoding="utf-8") == TEXT
    # the Coq file next to it is still filled
    assert by_name["B.v"].status is FileStatus.DONE
    assert "Qed." in coq.read_text(encoding="utf-8")


def test_lean_setup_needs_a_toolchain_file(tmp_path: Path) -> None:
    result = runner.invoke(app, ["lean", "setup", str(tmp_path)])
    assert result.exit_code == 2
    assert "lean-toolchain" in result.output


def test_lean_setup_without_lake_says_how_to_get_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "lean-toolchain").write_text("leanprover/lean4:v4.9.0\n", encoding="utf-8")
    only_git = tmp_path / "bin"
    only_git.mkdir()
    git = shutil.which("git")
    if git is None:
        pytest.skip("git is not installed")
    os.symlink(git, only_git / "git")
    monkeypatch.setenv("PATH", str(only_git))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    result = runner.invoke(app, ["lean", "setup", str(tmp_path)])
    assert result.exit_code == 2
    assert "`lake` is not on PATH" in result.output
    assert "elan" in result.output
    assert not (tmp_path / "cache").exists()
