"""Best-first search for Lean goals (strategy ``lean-search``).

The search itself is :func:`proof_orchestrator.search.bestfirst.best_first`,
the one Coq's goals get too; a :class:`~proof_orchestrator.lean.session.LeanSession`
is its proof-state interface (REPL proof states are immutable numbers, so
branching from any state costs nothing). A node's first goal is expanded with,
in this order:

* the k-NN model's suggestions (:mod:`.knn`: the file's finished proofs
  above the hole, the project files it imports, the ledger's Lean proofs),
  with their confidence;
* closing tactics: ``rfl``, ``assumption``, ``trivial``, ``decide``, ``simp``,
  ``omega``, ``simp_all``, ``contradiction``; ``aesop`` where Aesop is loaded;
  ``norm_num``, ``linarith``, ``positivity`` where Mathlib is;
* the hypotheses: ``exact h``, ``apply h`` (when ``h`` is an implication or a
  ``∀``), the halves of a conjunction or an ``↔``, ``cases h`` on a
  conjunction, disjunction or ``∃``;
* retrieved premises (:mod:`.premises`): ``rw [L]``, ``rw [← L]``,
  ``exact L``, ``apply L`` for theorems, ``simp [d]``/``unfold d`` for
  definitions, and ``simp [L₁, L₂]`` with the best two;
* structural steps by the conclusion's shape: ``intro`` (with the names the
  ``∀`` binds), ``constructor``/``apply And.intro``/``apply Iff.intro`` on
  ``∧``/``↔``, ``left``/``right`` on ``∨``, ``refine ⟨?_, ?_⟩`` on ``∃``,
  ``exfalso``, and ``cases``/``induction`` on variables of inductive types.

The proof is the flat list of tactics (each works on the main goal, so no
bullets are needed); only the whole-file check makes it a proof.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence

from ...goals import Budget, Goal, Outcome
from ...search.bestfirst import Expander, SearchEnd, best_first, search_limits
from ...search.memory import SearchMemory
from ...search.premises import PremiseIndex
from ...search.proofstate import Hypothesis
from ...strategies.base import StrategyDefaults, StrategyResult
from ..session import LeanSession
from .knn import LeanModels
from .premises import LEAN_INDEXES, LeanPremiseIndexes
from .tactics import forall_names, goal_variables

__all__ = [
    "CLOSERS",
    "MATHLIB_CLOSERS",
    "LeanSearchStrategy",
    "closers",
    "conclusion_shape",
    "hypothesis_steps",
    "premise_steps",
    "structural_steps",
]

CLOSERS: tuple[str, ...] = (
    "rfl",
    "assumption",
    "trivial",
    "decide",
    "simp",
    "omega",
    "simp_all",
    "contradiction",
)
MATHLIB_CLOSERS: tuple[str, ...] = ("norm_num", "linarith", "positivity")
#: connectives from the loosest to the tightest (Lean's precedences: ↔ 20, → 25, ∨ 30, ∧ 35)
_BINARY = ("↔", "→", "∨", "∧")
_OPEN, _CLOSE = "([{⟨", ")]}⟩"


def conclusion_shape(text: str) -> str:
    """The outermost connective of a proposition: ``∀``, ``∃``, ``¬``, ``↔``, ``→``,
    ``∨``, ``∧``, or ``""`` (an atom, an equation...)."""
    text = text.strip()
    if text.startswith(("∀", "∃")):
        return text[0]
    depth = 0
    found: set[str] = set()
    for char in text:
        if char in _OPEN:
            depth += 1
        elif char in _CLOSE:
            depth -= 1
        elif depth == 0 and char in _BINARY:
            found.add(char)
        elif depth == 0 and char in ("∀", "∃", "λ"):
            break  # a binder swallows the rest
    binary = next((c for c in _BINARY if c in found), "")
    return binary or ("¬" if text.startswith("¬") else "")


def _conclusion(goal: str) -> str:
    return goal.rpartition("⊢")[2].strip()


def closers(session: LeanSession) -> list[str]:
    header = session.chain[0] if session.hole.header_end else ""
    found = list(CLOSERS)
    if re.search(r"^import (?:Mathlib|Aesop)", header, re.M):
        found.append("aesop")
    if re.search(r"^import Mathlib", header, re.M):
        found += MATHLIB_CLOSERS
    return found


def hypothesis_steps(
    hypotheses: Sequence[Hypothesis], limit: int = 8, max_steps: int = 12
) -> list[str]:
    """Tactics that use the hypotheses (the most recent first), at most ``max_steps``."""
    steps: list[str] = []
    for hyp in list(reversed(hypotheses))[:limit]:
        if hyp.name.endswith("✝") or hyp.type in ("Prop", "Type") or hyp.type.startswith("Sort"):
            continue
        shape = conclusion_shape(hyp.type)
        steps.append(f"exact {hyp.name}")
        if shape in ("→", "∀", "¬"):
            steps.append(f"apply {hyp.name}")
        if shape == "∧":
            steps += [f"exact {hyp.name}.left", f"exact {hyp.name}.right"]
        if shape == "↔":
            steps += [f"apply {hyp.name}.mp", f"apply {hyp.name}.mpr"]
        if shape in ("∧", "∨", "∃"):
            steps.append(f"cases {hyp.name}")
    return steps[:max_steps]


def premise_steps(index: PremiseIndex, goal: str, exclude: Sequence[str], k: int = 3) -> list[str]:
    """Tactics over the premises that rank best against ``goal``."""
    best = index.rank(goal, k, exclude=exclude)
    steps: list[str] = []
    for premise in best:
        if premise.kind in ("def", "abbrev"):
            steps += [f"simp [{premise.name}]", f"unfold {premise.name}"]
        else:
            steps += [
                f"rw [{premise.name}]",
                f"exact {premise.name}",
                f"apply {premise.name}",
                f"rw [← {premise.name}]",
            ]
    if len(best) >= 2:
        steps.append(f"simp [{best[0].name}, {best[1].name}]")
    return steps


def structural_steps(goal: str) -> list[str]:
    """Steps chosen by the conclusion's shape and the context's variables."""
    conclusion = _conclusion(goal)
    shape = conclusion_shape(conclusion)
    steps: list[str] = []
    if shape == "∀":
        names = forall_names(goal)
        steps.append(f"intro {' '.join(names)}" if names else "intro")
    elif shape in ("→", "¬"):
        steps.append("intro h")
    if shape == "∧":
        steps += ["constructor", "apply And.intro"]
    elif shape == "↔":
        steps += ["constructor", "apply Iff.intro"]
    elif shape == "∨":
        steps += ["left", "right"]
    elif shape == "∃":
        steps.append("refine ⟨?_, ?_⟩")
    else:
        steps.append("constructor")
    for variable in goal_variables(goal)[:3]:
        steps += [f"cases {variable}", f"induction {variable}"]
    steps += ["intros", "exfalso"]
    return steps


class LeanSearchStrategy(StrategyDefaults):
    """Best-first search over REPL proof states with learned, closing, hypothesis,
    premise and structural candidates."""

    name = "lean-search"
    weight = "heavy"
    language = "lean"
    uses_slot = True
    needs_ledger = False

    def __init__(
        self,
        models: LeanModels | None = None,
        *,
        indexes: LeanPremiseIndexes | None = None,
        max_depth: int = 6,
        max_expansions: int | None = None,
        per_node: int = 32,
    ) -> None:
        self.models = models if models is not None else LeanModels()
        self.indexes = indexes if indexes is not None else LEAN_INDEXES
        self.max_depth = max_depth
        self.max_expansions = max_expansions
        self.per_node = per_node
        #: what this run's searches learned, reused by state (:mod:`...search.memory`)
        self.memory = SearchMemory()

    def training_cpu_seconds(self) -> float:
        return float(self.models.cpu_seconds)

    async def prove(self, session: LeanSession, goal: Goal, budget: Budget) -> StrategyResult:
        started = time.monotonic()
        cpu_start = session.cpu_seconds()
        model = await self.models.model_for(session)
        project = session.prover.project
        index = await self.indexes.index_at(
            project.root, project.toolchain, session.source, session.hole.decl_start
        )
        exclude = [goal.name, session.hole.decl_name]
        closing = closers(session)

        async def learned(first: str, steps: Sequence[str]) -> list[tuple[str, float]]:
            return model.suggest(first, k=8)

        async def closing_steps(first: str, steps: Sequence[str]) -> list[tuple[str, float]]:
            return [(t, 0.0) for t in closing]

        async def using_hypotheses(first: str, steps: Sequence[str]) -> list[tuple[str, float]]:
            return [(t, 0.0) for t in hypothesis_steps(session.hypotheses(first))]

        async def premises(first: str, steps: Sequence[str]) -> list[tuple[str, float]]:
            return [(t, 0.0) for t in premise_steps(index, _conclusion(first), exclude)]

        async def structural(first: str, steps: Sequence[str]) -> list[tuple[str, float]]:
            return [(t, 0.0) for t in structural_steps(first)]

        expanders: list[Expander] = [learned, closing_steps, using_hypotheses, premises, structural]
        spent_before = session.cpu_seconds() - cpu_start
        max_depth, max_expansions = search_limits(
            budget.cpu_seconds, self.max_depth, self.max_expansions
        )
        found = await best_first(
            session,
            expanders,
            max_depth=max_depth,
            max_expansions=max_expansions,
            cpu_seconds=max(0.0, budget.cpu_seconds - spent_before),
            tactic_seconds=budget.tactic_seconds,
            per_node=self.per_node,
            memory=self.memory.for_goal(str(goal.file), f"{goal.file}:{goal.qualified_name}"),
        )
        outcome = {
            SearchEnd.FOUND: Outcome.CANDIDATE,
            SearchEnd.TIMEOUT: Outcome.TIMEOUT,
            SearchEnd.EXHAUSTED: Outcome.FAILED,
        }[found.end]
        return StrategyResult(
            outcome,
            found.steps,
            found.tried,
            session.cpu_seconds() - cpu_start,
            time.monotonic() - started,
        )
