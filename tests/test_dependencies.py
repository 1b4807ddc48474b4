"""Candidates that use other holes: verified in file order, retried, accepted closed modulo
the holes still open, or (``strict_holes``) rejected with the reason."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from proof_orchestrator.coq.holes import scan_coq_text
from proof_orchestrator.coq.verify import CoqVerifier
from proof_orchestrator.goals import Outcome
from proof_orchestrator.ledger import Ledger, LedgerReader
from proof_orchestrator.run.checking import verify_candidates
from proof_orchestrator.run.reports import Candidate, FileReport, FileStatus, GoalReport

SOURCE = """\
Lemma base : forall n : nat, n + 0 = n.
Admitted.

Lemma uses_base : forall n : nat, (n + 0) + 0 = n.
Admitted.

Lemma later : True.
Admitted.

Definition clash := 0.
"""


async def _verify(
    path: Path,
    ledger: Ledger,
    scripts: dict[str, tuple[tuple[str, ...], tuple[str, ...]]],
    *,
    strict_holes: bool = False,
) -> tuple[list[Candidate], dict[str, GoalReport]]:
    """Verify the given (script, helpers) per lemma, candidates listed in the given order."""
    text = path.read_text(encoding="utf-8")
    holes = {h.goal.name: h for h in scan_coq_text(path, text)}
    run_id = ledger.start_run("test", {}, "")
    reports: dict[str, GoalReport] = {}
    candidates: list[Candidate] = []
    for name, (script, helpers) in scripts.items():
        hole = holes[name]
        report = GoalReport(hole.goal, Outcome.CANDIDATE, "test", script, helpers=helpers)
        reports[name] = report
        candidates.append(Candidate.of(hole, report, ledger.upsert_goal(hole.goal)))
    verifier = CoqVerifier()
    try:
        verified = await verify_candidates(
            path,
            text,
            candidates,
            verifier,
            set(),
            ledger,
            run_id,
            "",
            FileReport(path, FileStatus.PENDING),
            strict_holes=strict_holes,
        )
    finally:
        await verifier.aclose()
    return verified.accepted, reports


async def test_a_proof_using_an_earlier_hole_is_kept_when_that_hole_is_proved_too(
    write_v: Callable[[str, str], Path], ledger: Ledger
) -> None:
    """One-at-a-time checking goes in file order and retries: the order found does not matter.

    The helper of ``later`` clashes with a definition further down, so the batch
    check fails at a line no candidate owns, and candidates are checked one by one.
    ``uses_base`` is listed first: checked first, it would fail while ``base`` is
    still admitted.
    """
    path = write_v("Dep.v", SOURCE)
    accepted, reports = await _verify(
        path,
        ledger,
        {
            "uses_base": (("intros.", "rewrite !base.", "reflexivity."), ()),
            "later": (("exact I.",), ("Definition clash := 1.",)),
            "base": (("intros.", "induction n; simpl; congruence."), ()),
        },
    )
    assert sorted(c.hole.goal.name for c in accepted) == ["base", "uses_base"]
    assert reports["uses_base"].outcome is Outcome.PROVED
    assert reports["later"].outcome is Outcome.REJECTED


async def test_a_proof_using_an_unproved_hole_is_accepted_modulo_that_hole(
    write_v: Callable[[str, str], Path], ledger: Ledger
) -> None:
    path = write_v("Dep.v", SOURCE)
    accepted, reports = await _verify(
        path, ledger, {"uses_base": (("intros.", "rewrite !base.", "reflexivity."), ())}
    )
    assert [c.hole.goal.name for c in accepted] == ["uses_base"]
    report = reports["uses_base"]
    assert report.outcome is Outcome.PROVED
    assert [(use.label, use.name, use.file) for use in report.uses_holes] == [
        ("base", "base", str(path))
    ]


async def test_with_strict_holes_a_proof_using_an_unproved_hole_is_rejected_with_the_reason(
    write_v: Callable[[str, str], Path], ledger: Ledger
) -> None:
    path = write_v("Dep.v", SOURCE)
    accepted, reports = await _verify(
        path,
        ledger,
        {"uses_base": (("intros.", "rewrite !base.", "reflexivity."), ())},
        strict_holes=True,
    )
    assert accepted == []
    report = reports["uses_base"]
    assert report.outcome is Outcome.REJECTED
    assert "uses base, which has no verified proof" in report.message
    # the ledger says so too: never a silent "open"
    goals = {g["name"]: g for g in LedgerReader(ledger).goals()}
    assert goals["uses_base"]["status"] == "rejected"
