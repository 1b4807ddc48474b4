"""Coq search's candidate steps that need no prover: which constants it offers to unfold."""

from __future__ import annotations

from proof_orchestrator.coq.strategies.search import local_tactics, unfold_candidates


def test_the_conclusions_constants_are_offered_not_the_local_names() -> None:
    goal = (
        "x, y : multiset\nH : meq x y\n============================\nmeq (munion x y) (munion y x)"
    )
    assert unfold_candidates(goal) == ["unfold meq.", "unfold munion."]


def test_bound_variables_keywords_and_duplicates_are_left_out() -> None:
    goal = "============================\nforall m n : nat, fun_a m = (fun k => Nat.add k n) m"
    assert unfold_candidates(goal) == ["unfold fun_a.", "unfold Nat.add."]


def test_at_most_the_limit() -> None:
    goal = "============================\na1 (a2 (a3 (a4 x)))"
    assert len(unfold_candidates(goal)) == 3
    assert unfold_candidates(goal, limit=1) == ["unfold a1."]


def test_the_files_own_argument_free_tactics_are_offered_latest_first() -> None:
    prefix = [
        "Ltac qc := match goal with | _ => idtac end.",
        "Ltac with_arg x := destruct x.",
        "Local Ltac ring_Rsqr := unfold Rsqr; ring.",
        "Lemma l : True.",
    ]
    assert local_tactics(prefix) == ["ring_Rsqr.", "intros; ring_Rsqr.", "qc.", "intros; qc."]
    notation = [*prefix, 'Tactic Notation "set_solver" := set_solver by idtac.']
    assert local_tactics(notation, limit=1) == ["set_solver.", "intros; set_solver."]
    assert local_tactics(prefix, limit=1) == ["ring_Rsqr.", "intros; ring_Rsqr."]
