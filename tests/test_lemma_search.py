"""Premises from Coq's ``Search`` over the goal as printed without notations.

The parsing helpers need no prover; the rest runs real ``coqtop`` sessions.
"""

from __future__ import annotations

from pathlib import Path

from proof_orchestrator.coq.holes import qed_proofs
from proof_orchestrator.coq.prover import CoqProver
from proof_orchestrator.coq.strategies.lemma_search import (
    LemmaSearch,
    PlainGoal,
    bound_names,
    conclusion,
    constants,
    parse_plain_goal,
    plain_goal,
    premise_tactics,
    search_entries,
)
from proof_orchestrator.coq.strategies.search import SearchStrategy, chain_opening
from proof_orchestrator.goals import Budget, Outcome


def test_a_conclusion_is_what_follows_the_binders_and_the_premises() -> None:
    assert conclusion("forall x y : Q, Qle x y -> Qle y x -> Qeq x y") == "Qeq x y"
    assert conclusion("forall f : nat -> nat, (forall n, f n = n) -> f 0 = 0") == "f 0 = 0"
    assert conclusion("Qeq (Qplus 0 x) x") == "Qeq (Qplus 0 x) x"


def test_binders_with_and_without_parentheses_bind_names_not_types() -> None:
    assert bound_names("forall x y : Q, Qle x y") == {"x", "y"}
    assert bound_names("forall (p q : Q) (_ : Qle p q), Qle q p") == {"p", "q", "_"}


def test_constants_leave_out_bound_and_local_names() -> None:
    assert constants("forall k, Qeq (Qplus k x) (Qred x)", frozenset({"x"})) == [
        "Qeq",
        "Qplus",
        "Qred",
    ]


def test_a_search_output_gives_each_lemma_and_its_whole_statement() -> None:
    output = (
        "Qplus_0_r: forall x : Q, Qeq (Qplus x 0) x\n"
        "Qplus_le_compat:\n  forall x y z t : Q,\n"
        "  Qle x y -> Qle z t -> Qle (Qplus x z) (Qplus y t)\n"
    )
    assert search_entries(output) == [
        ("Qplus_0_r", "forall x : Q, Qeq (Qplus x 0) x"),
        (
            "Qplus_le_compat",
            "forall x y z t : Q, Qle x y -> Qle z t -> Qle (Qplus x z) (Qplus y t)",
        ),
    ]


def test_an_error_is_no_entry() -> None:
    assert (
        search_entries(
            "Toplevel input, characters 7-11:\nError: The reference Qplus was not found."
        )
        == []
    )


def test_a_shown_goal_gives_its_hypotheses_and_conclusion() -> None:
    shown = (
        "2 goals\n  \n  x, y : Q\n  H : Qle x y\n  ============================\n"
        "  Qle (Qplus x 0)\n    y\n\ngoal 2 is:\n  True\n"
    )
    goal = parse_plain_goal(shown)
    assert goal == PlainGoal(
        frozenset({"x", "y", "H"}), "Qle (Qplus x 0) y", frozenset({"Q", "Qle"})
    )
    assert goal.constants == ["Qle", "Qplus"]


def test_rewrites_are_offered_only_for_equations_and_the_goals_relation() -> None:
    goal = PlainGoal(frozenset(), "Qeq (Qplus 0 x) x")
    tactics = premise_tactics(
        goal,
        [("Qplus_0_l", "forall x : Q, Qeq (Qplus 0 x) x"), ("Qle_refl", "forall x, Qle x x")],
    )
    assert tactics == [
        "apply Qplus_0_l.",
        "rewrite Qplus_0_l.",
        "rewrite <- Qplus_0_l.",
        "apply Qle_refl.",
    ]


def test_a_learned_chain_offers_its_opening_steps() -> None:
    assert chain_opening("intros; qc; apply Qplus_assoc.") == "intros; qc."
    assert chain_opening("destruct x as [a|b]; simpl; auto.") == "destruct x as [a|b]; simpl."
    assert chain_opening("apply foo.") is None
    assert chain_opening("induction l; [ auto | simpl; auto ].") == "induction l."


NOTATIONS = """\
Require Import QArith.
Open Scope Q_scope.
Lemma zero_left : forall x : Q, 0 + x == x.
Proof. intros. apply Qplus_0_l. Qed.
"""


async def test_search_finds_the_lemma_that_the_notations_hide(tmp_path: Path) -> None:
    path = tmp_path / "N.v"
    path.write_text(NOTATIONS, encoding="utf-8")
    hole = qed_proofs(path, NOTATIONS)[0][0]
    prover = CoqProver(cwd=str(tmp_path))
    try:
        async with prover.session(hole.goal, NOTATIONS, hole.prefix_end) as session:
            step = await session.run_tactic("intros.", session.root, timeout=5)
            goal = await plain_goal(session)
            assert goal is not None
            assert goal.constants == ["Qeq", "Qplus"]
            # the displayed goal is still the notation one: the option was unset for the query only
            again = await session.run_tactic("idtac.", step.state, timeout=5)
            assert "0 + x == x" in again.goals[0]
            lemmas = LemmaSearch()
            premises = [name for name, _ in await lemmas.premises(session, goal)]
            assert "Qplus_0_l" in premises[:2]
            assert lemmas.searches == 1
            await lemmas.premises(session, goal)
            assert lemmas.searches == 1  # cached per conclusion
            # and the search strategy proves it with them
            found = await SearchStrategy().prove(session, hole.goal, Budget(cpu_seconds=10))
    finally:
        await prover.aclose()
    assert found.outcome is Outcome.CANDIDATE
    assert any("Qplus_0_l" in s for s in found.sentences)
