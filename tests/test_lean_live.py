"""Live Lean tests (`pytest -m lean`): the REPL client, the verifier and the Lean bank
against a real Lean. They run wherever `lean` and a REPL are installed; elsewhere each is
reported as skipped with the reason."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from proof_orchestrator.config import Settings
from proof_orchestrator.errors import ProverNotFound
from proof_orchestrator.goals import Outcome
from proof_orchestrator.lean.holes import scan_lean_text, splice
from proof_orchestrator.lean.repl import LeanRepl
from proof_orchestrator.lean.session import LeanProject, LeanSettings, find_repl
from proof_orchestrator.lean.verify import LeanVerifier
from proof_orchestrator.ledger import Ledger
from proof_orchestrator.provers.base import Verdict
from proof_orchestrator.run.pipeline import FileStatus, FillOptions, fill

from .conftest import BANK

pytestmark = pytest.mark.lean


def _needs_lean() -> None:
    if shutil.which("lean") is None:
        pytest.skip(
            "Lean 4 is not installed (`lean` is not on PATH): the REPL client, verifier and "
            "Lean bank were exercised only against recorded REPL traffic here"
        )


def _repl(project: LeanProject) -> list[str]:
    _needs_lean()
    try:
        return find_repl(project, LeanSettings())
    except ProverNotFound as exc:
        pytest.skip(f"no Lean REPL: {exc}")


async def test_repl_client_against_a_real_repl(tmp_path: Path) -> None:
    project = LeanProject(tmp_path, False, "")
    async with LeanRepl(_repl(project), cwd=str(tmp_path)) as repl:
        opened = await repl.command(
            "theorem t (p q : Prop) (hp : p) (hq : q) : p ∧ q := by sorry", timeout=120
        )
        (sorry,) = opened.sorries
        assert sorry.goal.endswith("⊢ p ∧ q")
        bad = await repl.tactic("exact hp", sorry.proof_state, timeout=60)
        assert bad.failed
        step = await repl.tactic("constructor", sorry.proof_state, timeout=60)
        assert len(step.goals) == 2
        assert step.proof_state is not None
        done = await repl.tactic("exact hp", step.proof_state, timeout=60)
        assert not done.complete  # one goal is left
        whole = await repl.tactic("exact ⟨hp, hq⟩", sorry.proof_state, timeout=60)
        assert whole.complete


async def test_verifier_against_a_real_lean(tmp_path: Path) -> None:
    _needs_lean()
    text = "theorem t (n : Nat) : n + 0 = n := by sorry\n"
    path = tmp_path / "T.lean"
    path.write_text(text, encoding="utf-8")
    (hole,) = scan_lean_text(path, text)
    verifier = LeanVerifier(LeanProject(tmp_path, False, ""))
    ok, _ = await verifier.compiles(path, text)
    assert ok
    good = await verifier.verify(path, text, splice(text, hole, ["simp"]), [hole.goal])
    assert good.verdict is Verdict.ACCEPTED
    wrong = await verifier.verify(path, text, splice(text, hole, ["rfl; rfl"]), [hole.goal])
    assert wrong.verdict is Verdict.DOES_NOT_COMPILE
    native = await verifier.verify(path, text, splice(text, hole, ["native_decide"]), [hole.goal])
    assert native.verdict is not Verdict.ACCEPTED


async def test_the_lean_bank_with_a_real_lean(tmp_path: Path) -> None:
    _repl(LeanProject(tmp_path, False, ""))
    copies = []
    for source in sorted((BANK / "lean").glob("*.lean")):
        copy = tmp_path / source.name
        copy.write_text(source.read_text(encoding="utf-8"), encoding="utf-8")
        copies.append(copy)
    ledger = Ledger(f"sqlite:///{tmp_path / 'ledger.db'}")
    try:
        report = await fill(
            copies, ledger, FillOptions(orch=Settings(budget=10.0, tactic_timeout=2.0))
        )
    finally:
        ledger.close()
    assert all(f.status is FileStatus.DONE for f in report.files)
    proved = [g for f in report.files for g in f.goals if g.outcome is Outcome.PROVED]
    assert len(proved) >= 30
    for copy in copies:
        done = subprocess.run(["lean", str(copy)], capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
