"""The rewrite-chain strategy (coq/strategies/rewriting.py): what it rewrites with, and a
chain found with the real prover."""

from __future__ import annotations

import subprocess
from pathlib import Path

from proof_orchestrator.coq.display import COQ
from proof_orchestrator.coq.strategies.rewriting import (
    RewriteStrategy,
    _first_sentence,
    _opening,
    case_closers,
    interleave,
    introduced_names,
    popular_rewrites,
    rewrite_names,
    unfoldable,
)
from proof_orchestrator.goals import Budget, Outcome
from proof_orchestrator.learn import Corpus, ProofExample
from proof_orchestrator.strategies.base import StrategyResult

from .hole_sessions import run_at_hole


def test_a_rewrite_clause_ends_with_its_sentence_and_names_no_hypothesis() -> None:
    script = (
        "case: (boolP (i == n)) => Hi. rewrite /srel (eqP Hi) /= inordK ?eqxx //. "
        "have Hj : i < n. by rewrite ltn_neqAle -ltnS ltn_ord."
    )
    # not ``rewrite`` (the next sentence), not ``Hi``/``Hj`` (introduced), not ``srel``
    # (an unfold)
    assert rewrite_names(script) == ["eqP", "inordK", "eqxx", "ltn_neqAle", "ltnS", "ltn_ord"]
    assert introduced_names(script) >= {"Hi", "Hj"}
    # a pattern names no lemma; the lemma after it is kept
    assert rewrite_names("by rewrite /Tab inE runL /= -[ord1]inord_val.") == [
        "inE",
        "runL",
        "inord_val",
    ]
    assert rewrite_names("first [rewrite foo | rewrite bar]; done.") == ["foo", "bar"]


def test_closers_take_apart_what_the_state_branches_on() -> None:
    shown = (
        "  k : T\n  ============================\n"
        "  (if k \\in ks then f k else None) = f k && (k \\in ks)"
    )
    assert case_closers(shown, ssr=True) == ["by case: (k \\in ks).", "by case: ifP."]
    plain = "  ============================\n  (if Nat.eqb n m then 1 else 0) = 0"
    assert case_closers(plain, ssr=False) == ["destruct (Nat.eqb n m); auto."]
    assert case_closers("  ============================\n  x = y", ssr=True) == []


def test_a_longer_proof_opens_with_its_first_sentence() -> None:
    script = "apply/eq_fset=> k; rewrite mem_domm mkfmapfE in_fset. by case: (k \\in ks)."
    assert _opening(_first_sentence(script)) == "apply/eq_fset=> k."
    assert _first_sentence("rewrite (foo. bar") == ""


def test_the_sources_take_turns_and_plumbing_is_not_unfolded() -> None:
    assert interleave(["a", "b", "c"], ["x"], ["b", "y"]) == ["a", "x", "b", "y", "c"]
    assert unfoldable(["eq", "in_mem", "mem", "pair", "Neg", "Tab", "dfa", "more"]) == [
        "Neg",
        "Tab",
        "dfa",
    ]


def test_the_popular_rules_are_those_most_proofs_rewrite_with() -> None:
    def example(name: str, script: str) -> ProofExample:
        return ProofExample(name, f"Lemma {name} : True.", (script,))

    corpus = Corpus(
        COQ,
        [
            example("a", "by rewrite inE andbC."),
            example("b", "by rewrite !inE orbC."),
            example("c", "move=> H; rewrite inE H andbC."),
            example("d", "by rewrite setmE."),
        ],
    )
    # used by two proofs at least; the hypothesis H is no rule
    assert popular_rewrites(corpus, 4) == ["inE", "andbC"]
    corpus.extend([example("e", "by rewrite setmE.")])
    assert popular_rewrites(corpus, 4) == ["inE", "andbC", "setmE"]


LANG = """\
From Coq Require Import ssreflect ssrbool.
Parameter lang : Type.
Parameter accept : lang -> nat -> bool.
Parameter compl to_re : lang -> lang.
Axiom to_re_correct : forall A n, accept (to_re A) n = accept A n.
Axiom compl_correct : forall A n, accept (compl A) n = ~~ accept A n.
"""
#: equations just like those two against the goal's statement (``accept … A n``)
DISTRACTORS = "".join(
    f"Parameter f{i} : lang -> lang.\n"
    f"Axiom f{i}_correct : forall A n, accept (f{i} A) n = accept A n.\n"
    for i in range(40)
)
GOAL = """\
From Coq Require Import ssreflect ssrbool.
Require Import Lib.Lang.
Definition Neg A := to_re (compl A).
Lemma Neg_correct A n : accept (Neg A) n = ~~ accept A n.
Proof.
Admitted.
"""


def _chain(root: Path, lang: str, goal_text: str, name: str) -> StrategyResult:
    """The rewrite strategy at 30 CPU s on hole ``name`` of ``goal_text``, which
    requires ``lang`` compiled as ``Lib.Lang``."""
    (root / "lib").mkdir()
    (root / "lib" / "Lang.v").write_text(lang, encoding="utf-8")
    subprocess.run(
        ["coqc", "-Q", "lib", "Lib", "lib/Lang.v"], cwd=root, check=True, capture_output=True
    )
    path = root / "Goal.v"
    path.write_text(goal_text, encoding="utf-8")

    async def chain(session, goal):  # type: ignore[no-untyped-def]
        return await RewriteStrategy().prove(session, goal, Budget(30, 2, 1))

    result: StrategyResult = run_at_hole(chain, path, name, root)
    return result


def test_a_chain_rewrites_with_what_its_first_steps_uncover(tmp_path: Path) -> None:
    """The statement ranks 42 alike equations equally; once ``rewrite /Neg`` shows
    ``to_re (compl A)``, the state's own ranking finds the two that finish the proof."""
    found = _chain(tmp_path, DISTRACTORS.join([LANG, ""]), GOAL, "Neg_correct")
    assert found.outcome is Outcome.CANDIDATE, found
    text = " ".join(found.sentences)
    assert "rewrite /Neg" in text
    assert "to_re_correct" in text
    assert "compl_correct" in text


SAME = """\
From Coq Require Import ssreflect ssrbool.
Require Import Lib.Lang.
Definition Neg A := to_re (compl A).
Definition same (f g : nat -> bool) := forall n, f n = g n.
Lemma Neg_same A : same (accept (Neg A)) (fun n => ~~ accept A n).
Proof.
Admitted.
"""


def test_a_chain_opens_what_intros_leaves_closed(tmp_path: Path) -> None:
    """``intros`` does not look through ``same``; ssreflect's ``move=> *`` does, and the
    rewrites then reach ``accept (Neg A) n`` (no rewrite goes under ``forall n``)."""
    found = _chain(tmp_path, LANG, SAME, "Neg_same")
    assert found.outcome is Outcome.CANDIDATE, found
    assert found.sentences[0] == "move=> *."
    assert any("compl_correct" in s for s in found.sentences)
