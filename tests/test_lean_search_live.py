"""Live Lean search (`pytest -m lean`): best-first search, the allTactics-mined k-NN model
and premise retrieval against a real Lean REPL, the proof checked by the whole-file
verifier. Elsewhere each test is reported as skipped with the reason."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from proof_orchestrator.errors import ProverNotFound
from proof_orchestrator.goals import Budget, Outcome
from proof_orchestrator.lean.holes import scan_lean_text, splice
from proof_orchestrator.lean.session import (
    LeanProject,
    LeanProver,
    LeanSettings,
    find_repl,
)
from proof_orchestrator.lean.strategies.knn import LeanModels
from proof_orchestrator.lean.strategies.premises import LeanPremiseIndexes
from proof_orchestrator.lean.strategies.search import LeanSearchStrategy
from proof_orchestrator.lean.verify import LeanVerifier
from proof_orchestrator.provers.base import Verdict

pytestmark = pytest.mark.lean

FILE = """\
theorem swap_earlier (p q : Prop) (h : p ∧ q) : q ∧ p := by
  constructor
  · exact h.right
  · exact h.left

theorem add_zero_earlier (n : Nat) : n + 0 = n := by
  simp

theorem target (p q r : Prop) (h1 : p ∧ q) (h2 : q → r) : p ∧ r := by
  sorry

theorem below (p : Prop) (hp : p) : p ∧ p := by
  exact ⟨hp, hp⟩
"""


def _repl(project: LeanProject) -> list[str]:
    if shutil.which("lean") is None:
        pytest.skip(
            "Lean 4 is not installed (`lean` is not on PATH): Lean search, allTactics mining "
            "and premise retrieval were exercised only against recorded REPL traffic here"
        )
    try:
        return find_repl(project, LeanSettings())
    except ProverNotFound as exc:
        pytest.skip(f"no Lean REPL: {exc}")


async def test_lean_search_against_a_real_lean(tmp_path: Path) -> None:
    project = LeanProject(tmp_path, False, "")
    argv = _repl(project)
    path = tmp_path / "Target.lean"
    path.write_text(FILE, encoding="utf-8")
    (hole,) = scan_lean_text(path, FILE)
    prover = LeanProver(project, LeanSettings(repl=tuple(argv)))
    models = LeanModels()
    try:
        async with prover.session(hole, FILE) as session:
            model = await models.model_for(session)
            result = await LeanSearchStrategy(models, indexes=LeanPremiseIndexes()).prove(
                session, hole.goal, Budget(60, 5, 5)
            )
    finally:
        await prover.aclose()
    # the earlier proofs were mined (constructor and the two bullets' tactics), not `below`
    tactics = {t for _, t in model.pairs}
    assert "constructor" in tactics
    assert "exact h.right" in tactics
    assert "exact ⟨hp, hp⟩" not in tactics
    assert result.outcome is Outcome.CANDIDATE
    patched = splice(FILE, hole, result.sentences)
    verdict = await LeanVerifier(project).verify(path, FILE, patched, [hole.goal])
    assert verdict.verdict is Verdict.ACCEPTED, verdict.detail
