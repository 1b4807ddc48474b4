"""The fill pipeline end to end, with real coqtop and coqc."""

from __future__ import annotations

import asyncio
import dataclasses
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from proof_orchestrator.config import Settings
from proof_orchestrator.coq.project import working_folder_flags
from proof_orchestrator.coq.session import CoqSession
from proof_orchestrator.coq.strategies.micro import MicroStrategy
from proof_orchestrator.coq.verify import CoqVerifier
from proof_orchestrator.errors import PathNotFound
from proof_orchestrator.goals import Budget, Goal, Outcome
from proof_orchestrator.ledger import Ledger
from proof_orchestrator.provers.base import TacticStatus
from proof_orchestrator.run.pipeline import LEDGER_REPLAY, FileStatus, FillOptions, fill
from proof_orchestrator.strategies.base import StrategyDefaults, StrategyResult

from .conftest import coqc_ok

FAST = FillOptions(orch=Settings(budget=5.0, tactic_timeout=1.0))

EASY = """\
Require Import Arith Lia.
(* a file with one easy hole *)
Lemma easy_one : forall n m : nat, n + m = m + n.
Proof.
Admitted.

Lemma kept : 1 = 1. Proof. reflexivity. Qed.
"""

FALSE = """\
Lemma impossible : forall n m : nat, n + m = m + n + 1.
Admitted.
"""


class FixedScript(StrategyDefaults):
    """A strategy that proposes one given script, if the session accepts it."""

    def __init__(self, *sentences: str) -> None:
        self.sentences = sentences
        self.name = "fixed"
        self.weight = "light"
        self.language = "coq"
        self.uses_slot = True
        self.needs_ledger = False

    async def prove(self, session: CoqSession, goal: Goal, budget: Budget) -> StrategyResult:
        result = await session.run_script(
            self.sentences, session.root, timeout=budget.tactic_seconds
        )
        if result.status is TacticStatus.COMPLETE:
            return StrategyResult(Outcome.CANDIDATE, self.sentences, len(self.sentences))
        return StrategyResult(Outcome.FAILED, (), len(self.sentences), message=result.message)


class ScriptByName(StrategyDefaults):
    """A strategy that proposes a given script per lemma name, if the session accepts it."""

    name = "by-name"
    weight = "light"
    language = "coq"
    uses_slot = True
    needs_ledger = False

    def __init__(self, scripts: dict[str, tuple[str, ...]]) -> None:
        self.scripts = scripts

    async def prove(self, session: CoqSession, goal: Goal, budget: Budget) -> StrategyResult:
        return await FixedScript(*self.scripts[goal.name]).prove(session, goal, budget)


async def test_solved_hole_is_patched_and_the_file_compiles(
    write_v: Callable[[str, str], Path], ledger: Ledger
) -> None:
    path = write_v("Easy.v", EASY)
    report = await fill([path], ledger, FAST)
    assert report.proved == 1
    text = path.read_text()
    assert "Admitted" not in text
    assert text.startswith("Require Import Arith Lia.\n(* a file with one easy hole *)\n")
    assert text.endswith("Qed.\n\nLemma kept : 1 = 1. Proof. reflexivity. Qed.\n")
    assert coqc_ok(path)


async def test_unsolvable_hole_leaves_the_file_byte_identical(
    write_v: Callable[[str, str], Path], ledger: Ledger
) -> None:
    path = write_v("False.v", FALSE)
    before = path.read_bytes()
    # one pass (no revisit at twice the budget): what matters is the untouched file
    one_pass = FillOptions(orch=dataclasses.replace(FAST.orch, budget_cap=FAST.orch.budget))
    report = await fill([path], ledger, one_pass)
    assert report.proved == 0
    assert report.goals[0].outcome in (Outcome.FAILED, Outcome.TIMEOUT)
    assert path.read_bytes() == before


async def test_dry_run_proves_but_writes_nothing(
    write_v: Callable[[str, str], Path], ledger: Ledger
) -> None:
    path = write_v("Easy.v", EASY)
    report = await fill([path], ledger, dataclasses.replace(FAST, dry_run=True))
    assert report.proved == 1
    assert path.read_text() == EASY
    assert not report.files[0].written


async def test_file_that_does_not_compile_is_reported_and_untouched(
    write_v: Callable[[str, str], Path], ledger: Ledger
) -> None:
    broken = EASY + "Check no_such_constant.\n"
    path = write_v("Broken.v", broken)
    report = await fill([path], ledger, FAST)
    assert report.files[0].status is FileStatus.DOES_NOT_COMPILE
    assert "no_such_constant" in report.files[0].message
    assert path.read_text() == broken


async def test_holes_in_sections_modules_and_with_notations(
    write_v: Callable[[str, str], Path], ledger: Ledger
) -> None:
    text = """\
Notation "x <+> y" := (x + y) (at level 50, left associativity).
Module Outer.
  Section Sec.
    Variable k : nat.
    Hypothesis k_pos : 0 < k.
    Lemma in_section : k <+> 0 = k.
    Proof.
    Admitted.
  End Sec.
End Outer.
Check Outer.in_section.
"""
    path = write_v("Scoped.v", text)
    report = await fill([path], ledger, FAST)
    assert report.proved == 1
    assert coqc_ok(path)


async def test_coqproject_flags_are_used(tmp_path: Path, ledger: Ledger) -> None:
    (tmp_path / "_CoqProject").write_text("-Q theories Proj\ntheories/Base.v\ntheories/Use.v\n")
    (tmp_path / "theories").mkdir()
    (tmp_path / "theories" / "Base.v").write_text("Definition twice (n : nat) := n + n.\n")
    use = tmp_path / "theories" / "Use.v"
    use.write_text("From Proj Require Import Base.\nLemma twice_0 : twice 0 = 0.\nAdmitted.\n")
    subprocess.run(["coqc", "-Q", "theories", "Proj", "theories/Base.v"], cwd=tmp_path, check=True)
    report = await fill([tmp_path / "_CoqProject"], ledger, FAST)
    assert report.proved == 1
    assert "Admitted" not in use.read_text()


async def test_candidate_that_only_the_session_accepts_is_no_candidate(
    write_v: Callable[[str, str], Path], ledger: Ledger
) -> None:
    path = write_v("False.v", FALSE)
    before = path.read_bytes()
    # exact_no_check skips the type check: the session says "no more goals" for a false
    # lemma, and its Qed in the session refuses the term
    strategy = FixedScript("intros.", "exact_no_check (eq_refl (0 + 0)).")
    report = await fill([path], ledger, FAST, strategies=[strategy])
    assert report.goals[0].outcome is Outcome.FAILED
    assert report.goals[0].sentences == ()
    assert path.read_bytes() == before


async def test_a_script_that_ends_the_proof_unchecked_is_refused_by_the_gate(
    write_v: Callable[[str, str], Path], ledger: Ledger
) -> None:
    text = "Lemma zero : 0 + 0 = 0.\nAdmitted.\n"
    path = write_v("Zero.v", text)
    # a true lemma: the kernel takes the term at Qed, the gate still refuses the script
    strategy = FixedScript("exact_no_check (eq_refl 0).")
    report = await fill([path], ledger, FAST, strategies=[strategy])
    assert report.goals[0].outcome is Outcome.REJECTED
    assert "exact_no_check" in report.goals[0].message
    assert path.read_text() == text


async def test_candidate_using_another_hole_is_written_modulo_that_hole(
    write_v: Callable[[str, str], Path], ledger: Ledger
) -> None:
    text = (
        "Lemma helper : forall n : nat, n = n + 0.\nAdmitted.\n"
        "Lemma target : forall n : nat, n + 0 = n.\nAdmitted.\n"
    )
    path = write_v("Audit.v", text)
    strategy = FixedScript("intros n.", "rewrite <- helper.", "reflexivity.")
    report = await fill([path], ledger, FAST, strategies=[strategy])
    by_name = {g.goal.name: g for g in report.goals}
    assert by_name["target"].outcome is Outcome.PROVED
    assert [use.label for use in by_name["target"].uses_holes] == ["helper"]
    assert "rewrite <- helper." in path.read_text()
    # with --strict-holes the audit refuses it, naming the hole
    path.write_text(text)
    strict = dataclasses.replace(
        FAST, reuse=False, orch=dataclasses.replace(FAST.orch, strict_holes=True)
    )
    report = await fill([path], ledger, strict, strategies=[strategy])
    by_name = {g.goal.name: g for g in report.goals}
    assert by_name["target"].outcome is Outcome.REJECTED
    assert "helper" in by_name["target"].message
    assert path.read_text() == text


async def test_rerun_reapplies_a_verified_proof_after_the_file_changed_back(
    write_v: Callable[[str, str], Path], ledger: Ledger
) -> None:
    path = write_v("Easy.v", EASY)
    await fill([path], ledger, FAST)
    proved_text = path.read_text()
    path.write_text(EASY)  # the user reverts the file
    report = await fill([path], ledger, FAST)
    assert report.goals[0].strategy == LEDGER_REPLAY
    assert path.read_text() == proved_text
    stats = ledger.stats()
    assert stats["proofs"] == 2
    assert stats["goals"] == {"proved": 1}


async def test_missing_path_is_a_clear_error(tmp_path: Path, ledger: Ledger) -> None:
    with pytest.raises(PathNotFound, match="does not exist"):
        await fill([tmp_path / "nope.v"], ledger, FAST)


async def test_bad_candidates_are_singled_out_and_the_good_ones_kept(
    write_v: Callable[[str, str], Path], ledger: Ledger
) -> None:
    text = (
        "Lemma helper : forall n : nat, n = n + 0.\nAdmitted.\n"
        "Lemma good : forall n : nat, n = n.\nAdmitted.\n"
        "Section S.\nVariable k : nat.\nHypothesis k_pos : 0 < k.\n"
        "Lemma narrow : k = k.\nAdmitted.\nEnd S.\n"
        "Lemma uses_narrow : 1 = 1.\nProof. exact (narrow 1 (le_n 1)). Qed.\n"
        "Lemma via_hole : forall n : nat, n + 0 = n.\nAdmitted.\n"
    )
    path = write_v("Mixed.v", text)
    strategy = ScriptByName(
        {
            # a true lemma, but the script skips the check: the gate refuses it
            "helper": ("intros n.", "exact_no_check (plus_n_O n)."),
            "good": ("reflexivity.",),
            # closes with Qed in the session; proved, it no longer takes k_pos after
            # ``End S`` (admitted, it took every section variable), and the file's later
            # use of it fails: only the whole-file compilation sees it
            "narrow": ("reflexivity.",),
            "via_hole": ("intros n.", "rewrite <- helper.", "reflexivity."),
        }
    )
    report = await fill([path], ledger, FAST, strategies=[strategy])
    outcomes = {g.goal.name: g.outcome for g in report.goals}
    assert outcomes == {
        "helper": Outcome.REJECTED,  # by the gate
        "good": Outcome.PROVED,
        "narrow": Outcome.REJECTED,  # by the whole-file compilation
        "via_hole": Outcome.PROVED,  # closed modulo helper, a hole still open
    }
    assert [use.label for use in report.goals[3].uses_holes] == ["helper"]
    patched = path.read_text()
    assert "Lemma good : forall n : nat, n = n.\nProof.\n  reflexivity.\nQed." in patched
    assert patched.count("Admitted.") == 2
    assert coqc_ok(path)


async def test_file_that_cannot_be_split_is_reported_and_untouched(
    write_v: Callable[[str, str], Path], ledger: Ledger
) -> None:
    text = EASY + "(* an unclosed comment\n"
    path = write_v("Unclosed.v", text)
    report = await fill([path], ledger, FAST)
    assert report.files[0].status is FileStatus.UNREADABLE
    assert "unterminated comment" in report.files[0].message
    assert path.read_text() == text


async def test_a_failing_lia_leaves_no_cache_file_in_the_project(
    write_v: Callable[[str, str], Path], ledger: Ledger
) -> None:
    """Coq writes .lia.cache into its working folder: the search's own ``lia`` (sessions turn
    the cache off), and the file's proofs above the hole, run in every session and in the
    whole-file check (those run in scratch folders)."""
    own = (
        "Require Import Lia.\n"
        "Lemma own (n : nat) : n = n.\n"
        "Proof. try (assert (n = S n) by lia). reflexivity. Qed.\n"
    )
    path = write_v("Lia.v", own + FALSE + EASY.replace("Require Import Arith Lia.\n", ""))
    report = await fill([path], ledger, FAST, strategies=[MicroStrategy()])
    assert report.proved == 1
    assert report.goals[0].tactics_tried > 0
    left = sorted(p.name for p in path.parent.iterdir() if not p.name.startswith("ledger.sqlite"))
    assert left == [".orch", "Lia.v"]  # .orch holds orch's scratch folders, now empty
    assert list((path.parent / ".orch").rglob("*.cache")) == []


async def test_a_lone_file_still_requires_its_compiled_sibling(
    write_v: Callable[[str, str], Path], ledger: Ledger
) -> None:
    """No project description: coqc in the file's folder puts the folder in the load path;
    the sessions and the check, run in scratch folders, get it as ``-Q folder ""``."""
    base = write_v("Base.v", "Definition two := 2.\n")
    subprocess.run(["coqc", base.name], cwd=base.parent, check=True, capture_output=True)
    text = "Require Import Base.\nLemma two_ok : two = 2.\nProof.\nAdmitted.\n"
    path = write_v("UsesBase.v", text)
    report = await fill([path], ledger, FAST)
    assert report.files[0].status is FileStatus.DONE, report.files[0].message
    assert report.proved == 1
    assert "Admitted." not in path.read_text(encoding="utf-8")


def test_the_working_folder_is_mapped_only_where_no_mapping_would_be_remapped(
    tmp_path: Path,
) -> None:
    inside = tmp_path / "theories"
    assert working_folder_flags(tmp_path, ()) == ("-Q", str(tmp_path.resolve()), "")
    assert working_folder_flags(tmp_path, ("-R", str(inside), "Lib")) == ()
    assert working_folder_flags(inside, ("-R", str(tmp_path), "Lib")) == ()
    elsewhere = ("-Q", "/usr/lib/ocaml/coq/user-contrib/Other", "Other")
    assert working_folder_flags(inside, elsewhere)[:2] == ("-Q", str(inside.resolve()))
    # a folder of Coq's own library is mapped by Coq already, under its real name
    stdlib_sets = Path(subprocess.check_output(["coqc", "-where"], text=True).strip())
    assert working_folder_flags(stdlib_sets / "theories" / "Sets", ()) == ()


async def test_the_files_are_checked_at_once_and_reported_in_their_order(
    write_v: Callable[[str, str], Path], ledger: Ledger, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before the search, each file's check (one compile as it stands) runs beside the
    others as the governor's slots allow (every slot at the target 1.0): the first
    file's check here waits for the second's to start, which one check after the
    other never does. Every goal is queued before a worker starts."""
    first = write_v("First.v", "Lemma first_one : 1 + 1 = 2.\nProof.\nAdmitted.\n")
    later = write_v("Later.v", "Lemma later_one : 2 + 2 = 4.\nProof.\nAdmitted.\n")
    later_started = asyncio.Event()
    order: list[str] = []

    class Announcing(FixedScript):
        async def prove(self, session: CoqSession, goal: Goal, budget: Budget) -> StrategyResult:
            order.append(f"attempt {goal.name}")
            return await super().prove(session, goal, budget)

    checks = CoqVerifier.compiles

    async def compiles(self: CoqVerifier, path: Path, text: str) -> tuple[bool, str]:
        if path.name == later.name:
            later_started.set()
        else:
            await asyncio.wait_for(later_started.wait(), timeout=60)
        result = await checks(self, path, text)
        order.append(f"checked {path.name}")
        return result

    monkeypatch.setattr(CoqVerifier, "compiles", compiles)
    whole_machine = FillOptions(orch=dataclasses.replace(FAST.orch, cpu_target=1.0))
    report = await fill(
        [first, later], ledger, whole_machine, strategies=[Announcing("reflexivity.")]
    )
    assert report.proved == 2
    assert [f.path.name for f in report.files] == ["First.v", "Later.v"]
    assert sorted(order[:2]) == ["checked First.v", "checked Later.v"]
    assert "Admitted" not in first.read_text()
    assert "Admitted" not in later.read_text()
