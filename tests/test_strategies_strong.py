"""Search, retrieval, the k-NN model, hammer and cached replay (real Coq where a prover runs)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from proof_orchestrator.config import Settings
from proof_orchestrator.coq.display import COQ
from proof_orchestrator.coq.holes import qed_proofs, scan_coq_text
from proof_orchestrator.coq.prover import CoqProver
from proof_orchestrator.coq.script import check_script
from proof_orchestrator.coq.strategies.hammer import (
    HAMMER_LIBEXEC,
    HAMMER_PREAMBLE,
    HammerStrategy,
    hammer_environment,
    reconstruction,
)
from proof_orchestrator.coq.strategies.knn import FileModels
from proof_orchestrator.coq.strategies.micro import (
    InductionStrategy,
    MicroStrategy,
    lia_tactic,
    nearest_first,
)
from proof_orchestrator.coq.strategies.retrieval import file_premises, index_for
from proof_orchestrator.coq.strategies.search import SearchStrategy, bulletize
from proof_orchestrator.goals import Budget, Outcome
from proof_orchestrator.ledger import Ledger
from proof_orchestrator.provers.base import TacticStatus
from proof_orchestrator.run.lineup import build_lineup

TWO_STEPS = """\
Inductive num : Type := zero : num | succ : num -> num.
Parameter f g h : num -> num.
Axiom g_is_h : forall n : num, g n = h n.
Axiom f_h_inverse : forall n : num, f (h n) = n.
Lemma f_g : forall n : num, f (g n) = n.
Proof.
Admitted.
"""


@contextlib.asynccontextmanager
async def _only_hole(directory: Path, name: str, text: str) -> AsyncIterator[tuple[Any, Any]]:
    """A session at the one hole of ``text`` (written to ``directory/name``), and the hole."""
    path = directory / name
    path.write_text(text, encoding="utf-8")
    (hole,) = scan_coq_text(path, text)
    prover = CoqProver(cwd=str(directory))
    try:
        async with prover.session(hole.goal, text, hole.prefix_end) as session:
            yield session, hole
    finally:
        await prover.aclose()


async def test_search_finds_a_proof_no_single_quick_tactic_finds(tmp_path: Path) -> None:
    async with _only_hole(tmp_path, "T.v", TWO_STEPS) as (session, hole):
        for quick in (MicroStrategy(), InductionStrategy()):
            alone = await quick.prove(session, hole.goal, Budget(10, 1, 5))
            assert alone.outcome is not Outcome.CANDIDATE
        found = await SearchStrategy().prove(session, hole.goal, Budget(20, 1, 5))
        assert found.outcome is Outcome.CANDIDATE
        assert len(found.sentences) >= 2
        assert any("g_is_h" in s for s in found.sentences)  # a retrieved premise
        replay = await session.run_script(found.sentences, session.root, timeout=5)
        assert replay.status is TacticStatus.COMPLETE


def test_bulletize_opens_a_bullet_per_subgoal() -> None:
    steps = ("induction n.", "reflexivity.", "simpl.", "rewrite IHn.", "reflexivity.")
    counts = (1, 2, 1, 1, 1, 0)
    assert bulletize(steps, counts) == [
        "induction n.",
        "-",
        "reflexivity.",
        "-",
        "simpl.",
        "rewrite IHn.",
        "reflexivity.",
    ]


ORDERED = """\
Lemma first_lemma : forall n : nat, n = n.
Proof. reflexivity. Qed.
Lemma second_lemma : forall n : nat, n + 0 = n.
Proof. induction n; simpl; congruence. Qed.
Lemma third_lemma : forall n : nat, 0 + n = n.
Proof. reflexivity. Qed.
"""


async def test_retrieval_never_offers_the_lemma_under_proof_or_later_ones(tmp_path: Path) -> None:
    path = tmp_path / "O.v"
    path.write_text(ORDERED, encoding="utf-8")
    hole = next(h for h, _ in qed_proofs(path, ORDERED) if h.goal.name == "second_lemma")
    prover = CoqProver(cwd=str(tmp_path))
    try:
        async with prover.session(hole.goal, ORDERED, hole.prefix_end) as session:
            names = {p.name for p in file_premises(session.prefix)}
            assert names == {"first_lemma"}
            index = await index_for(session)
            ranked = {p.name for p in index.rank("n + 0 = n", k=50)}
            assert "second_lemma" not in ranked
            assert "third_lemma" not in ranked
            assert "first_lemma" in {p.name for p in index.premises}
    finally:
        await prover.aclose()


LEARN = """\
Inductive num : Type := zero : num | succ : num -> num.
Fixpoint twice (n : num) : num := match n with zero => zero | succ p => succ (succ (twice p)) end.
Fixpoint half (n : num) : num :=
  match n with zero => zero | succ zero => zero | succ (succ p) => succ (half p) end.
Lemma half_twice : forall n : num, half (twice n) = n.
Proof.
  intros n. induction n as [| p IHp].
  - reflexivity.
  - simpl. rewrite IHp. reflexivity.
Qed.
Lemma half_twice_again : forall m : num, half (twice m) = m.
Proof.
  intros m. induction m as [| p IHp].
  - reflexivity.
  - simpl. rewrite IHp. reflexivity.
Qed.
"""


async def test_knn_trained_on_earlier_proofs_closes_a_later_similar_goal(tmp_path: Path) -> None:
    path = tmp_path / "L.v"
    path.write_text(LEARN, encoding="utf-8")
    hole = next(h for h, _ in qed_proofs(path, LEARN) if h.goal.name == "half_twice_again")
    prover = CoqProver(cwd=str(tmp_path))
    models = FileModels()
    try:
        async with prover.session(hole.goal, LEARN, hole.prefix_end) as session:
            model = await models.model_for(session)
            # trained on the earlier proof only: the hidden proof was never replayed
            tactics = [tactic for _, tactic in model.pairs]
            assert len(tactics) == 6
            assert "intros n." in tactics
            assert "intros m." not in tactics
            after = await session.run_script(
                ["intros m.", "induction m as [| p IHp].", "-", "reflexivity.", "-", "simpl."],
                session.root,
                timeout=5,
            )
            assert after.status is TacticStatus.GOALS
            # follow the model: its first suggestion that applies, then its best next one
            state, goals = after.state, after.goals
            used: list[str] = []
            for _ in range(3):
                for tactic, _score in model.suggest(goals[0], k=3):
                    step = await session.run_tactic(tactic, state, timeout=5)
                    if step.ok:
                        used.append(tactic)
                        state, goals = step.state, step.goals
                        break
                if not goals:
                    break
            assert used == ["rewrite IHp.", "reflexivity."]
            assert goals == ()
    finally:
        await prover.aclose()


HAMMERED = """\
Require Import List.
Lemma rev_length_again : forall (A : Type) (l : list A), length (rev l) = length l.
Proof.
Admitted.
"""


@pytest.mark.skipif(not os.path.isdir(HAMMER_LIBEXEC), reason="CoqHammer's ATPs are missing")
async def test_hammer_proof_is_stored_as_its_reconstruction_and_needs_no_atp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "H.v"
    path.write_text(HAMMERED, encoding="utf-8")
    (hole,) = scan_coq_text(path, HAMMERED)
    hammer_environment()
    prover = CoqProver(cwd=str(tmp_path))
    codes = [*HAMMER_PREAMBLE, *prover._prefix_codes(HAMMERED, hole.prefix_end)]
    try:
        async with prover.session_at(hole.goal, codes) as session:
            found = await HammerStrategy().prove(session, hole.goal, Budget(20, 1, 5))
        assert found.outcome is Outcome.CANDIDATE
        (tactic,) = found.sentences
        assert "hammer" not in tactic
        assert reconstruction(f"Replace the hammer tactic with: {tactic}") == tactic
    finally:
        await prover.aclose()
    # without the ATPs on PATH, the stored tactic still proves the lemma
    bare = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if p != HAMMER_LIBEXEC)
    monkeypatch.setenv("PATH", bare)
    prover = CoqProver(cwd=str(tmp_path))
    try:
        async with prover.session_at(hole.goal, codes) as session:
            check = await session.run_tactic(tactic, session.root, timeout=20)
            assert check.status is TacticStatus.COMPLETE
    finally:
        await prover.aclose()


def test_cached_replay_tries_the_nearest_proved_statements_first() -> None:
    proved = [
        (
            "Lemma app_nil_r : forall l : list nat, l ++ nil = l.",
            ("induction l; simpl; congruence.",),
        ),
        ("Lemma le_refl : forall n, n <= n.", ("auto.",)),
        ("Lemma two_steps : True.", ("split.", "exact I.")),  # not one sentence: not replayed
    ]
    near = nearest_first(
        "Lemma nil_app_r : forall m : list bool, m ++ nil = m.", proved, ["lia.", "auto."], COQ
    )
    assert near[0] == "induction l; simpl; congruence."
    assert near.count("auto.") == 1
    assert "lia." in near
    assert "split." not in near
    assert "exact I." not in near


def test_profile_one_has_search_and_hammer_profile_zero_does_not(tmp_path: Path) -> None:
    ledger = Ledger(f"sqlite:///{tmp_path / 'l.sqlite'}")
    try:
        names = {p: [s.name for s in build_lineup(Settings(profile=p), ledger)] for p in (0, 1, 2)}
    finally:
        ledger.close()
    assert {"search", "sauto", "hammer"} <= set(names[1])
    assert not {"search", "sauto", "hammer"} & set(names[0])
    assert "market" in names[2]
    assert "market" not in names[1]


async def test_proofs_found_before_seed_the_knn_model() -> None:
    seeded = FileModels(
        [("forall l : list nat, l ++ nil = l", ("induction l; simpl; congruence.",))]
    )
    goal = SimpleNamespace(file=Path("A.v"), old_script=())
    session = SimpleNamespace(goal=goal, prefix=["Lemma x : True."])
    model = await seeded.model_for(session)  # type: ignore[arg-type]
    (best, _), *_ = model.suggest("forall m : list bool, m ++ nil = m")
    assert best == "induction l; simpl; congruence."
    assert await FileModels().model_for(session) is not model  # type: ignore[arg-type]


async def test_a_shadowed_lia_is_called_by_a_name_the_script_gate_accepts(tmp_path: Path) -> None:
    text = (
        "Require Import Lia.\nLtac lia := fail.\n"
        "Lemma add_zero : forall n : nat, n + 0 = n.\nProof.\nAdmitted.\n"
    )
    async with _only_hole(tmp_path, "S.v", text) as (session, _):
        lia = await lia_tactic(session)
        assert lia is not None
        assert lia.startswith("(")
        assert check_script([f"intros; {lia}."])
        closed = await session.run_tactic(f"intros; {lia}.", session.root, timeout=5)
        assert closed.status is TacticStatus.COMPLETE


UNGUARDED = """\
CoInductive stream := Cons : nat -> stream -> stream.
CoInductive zeros : stream -> Prop := Z : forall s, zeros s -> zeros (Cons 0 s).
CoFixpoint zs := Cons 0 zs.
Ltac loop := let H := fresh "CIH" in cofix H; assumption.
Lemma zeros_zs : zeros zs.
Proof.
Admitted.
"""


async def test_steps_that_leave_no_goal_are_a_proof_only_if_qed_takes_them(
    tmp_path: Path,
) -> None:
    """The file's own ``loop`` closes every goal with a ``cofix`` the kernel refuses at
    ``Qed`` (unguarded). The search tries it first among the file's tactics; it must
    not return it, and ``qed_check`` says why."""
    async with _only_hole(tmp_path, "Z.v", UNGUARDED) as (session, hole):
        closes = await session.run_script(["loop."], session.root, timeout=5)
        assert closes.status is TacticStatus.COMPLETE  # no goal left ...
        taken, said = await session.qed_check(["loop."], hole.goal.name, 5, assumptions=False)
        assert not taken  # ... and no proof
        assert "ill-formed" in said
        found = await SearchStrategy().prove(session, hole.goal, Budget(8, 1, 5))
        assert found.outcome is not Outcome.CANDIDATE or "loop." not in found.sentences
        if found.outcome is Outcome.CANDIDATE:
            taken, _ = await session.qed_check(found.sentences, hole.goal.name, 5)
            assert taken


BRANCHES = """\
Parameter g : nat -> option nat.
Lemma g_branches (n : nat) : match g n with Some k => S k | None => 1 end <> 0.
Proof.
Admitted.
"""


async def test_search_takes_apart_what_the_conclusion_branches_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``destruct (g n)`` splits the ``match``; neither branch then needs more than a
    closer. Without the scrutinee's case analysis the search does not find it."""
    from proof_orchestrator.coq.strategies import search as search_module

    async with _only_hole(tmp_path, "B.v", BRANCHES) as (session, hole):
        found = await SearchStrategy().prove(session, hole.goal, Budget(8, 1, 5))
        assert found.outcome is Outcome.CANDIDATE
        assert any("destruct (g n)" in s for s in found.sentences), found.sentences
        taken, _ = await session.qed_check(found.sentences, hole.goal.name, 5)
        assert taken
        monkeypatch.setattr(search_module, "scrutinee_tactics", lambda *_: [])
        blind = await SearchStrategy().prove(session, hole.goal, Budget(8, 1, 5))
        # the search runs out of states or of time, having tried what it had (121
        # tactics since BM25 reads operators: the premises it retrieves for ``<> 0``
        # open no state; 6,019 before, when they opened states without end)
        assert blind.outcome in (Outcome.FAILED, Outcome.TIMEOUT), blind.outcome
        assert not blind.sentences
        assert blind.tactics_tried > 50, blind
