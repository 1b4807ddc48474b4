"""Premises from Coq's ``Search`` over the goal as printed without notations.

The parsing helpers need no prover; the rest runs real ``coqtop`` sessions.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from proof_orchestrator.coq.holes import CoqHole, qed_proofs
from proof_orchestrator.coq.prover import CoqProver
from proof_orchestrator.coq.session import CoqSession
from proof_orchestrator.coq.strategies.lemma_search import (
    LemmaSearch,
    PlainGoal,
    bound_names,
    conclusion,
    constants,
    covers,
    head_pattern,
    parse_plain_goal,
    plain_goal,
    premise_tactics,
    search_entries,
)
from proof_orchestrator.coq.strategies.search import SearchStrategy, chain_opening
from proof_orchestrator.goals import Budget, Outcome
from proof_orchestrator.provers.base import ProofState


def test_a_conclusion_is_what_follows_the_binders_and_the_premises() -> None:
    assert conclusion("forall x y : Q, Qle x y -> Qle y x -> Qeq x y") == "Qeq x y"
    assert conclusion("forall f : nat -> nat, (forall n, f n = n) -> f 0 = 0") == "f 0 = 0"
    assert conclusion("Qeq (Qplus 0 x) x") == "Qeq (Qplus 0 x) x"


def test_binders_with_and_without_parentheses_bind_names_not_types() -> None:
    assert bound_names("forall x y : Q, Qle x y") == {"x", "y"}
    assert bound_names("forall (p q : Q) (_ : Qle p q), Qle q p") == {"p", "q", "_"}


def test_a_comma_inside_a_binders_type_does_not_end_the_binders() -> None:
    statement = (
        "forall {V : CompleteNormedModule.type R_AbsRing} (f : forall _ : R, V) (a b : R) "
        "(l : V) (_ : is_RInt f a b l), eq (RInt f a b) l"
    )
    assert {"V", "f", "a", "b", "l"} <= bound_names(statement)
    assert "R" not in bound_names(statement)


def test_the_head_pattern_keeps_the_shape_a_lemma_must_conclude_with() -> None:
    local = frozenset({"a", "x", "s", "s1", "s2", "P", "n", "m", "f"})

    def pattern(text: str) -> str | None:
        return head_pattern(PlainGoal(local, text))

    assert pattern("eq (RInt (PSeries a) 0 x) (PSeries (PS_Int a) x)") == "eq (RInt _ _ _) _"
    assert pattern("ex_RInt (PSeries a) 0 x") == "ex_RInt _ _ _"
    assert pattern("eq s (fsetU s1 s2)") == "eq _ (fsetU _ _)"
    assert pattern("is_true (in_mem x (mem s))") == "is_true (in_mem _ _)"
    # no constant to narrow by, a hypothesis at the head, or binders still to open
    assert pattern("eq x (f x)") is None
    assert pattern("P x") is None
    assert pattern("forall y : R, Rle y x") is None
    assert pattern("Rle x 0 -> Rle 0 x") is None
    assert pattern("True") is None


def test_a_lemma_covers_a_goal_when_its_conclusion_adds_no_constant() -> None:
    goal = PlainGoal(frozenset({"a", "x"}), "eq (RInt (PSeries a) 0 x) (PSeries (PS_Int a) x)")
    unique = "forall (f : forall _ : R, R) (a b l : R) (_ : is_RInt f a b l), eq (RInt f a b) l"
    point = "forall (a : R) (f : forall _ : R, R), eq (RInt f a a) zero"
    assert covers(goal, unique)
    assert not covers(goal, point)
    # after ``eexists`` the witness is to be found: what it unifies with may add constants
    series = (
        "forall (a : forall _ : nat, R) (x : R) (_ : Rbar_lt (Rabs x) (CV_radius a)), "
        "is_RInt (PSeries a) 0 x (PSeries (PS_Int a) x)"
    )
    assert not covers(PlainGoal(frozenset({"a", "x"}), "is_RInt (PSeries a) 0 x l"), series)
    assert covers(PlainGoal(frozenset({"a", "x"}), "is_RInt (PSeries a) 0 x ?If"), series)


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


def test_an_existential_variable_is_no_constant_nor_the_header_a_hypothesis() -> None:
    # after ``eexists.``: a shelved evar in the conclusion and in the header's count
    shown = (
        "1 focused goal (shelved: 1)\n  \n  a : nat -> R\n  H : ex_series a\n"
        "  ============================\n  is_series (fun k : nat => PS_plus a k) ?l\n"
    )
    goal = parse_plain_goal(shown)
    assert goal is not None
    assert goal.hypotheses == frozenset({"a", "H"})
    assert goal.constants == ["is_series", "nat", "PS_plus"]


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
    # ssreflect's rewrite (right to left: ``-``) also takes an ``=i`` (eq_mem) lemma; Coq's not
    languages = PlainGoal(frozenset(), "eq (in_mem w (mem (dfa_lang A))) (in_mem w (mem r))")
    lemma = ("nfa_to_dfa_correct", "forall A, eq_mem (mem (dfa_lang A)) (mem (nfa_lang A))")
    assert premise_tactics(languages, [lemma], ssreflect=True)[-1] == "rewrite -nfa_to_dfa_correct."
    assert premise_tactics(languages, [lemma]) == ["apply nfa_to_dfa_correct."]


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


@contextlib.asynccontextmanager
async def _after_intros(
    folder: Path, name: str, text: str
) -> AsyncIterator[tuple[CoqHole, CoqSession, ProofState, PlainGoal]]:
    """A session at the first ``Qed`` proof of ``text`` after ``intros.``, and its plain goal."""
    path = folder / name
    path.write_text(text, encoding="utf-8")
    hole = qed_proofs(path, text)[0][0]
    prover = CoqProver(cwd=str(folder))
    try:
        async with prover.session(hole.goal, text, hole.prefix_end) as session:
            step = await session.run_tactic("intros.", session.root, timeout=5)
            goal = await plain_goal(session)
            assert goal is not None
            yield hole, session, step.state, goal
    finally:
        await prover.aclose()


async def test_search_finds_the_lemma_that_the_notations_hide(tmp_path: Path) -> None:
    async with _after_intros(tmp_path, "N.v", NOTATIONS) as (hole, session, state, goal):
        assert goal.constants == ["Qeq", "Qplus"]
        # the displayed goal is still the notation one: the option was unset for the query only
        again = await session.run_tactic("idtac.", state, timeout=5)
        assert "0 + x == x" in again.goals[0]
        lemmas = LemmaSearch()
        premises = [name for name, _ in await lemmas.premises(session, goal)]
        assert "Qplus_0_l" in premises[:2]
        assert lemmas.searches == 1
        await lemmas.premises(session, goal)
        assert lemmas.searches == 1  # cached per conclusion
        # and the search strategy proves it with them
        found = await SearchStrategy().prove(session, hole.goal, Budget(cpu_seconds=10))
    assert found.outcome is Outcome.CANDIDATE
    assert any("Qplus_0_l" in s for s in found.sentences)


SHAPES = """\
Parameter T : Type.
Parameter F G : nat -> T.
Parameter is_F : nat -> T -> Prop.
Axiom is_F_unique : forall n l, is_F n l -> F n = l.
Axiom is_F_G : forall n, is_F n (G n).
Axiom FG1 : forall n, F (S n) = G n.
Axiom FG2 : forall n, F n = G (S n).
Axiom FG3 : forall n, F (S (S n)) = G n.
Axiom FG4 : forall n, F n = G (S (S n)).
Axiom FG5 : forall n, F (S (S (S n))) = G n.
Axiom FG6 : forall n, F n = G (S (S (S n))).
Lemma F_G : forall n, F n = G n.
Proof. intros. apply is_F_unique. apply is_F_G. Qed.
"""


async def test_the_lemma_that_concludes_with_the_goals_shape_is_applied(tmp_path: Path) -> None:
    """Six lemmas mention both F and G, so ``Search F G`` fills the premises with them;
    the rule the proof starts with (``is_F_unique``) does not mention G."""
    async with _after_intros(tmp_path, "S.v", SHAPES) as (hole, session, _, goal):
        lemmas = LemmaSearch()
        assert "is_F_unique" not in [n for n, _ in await lemmas.premises(session, goal)]
        appliers = await lemmas.appliers(session, goal)
        assert appliers[0][0] == "is_F_unique"  # the one whose conclusion adds nothing
        assert lemmas.shape_searches == 1
        found = await SearchStrategy().prove(session, hole.goal, Budget(cpu_seconds=10))
    assert found.outcome is Outcome.CANDIDATE
    assert "apply is_F_unique." in found.sentences
