"""What the run's searches learned, reused by state: refuted tactics are not sent again,
and a goal closed in one branch (or one hole) is closed the same way elsewhere.
The searches run over real coqtop sessions."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from proof_orchestrator.coq.holes import scan_coq_text
from proof_orchestrator.coq.prover import CoqProver
from proof_orchestrator.coq.states import CoqStates
from proof_orchestrator.provers.base import ProofState, TacticResult, TacticStatus
from proof_orchestrator.search.bestfirst import SearchEnd, _closed, _Learner, best_first
from proof_orchestrator.search.memory import MEMORY_COUNTS, GoalMemory, SearchMemory

TWO = """\
Lemma swap : forall P Q : Prop, P /\\ Q -> Q /\\ P.
Proof.
Admitted.

Lemma swap_and_true : forall P Q : Prop, P /\\ Q -> (Q /\\ P) /\\ True.
Proof.
Admitted.

Lemma plus_zero : forall n : nat, n + 0 = n.
Proof.
Admitted.
"""


#: the second lemma's candidates: no ``assumption``, so only a remembered closing
#: can prove ``Q /\\ P``
NO_ASSUMPTION = ["exact I.", "intros P Q H.", "destruct H.", "split."]


class _Counting(CoqStates):
    """The Coq states adapter, counting the tactics it runs."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.ran: list[str] = []

    async def apply(self, tactic: str, state: ProofState, *, timeout: float) -> TacticResult:
        self.ran.append(tactic)
        return await super().apply(tactic, state, timeout=timeout)


def _fixed(tactics: Sequence[str]):  # type: ignore[no-untyped-def]
    async def expand(goal: str, steps: Sequence[str]) -> list[tuple[str, float]]:
        return [(t, 0.0) for t in tactics]

    return expand


async def _search(prover, hole, text, tactics, memory, **limits):  # type: ignore[no-untyped-def]
    async with prover.session(hole.goal, text, hole.prefix_end) as session:
        states = _Counting(session)
        found = await best_first(
            states,
            [_fixed(tactics)],
            max_depth=limits.get("max_depth", 7),
            max_expansions=limits.get("max_expansions", 40),
            cpu_seconds=30,
            tactic_seconds=2,
            memory=memory,
        )
        replay = await states.check(found.steps, timeout=5) if found.steps else None
    return found, states.ran, replay


async def test_a_second_search_does_not_send_the_tactics_the_first_refuted(tmp_path: Path) -> None:
    path = tmp_path / "M.v"
    path.write_text(TWO, encoding="utf-8")
    hole = scan_coq_text(path, TWO)[2]
    prover = CoqProver(cwd=str(tmp_path))
    memory = SearchMemory().for_goal(str(path), "plus_zero")
    # none of these proves n + 0 = n (it needs induction)
    tactics = ["reflexivity.", "assumption.", "intros.", "simpl.", "exact I.", "intro n."]
    try:
        first, ran_first, _ = await _search(prover, hole, TWO, tactics, memory)
        skipped = MEMORY_COUNTS.skipped
        again, ran_again, _ = await _search(prover, hole, TWO, tactics, memory)
    finally:
        await prover.aclose()
    assert first.end is again.end is SearchEnd.EXHAUSTED
    failed_at_root = {"reflexivity.", "assumption.", "simpl.", "exact I."}
    assert failed_at_root <= set(ran_first)
    # the second search runs only the steps that lead somewhere
    assert not failed_at_root & set(ran_again)
    assert len(ran_again) < len(ran_first) / 2
    assert MEMORY_COUNTS.skipped > skipped


async def test_a_subgoal_closed_for_one_hole_is_closed_the_same_way_in_another(
    tmp_path: Path,
) -> None:
    """The second search has no ``assumption``: only the memory of the first can close
    ``Q /\\ P``, and the proof it gives is replayed from the root by coqtop."""
    path = tmp_path / "M.v"
    path.write_text(TWO, encoding="utf-8")
    swap, swap_and_true, _ = scan_coq_text(path, TWO)
    prover = CoqProver(cwd=str(tmp_path))
    memory = SearchMemory()
    reused = MEMORY_COUNTS.closings_reused
    try:
        first, _, _ = await _search(
            prover,
            swap,
            TWO,
            ["assumption.", "intros P Q H.", "destruct H.", "split."],
            memory.for_goal(str(path), "swap"),
        )
        without, _, _ = await _search(
            prover,
            swap_and_true,
            TWO,
            NO_ASSUMPTION,
            SearchMemory().for_goal(str(path), "swap_and_true"),
        )
        found, _, replay = await _search(
            prover,
            swap_and_true,
            TWO,
            NO_ASSUMPTION,
            memory.for_goal(str(path), "swap_and_true"),
        )
    finally:
        await prover.aclose()
    assert first.end is SearchEnd.FOUND
    assert without.end is not SearchEnd.FOUND
    assert found.end is SearchEnd.FOUND
    assert "assumption." in found.steps
    assert "exact I." in found.steps
    assert replay is not None
    assert replay.status is TacticStatus.COMPLETE
    assert MEMORY_COUNTS.closings_reused > reused


def test_a_goal_is_closed_when_the_goals_fall_below_its_count() -> None:
    # g (1 goal) -> split -> a, b (2) -> a closed (1: b) -> b closed (0)
    opened, done = _closed([("g", 1, 0)], ["split."], ["a", "b"])
    assert done == []
    assert opened == (("g", 1, 0), ("a", 2, 1))
    opened, done = _closed(opened, ["split.", "exact A."], ["b"])
    assert done == [("a", ("exact A.",))]
    opened, done = _closed(opened, ["split.", "exact A.", "exact B."], [])
    assert done == [("g", ("split.", "exact A.", "exact B.")), ("b", ("exact B.",))]
    assert opened == ()


def test_one_step_that_closes_several_goals_records_none_of_them() -> None:
    opened, done = _closed([("g", 1, 0)], ["split."], ["a", "b", "c"])
    _, done = _closed(opened, ["split.", "all: auto."], [])
    assert done == [("g", ("split.", "all: auto."))]  # only the goal one below


def test_a_timeout_is_refuted_only_up_to_the_time_it_had() -> None:
    memory = SearchMemory().for_goal("F.v", "F.v:lemma")
    memory.refute("goal", "lia.", 2.0)
    assert memory.refuted("goal", "lia.", 1.0)
    assert memory.refuted("goal", "lia.", 2.0)
    assert not memory.refuted("goal", "lia.", 4.0)
    assert not memory.refuted("other goal", "lia.", 1.0)
    memory.refute("goal", "lia.")  # an error: refuted whatever the time
    assert memory.refuted("goal", "lia.", math.inf)


def test_refutations_are_kept_per_hole_and_closings_per_file() -> None:
    memory = SearchMemory()
    here = memory.for_goal("F.v", "F.v:a")
    here.refute("goal", "auto.")
    here.closed("goal", ("split.", "auto."))
    here.closed("goal", ("split.", "auto.", "auto."))  # the shortest is kept
    below = memory.for_goal("F.v", "F.v:b")
    assert not below.refuted("goal", "auto.", 1.0)
    assert below.closing("goal") == ("split.", "auto.")
    assert memory.for_goal("G.v", "G.v:a").closing("goal") is None


def _learner(seconds: float = 2.0) -> tuple[_Learner, GoalMemory]:
    memory = SearchMemory().for_goal("F.v", "F.v:lemma")
    return _Learner(memory, seconds), memory


def _failed(cpu_seconds: float, status: TacticStatus = TacticStatus.FAILED) -> TacticResult:
    return TacticResult(status, ProofState((), 1, 0), cpu_seconds=cpu_seconds)


def test_a_tactic_that_names_other_goals_is_neither_refuted_nor_read_as_a_closing() -> None:
    """``2: lia.`` may fail because of the second goal, and closes no first goal."""
    learner, memory = _learner()
    learner.refute("g", "2: lia.", _failed(0.01))
    learner.refute("g", "all: auto.", None)
    assert not memory.refuted("g", "2: lia.", 1.0)
    assert not memory.refuted("g", "all: auto.", 1.0)
    # g with a second goal h: "2: exact H." closes h, not g
    opened = learner.opened((("g", 2, 0),), ("2: exact H.",), ["g"], "2: exact H.")
    assert memory.closing("g") is None
    assert opened == (("g", 1, 1),)


def test_a_slow_failure_is_refuted_only_up_to_the_time_it_had() -> None:
    learner, memory = _learner(seconds=2.0)
    learner.refute("g", "quick.", _failed(0.1))
    learner.refute("g", "slow.", _failed(1.5))
    learner.refute("g", "timeout.", _failed(0.5, TacticStatus.TIMEOUT))
    assert memory.refuted("g", "quick.", 60.0)
    assert memory.refuted("g", "slow.", 2.0)
    assert not memory.refuted("g", "slow.", 4.0)
    assert not memory.refuted("g", "timeout.", 4.0)


def test_the_closings_of_a_branch_the_kernel_refused_are_forgotten() -> None:
    learner, memory = _learner()
    opened = learner.opened((("g", 1, 0),), ("split.",), ["a", "b"], "split.")
    learner.opened(opened, ("split.", "apply: bad."), ["b"], "apply: bad.")
    assert memory.closing("a") == ("apply: bad.",)
    learner.refused(("split.", "apply: bad.", "done."))
    assert memory.closing("a") is None
