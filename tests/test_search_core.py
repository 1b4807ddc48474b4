"""The prover-neutral search core: the same best-first search over a real Coq session
(through the CoqStates adapter), and a core that imports no prover."""

from __future__ import annotations

import ast
import itertools
from collections.abc import Sequence
from pathlib import Path

from proof_orchestrator import search
from proof_orchestrator.coq.display import COQ
from proof_orchestrator.coq.holes import scan_coq_text
from proof_orchestrator.coq.prover import CoqProver
from proof_orchestrator.coq.states import CoqStates
from proof_orchestrator.provers.base import ProofState, TacticResult, TacticStatus
from proof_orchestrator.search.bestfirst import (
    GROWTH_PENALTY,
    SearchEnd,
    best_first,
    fingerprint,
    priority,
)
from proof_orchestrator.search.proofstate import Hypothesis, hypotheses

CONJ = """\
Lemma conj_swap : forall P Q : Prop, P /\\ Q -> Q /\\ P.
Proof.
Admitted.
"""


async def test_best_first_over_a_real_coq_session(tmp_path: Path) -> None:
    path = tmp_path / "C.v"
    path.write_text(CONJ, encoding="utf-8")
    (hole,) = scan_coq_text(path, CONJ)
    prover = CoqProver(cwd=str(tmp_path))
    seen_hypotheses: list[list[Hypothesis]] = []
    try:
        async with prover.session(hole.goal, CONJ, hole.prefix_end) as session:
            states = CoqStates(session)

            async def steps(goal: str, done: Sequence[str]) -> list[tuple[str, float]]:
                found = states.hypotheses(goal)
                seen_hypotheses.append(found)
                uses = [f"destruct {h.name}." for h in found if "/\\" in h.type]
                return [
                    ("assumption.", 0.0),
                    *((u, 0.0) for u in uses),
                    ("split.", 0.0),
                    ("intros.", 0.0),
                ]

            found = await best_first(
                states,
                [steps],
                max_depth=6,
                max_expansions=40,
                cpu_seconds=30,
                tactic_seconds=2,
            )
            assert found.end is SearchEnd.FOUND
            replay = await states.check(found.steps, timeout=5)
    finally:
        await prover.aclose()
    # no single tactic of the list proves it; the hypothesis-driven step is needed
    assert "destruct H." in found.steps
    assert found.steps[-1] == "assumption."
    assert len(found.counts) == len(found.steps) + 1
    assert found.counts[-1] == 0
    assert replay.status is TacticStatus.COMPLETE
    assert Hypothesis("H", "P /\\ Q") in seen_hypotheses[1]


def test_coq_hypotheses_are_read_from_the_display() -> None:
    display = "n, m : nat\nH : n = m\n  /\\ m = n\n============================\nm = n"
    assert hypotheses(display, COQ) == [
        Hypothesis("n", "nat"),
        Hypothesis("m", "nat"),
        Hypothesis("H", "n = m /\\ m = n"),
    ]


def test_priority_is_depth_plus_half_the_goals_minus_twice_the_confidence() -> None:
    assert priority(2, 3, 0.25) == 3.0


def test_a_confidence_above_one_counts_as_one() -> None:
    """A k-NN vote of 2.4 must not put a node three levels deep before a shallow one."""
    assert priority(1, 1, 2.44) == priority(1, 1, 1.0) == -0.5
    assert priority(3, 1, 2.44) > priority(1, 2, 0.5)


def test_the_search_core_imports_no_prover() -> None:
    folder = Path(search.__file__).parent
    for source in folder.glob("*.py"):
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level >= 2:
                assert node.module in ("provers.base", "provers.syntax", "goals", "errors"), (
                    source,
                    node.module,
                )
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                assert not node.module.startswith("proof_orchestrator"), (source, node.module)


def test_a_step_that_blows_the_goal_up_waits_behind_one_that_did_not() -> None:
    """``unfold`` of a big definition doubles the goal: half a level of depth later."""
    assert priority(1, 1, 0.0, growth=2.0) == priority(1, 1, 0.0) + GROWTH_PENALTY
    assert priority(1, 1, 0.0, growth=0.5) == priority(1, 1, 0.0)  # shrinking is no bonus
    assert priority(1, 1, 0.0, growth=8.0) > priority(2, 1, 0.0)


def test_states_that_differ_only_in_hypothesis_names_are_merged() -> None:
    """``intros``, ``move=> Hx`` and ``intuition`` reach one state under three names."""
    coq = "  a : nat\n  {name} : a = 0\n  ============================\n  S a = 1"
    assert fingerprint([coq.format(name="H")]) == fingerprint([coq.format(name="Hx")])
    # a different statement is a different state, whatever the names
    other = coq.replace("a = 0", "a = 1")
    assert fingerprint([other.format(name="H")]) != fingerprint([coq.format(name="H")])
    # a constant named like nothing in the context is kept
    assert fingerprint(["n : nat\n============================\nf n = n"]) != fingerprint(
        ["n : nat\n============================\ng n = n"]
    )
    # a long line of names with no colon is read in linear time (the first pattern was
    # exponential there: this line took minutes)
    words = " ".join(f"word{i}" for i in range(60))
    assert fingerprint([f"  H : P\n  {words}\n  ====\n  Q"]) == fingerprint(
        [f"  K : P\n  {words}\n  ====\n  Q"]
    )
    lean = "x y : Nat\n{name} : x = y\n⊢ y = x"
    assert fingerprint([lean.format(name="h")]) == fingerprint([lean.format(name="hxy")])


async def test_a_closing_step_the_kernel_refuses_is_no_proof_and_the_search_goes_on() -> None:
    """Pure scheduling on a scripted state machine: ``bad.`` leaves no goal but the
    acceptance (the kernel's ``Qed`` in a real search) refuses it; ``good.`` after
    ``step.`` is the proof found."""

    class Scripted:
        root = ProofState((), 0, 0)

        def __init__(self) -> None:
            self.tokens = itertools.count(1)

        async def apply(self, tactic: str, state: ProofState, *, timeout: float) -> TacticResult:
            script = (*state.script, tactic)
            if tactic == "bad." or (tactic == "good." and "step." in state.script):
                return TacticResult(TacticStatus.COMPLETE, ProofState(script, next(self.tokens), 0))
            if tactic == "step.":
                new = ProofState(script, next(self.tokens), 0)
                return TacticResult(TacticStatus.GOALS, new, (f"goal after {len(script)}",))
            return TacticResult(TacticStatus.FAILED, state)

        async def show(self, state: ProofState, *, timeout: float) -> tuple[str, ...]:
            return ("the goal",)

        async def reach(self, state: ProofState, *, timeout: float) -> ProofState | None:
            return state

        def cpu_seconds(self) -> float:
            return 0.0

    async def steps(goal: str, done: Sequence[str]) -> list[tuple[str, float]]:
        return [("bad.", 0.0), ("good.", 0.0), ("step.", 0.0)]

    asked: list[tuple[str, ...]] = []

    async def kernel(found: tuple[str, ...], counts: tuple[int, ...]) -> bool:
        asked.append(found)
        return "bad." not in found

    states = Scripted()
    found = await best_first(
        states,  # type: ignore[arg-type]
        [steps],
        max_depth=4,
        max_expansions=10,
        cpu_seconds=10,
        tactic_seconds=1,
        accept=kernel,
    )
    assert found.end is SearchEnd.FOUND
    assert found.steps == ("step.", "good.")
    assert asked[0] == ("bad.",)
    unchecked = await best_first(
        Scripted(),  # type: ignore[arg-type]
        [steps],
        max_depth=4,
        max_expansions=10,
        cpu_seconds=10,
        tactic_seconds=1,
    )
    assert unchecked.steps == ("bad.",)


def test_a_longer_search_may_ask_coq_search_more_often() -> None:
    """The cap on ``Search`` queries grows with the budget (at 10 CPU s it is the old 8)."""
    from proof_orchestrator.coq.strategies.search import lemma_queries

    assert lemma_queries(2) == lemma_queries(10) == 8
    assert lemma_queries(40) == 32
    assert lemma_queries(160) == 128


def test_ssreflect_is_seen_in_the_sentences_that_import_it() -> None:
    from proof_orchestrator.coq.strategies.search import loads_ssreflect

    for imports in (
        "From Coq Require Import ssreflect.",
        "From Coq Require Import\n  ssreflect ssrbool.",
        "Require Import mathcomp.ssreflect.ssreflect.",
        "From mathcomp Require Import all_ssreflect.",
        "From mathcomp Require Export eqtype.",
    ):
        assert loads_ssreflect(["Set Implicit Arguments.", imports]), imports
    for other in (
        "Require mathcomp.ssreflect.ssreflect.",  # loaded, not imported: no syntax
        "From extructures Require Import ord.",
        "Require Import Arith.",
        "Definition ssreflect := 0.",
    ):
        assert not loads_ssreflect([other]), other


def test_intro_is_offered_only_where_intros_sees_no_product() -> None:
    """``intro`` unfolds ``=i``/``~`` where ``intros`` does nothing; elsewhere it only adds
    a state per binder."""
    from proof_orchestrator.coq.strategies.search import shows_product

    def goal(conclusion: str) -> str:
        return f"  x : nat\n  ============================\n  {conclusion}"

    assert shows_product(goal("forall n : nat, n = n"))
    assert shows_product(goal("x < 3 -> x < 4"))
    assert not shows_product(goal("dfa_lang (re_to_dfa r) =i r"))
    assert not shows_product(goal("~ (x < 0)"))
    assert not shows_product(goal("(forall n, f n = n) /\\ True"))
    assert not shows_product(goal("f (fun y => y -> y) = g"))
