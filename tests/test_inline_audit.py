"""The axiom audit inside the check's own compile (issue 54: a check at the cost of a compile)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from proof_orchestrator.coq.holes import scan_coq_text
from proof_orchestrator.coq.inline_audit import plan_audit
from proof_orchestrator.coq.verify import CoqVerifier
from proof_orchestrator.goals import Goal
from proof_orchestrator.provers.base import Verdict, VerificationResult

FUNCTOR_AND_TOP = """\
Require Import Coq.Structures.OrderedType.
Module Make (O : OrderedType).
  Lemma inside : forall x, O.eq x x.
  Proof. intros; apply O.eq_refl. Qed.
End Make.
Lemma top : 1 = 1.
Admitted.
"""


def test_questions_keep_every_line_of_the_text_where_it_was(tmp_path: Path) -> None:
    """A functor's lemma is asked right after its proof, on the same line; the rest at
    the end, in full: a compile error still names the candidate's own line."""
    path = tmp_path / "F.v"
    plan = plan_audit(path, FUNCTOR_AND_TOP, union=["top"], each=["Make.inside"])
    lines, original = plan.text.splitlines(), FUNCTOR_AND_TOP.splitlines()
    for number, line in enumerate(original):
        assert lines[number].startswith(line), (number, lines[number])
    assert 'Qed. Redirect "orch-audit-0-here" Print Assumptions inside.' in lines[3]
    tail = "\n".join(lines[len(original) :])
    assert "let _ := @OrchCheck.F.top in" in tail
    assert "Print Libraries." in tail
    assert plan.text_lines == len(original) + 1


async def _verify(path: Path, original: str, patched: str, goal: Goal) -> VerificationResult:
    """The check ``orch fill`` runs, on one goal, with a verifier of its own."""
    verifier = CoqVerifier()
    try:
        return await verifier.verify(path, original, patched, [goal])
    finally:
        await verifier.aclose()


SHADOWED = """\
Lemma helper : 2 = 2.
Admitted.
Lemma target : 2 = 2.
Admitted.
Module X. Definition target := 3. End X.
Import X.
"""


async def test_a_goal_whose_name_an_import_took_over_is_still_the_one_audited(
    write_v: Callable[[str, str], Path],
) -> None:
    """After ``Import X``, ``target`` at the end of the file is ``X.target``, which rests
    on nothing; the audit names the goal in full, and finds the hole its proof uses."""
    path = write_v("S.v", SHADOWED)
    (goal,) = [h.goal for h in scan_coq_text(path, SHADOWED) if h.goal.name == "target"]
    patched = SHADOWED.replace(
        "Lemma target : 2 = 2.\nAdmitted.", "Lemma target : 2 = 2.\nProof. exact helper. Qed."
    )
    result = await _verify(path, SHADOWED, patched, goal)
    assert result.verdict is Verdict.ACCEPTED, result.detail
    assert [use.label for use in result.holes_used["target"]] == ["helper"]


@pytest.mark.parametrize("others", [False, True])
async def test_a_closed_proof_is_checked_by_one_compile(
    write_v: Callable[[str, str], Path], others: bool
) -> None:
    """Nothing assumed: one ``coqc`` run, the audit included; no second process loads the
    result (with other holes left, the goal is asked on its own, still in that run)."""
    original = "Lemma target : 1 + 1 = 2.\nAdmitted.\n" + (
        "Lemma later : 2 = 2.\nAdmitted.\n" if others else ""
    )
    path = write_v("C.v", original)
    goal = next(h.goal for h in scan_coq_text(path, original) if h.goal.name == "target")
    patched = original.replace("2.\nAdmitted.", "2.\nProof. reflexivity. Qed.", 1)
    verifier = CoqVerifier()
    try:
        result = await verifier.verify(path, original, patched, [goal])
        assert result.verdict is Verdict.ACCEPTED, result.detail
        assert verifier.compilations == 1
    finally:
        await verifier.aclose()


async def test_a_goal_missing_from_the_checked_text_is_refused_not_accepted(
    write_v: Callable[[str, str], Path],
) -> None:
    """A text that compiles but no longer has the goal (renamed): its question cannot be
    asked at the end, nor after its proof; the answer is missing, and the check refuses
    the goal rather than call the text uncompilable or accept it."""
    original = "Lemma target : 1 = 1.\nAdmitted.\nLemma other : 2 = 2.\nAdmitted.\n"
    path = write_v("L.v", original)
    goal = next(h.goal for h in scan_coq_text(path, original) if h.goal.name == "target")
    patched = original.replace(
        "Lemma target : 1 = 1.\nAdmitted.", "Lemma renamed : 1 = 1.\nProof. reflexivity. Qed."
    )
    result = await _verify(path, original, patched, goal)
    assert result.verdict is Verdict.NEW_ASSUMPTIONS, result
    assert "missing" in result.detail
