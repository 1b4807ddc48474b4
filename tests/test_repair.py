"""``orch repair`` with real Coq: broken proofs found, repaired from the old proof, written."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from typer.testing import CliRunner

from proof_orchestrator.cli import app
from proof_orchestrator.coq.broken import classify, error_offset, find_broken
from proof_orchestrator.coq.holes import qed_proofs
from proof_orchestrator.goals import BreakKind

from .conftest import coqc_ok

NUM = """\
Inductive num : Type := zero : num | succ : num -> num.
Fixpoint plus (a b : num) : num := match a with zero => b | succ p => succ (plus p b) end.
"""

#: ``plus_zero_r`` was renamed ``plus_n_zero`` (no alias); ``twice`` still says the old name
RENAMED = (
    NUM
    + """\
Lemma plus_n_zero : forall n, plus n zero = n.
Proof. induction n; simpl; congruence. Qed.
Lemma twice : forall k, plus (plus k zero) zero = k.
Proof. intros k. rewrite plus_zero_r. rewrite plus_zero_r. reflexivity. Qed.
"""
)

#: the hint ``auto`` relied on was removed
UNHINTED = (
    NUM
    + """\
Inductive even : num -> Prop :=
| even_zero : even zero
| even_ss : forall n, even n -> even (succ (succ n)).
Lemma even_four : even (succ (succ (succ (succ zero)))).
Proof. auto. Qed.
"""
)

#: ``one_is_two`` cannot be proved: its proof no longer checks and nothing repairs it
HOPELESS = (
    NUM
    + """\
Lemma one_is_two : succ zero = succ (succ zero).
Proof. reflexivity. Qed.
Lemma after : plus zero zero = zero.
Proof. reflexivity. Qed.
"""
)


def _run(args: list[str]) -> tuple[int, dict]:
    result = CliRunner().invoke(app, ["repair", *args, "--json"])
    try:
        return result.exit_code, json.loads(result.stdout)
    except json.JSONDecodeError:
        raise AssertionError(result.output) from None


def test_errors_are_located_and_classified() -> None:
    text = "Lemma a : True.\nProof. exact I. Qed.\nLemma b : True.\nProof.\n  exact J. Qed.\n"
    output = (
        'File "./X.v", line 5, characters 2-10:\n'
        "Error: The reference J was not found in the current environment.\n"
    )
    offset, message = error_offset(text, output)  # type: ignore[misc]
    assert text[offset:].startswith("exact J.")
    assert classify(message) is BreakKind.UNKNOWN_REFERENCE
    assert classify('Unable to unify "a" with "b".') is BreakKind.TYPE_MISMATCH
    assert classify("(in proof b): Attempt to save an incomplete proof") is (
        BreakKind.REMAINING_GOALS
    )
    assert classify("Tactic failure: auto failed.") is BreakKind.TACTIC_FAILURE


async def test_every_broken_proof_of_a_file_is_found_and_admitted_in_the_stand_in(
    tmp_path: Path,
) -> None:
    path = tmp_path / "Two.v"
    text = RENAMED + "Lemma thrice : forall k, plus k zero = k.\nProof. exact plus_zero_r. Qed.\n"
    path.write_text(text, encoding="utf-8")

    async def compile_text(candidate: str) -> tuple[bool, str]:
        scratch = tmp_path / "scratch"
        scratch.mkdir(exist_ok=True)
        (scratch / "Two.v").write_text(candidate, encoding="utf-8")
        run = subprocess.run(["coqc", "Two.v"], cwd=scratch, capture_output=True, text=True)
        return run.returncode == 0, run.stdout + run.stderr

    found = await find_broken(path, text, compile_text)
    assert [b.hole.goal.name for b in found.broken] == ["twice", "thrice"]
    assert found.compilations == 3
    assert not found.stuck
    twice = found.broken[0]
    assert twice.kind is BreakKind.UNKNOWN_REFERENCE
    assert twice.failing == "rewrite plus_zero_r."
    assert twice.script[0] == "intros k."
    assert text[twice.original.proof_start : twice.original.proof_end].endswith("Qed.")
    assert [h.goal.name for h, _ in qed_proofs(path, found.standin)] == ["plus_n_zero"]


def test_a_renamed_lemma_is_repaired_by_name_and_the_file_compiles(tmp_path: Path) -> None:
    path = tmp_path / "Renamed.v"
    path.write_text(RENAMED, encoding="utf-8")
    code, summary = _run([str(path), "--budget", "10"])
    assert code == 0
    (proof,) = summary["proofs"]
    assert proof["kind"] == "unknown_reference"
    assert proof["repaired"], proof
    assert proof["strategy"] == "repair"
    assert "plus_n_zero" in proof["new"]
    written = path.read_text(encoding="utf-8")
    assert "plus_zero_r" not in written
    # nothing but the proof changed: the statement and every other line as they were
    assert written.startswith(RENAMED[: RENAMED.index("Proof. intros k.")])
    assert coqc_ok(path)


def test_a_removed_hint_is_repaired(tmp_path: Path) -> None:
    path = tmp_path / "Hint.v"
    path.write_text(UNHINTED, encoding="utf-8")
    code, summary = _run([str(path), "--budget", "10"])
    assert code == 0
    (proof,) = summary["proofs"]
    assert proof["repaired"], proof
    assert coqc_ok(path)


def test_an_unrepairable_proof_is_left_byte_for_byte(tmp_path: Path) -> None:
    path = tmp_path / "Hopeless.v"
    path.write_bytes(HOPELESS.encode())
    code, summary = _run([str(path), "--budget", "3"])
    assert code == 0
    (proof,) = summary["proofs"]
    assert proof["name"] == "one_is_two"
    assert not proof["repaired"]
    assert path.read_bytes() == HOPELESS.encode()


def test_admit_broken_admits_what_cannot_be_repaired_with_its_error(tmp_path: Path) -> None:
    path = tmp_path / "Hopeless.v"
    path.write_text(HOPELESS, encoding="utf-8")
    code, summary = _run([str(path), "--budget", "3", "--admit-broken"])
    assert code == 0
    assert summary["repaired"] == 0
    written = path.read_text(encoding="utf-8")
    assert "(* orch repair: not repaired" in written
    assert written.count("Admitted.") == 1
    assert "Lemma after : plus zero zero = zero.\nProof. reflexivity. Qed." in written
    assert coqc_ok(path)


def test_broken_proofs_are_found_across_dependent_files(tmp_path: Path) -> None:
    """B imports A; both have a proof broken by the rename in A. A is repaired first,
    then B is checked against what A became."""
    (tmp_path / "_CoqProject").write_text("-Q . P\nA.v\nB.v\n", encoding="utf-8")
    (tmp_path / "A.v").write_text(RENAMED, encoding="utf-8")
    (tmp_path / "B.v").write_text(
        "Require Import P.A.\n"
        "Lemma in_b : forall k, plus k zero = k.\nProof. intros. apply plus_zero_r. Qed.\n",
        encoding="utf-8",
    )
    code, summary = _run([str(tmp_path), "--budget", "10"])
    assert code == 0
    found = [(Path(p["file"]).name, p["name"], p["repaired"]) for p in summary["proofs"]]
    assert found == [("A.v", "twice", True), ("B.v", "in_b", True)], summary
    subprocess.run(["coqc", "-Q", ".", "P", "A.v"], cwd=tmp_path, check=True)
    subprocess.run(["coqc", "-Q", ".", "P", "B.v"], cwd=tmp_path, check=True)


def test_kill_9_during_a_repair_loses_nothing(tmp_path: Path) -> None:
    """Killed while it searches, the file is as it was; run again, it is repaired."""
    path = tmp_path / "Hopeless.v"
    path.write_text(HOPELESS, encoding="utf-8")
    orch = Path(sys.executable).with_name("orch")
    process = subprocess.Popen(
        [str(orch), "repair", str(path), "--budget", "30", "--json"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    time.sleep(6)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    assert path.read_text(encoding="utf-8") == HOPELESS
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".Hopeless")]


#: ``symmetric_on`` was made opaque: ``intros`` no longer sees through it
OPAQUE = """\
Definition symmetric_on (R : nat -> nat -> Prop) := forall x y, R x y -> R y x.
Opaque symmetric_on.
Lemma eq_symmetric : symmetric_on (@eq nat).
Proof. intros x y H. rewrite H. reflexivity. Qed.
"""

#: ``below_more``'s premises were swapped; its own proof still introduces the old order
REORDERED = """\
Inductive num : Type := zero : num | succ : num -> num.
Inductive below : num -> num -> Prop :=
| below_zero : forall n, below zero (succ n)
| below_succ : forall n m, below n m -> below (succ n) (succ m).
Lemma below_more : forall n m, m = m -> below n m -> below n (succ m).
Proof. intros n m H _. induction H; constructor; assumption. Qed.
"""


def test_a_proof_through_an_opaque_definition_is_repaired_locally(tmp_path: Path) -> None:
    path = tmp_path / "Opaque.v"
    path.write_text(OPAQUE, encoding="utf-8")
    code, summary = _run([str(path), "--budget", "10"])
    assert code == 0
    (proof,) = summary["proofs"]
    assert proof["repaired"], proof
    assert proof["strategy"] == "repair"
    # transparent for one sentence only: the file's ``Opaque`` still holds after it
    assert "with_strategy transparent [symmetric_on]" in proof["new"]
    assert "Opaque symmetric_on." in path.read_text(encoding="utf-8")
    assert coqc_ok(path)


def test_a_proof_whose_statement_swapped_its_premises_is_repaired(tmp_path: Path) -> None:
    path = tmp_path / "Reordered.v"
    path.write_text(REORDERED, encoding="utf-8")
    code, summary = _run([str(path), "--budget", "10"])
    assert code == 0
    (proof,) = summary["proofs"]
    assert proof["repaired"], proof
    assert proof["strategy"] == "repair"
    assert proof["new"].startswith("intros n m Hrepair0 Hrepair1; revert n m Hrepair1 Hrepair0.")
    written = path.read_text(encoding="utf-8")
    assert "Lemma below_more : forall n m, m = m -> below n m -> below n (succ m)." in written
    assert coqc_ok(path)


def test_repair_variants_read_statements_and_drop_refused_names() -> None:
    from proof_orchestrator.coq.repair import _names_in
    from proof_orchestrator.coq.strategies.repair_variants import (
        argument_variants,
        refused_name,
        statement_shape,
        without_names,
    )

    assert statement_shape("Lemma l (x : t) : forall k l : nat, A -> (B -> C) -> D.") == (
        ["k", "l"],
        2,
    )
    # ``<->`` is not an arrow; a binder after an arrow ends the premises
    assert statement_shape("Lemma l : forall a, P a <-> Q a.") == (["a"], 0)
    assert statement_shape("Lemma l : A -> forall m, B m -> C.") == ([], 1)
    assert statement_shape("Definition d := 1.") is None
    assert refused_name("Error: @rtc_ind_l cannot be used as a hint.") == "rtc_ind_l"
    assert without_names("eauto using a, bad, b.", {"bad"}) == "eauto using a, b."
    assert without_names("split; [eauto using bad|]; auto.", {"bad"}) == "split; [eauto|]; auto."
    variants = set(argument_variants("destruct (lem x y) as [].", {"lem"}))
    assert "destruct (lem x _ y) as []." in variants
    # constructors are names a repair may use (a ``Hint Constructors`` gone), no ``{x | P}``
    lemmas, _ = _names_in(
        "Inductive r : nat -> Prop := | r_zero : r 0 | r_succ n : r n -> r (S n).\n"
        "Definition s := {x : nat | x = 0}.\nLemma l : True. Proof. exact I. Qed.\n"
    )
    assert lemmas == ["r_zero", "r_succ", "l"]


#: ``plus_zero_r`` was renamed to a name spelled nothing like it
RENAMED_FAR = (
    NUM
    + """\
Lemma adding_nothing_on_the_right_changes_nothing : forall n, plus n zero = n.
Proof. induction n; simpl; congruence. Qed.
Lemma twice : forall k, plus (plus k zero) zero = k.
Proof. intros k. rewrite plus_zero_r. rewrite plus_zero_r. reflexivity. Qed.
"""
)

#: ``plus_zero`` now states its equation the other way round
FLIPPED = (
    NUM
    + """\
Lemma plus_zero : forall n, n = plus n zero.
Proof. induction n; simpl; congruence. Qed.
Lemma plus_zero_left_of_m : forall n m, plus (plus n zero) m = plus n m.
Proof. intros n m. rewrite plus_zero. reflexivity. Qed.
"""
)


def test_a_lost_name_is_found_by_coq_search_on_the_goal_where_it_was_used(
    tmp_path: Path,
) -> None:
    path = tmp_path / "Far.v"
    path.write_text(RENAMED_FAR, encoding="utf-8")
    code, summary = _run([str(path), "--budget", "10"])
    assert code == 0
    (proof,) = summary["proofs"]
    assert proof["repaired"], proof
    assert proof["strategy"] == "repair"
    # not by spelling (the names share little): by the shape of the goal, through Search
    assert proof["new"].count("rewrite adding_nothing_on_the_right_changes_nothing.") == 2
    assert coqc_ok(path)


def test_search_goes_on_from_where_the_old_proof_broke(tmp_path: Path) -> None:
    path = tmp_path / "Flipped.v"
    path.write_text(FLIPPED, encoding="utf-8")
    code, summary = _run([str(path), "--budget", "10"])
    assert code == 0
    (proof,) = summary["proofs"]
    assert proof["repaired"], proof
    assert proof["strategy"] == "repair"
    # the old steps up to the break are kept; the search found the rest (``rewrite <-``
    # is none of the fixed variants)
    assert proof["new"].startswith("intros n m. rewrite plus_zero.")
    assert "rewrite <- plus_zero." in proof["new"]
    assert coqc_ok(path)
