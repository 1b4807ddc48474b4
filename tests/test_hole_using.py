"""Proofs that use other holes: written closed modulo them, closed once they are proved.

Every proof here is checked by the real Coq: the strategy below only proposes a
script, the session runs it, and the whole-file check (coqc and ``Print
Assumptions``) decides.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import subprocess
from collections.abc import Callable
from pathlib import Path

from fastapi.testclient import TestClient
from sqlalchemy import select
from typer.testing import CliRunner

from proof_orchestrator.cli import app
from proof_orchestrator.config import Settings, load_settings
from proof_orchestrator.coq.holes import scan_coq_text
from proof_orchestrator.coq.session import CoqSession
from proof_orchestrator.coq.verify import CoqVerifier
from proof_orchestrator.dashboard import create_app
from proof_orchestrator.goals import Budget, Goal, Outcome
from proof_orchestrator.ledger import Ledger
from proof_orchestrator.ledger.models import Attempt
from proof_orchestrator.provers.base import TacticStatus, Verdict
from proof_orchestrator.run.checking import verify_candidates
from proof_orchestrator.run.pipeline import FillOptions, fill
from proof_orchestrator.run.reports import Candidate, FileReport, FileStatus, GoalReport
from proof_orchestrator.strategies.base import StrategyDefaults, StrategyResult

B_AND_C = """\
Lemma b : forall n : nat, n + 0 = n.
Admitted.

Lemma c : forall n : nat, (n + 0) + 0 = n.
Admitted.
"""

#: c's proof through b
USES_B = ("intros.", "rewrite !b.", "reflexivity.")
#: b's own proof (and c's closed one)
CLOSED = ("intros n.", "induction n; simpl; congruence.")


class Scripts(StrategyDefaults):
    """A strategy that proposes a given script per lemma, if the session accepts it."""

    def __init__(self, scripts: dict[str, tuple[str, ...]], name: str = "scripts") -> None:
        self.scripts = scripts
        self.name = name
        self.weight = "light"
        self.language = "coq"
        self.uses_slot = True
        self.needs_ledger = False
        #: seconds to wait before trying (to make it arrive second in a race)
        self.delay = 0.0
        self.asked: list[str] = []

    async def prove(self, session: CoqSession, goal: Goal, budget: Budget) -> StrategyResult:
        self.asked.append(goal.name)
        script = self.scripts.get(goal.name)
        if script is None:
            return StrategyResult(Outcome.FAILED, (), 0, message="no script")
        await asyncio.sleep(self.delay)
        result = await session.run_script(script, session.root, timeout=budget.tactic_seconds)
        if result.status is TacticStatus.COMPLETE:
            return StrategyResult(Outcome.CANDIDATE, script, len(script))
        return StrategyResult(Outcome.FAILED, (), len(script), message=result.message)


def _options(*, strict: bool = False) -> FillOptions:
    settings = Settings(
        cpu_target=1.0, strict_holes=strict, profile=0, budget=5.0, tactic_timeout=1.0
    )
    return FillOptions(orch=settings)


def _by_name(report: object) -> dict[str, GoalReport]:
    return {g.goal.name: g for g in report.goals}  # type: ignore[attr-defined]


async def test_a_proof_that_uses_an_admitted_lemma_is_written_and_recorded(
    write_v: Callable[[str, str], Path], ledger: Ledger, tmp_path: Path
) -> None:
    path = write_v("Dep.v", B_AND_C)
    report = await fill([path], ledger, _options(), strategies=[Scripts({"c": USES_B})])
    c = _by_name(report)["c"]
    assert c.outcome is Outcome.PROVED
    assert [use.label for use in c.uses_holes] == ["b"]
    text = path.read_text()
    assert "rewrite !b." in text
    assert text.count("Admitted.") == 1
    modulo = ledger.stats()["modulo_holes"]
    assert [(row["name"], row["uses"], row["open"]) for row in modulo] == [("c", ["b"], ["b"])]
    db = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    shown = CliRunner().invoke(app, ["stats", str(tmp_path), "--db", db])
    assert shown.exit_code == 0, shown.output
    assert "0 closed, 1 closed modulo holes" in shown.stdout
    assert "uses b" in shown.stdout
    as_json = CliRunner().invoke(app, ["stats", str(tmp_path), "--db", db, "--json"])
    assert json.loads(as_json.stdout)["proved_modulo_holes"] == 1
    # the dashboard: the overview's counts, the goal list and the goal's page
    client = TestClient(create_app(ledger, tmp_path))
    holes = client.get("/api/stats").json()["holes"]
    assert (holes["proved"], holes["closed"], holes["modulo"]) == (1, 0, 1)
    assert "(uses b)" in client.get("/goals").text
    goal_id = ledger.stats()["modulo_holes"][0]["goal_id"]
    assert "Closed modulo holes still open: uses b" in client.get(f"/goals/{goal_id}").text


async def test_proving_the_hole_later_closes_the_proof_without_running_it_again(
    write_v: Callable[[str, str], Path], ledger: Ledger
) -> None:
    path = write_v("Dep.v", B_AND_C)
    await fill([path], ledger, _options(), strategies=[Scripts({"c": USES_B})])
    c_id = ledger.stats()["modulo_holes"][0]["goal_id"]
    with ledger.engine.connect() as connection:
        on_c = connection.execute(select(Attempt.id).where(Attempt.strategy == "scripts")).all()
    later = Scripts({"b": CLOSED, "c": USES_B})
    report = await fill([path], ledger, _options(), strategies=[later])
    assert _by_name(report)["b"].outcome is Outcome.PROVED
    assert later.asked == ["b"]  # c is a Qed proof now: not run again
    assert "Admitted" not in path.read_text()
    stats = ledger.stats()
    assert stats["modulo_holes"] == []
    assert stats["closed"] == 2
    page = TestClient(create_app(ledger, path.parent)).get(f"/goals/{c_id}").text
    assert "Closed: found using b, since proved." in page
    with ledger.engine.connect() as connection:
        attempts = connection.execute(select(Attempt.id).where(Attempt.strategy == "scripts"))
        assert len(attempts.all()) == len(on_c) + 1  # b's attempt only


async def test_strict_holes_refuses_the_proof_with_the_reason(
    write_v: Callable[[str, str], Path], ledger: Ledger
) -> None:
    path = write_v("Dep.v", B_AND_C)
    report = await fill([path], ledger, _options(strict=True), strategies=[Scripts({"c": USES_B})])
    c = _by_name(report)["c"]
    assert c.outcome is Outcome.REJECTED
    assert "the proof uses b, which has no verified proof yet" in c.message
    assert path.read_text() == B_AND_C


async def test_a_closed_candidate_is_preferred_when_both_arrive_within_the_budget(
    write_v: Callable[[str, str], Path], ledger: Ledger
) -> None:
    path = write_v("Dep.v", B_AND_C)
    quick = Scripts({"c": USES_B}, "through-b")
    slow = Scripts({"c": CLOSED}, "closed")
    slow.delay = 0.5  # the proof through b arrives first
    report = await fill([path], ledger, _options(), strategies=[quick, slow])
    c = _by_name(report)["c"]
    assert (c.outcome, c.strategy, c.uses_holes) == (Outcome.PROVED, "closed", ())
    # with no closed proof in the budget, the one through b is written
    path.write_text(B_AND_C)
    again = dataclasses.replace(_options(), reuse=False)  # no replay of the closed proof
    report = await fill([path], ledger, again, strategies=[Scripts({"c": USES_B}, "through-b")])
    assert [use.label for use in _by_name(report)["c"].uses_holes] == ["b"]


async def _check(
    path: Path, ledger: Ledger, name: str, script: tuple[str, ...], helpers: tuple[str, ...] = ()
) -> GoalReport:
    """Verify one candidate (with helper lemmas) through the run's own verify step."""
    text = path.read_text(encoding="utf-8")
    hole = next(h for h in scan_coq_text(path, text) if h.goal.name == name)
    report = GoalReport(hole.goal, Outcome.CANDIDATE, "test", script, helpers=helpers)
    candidate = Candidate.of(hole, report, ledger.upsert_goal(hole.goal))
    verifier = CoqVerifier()
    try:
        await verify_candidates(
            path,
            text,
            [candidate],
            verifier,
            set(),
            ledger,
            ledger.start_run("test", {}, ""),
            "",
            FileReport(path, FileStatus.PENDING),
        )
    finally:
        await verifier.aclose()
    return report


async def test_a_candidate_that_adds_an_axiom_is_still_refused(
    write_v: Callable[[str, str], Path], ledger: Ledger
) -> None:
    path = write_v("Dep.v", B_AND_C)
    cheat = "Axiom cheat : forall n : nat, n + 0 = n."
    report = await _check(
        path, ledger, "c", ("intros.", "rewrite !cheat.", "reflexivity."), (cheat,)
    )
    assert report.outcome is Outcome.REJECTED
    assert "cheat" in report.message
    # through b and the axiom: the axiom still refuses it
    both = ("intros.", "rewrite b.", "rewrite cheat.", "reflexivity.")
    report = await _check(path, ledger, "c", both, (cheat,))
    assert report.outcome is Outcome.REJECTED
    assert "cheat" in report.message
    assert report.uses_holes == ()


async def test_an_admitted_definition_is_no_hole(
    write_v: Callable[[str, str], Path], ledger: Ledger
) -> None:
    text = (
        "Definition fact : forall n : nat, n + 0 = n.\nAdmitted.\n\n"
        "Lemma c : forall n : nat, (n + 0) + 0 = n.\nAdmitted.\n"
    )
    path = write_v("Def.v", text)
    report = await _check(path, ledger, "c", ("intros.", "rewrite !fact.", "reflexivity."))
    assert report.outcome is Outcome.REJECTED
    assert "Def.fact" in report.message


def _project(root: Path) -> tuple[Path, Path]:
    """A two-file project: Lib.B (the hole b, compiled) and Lib.C, which requires it."""
    (root / "theories").mkdir()
    (root / "_CoqProject").write_text("-Q theories Lib\ntheories/B.v\ntheories/C.v\n")
    b = root / "theories" / "B.v"
    b.write_text("Lemma b : forall n : nat, n + 0 = n.\nAdmitted.\n")
    c = root / "theories" / "C.v"
    c.write_text("Require Import Lib.B.\n\nLemma c : forall n : nat, (n + 0) + 0 = n.\nAdmitted.\n")
    subprocess.run(["coqc", "-Q", "theories", "Lib", "theories/B.v"], cwd=root, check=True)
    return b, c


async def test_a_hole_of_an_imported_file_is_a_hole_too(tmp_path: Path, ledger: Ledger) -> None:
    b, c = _project(tmp_path)
    report = await fill([c], ledger, _options(), strategies=[Scripts({"c": USES_B})])
    proved = _by_name(report)["c"]
    assert proved.outcome is Outcome.PROVED
    assert [(u.label, u.name, Path(u.file)) for u in proved.uses_holes] == [
        ("Lib.B.b", "b", b.resolve())
    ]
    assert "rewrite !b." in c.read_text()
    # b proved in B.v later: c closes
    await fill([b], ledger, _options(), strategies=[Scripts({"b": CLOSED})])
    assert "Admitted" not in b.read_text()
    assert ledger.stats()["modulo_holes"] == []


async def test_an_axiom_of_an_imported_file_is_no_hole(tmp_path: Path, ledger: Ledger) -> None:
    b, c = _project(tmp_path)
    b.write_text("Axiom b : forall n : nat, n + 0 = n.\n")
    subprocess.run(["coqc", "-Q", "theories", "Lib", "theories/B.v"], cwd=tmp_path, check=True)
    verifier = CoqVerifier(["-Q", str(tmp_path / "theories"), "Lib"], cwd=str(tmp_path))
    text = c.read_text()
    hole = scan_coq_text(c, text)[0]
    patched = text.replace("Admitted.", "Proof.\n  intros. rewrite !b. reflexivity.\nQed.")
    try:
        result = await verifier.verify(c, text, patched, [hole.goal])
    finally:
        await verifier.aclose()
    assert result.verdict is Verdict.NEW_ASSUMPTIONS
    # named in full, as Locate gives it where the proof is
    assert result.new_assumptions == ("c: Lib.B.b",)


async def test_an_imported_hole_is_reported_even_where_finished_proofs_use_it(
    tmp_path: Path,
) -> None:
    """C.v's finished ``early`` already rests on the hole ``b`` of B.v; a proof of ``c``
    that uses ``b`` too still rests on a hole (the trust base never covers one)."""
    _, c = _project(tmp_path)
    text = (
        "Require Import Lib.B.\n\nLemma early : 0 + 0 = 0.\nProof. apply b. Qed.\n\n"
        "Lemma c : forall n : nat, (n + 0) + 0 = n.\nAdmitted.\n"
    )
    c.write_text(text)
    verifier = CoqVerifier(["-Q", str(tmp_path / "theories"), "Lib"], cwd=str(tmp_path))
    hole = next(h for h in scan_coq_text(c, text) if h.goal.name == "c")
    patched = text.replace("Admitted.", "Proof.\n  intros. rewrite !b. reflexivity.\nQed.")
    try:
        result = await verifier.verify(c, text, patched, [hole.goal])
    finally:
        await verifier.aclose()
    assert result.verdict is Verdict.ACCEPTED, result.detail
    assert [use.label for use in result.holes_used["c"]] == ["Lib.B.b"]


def test_strict_holes_is_a_setting_of_the_flag_the_environment_and_the_file(
    tmp_path: Path,
) -> None:
    assert not load_settings(tmp_path, environ={})[0].strict_holes
    assert load_settings(tmp_path, {"strict_holes": True}, environ={})[0].strict_holes
    assert load_settings(tmp_path, environ={"ORCH_STRICT_HOLES": "1"})[0].strict_holes
    (tmp_path / "orch.toml").write_text("strict_holes = true\n")
    assert load_settings(tmp_path, environ={})[0].strict_holes
