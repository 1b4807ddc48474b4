"""Lean sessions, the REPL pool and the quick-tactic strategy, over recorded REPL traffic."""

from __future__ import annotations

import dataclasses
import json
import resource
import sys
from pathlib import Path

import pytest

from proof_orchestrator.goals import Budget, Outcome
from proof_orchestrator.lean.holes import scan_lean_text
from proof_orchestrator.lean.session import LeanGoalError, LeanProject, LeanProver, LeanSettings
from proof_orchestrator.lean.strategies.tactics import (
    LeanQuickStrategy,
    forall_names,
    goal_variables,
    has_grind,
    suggestions,
)
from proof_orchestrator.provers.base import TacticStatus

from .test_lean_repl import REPLAY, recorded_pairs
from .transcripts import transcripts

BRANCHING = "theorem complex_and (p q r : Prop) (h1 : p ∧ q) (h2 : q → r) : p ∧ r := by sorry"


def prover_for(
    tmp_path: Path, *names: str, extra: tuple[str, ...] = (), floor: float = 10.0
) -> tuple[LeanProver, Path]:
    log = tmp_path / "requests.jsonl"
    argv = (
        sys.executable,
        str(REPLAY),
        *(str(transcripts() / t) for t in names),
        "--log",
        str(log),
        *extra,
    )
    settings = LeanSettings(repl=argv, tactic_floor=floor, load_timeout=20)
    return LeanProver(LeanProject(tmp_path, False, ""), settings), log


def sent(log: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


async def test_a_session_runs_a_proof_and_branches_from_the_root(tmp_path: Path) -> None:
    path = tmp_path / "Branch.lean"
    path.write_text(BRANCHING + "\n", encoding="utf-8")
    (hole,) = scan_lean_text(path, path.read_text(encoding="utf-8"))
    prover, log = prover_for(tmp_path, "core/proof_branching.in")
    try:
        async with prover.session(hole, path.read_text(encoding="utf-8")) as session:
            assert session.goal_text == "p q r : Prop\nh1 : p ∧ q\nh2 : q → r\n⊢ p ∧ r"
            first = await session.run_tactic("apply And.intro", timeout=5)
            assert first.status is TacticStatus.GOALS
            assert len(first.goals) == 2
            done = await session.run_script(
                ["exact h1.left", "apply h2", "exact h1.right"], first.state, timeout=5
            )
            assert done.status is TacticStatus.COMPLETE
            assert done.state.script == (
                "apply And.intro",
                "exact h1.left",
                "apply h2",
                "exact h1.right",
            )
            # an unrecorded tactic from the root is answered as a failure, never as a success
            other = await session.run_tactic("simp", session.root, timeout=5)
            assert other.status is TacticStatus.FAILED
    finally:
        await prover.aclose()
    # no header and nothing before the declaration: one command, in a fresh environment
    assert sent(log)[0] == {"cmd": BRANCHING}


async def test_a_sorry_without_a_goal_is_an_error(tmp_path: Path) -> None:
    text = "example : True := by\n  sorry\n  sorry"
    path = tmp_path / "Two.lean"
    path.write_text(text, encoding="utf-8")
    first, second = scan_lean_text(path, text)
    prover, _ = prover_for(tmp_path, "core/no_goal_sorry_2.in")
    try:
        async with prover.session(first, text) as session:
            assert session.goal_text == "⊢ True"
        with pytest.raises(LeanGoalError, match="No goals to be solved"):
            async with prover.session(second, text):
                pass
    finally:
        await prover.aclose()


async def test_the_pool_imports_a_header_once(tmp_path: Path) -> None:
    text = "import Mathlib\n\ntheorem test : 0 < 1 := by sorry\n"
    path = tmp_path / "Pos.lean"
    path.write_text(text, encoding="utf-8")
    (hole,) = scan_lean_text(path, text)
    prover, log = prover_for(tmp_path, "mathlib/exact.in")
    try:
        for _ in range(3):
            async with prover.session(hole, text) as session:
                assert session.goal_text == "⊢ 0 < 1"
    finally:
        await prover.aclose()
    requests = sent(log)
    assert requests.count({"cmd": "import Mathlib"}) == 1
    assert requests[1] == {"cmd": "theorem test : 0 < 1 := by sorry", "env": 0}


async def test_a_search_suggestion_is_run_on_its_own(tmp_path: Path) -> None:
    """`exact?` closes the goal and prints a suggestion; only the suggestion may be the proof."""
    text = "import Mathlib\n\ntheorem test : 0 < 1 := by sorry\n"
    path = tmp_path / "Pos.lean"
    path.write_text(text, encoding="utf-8")
    (hole,) = scan_lean_text(path, text)
    prover, log = prover_for(tmp_path, "mathlib/exact.in")
    try:
        async with prover.session(hole, text) as session:
            result = await LeanQuickStrategy().prove(session, hole.goal, Budget(30, 2, 1))
    finally:
        await prover.aclose()
    tactics = [r["tactic"] for r in sent(log) if "tactic" in r]
    index = tactics.index("exact?")
    # the recorded suggestion was tried from the root; it was not recorded, so it failed
    assert tactics[index + 1] == "exact Nat.one_pos"
    assert {"tactic": "exact Nat.one_pos", "proofState": 0} in sent(log)
    assert "norm_num" in tactics  # Mathlib is imported: its automation is offered
    assert result.outcome is Outcome.FAILED
    assert result.sentences == ()


async def test_a_hung_repl_is_replaced_and_the_session_goes_on(tmp_path: Path) -> None:
    path = tmp_path / "Branch.lean"
    path.write_text(BRANCHING, encoding="utf-8")
    (hole,) = scan_lean_text(path, BRANCHING)
    marker = tmp_path / "hung-once"
    prover, log = prover_for(
        tmp_path,
        "core/proof_branching.in",
        extra=("--hang-at", "2", "--once", str(marker), "--ignore-term"),
        floor=1.0,
    )
    try:
        async with prover.session(hole, BRANCHING) as session:
            first_pid = session.warm.repl.pid
            hung = await session.run_tactic("apply And.intro", timeout=0.5)
            assert hung.status is TacticStatus.TIMEOUT
            assert marker.exists()
            assert session.warm.repl.pid != first_pid
            again = await session.run_tactic("apply And.intro", timeout=5)
            assert again.status is TacticStatus.GOALS
    finally:
        await prover.aclose()
    # the replacement REPL was sent the declaration again before the tactic
    assert [r.get("cmd", r.get("tactic")) for r in sent(log)] == [
        BRANCHING,
        "apply And.intro",
        BRANCHING,
        "apply And.intro",
    ]


def test_suggestions_from_recorded_messages() -> None:
    messages = [
        json.loads(reply)["messages"][0]["data"]
        for transcript in ("mathlib/exact.in", "core/root_goals.in")
        for _, reply in recorded_pairs(transcripts() / transcript)
        if "Try this" in reply
    ]
    assert [suggestions(m) for m in messages] == [
        ["exact Nat.one_pos"],
        ["exact Nat.zero_eq_one_mod_iff.mp rfl"],
    ]
    assert suggestions("Try this: exact foo") == ["exact foo"]
    assert suggestions("Try this:\n  [apply] simp_all\n  omega") == ["simp_all\nomega"]


def test_goal_variables() -> None:
    goal = "x : ℕ\nxs ys : List α\nh : x = 1\nn✝ : ℕ\n⊢ x = x"
    assert goal_variables(goal) == ["x", "xs", "ys"]
    assert forall_names("⊢ ∀ (n m : Nat), n + m = m + n") == ["n", "m"]
    assert forall_names("⊢ ∀ n m : Nat, n + m = m + n") == ["n", "m"]
    assert forall_names("⊢ ∀ {α : Type} (l : List α), l ++ [] = l") == ["α", "l"]
    assert forall_names("h : p\n⊢ p ∧ p") == []


def test_grind_only_where_the_toolchain_has_it() -> None:
    assert has_grind("leanprover/lean4:v4.24.0")
    assert has_grind("leanprover/lean4:v4.33.0-rc2")
    assert not has_grind("leanprover/lean4:v4.9.0")
    assert has_grind("")


async def test_repls_are_recycled_and_memory_capped(tmp_path: Path) -> None:
    text = "import Mathlib\n\ntheorem test : 0 < 1 := by sorry\n"
    path = tmp_path / "Pos.lean"
    path.write_text(text, encoding="utf-8")
    (hole,) = scan_lean_text(path, text)
    prover, log = prover_for(tmp_path, "mathlib/exact.in")
    prover.settings = dataclasses.replace(prover.settings, max_requests=2, memory_mb=3000)
    pids = []
    try:
        for _ in range(2):
            async with prover.session(hole, text) as session:
                pid = session.warm.repl.pid
                assert pid is not None
                pids.append(pid)
                assert resource.prlimit(pid, resource.RLIMIT_AS)[0] == 3000 * 1024**2
    finally:
        await prover.aclose()
    # each REPL served its two requests (header, declaration) and was replaced
    assert pids[0] != pids[1]
    assert sent(log).count({"cmd": "import Mathlib"}) == 2
