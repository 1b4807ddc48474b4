"""The project's own closers (:mod:`proof_orchestrator.coq.strategies.closers`), with real Coq."""

from __future__ import annotations

import subprocess
from collections import Counter
from pathlib import Path

from proof_orchestrator.coq.holes import scan_coq_text
from proof_orchestrator.coq.prover import CoqProver
from proof_orchestrator.coq.strategies.closers import (
    ProjectClosers,
    defined_closers,
    loaded_library_modules,
    module_source,
    one_sentence_proofs,
    rank_closers,
)
from proof_orchestrator.coq.strategies.micro import MicroStrategy
from proof_orchestrator.coq.syntax import split_sentences
from proof_orchestrator.goals import Budget, Outcome
from proof_orchestrator.provers.base import TacticStatus

#: a constant sealed by a module type: no generic tactic sees through it; a solver that knows it
SECRET = """\
Module Type Secret. Parameter secret : nat. Axiom secret_eq : secret = 42. End Secret.
Module Sealed : Secret.
Definition secret := 42.
Lemma secret_eq : secret = 42. Proof. reflexivity. Qed.
End Sealed.
Export Sealed.
"""
SOLVER = "Ltac secret_solver := intros; subst; rewrite ?secret_eq; reflexivity.\n"
GOAL = "Lemma uses : forall n, n = secret -> n + 1 = 43.\nProof.\nAdmitted.\n"


def _codes(text: str) -> list[str]:
    return [s.code for s in split_sentences(text)]


def test_zero_argument_definitions_are_closers_latest_first() -> None:
    codes = _codes(
        "Ltac first_one := auto.\nLtac takes x := apply x.\nLocal Ltac second := eauto.\n"
        'Tactic Notation "third" := tauto.\nTactic Notation "third" "by" tactic(t) := t.\n'
        'Tactic Notation (at level 0) "fourth" := idtac.\n#[export] Ltac fifth := trivial.\n'
    )
    assert defined_closers(codes) == ["fifth.", "fourth.", "third.", "second.", "first_one."]


def test_only_whole_one_sentence_qed_proofs_count_and_a_habit_needs_two_uses() -> None:
    codes = _codes(
        "Lemma a : True. Proof. done. Qed.\nLemma b : True. Proof. done. Qed.\n"
        "Lemma c : True. Proof. intros. done. Qed.\nLemma d : True. Proof. admit. Admitted.\n"
        "Lemma e : True. Proof. exact I. Qed.\nLemma f : True. done. Qed.\n"
    )
    counts = one_sentence_proofs(codes)
    assert counts == Counter({"done.": 3, "exact I.": 1})
    ranked = rank_closers(["mine."], [counts, Counter({"admit.": 9, "crush.": 2})], limit=8)
    # the defined tactic first, then habits by frequency; never an admit, never a one-off
    assert ranked == ["mine.", "done.", "crush."]
    assert rank_closers([], [counts], limit=0) == []


def test_print_libraries_modules_less_coq_s_own() -> None:
    output = (
        "Loaded library files: \n  Coq.Init.Prelude\n  stdpp.base\n  Lib.A\n  Top\n"
        "Loaded and not imported library files: \n  stdpp.sets\n"
    )
    assert loaded_library_modules(output) == ["stdpp.base", "Lib.A", "Top", "stdpp.sets"]


def test_a_module_s_source_is_found_through_the_project_flags(tmp_path: Path) -> None:
    (tmp_path / "theories" / "Sub").mkdir(parents=True)
    source = tmp_path / "theories" / "Sub" / "A.v"
    source.write_text("")
    (tmp_path / "Top.v").write_text("")
    flags = ("-Q", "theories", "Lib")
    assert module_source("Lib.Sub.A", flags, tmp_path) == source
    assert module_source("Top", flags, tmp_path) == tmp_path / "Top.v"
    assert module_source("Lib.Sub.Missing", flags, tmp_path) is None
    assert module_source("Other.Sub.A", flags, tmp_path) is None


async def _micro(directory: Path, flags: tuple[str, ...], name: str, text: str, closers: int):
    path = directory / name
    path.write_text(text, encoding="utf-8")
    (hole,) = scan_coq_text(path, text)
    prover = CoqProver(flags, cwd=str(directory))
    micro = MicroStrategy()
    micro.closers = closers
    try:
        async with prover.session(hole.goal, text, hole.prefix_end) as session:
            found = await micro.prove(session, hole.goal, Budget(30, 1, 3))
            if found.outcome is Outcome.CANDIDATE:
                replay = await session.run_script(found.sentences, session.root, timeout=5)
                assert replay.status is TacticStatus.COMPLETE
            return found
    finally:
        await prover.aclose()


async def test_a_solver_the_file_defines_proves_what_no_generic_tactic_does(
    tmp_path: Path,
) -> None:
    text = SECRET + SOLVER + GOAL
    without = await _micro(tmp_path, (), "F.v", text, closers=0)
    assert without.outcome is not Outcome.CANDIDATE
    found = await _micro(tmp_path, (), "F.v", text, closers=8)
    assert found.outcome is Outcome.CANDIDATE
    assert found.sentences == ("secret_solver.",)


async def test_a_closer_the_project_s_loaded_files_end_their_proofs_with_is_tried(
    tmp_path: Path,
) -> None:
    (tmp_path / "theories").mkdir()
    library = tmp_path / "theories" / "A.v"
    uses = "".join(
        f"Lemma used{i} : secret + {i} = 42 + {i}. Proof. secret_solver. Qed.\n" for i in range(2)
    )
    library.write_text(SECRET + SOLVER + uses)
    subprocess.run(["coqc", "-Q", "theories", "Lib", "theories/A.v"], cwd=tmp_path, check=True)
    flags = ("-Q", "theories", "Lib")
    text = "Require Import Lib.A.\n" + GOAL
    found = await _micro(tmp_path, flags, "B.v", text, closers=8)
    assert found.outcome is Outcome.CANDIDATE
    assert found.sentences == ("secret_solver.",)


async def test_closers_are_read_once_per_position(tmp_path: Path) -> None:
    text = SECRET + SOLVER + GOAL
    path = tmp_path / "F.v"
    path.write_text(text, encoding="utf-8")
    (hole,) = scan_coq_text(path, text)
    prover = CoqProver(cwd=str(tmp_path))
    closers = ProjectClosers()
    try:
        async with prover.session(hole.goal, text, hole.prefix_end) as session:
            first = await closers.at(session)
            assert first == ["secret_solver."]
            assert await closers.at(session) is first
    finally:
        await prover.aclose()
