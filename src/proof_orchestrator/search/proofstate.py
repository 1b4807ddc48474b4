"""The proof-state interface a search needs, whatever the prover.

A search applies tactics to states and reads the goals that result; it
never learns how the prover keeps its states. Coq (``coqtop``) keeps one
line of states, so going back to an older state and trying a sibling drops
the states after it: :meth:`ProofStates.reach` rebuilds a state from its
script when needed. The Lean REPL's proof states are immutable numbers, so
branching from any of them is free and ``reach`` returns the state as it is.

Implementations: :class:`proof_orchestrator.coq.states.CoqStates`
(an adapter over :class:`~proof_orchestrator.coq.session.CoqSession`) and
:class:`proof_orchestrator.lean.session.LeanSession` itself.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..provers.base import ProofState, TacticResult
from .features import GoalSyntax

__all__ = ["Hypothesis", "ProofStates", "hypotheses", "show_goal"]


@dataclass(frozen=True, slots=True)
class Hypothesis:
    """One local hypothesis of a goal: its name and its type as the prover prints it."""

    name: str
    type: str


class ProofStates(Protocol):
    """Apply a tactic to a state, show goals, list hypotheses, check a finished script."""

    #: how this prover prints goals and spells identifiers
    syntax: GoalSyntax

    @property
    def root(self) -> ProofState:
        """The state right after the statement."""

    async def apply(self, tactic: str, state: ProofState, *, timeout: float) -> TacticResult:
        """Run ``tactic`` on ``state``: the new goals (``GOALS``/``COMPLETE``) or an error."""

    async def show(self, state: ProofState, *, timeout: float) -> tuple[str, ...]:
        """The goals open at ``state``, as the prover prints them (first goal first)."""

    async def reach(self, state: ProofState, *, timeout: float) -> ProofState | None:
        """``state`` made ready to branch from (rebuilt if the prover dropped it), or None."""

    def hypotheses(self, goal: str) -> list[Hypothesis]:
        """The hypotheses of one printed goal."""

    async def check(self, script: Sequence[str], *, timeout: float) -> TacticResult:
        """Run a whole script from the root (``COMPLETE`` when it proves the goal)."""

    def cpu_seconds(self) -> float:
        """CPU seconds the prover has used for this proof so far."""


def hypotheses(goal: str, syntax: GoalSyntax) -> list[Hypothesis]:
    """The hypotheses printed above ``syntax.separator`` in ``goal``.

    ``p q r : Prop`` (Lean) and ``P, Q : Prop`` (Coq) give several hypotheses;
    the display's common indentation is ignored; a line without `` : `` (Lean's
    ``case left`` tag) is skipped; an indented line continues the type above it.
    """
    above, found, _ = goal.rpartition(syntax.separator)
    if not found:
        return []
    out: list[Hypothesis] = []
    names: list[str] = []
    kind = ""
    for line in textwrap.dedent(above).splitlines():
        if line[:1].isspace() and names:
            kind += " " + line.strip()
            continue
        if names:
            out += [Hypothesis(n, kind.strip()) for n in names]
            names, kind = [], ""
        left, colon, right = line.partition(" : ")
        if not colon or not left.strip():
            continue
        names, kind = left.replace(",", " ").split(), right
    out += [Hypothesis(n, kind.strip()) for n in names]
    return out


async def show_goal(session: Any, seconds: float = 2.0, *, noop: str = "idtac.") -> str:
    """The goal at the session's root as the prover prints it (the session is left at its root).

    ``noop`` is the language's do-nothing tactic (Lean: ``skip``).
    """
    shown = await session.run_tactic(noop, session.root, timeout=seconds)
    await session.back_to(session.root)
    return "\n\n".join(shown.goals)
