"""The scheduler with the real prover: racing, resuming, budgets, background mode."""

from __future__ import annotations

import asyncio
import json
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psutil

from proof_orchestrator.config import Settings
from proof_orchestrator.coq.session import CoqSession
from proof_orchestrator.goals import Budget, Goal, Outcome
from proof_orchestrator.ledger import Ledger
from proof_orchestrator.provers.base import TacticStatus
from proof_orchestrator.run.pipeline import FillOptions, fill
from proof_orchestrator.scheduler.governor import CpuGovernor
from proof_orchestrator.strategies.base import StrategyDefaults, StrategyResult

from .conftest import coqc_ok
from .test_cli import wait_for_attempts


class Slow(StrategyDefaults):
    """Runs a tactic that takes far longer than the test; remembers its coqtop."""

    name = "slow"
    weight = "light"
    language = "coq"
    uses_slot = True
    needs_ledger = False

    def __init__(self) -> None:
        self.pids: list[int] = []

    async def prove(self, session: CoqSession, goal: Goal, budget: Budget) -> StrategyResult:
        top = session._top
        if top is not None and top.pid is not None:
            self.pids.append(top.pid)
        await session.run_tactic("do 1000000000 idtac.", session.root, timeout=60)
        return StrategyResult(Outcome.FAILED)


class Fast(StrategyDefaults):
    """Waits a moment (so that the slow one is surely running), then proves the goal."""

    name = "fast"
    weight = "light"
    language = "coq"
    uses_slot = True
    needs_ledger = False

    async def prove(self, session: CoqSession, goal: Goal, budget: Budget) -> StrategyResult:
        await asyncio.sleep(1.0)
        result = await session.run_tactic("reflexivity.", session.root, timeout=5)
        if result.status is TacticStatus.COMPLETE:
            return StrategyResult(Outcome.CANDIDATE, ("reflexivity.",), 1)
        return StrategyResult(Outcome.FAILED)


async def test_first_success_cancels_the_others_and_their_processes_are_gone(
    write_v: Callable[[str, str], Path], ledger: Ledger
) -> None:
    path = write_v("Race.v", "Lemma r : 2 + 2 = 4.\nAdmitted.\n")
    slow = Slow()
    settings = Settings(bandit="ucb1", portfolio=2, max_light=2, cpu_target=1.0)
    governor = CpuGovernor(1.0, 2)
    governor.limit = 2  # both racers run at once
    started = time.monotonic()
    report = await fill(
        [path], ledger, FillOptions(orch=settings), strategies=[slow, Fast()], governor=governor
    )
    assert time.monotonic() - started < 20  # the 60 s tactic did not have to finish
    assert report.proved == 1
    assert report.goals[0].strategy == "fast"
    assert slow.pids
    assert not any(psutil.pid_exists(pid) for pid in slow.pids)
    attempts = {(a, o) for a, o in _rows(ledger, "SELECT strategy, outcome FROM attempts")}
    assert ("slow", "cancelled") in attempts
    assert ("fast", "candidate") in attempts


def _rows(ledger: Ledger, sql: str) -> list[tuple[object, ...]]:
    path = ledger.url.removeprefix("sqlite:///")
    with sqlite3.connect(path) as connection:
        return list(connection.execute(sql))


EASY_AND_HARD = (
    "Require Import Arith.\n"
    + "".join(f"Lemma easy_{k} : forall n : nat, n + {k} = {k} + n.\nAdmitted.\n" for k in range(3))
    + "".join(
        f"Lemma false_{k} : forall n m : nat, n + m = m + n + {k + 1}.\nAdmitted.\n"
        for k in range(25)
    )
)


def test_sigterm_then_restart_searches_no_found_proof_again(tmp_path: Path) -> None:
    path = tmp_path / "Mixed.v"
    path.write_text(EASY_AND_HARD)
    db = tmp_path / "l.sqlite"
    # resuming is the subject, not the strategies: quick tactics, short budgets
    args = [sys.executable, "-m", "proof_orchestrator.cli", "fill", str(path), "--db", str(db)]
    args += ["--profile", "0", "--budget", "2", "--budget-cap", "4"]
    first = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_attempts(db, 8)
    first.send_signal(signal.SIGTERM)
    _, err = first.communicate(timeout=60)
    assert first.returncode == 130, err
    with sqlite3.connect(db) as connection:
        found = {
            fp
            for (fp,) in connection.execute(
                "SELECT fingerprint FROM attempts WHERE outcome = 'candidate' "
                "UNION SELECT fingerprint FROM proofs"
            )
        }
    assert found  # the easy goals come first (shorter statements)
    second = subprocess.run(args, capture_output=True, text=True, timeout=600, check=False)
    assert second.returncode == 0, second.stderr
    with sqlite3.connect(db) as connection:
        searched_again = connection.execute(
            f"SELECT count(*) FROM attempts WHERE run_id = 2 AND fingerprint IN "
            f"({','.join('?' * len(found))})",
            tuple(found),
        ).fetchone()[0]
    assert searched_again == 0
    text = path.read_text()
    assert text.count("Qed.") == 3
    assert coqc_ok(path)


async def test_a_goal_failed_at_budget_b_is_retried_only_at_a_larger_budget(
    write_v: Callable[[str, str], Path], ledger: Ledger
) -> None:
    path = write_v("Hard.v", "Lemma hard : forall n m : nat, n * m = n + m + 1.\nAdmitted.\n")
    options = FillOptions(orch=Settings(budget=1.0, tactic_timeout=1.0, budget_cap=4.0))
    for _ in range(4):
        await fill([path], ledger, options)
    # one pass = the attempts of one run at one goal budget
    passes: dict[int, dict[float, float]] = {}
    for run, goal_budget, cpu in _rows(
        ledger,
        "SELECT run_id, goal_budget_seconds, sum(cpu_seconds) FROM attempts "
        "GROUP BY run_id, goal_budget_seconds",
    ):
        passes.setdefault(int(run), {})[float(goal_budget)] = float(cpu)
    failed_before = 0.0
    for run in (1, 2):
        budgets = sorted(passes.get(run, {}))
        assert budgets, passes
        assert all(b > failed_before for b in budgets), passes
        failed_before = budgets[-1]
    assert sorted(passes[1]) == [1.0, 2.0]  # the first pass, and one revisit at twice it
    assert sorted(passes[2]) == [4.0]  # the next run starts past what failed
    assert 3 not in passes
    assert 4 not in passes
    for run in passes.values():
        for goal_budget, cpu in run.items():
            # all strategies together stay within the goal's budget (a tactic under
            # way when the budget runs out may finish: some slack)
            assert cpu <= 1.3 * goal_budget + 1.0, passes


def test_bg_proves_new_holes_after_an_edit_and_stops_on_time(tmp_path: Path) -> None:
    path = tmp_path / "A.v"
    path.write_text("Lemma a : forall n : nat, 0 + n = n.\nAdmitted.\n")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "proof_orchestrator.cli",
            "bg",
            str(tmp_path),
            "--duration",
            "20",
            "--db",
            str(tmp_path / "l.sqlite"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 15
    while "Qed." not in path.read_text() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert "Qed." in path.read_text()
    with path.open("a") as handle:
        handle.write("Lemma b : forall b : bool, negb (negb b) = b.\nAdmitted.\n")
    out, err = proc.communicate(timeout=40)
    assert proc.returncode == 0, err
    assert "changed by the user" in err
    assert path.read_text().count("Qed.") == 2
    assert coqc_ok(path)
    assert "2 proof(s) written" in out


async def test_bandit_state_survives_a_restart(
    write_v: Callable[[str, str], Path], ledger: Ledger
) -> None:
    path = write_v("Bandit.v", "Lemma z : forall n : nat, n + 0 = n.\nAdmitted.\n")
    await fill([path], ledger, FillOptions())
    arms = ledger.load_bandit()  # what a new run starts from
    assert arms
    assert sum(arm.pulls for arm in arms.values()) >= 1
    assert sum(arm.successes for arm in arms.values()) == 1


async def test_prioritized_lemma_is_worked_on_first(
    write_v: Callable[[str, str], Path], ledger: Ledger
) -> None:
    text = "".join(f"Lemma l{k} : {k} = {k}.\nAdmitted.\n" for k in range(4))
    path = write_v("Prio.v", text)
    order: list[str] = []
    await fill(
        [path],
        ledger,
        FillOptions(prioritize=frozenset({"l3"}), orch=Settings(max_light=1)),
        on_goal=lambda report: order.append(report.goal.name),
    )
    started = [
        name
        for (name,) in _rows(
            ledger, "SELECT g.name FROM attempts a JOIN goals g ON g.id = a.goal_id ORDER BY a.id"
        )
    ]
    assert started[0] == "l3"
    assert len(order) == 4


def test_bg_does_not_cycle_on_a_proof_the_audit_refuses(tmp_path: Path) -> None:
    """The only proof of the hole uses an axiom of the project (the audit refuses it).
    The strategies find that script again at once; it is no candidate while the file is
    the same, so the goal's budget grows to the cap and bg waits for changes (before:
    62 cycles in 30 s, the same refusal each time)."""
    (tmp_path / "Ax.v").write_text("Axiom excluded : forall P : Prop, P \\/ ~ P.\n")
    (tmp_path / "_CoqProject").write_text("-Q . Loop\nAx.v\nUse.v\n")
    use = tmp_path / "Use.v"
    text = (
        "Require Import Loop.Ax.\nLemma em_any : forall P : Prop, P \\/ ~ P.\nProof.\nAdmitted.\n"
    )
    use.write_text(text)
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "proof_orchestrator.cli",
            "bg",
            str(tmp_path),
            "--profile",
            "0",
            "--budget",
            "2",
            "--budget-cap",
            "8",
            "--duration",
            "25",
            "--json",
            "--db",
            str(tmp_path / "l.sqlite"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    summary = json.loads(run.stdout)
    assert summary["proved"] == 0
    assert summary["cycles"] <= 5, run.stderr
    assert run.stderr.rstrip().endswith("waiting for changes"), run.stderr
    assert use.read_text() == text
