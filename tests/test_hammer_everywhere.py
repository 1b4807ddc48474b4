"""CoqHammer in files that do not load it: real Coq, CoqHammer, E and CVC4, through `orch fill`."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from proof_orchestrator.cli import app
from proof_orchestrator.config import Settings
from proof_orchestrator.coq.backend import CoqBackend
from proof_orchestrator.coq.holes import qed_proofs
from proof_orchestrator.coq.project import coq_library_roots, project_for
from proof_orchestrator.coq.prover import CoqProver
from proof_orchestrator.coq.script import check_script, passes_gate
from proof_orchestrator.coq.strategies import proof_terms
from proof_orchestrator.coq.strategies.case_split import (
    backward_reconstructions,
    case_analysis_reconstructions,
    case_split_reconstructions,
    instance_reconstructions,
)
from proof_orchestrator.coq.strategies.hammer import (
    FOUND_WITH_TACTICS,
    TACTICS_IMPORT,
    TERM_MESSAGE,
    HammerStrategy,
    _Scripts,
    missing_atps,
    printed_hints,
    standard_reconstructions,
)
from proof_orchestrator.coq.strategies.micro import lia_tactic
from proof_orchestrator.goals import Budget, Outcome
from proof_orchestrator.ledger import Ledger
from proof_orchestrator.provers.base import TacticStatus
from proof_orchestrator.run.pipeline import FillOptions, fill
from proof_orchestrator.run.reports import FileStatus

from .conftest import coqc_ok

#: no CoqHammer in the file; the lemma sits in a section; only ATPs find plus_zero_r
IN_A_SECTION = """\
Require Import Bool.
Inductive num : Type := zero : num | succ : num -> num.
Fixpoint plus (a b : num) : num := match a with zero => b | succ p => succ (plus p b) end.
Lemma plus_zero_r : forall n, plus n zero = n.
Proof. induction n; simpl; congruence. Qed.
Section S.
Variable k : num.
Lemma twice : plus (plus k zero) zero = k.
Admitted.
End S.
"""

#: proved by hammer, rebuilt by no tactic stand-in (a case split, then a witness)
NEEDS_SAUTO = """\
Require Import Bool.
Lemma pred_of_nonzero : forall n : nat, n <> 0 -> exists m, n = S m.
Admitted.
"""

#: the same statement twice: with no binder before the colon, and with ``n`` there (its
#: proof starts with ``n`` in the context, while ``Show Proof`` prints ``fun n => ...``)
TERMS_BOTH_WAYS = """\
Require Import Bool.
Lemma pred_of_nonzero : forall n : nat, n <> 0 -> exists m, n = S m.
Admitted.
Lemma pred_of_nonzero' (n : nat) : n <> 0 -> exists m, n = S m.
Admitted.
"""


def _options() -> FillOptions:
    # a fresh coqtop's first ATP call spends ~6 CPU s reading the loaded libraries' proofs
    # for premise selection (later calls in the same process do not): room for that
    return FillOptions(orch=Settings(budget=30.0, tactic_timeout=1.0))


async def test_hammer_in_a_file_without_coqhammer_writes_a_proof_that_compiles_without_it(
    tmp_path: Path, ledger: Ledger
) -> None:
    path = tmp_path / "Sec.v"
    path.write_text(IN_A_SECTION, encoding="utf-8")
    report = await fill([path], ledger, _options(), strategies=[HammerStrategy()])
    (goal,) = report.goals
    assert goal.outcome is Outcome.PROVED, goal.message
    assert goal.strategy == "hammer"
    written = path.read_text(encoding="utf-8")
    assert "Admitted." not in written
    assert "Hammer" not in written  # no import, no CoqHammer tactic
    assert "plus_zero_r" in " ".join(goal.sentences)
    assert coqc_ok(path)


async def test_a_proof_no_stand_in_rebuilds_is_written_as_hammers_proof_term(
    tmp_path: Path, ledger: Ledger
) -> None:
    """``sauto``'s proof (a case split, then a witness) is a term of the standard library
    alone: printed in hammer's side session, it is ``exact (t)`` where the statement has
    no binder before its colon and ``exact ((t) n)``, applied to the name of the binder
    in the context, where it has one; the file compiles without
    CoqHammer, and the long term is laid out over lines of at most 100 characters."""
    path = tmp_path / "Terms.v"
    path.write_text(TERMS_BOTH_WAYS, encoding="utf-8")
    report = await fill([path], ledger, _options(), strategies=[HammerStrategy()])
    plain, binder = report.goals
    assert plain.outcome is Outcome.PROVED, plain.message
    assert binder.outcome is Outcome.PROVED, binder.message
    assert plain.sentences[0].startswith("exact (")
    assert binder.sentences[0].startswith("exact (("), binder.sentences
    assert " ".join(binder.sentences).endswith(") n).")
    written = path.read_text(encoding="utf-8")
    assert "Admitted." not in written
    assert "Hammer" not in written
    assert "sauto" not in written
    assert max(len(line) for line in written.splitlines()) <= 100
    assert coqc_ok(path)
    with sqlite3.connect(tmp_path / "ledger.sqlite") as db:
        query = "SELECT message FROM attempts WHERE outcome = 'candidate'"
        messages = [m for (m,) in db.execute(query)]
    assert len(messages) == 2
    assert all(m.startswith(TERM_MESSAGE) for m in messages), messages


async def test_a_proof_only_coqhammer_tactics_rebuild_keeps_the_hole_open_and_says_so(
    tmp_path: Path, ledger: Ledger, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A term too long to keep (the limit set to 10 characters here) is not written:
    the hole stays open, and the attempt names the CoqHammer tactic and the flag."""
    monkeypatch.setattr(proof_terms, "MAX_TERM_CHARS", 10)
    path = tmp_path / "Andb.v"
    path.write_text(NEEDS_SAUTO, encoding="utf-8")
    report = await fill([path], ledger, _options(), strategies=[HammerStrategy()])
    (goal,) = report.goals
    assert goal.outcome is not Outcome.PROVED
    assert goal.message.startswith(FOUND_WITH_TACTICS)
    assert "--allow-import lia,hammer-tactics" in goal.message
    assert path.read_text(encoding="utf-8") == NEEDS_SAUTO


def test_allow_import_hammer_tactics_adds_the_import_after_the_last_require(
    tmp_path: Path,
) -> None:
    path = tmp_path / "Andb.v"
    path.write_text(NEEDS_SAUTO, encoding="utf-8")
    result = CliRunner().invoke(
        app,
        ["fill", str(path), "--allow-import", "hammer-tactics", "--profile", "1", "--json"],
    )
    assert result.exit_code == 0, result.output
    written = path.read_text(encoding="utf-8")
    assert "Admitted." not in written
    if TACTICS_IMPORT in written:  # a CoqHammer tactic proved it: the import is right after
        assert written.startswith(f"Require Import Bool.\n{TACTICS_IMPORT}\n")
        assert written.count(TACTICS_IMPORT) == 1
    assert coqc_ok(path)


async def test_with_the_import_allowed_hammer_keeps_coqhammers_tactic(
    tmp_path: Path, ledger: Ledger
) -> None:
    path = tmp_path / "Andb.v"
    path.write_text(NEEDS_SAUTO, encoding="utf-8")
    report = await fill(
        [path], ledger, _options(), strategies=[HammerStrategy(allow_tactics_import=True)]
    )
    (goal,) = report.goals
    assert goal.outcome is Outcome.PROVED, goal.message
    assert goal.imports == (TACTICS_IMPORT,)
    assert report.files[0].status is FileStatus.DONE
    written = path.read_text(encoding="utf-8")
    assert written.startswith(f"Require Import Bool.\n{TACTICS_IMPORT}\nLemma pred_of_nonzero")
    assert coqc_ok(path)


def test_an_unknown_import_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "A.v"
    path.write_text(NEEDS_SAUTO, encoding="utf-8")
    result = CliRunner().invoke(app, ["fill", str(path), "--allow-import", "mathcomp"])
    assert result.exit_code == 2
    assert "allow_import" in result.output
    assert "hammer-tactics" in result.output


def test_standard_reconstructions_name_the_atps_lemmas_both_ways() -> None:
    output = (
        "- dependencies: Top.plus_zero_r, Coq.Init.Logic.eq_sym\n"
        "Replace the hammer tactic with:\n\tscongruence use: plus_zero_r, eq_sym.\n"
    )
    found = standard_reconstructions(output)
    assert "eauto using plus_zero_r, eq_sym." in found
    assert "eauto using Top.plus_zero_r, Coq.Init.Logic.eq_sym." in found
    assert all("scongruence" not in t and "sauto" not in t for t in found)


def test_a_printed_tactics_clauses_are_read_apart() -> None:
    """`unfold:` and `inv:` are not lemma names: they become an unfold and an inversion."""
    printed = "hauto lq: on use: Add_intro1, Add_inv unfold: Complement, Included inv: list."
    assert printed_hints(printed) == {
        "use": ["Add_intro1", "Add_inv"],
        "unfold": ["Complement", "Included"],
        "inv": ["list"],
    }
    assert printed_hints("sauto lq: on.") == {}
    found = standard_reconstructions(f"Replace the hammer tactic with: {printed}\n")
    assert found[0] == "eauto using Add_intro1, Add_inv."
    assert (
        "intros; unfold Complement, Included in *; intros; firstorder using Add_intro1, Add_inv."
        in found
    )
    assert all("unfold:" not in t and "inv:" not in t and "lq:" not in t for t in found)
    # a ctrs: clause lends its types' constructors to eauto, never to a rewrite
    found = standard_reconstructions("Replace the hammer tactic with: sauto use: foo ctrs: ev.\n")
    assert "intros; eauto using foo, ev." in found
    assert not any("?ev" in t for t in found)


@pytest.mark.parametrize(
    "printed",
    [
        "hfcrush use: sin_cos unfold: Rgt, Rge, tan, Rdiv, Rle.",
        "qauto use: equal_spec, mem_1, inter_add_2.",
        "hauto lq: on use: Add_intro1, Add_inv unfold: Complement, Included inv: list.",
        "sauto lq: on.",
    ],
)
def test_every_rebuild_script_passes_the_script_gate(printed: str) -> None:
    """A rebuild that closes the goal and is then refused by the gate is a proof lost
    (the seventh held-out set lost ``IZR_nz`` and ``inter_add_2`` to a ``*)``)."""
    output = f"- dependencies: Top.a, Top.b\nReplace the hammer tactic with:\n\t{printed}\n"
    for lia in (None, "lia"):
        for script in standard_reconstructions(output, lia):
            check_script([script])


def test_the_gate_check_refuses_a_comment_end_and_admit() -> None:
    assert passes_gate("intros; try rewrite L by solve [eauto with *]; auto with *.")
    assert not passes_gate("intros; try rewrite L by (eauto with *); auto with *.")
    assert not passes_gate("admit.")


async def test_a_script_the_gate_refuses_is_never_tried(tmp_path: Path) -> None:
    """coqtop accepts the first script (``*)`` is no comment to it); the gate would
    throw its proof away, so the quick strategy must skip it and win with the second."""
    from proof_orchestrator.coq.holes import scan_coq_file
    from proof_orchestrator.coq.prover import CoqProver
    from proof_orchestrator.coq.strategies.hammer import _Scripts

    text = "Lemma t : True.\nAdmitted.\n"
    path = tmp_path / "Gate.v"
    path.write_text(text, encoding="utf-8")
    (hole,) = scan_coq_file(path)
    accepted_by_coq_only = "idtac; (eauto with *)."
    prover = CoqProver()
    try:
        async with prover.session(hole.goal, text, hole.prefix_end) as session:
            coq_says = await session.run_tactic(accepted_by_coq_only, session.root, timeout=5)
            assert coq_says.status is TacticStatus.COMPLETE
            quick = _Scripts("quick", [accepted_by_coq_only, "exact I."])
            found = await quick.prove(session, hole.goal, Budget(5.0, 2.0, 1.0))
    finally:
        await prover.aclose()
    assert found.outcome is Outcome.CANDIDATE
    assert found.sentences == ("exact I.",)
    assert found.tactics_tried == 1  # the refused script was never sent


@pytest.mark.parametrize(
    ("text", "expected_at"),
    [
        ("Require Import Bool.\nFrom Coq Require Arith.\nLemma x : True.\nAdmitted.\n", 44),
        ("Lemma x : True.\nAdmitted.\n", 0),
    ],
)
def test_the_import_goes_after_the_last_require_before_the_hole(
    tmp_path: Path, text: str, expected_at: int
) -> None:
    from proof_orchestrator.coq.holes import scan_coq_text
    from proof_orchestrator.project.patch import Patch

    (hole,) = scan_coq_text(tmp_path / "x.v", text)
    at, inserted = CoqBackend().import_insertion(
        text, [Patch(hole, ("exact I.",), (), (TACTICS_IMPORT,))]
    )
    assert at == expected_at
    assert TACTICS_IMPORT in inserted


async def test_hammer_on_a_false_goal_leaves_no_cache_file_in_the_project(
    tmp_path: Path, ledger: Ledger
) -> None:
    """Loading CoqHammer loads Lia, whose failures write .lia.cache into the working folder."""
    path = tmp_path / "False.v"
    text = "Lemma hopeless : forall n : nat, n = S n.\nAdmitted.\n"
    path.write_text(text, encoding="utf-8")
    options = FillOptions(orch=Settings(budget=8.0, tactic_timeout=1.0))
    report = await fill([path], ledger, options, strategies=[HammerStrategy()])
    assert report.goals[0].outcome is not Outcome.PROVED
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".cache")) == []
    assert path.read_text(encoding="utf-8") == text


async def _scripts_that_close(path: Path, text: str, scripts: list[str]) -> list[str]:
    """The ``scripts`` that close the one hole of ``text`` (written to ``path``), each
    run from the goal's root in a real Coq session."""
    from proof_orchestrator.coq.holes import scan_coq_file
    from proof_orchestrator.coq.prover import CoqProver

    path.write_text(text, encoding="utf-8")
    (hole,) = scan_coq_file(path)
    prover = CoqProver()
    closing = []
    try:
        async with prover.session(hole.goal, text, hole.prefix_end) as session:
            for script in scripts:
                result = await session.run_tactic(script, session.root, timeout=5)
                if result.status is TacticStatus.COMPLETE:
                    closing.append(script)
    finally:
        await prover.aclose()
    return closing


#: hammer's ATPs proved `inj` with the two lemmas below; CoqHammer printed a `hfcrush`
#: (one of its own tactics), which this file cannot run: it does not load CoqHammer
REBUILT_WITHOUT_COQHAMMER = """\
From Coq Require Import Arith Lia.
Fixpoint double (n : nat) : nat := match n with 0 => 0 | S k => S (S (double k)) end.
Lemma double_eq : forall n : nat, double n = 2 * n.
Proof. induction n; simpl; lia. Qed.
Lemma inj : forall n m : nat, double n = double m -> n = m.
Admitted.
"""


async def test_a_sauto_family_proof_is_rebuilt_with_plain_coq_tactics(tmp_path: Path) -> None:
    """The printed ``hfcrush use: Nat.mul_cancel_l, double_eq.`` is not kept (it needs
    CoqHammer's tactics); the lemmas it names are rewritten and ``lia`` closes the goal,
    in the file's own session, and the rebuilt proof compiles in the file as it is."""

    output = "Replace the hammer tactic with:\n\thfcrush use: Nat.mul_cancel_l, double_eq.\n"
    scripts = standard_reconstructions(output, lia="lia")
    assert all("hfcrush" not in s for s in scripts)
    # where Lia is not loaded, no script names it (a batch naming it would fail whole)
    assert not any("lia" in s for s in standard_reconstructions(output))
    path = tmp_path / "Inj.v"
    rebuilt = await _scripts_that_close(path, REBUILT_WITHOUT_COQHAMMER, scripts)
    assert rebuilt, "no plain-Coq script closed the goal"
    assert any("lia" in s for s in rebuilt)
    fixed = REBUILT_WITHOUT_COQHAMMER.replace("Admitted.", f"Proof. {rebuilt[0]} Qed.")
    path.write_text(fixed, encoding="utf-8")
    assert coqc_ok(path)


def test_atps_that_are_not_installed_are_left_out_of_the_side_session(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Only the ATPs on PATH are called: a missing Vampire ends a whole call in an error."""
    for program in ("eprover", "cvc4"):
        fake = tmp_path / program
        fake.write_text("#!/bin/sh\n", encoding="utf-8")
        fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert missing_atps() == ("Unset Hammer Vampire.", "Unset Hammer Z3.")
    monkeypatch.setenv("PATH", "")
    assert len(missing_atps()) == 4


#: a goal hammer cannot prove (its ATPs fail or run out of time), then two it proves
#: with plus_zero_r: one side coqtop serves all three, warm after the first
WARM = """\
Inductive num : Type := zero : num | succ : num -> num.
Fixpoint plus (a b : num) : num := match a with zero => b | succ p => succ (plus p b) end.
Lemma plus_zero_r : forall n, plus n zero = n.
Proof. induction n; simpl; congruence. Qed.
Lemma hopeless : forall n, plus n zero = succ n.
Admitted.
Lemma twice : forall k, plus (plus k zero) zero = k.
Admitted.
Lemma thrice : forall k, plus (plus (plus k zero) zero) zero = k.
Admitted.
"""


async def test_hammer_reads_its_atp_library_once_per_process_and_a_timeout_keeps_it(
    tmp_path: Path, ledger: Ledger
) -> None:
    """The first attempt reads the library (a load, counted apart: its message says
    so); the failed attempt (its ATPs give up, or the CPU guard cuts them) leaves the
    process warm, so the next goals' attempts load nothing."""
    path = tmp_path / "Warm.v"
    path.write_text(WARM, encoding="utf-8")
    options = FillOptions(orch=Settings(budget=10.0, tactic_timeout=1.0), reuse=False)
    report = await fill([path], ledger, options, strategies=[HammerStrategy()])
    outcomes = {g.goal.name: g.outcome for g in report.goals}
    # hopeless: the ATPs give up within their limit (failed) or the CPU guard cuts them
    assert outcomes["hopeless"] in (Outcome.FAILED, Outcome.TIMEOUT), report.goals
    assert (outcomes["twice"], outcomes["thrice"]) == (Outcome.PROVED, Outcome.PROVED), [
        (g.goal.name, g.message) for g in report.goals
    ]
    with sqlite3.connect(tmp_path / "ledger.sqlite") as db:
        messages = [m for (m,) in db.execute("SELECT message FROM attempts")]
    assert sum("once per prover process" in m for m in messages) == 1, messages
    assert coqc_ok(path)


#: two iff lemmas; rewriting them in the printed order hides the second one's pattern
REBUILT_FROM_IFF_LEMMAS = """\
Require Import List Setoid.
Definition mem (x : nat) (s : list nat) : Prop := In x s.
Definition inl (x : nat) (l : list nat) : Prop := Exists (fun y => y = x) l.
Definition elements (s : list nat) : list nat := rev s.
Definition of_list (l : list nat) : list nat := rev l.
Definition to_list := elements.
Definition Equal (s s' : list nat) := forall a, mem a s <-> mem a s'.
Lemma in_inl : forall x l, In x l <-> inl x l.
Proof. unfold inl; intros; rewrite Exists_exists; firstorder congruence. Qed.
Lemma of_list_1 : forall l x, mem x (of_list l) <-> inl x l.
Proof. unfold mem, of_list; intros; rewrite <- in_rev; apply in_inl. Qed.
Lemma elements_iff : forall s x, mem x s <-> inl x (elements s).
Proof. unfold mem, elements; intros; rewrite <- in_inl, <- in_rev; tauto. Qed.
Global Opaque mem inl elements of_list.
Lemma of_list_3 : forall s, Equal (of_list (to_list s)) s.
Admitted.
"""


async def test_an_iff_lemma_proof_is_rebuilt_by_rewriting_in_either_order(
    tmp_path: Path,
) -> None:
    """CoqHammer printed ``hfcrush use: elements_iff, of_list_1 unfold: to_list, Equal.``
    (as on MSetProperties' ``of_list_3``): rewriting ``elements_iff`` first turns both
    sides into ``inl`` and ``of_list_1`` no longer applies; the other order, then
    ``intuition``, closes the goal with plain Coq."""

    output = (
        "Replace the hammer tactic with:\n"
        "\thfcrush use: elements_iff, of_list_1 unfold: to_list, Equal.\n"
    )
    scripts = standard_reconstructions(output)
    path = tmp_path / "OfList.v"
    rebuilt = await _scripts_that_close(path, REBUILT_FROM_IFF_LEMMAS, scripts)
    # the same script again after splitting the goal's matches (it has none) also
    # closes, and so does rewriting each lemma once with every hint database
    assert [s for s in rebuilt if "destruct" not in s and "with *" not in s] == [
        "intros; unfold to_list, Equal in *; intros; rewrite ?of_list_1, ?elements_iff; "
        "intuition (eauto using elements_iff, of_list_1)."
    ]
    fixed = REBUILT_FROM_IFF_LEMMAS.replace("Admitted.", f"Proof. {rebuilt[0]} Qed.")
    path.write_text(fixed, encoding="utf-8")
    assert coqc_ok(path)


#: CoqHammer's ATPs used an equation right to left, and a definition by cases
REBUILT_RIGHT_TO_LEFT = """\
Require Import Reals.
Open Scope R_scope.
Definition dist (x y : R) : R := Rabs (x - y).
Lemma mult_dist : forall a b c, dist (a * b) (a * c) = Rabs a * dist b c.
Admitted.
"""
REBUILT_BY_CASES = """\
Require Import Reals.
Open Scope R_scope.
Definition zpow (x : R) (n : Z) : R :=
  match n with Z0 => 1 | Zpos p => x ^ Pos.to_nat p | Zneg p => / x ^ Pos.to_nat p end.
Lemma zpow_1 : forall n, zpow 1 n = 1.
Admitted.
"""


@pytest.mark.parametrize(
    ("text", "printed"),
    [
        (REBUILT_RIGHT_TO_LEFT, "scongruence use: Rmult_minus_distr_l, Rabs_mult unfold: dist."),
        (REBUILT_BY_CASES, "hauto use: Rinv_1, pow1 unfold: zpow."),
    ],
    ids=["right-to-left", "by-cases"],
)
async def test_a_proof_needing_a_lemma_right_to_left_or_a_case_split_is_rebuilt(
    tmp_path: Path, text: str, printed: str
) -> None:
    """As on Rfunctions' ``R_dist_mult_l`` and ``powerRZ_R1``: ``a*b - a*c`` must be
    folded back with ``Rmult_minus_distr_l``, and ``zpow`` split on its integer;
    plain Coq closes both, and the file compiles with the first script that does."""
    scripts = standard_reconstructions(f"Replace the hammer tactic with:\n\t{printed}\n")
    path = tmp_path / "Rebuilt.v"
    rebuilt = await _scripts_that_close(path, text, scripts)
    assert rebuilt, scripts
    path.write_text(text.replace("Admitted.", f"Proof. {rebuilt[0]} Qed."), encoding="utf-8")
    assert coqc_ok(path)


#: a case on a hypothesis ``a <= 0`` (``a < 0 \/ a = 0`` unfolded), each closed by a lemma
REBUILT_BY_SPLITTING_A_HYPOTHESIS = """\
Require Import Reals.
Open Scope R_scope.
Lemma abs_nonpos : forall a : R, a <= 0 -> Rabs a = - a.
Admitted.
"""
#: ``Rabs`` unfolded is a match on ``Rcase_abs x``: both cases closed from the lemmas
REBUILT_BY_SPLITTING_A_MATCH = """\
Require Import Reals.
Open Scope R_scope.
Lemma le_abs : forall x : R, x <= Rabs x.
Admitted.
"""


#: ``In`` unfolds to an ``exists`` over an ``InA`` on a cons cell, which only inverts
REBUILT_BY_INVERSION = """\
Require Import SetoidList.
Definition eqk (p q : nat * nat) := fst p = fst q.
Definition MapsTo (k e : nat) (l : list (nat * nat)) := InA eqk (k, e) l.
Definition In k l := exists e, MapsTo k e l.
Lemma In_inv : forall k k' e l, In k ((k', e) :: l) -> k = k' \\/ In k l.
Admitted.
"""


@pytest.mark.parametrize(
    ("text", "printed"),
    [
        (REBUILT_BY_INVERSION, "sauto."),
        (
            REBUILT_BY_SPLITTING_A_HYPOTHESIS,
            "sfirstorder use: Rabs_left, Rabs_R0, Ropp_0 unfold: Rle.",
        ),
        (REBUILT_BY_SPLITTING_A_MATCH, "hauto lq: on use: Rle_trans, Rabs_pos unfold: Rle, Rabs."),
    ],
    ids=["inversion", "hypothesis", "match"],
)
async def test_a_sauto_hauto_or_sfirstorder_proof_is_rebuilt_by_inversion_or_cases(
    tmp_path: Path, text: str, printed: str
) -> None:
    """As on EqualitiesFacts' ``In_inv``, Rbasic_fun's ``Rabs_left1`` and ``Rle_abs``
    (CoqHammer printed these tactics there): only the scripts that invert or split
    cases close them, with plain Coq, and the file compiles with the first that does."""
    hints = printed_hints(printed)
    family = (
        case_split_reconstructions(
            ", ".join(hints.get("unfold", [])), ", ".join(hints.get("use", []))
        )
        + case_analysis_reconstructions()
    )
    scripts = standard_reconstructions(f"Replace the hammer tactic with:\n\t{printed}\n")
    path = tmp_path / "Split.v"
    rebuilt = await _scripts_that_close(path, text, scripts)
    assert rebuilt, scripts
    assert set(rebuilt) <= set(family)  # no script from before this family closes them
    path.write_text(text.replace("Admitted.", f"Proof. {rebuilt[0]} Qed."), encoding="utf-8")
    assert coqc_ok(path)


#: an iff lemma rewritten in a hypothesis (FSetPositive's ``filter_1``)
REBUILT_BY_REWRITING_A_HYPOTHESIS = """\
Require Import List.
Definition keep (f : nat -> bool) (l : list nat) := filter f l.
Lemma keep_in : forall f l x, In x (keep f l) -> In x l.
Admitted.
"""
#: one lemma rewritten once where its premise holds, then the exposed ``if`` split
#: (FSetPositive's ``compare_x_empty``); ``rewrite ?cmp_inv`` would loop
REBUILT_BY_REWRITING_ONCE = """\
Definition opp (c : comparison) := match c with Lt => Gt | Gt => Lt | Eq => Eq end.
Parameter cmp : nat -> nat -> comparison.
Parameter empty : nat -> bool.
Axiom cmp_inv : forall a b, cmp a b = opp (cmp b a).
Axiom cmp_empty : forall a, empty a = true -> forall b, cmp a b = if empty b then Eq else Lt.
Lemma cmp_x_empty : forall a, empty a = true -> forall b, cmp b a = if empty b then Eq else Gt.
Admitted.
"""

#: a lemma rewritten once where its premise holds by a hint of another database than
#: ``core`` (Rtrigo_facts' ``tan_cos``: ``sin x >= 0`` from ``0 <= sin x`` is ``Rle_ge``,
#: in ``real``); no script without every database's hints closes it
REBUILT_WITH_EVERY_HINT_DATABASE = """\
From Coq Require Import Reals Rtrigo_facts.
Open Scope R_scope.
Lemma tan_cos' : forall x, 0 <= sin x -> tan x = sqrt (1 - (cos x)²) / cos x.
Admitted.
"""


@pytest.mark.parametrize(
    ("text", "printed", "marker"),
    [
        (
            REBUILT_BY_REWRITING_A_HYPOTHESIS,
            "strivial use: filter_In unfold: keep.",
            "rewrite ?filter_In in *; intuition",
        ),
        (
            REBUILT_BY_REWRITING_ONCE,
            "hauto use: cmp_empty, cmp_inv unfold: opp inv: bool.",
            "try rewrite cmp_inv by eauto; try rewrite cmp_empty by eauto",
        ),
        (
            REBUILT_WITH_EVERY_HINT_DATABASE,
            "hfcrush use: sin_cos unfold: Rgt, Rge, tan, Rdiv, Rle.",
            "try rewrite sin_cos by solve [eauto with *]; auto with *",
        ),
    ],
    ids=["in-hypothesis", "once", "every-hint-database"],
)
async def test_a_proof_rewriting_in_a_hypothesis_or_once_under_a_premise_is_rebuilt(
    tmp_path: Path, text: str, printed: str, marker: str
) -> None:
    """CoqHammer printed these tactics for FSetPositive's ``filter_1`` and
    ``compare_x_empty``; only the scripts that rewrite in the hypotheses, or rewrite
    each lemma once with its premise discharged, close the shapes here."""
    scripts = standard_reconstructions(f"Replace the hammer tactic with:\n\t{printed}\n")
    path = tmp_path / "Rewritten.v"
    rebuilt = await _scripts_that_close(path, text, scripts)
    assert rebuilt, scripts
    assert all(marker in script for script in rebuilt), rebuilt
    check_script([rebuilt[0]])  # the gate every candidate passes before it is kept
    path.write_text(text.replace("Admitted.", f"Proof. {rebuilt[0]} Qed."), encoding="utf-8")
    assert coqc_ok(path)


#: MSetRBT's ``rmatch`` in small: hammer proves it with a hint-less ``sauto q: on.``
#: (case analysis, no ATP lemma); the proof needs the tree and then its colour
#: destructed, the ``match`` of ``rcase`` split, and a constructor in each case
REBUILT_BY_CASE_ANALYSIS = """\
Inductive color := Red | Black.
Inductive tree := Leaf | Node (c : color) (l : tree) (x : nat) (r : tree).
Definition rcase {A} (f : tree -> nat -> tree -> A) (g : tree -> A) t : A :=
  match t with Node Red a x b => f a x b | _ => g t end.
Notation notred := (rcase (fun _ _ _ => False) (fun _ => True)).
Inductive rspec {A} f g : tree -> A -> Prop :=
  | rred a x b : rspec f g (Node Red a x b) (f a x b)
  | relse t : notred t -> rspec f g t (g t).
Lemma rmatch {A} f g t : rspec (A:=A) f g t (rcase f g t).
Admitted.
"""


async def test_a_hintless_sauto_proof_is_rebuilt_by_case_analysis(tmp_path: Path) -> None:
    """No lemma-driven script closes it; the case-analysis stand-ins do, and the proof
    passes the gate and compiles with ``coqc`` (no CoqHammer anywhere)."""
    scripts = standard_reconstructions("Replace the hammer tactic with: sauto q: on\n")
    path = tmp_path / "Rmatch.v"
    rebuilt = await _scripts_that_close(path, REBUILT_BY_CASE_ANALYSIS, scripts)
    assert rebuilt, scripts
    assert set(rebuilt) <= set(case_analysis_reconstructions()), rebuilt
    check_script([rebuilt[0]])
    path.write_text(
        REBUILT_BY_CASE_ANALYSIS.replace("Admitted.", f"Proof. {rebuilt[0]} Qed."), encoding="utf-8"
    )
    assert coqc_ok(path)


#: FSetEqProperties' ``equal_mem_1`` in small: hammer printed ``qauto use: mem_1, mem_2,
#: equal_1 unfold: Equal.``; the proof applies ``equal_1`` first, then chains the lemmas
#: through the hypothesis read either way
REBUILT_BACKWARD = """\
Parameter elt set : Type.
Parameter In : elt -> set -> Prop.
Parameter mem : elt -> set -> bool.
Parameter equal : set -> set -> bool.
Definition Equal s s' := forall a, In a s <-> In a s'.
Axiom mem_1 : forall s x, In x s -> mem x s = true.
Axiom mem_2 : forall s x, mem x s = true -> In x s.
Axiom equal_1 : forall s s', Equal s s' -> equal s s' = true.
Lemma equal_mem_1 : forall s s', (forall a, mem a s = mem a s') -> equal s s' = true.
Admitted.
"""


async def test_a_proof_that_applies_one_of_its_lemmas_first_is_rebuilt(tmp_path: Path) -> None:
    printed = "qauto use: mem_1, mem_2, equal_1 unfold: Equal."
    scripts = standard_reconstructions(f"Replace the hammer tactic with:\n\t{printed}\n")
    path = tmp_path / "Backward.v"
    rebuilt = await _scripts_that_close(path, REBUILT_BACKWARD, scripts)
    assert rebuilt, scripts
    assert set(rebuilt) <= set(backward_reconstructions("Equal", "mem_1, mem_2, equal_1"))
    check_script([rebuilt[0]])
    path.write_text(
        REBUILT_BACKWARD.replace("Admitted.", f"Proof. {rebuilt[0]} Qed."), encoding="utf-8"
    )
    assert coqc_ok(path)


async def test_a_scongruence_proof_is_rebuilt_with_its_lemma_at_the_variables() -> None:
    """Sint63's ``to_Z_inj`` at its place in the installed stdlib: hammer printed
    ``scongruence use: of_to_Z.``, and the rebuild ran out of its CPU before a later
    script that closes it (9.2 CPU s, not rebuilt); ``of_to_Z`` at both variables, then
    ``congruence``, closes it first, within 2 CPU s, and the kernel accepts it."""
    theories = next(folder for folder, prefix in coq_library_roots() if prefix == "Coq")
    path = theories / "Numbers" / "Cyclic" / "Int63" / "Sint63.v"
    text = path.read_text(encoding="utf-8")
    hole = next(h for h, _ in qed_proofs(path, text) if h.goal.name == "to_Z_inj")
    project = project_for(path)
    prover = CoqProver(project.flags, cwd=str(project.root))
    try:
        at = prover.session(hole.goal, text, hole.prefix_end, hole.statement_start)
        async with at as session:
            printed = "Replace the hammer tactic with: scongruence use: of_to_Z."
            scripts = standard_reconstructions(printed, await lia_tactic(session))
            found = await _Scripts("hammer", scripts).prove(
                session, hole.goal, Budget(2.0, 1.0, 5.0)
            )
            assert found.outcome is Outcome.CANDIDATE, found.message
            assert found.sentences[0] in instance_reconstructions("of_to_Z")
            check_script(list(found.sentences))
            accepted, _ = await session.qed_check(found.sentences, "to_Z_inj", 30.0)
            assert accepted
    finally:
        await prover.aclose()
