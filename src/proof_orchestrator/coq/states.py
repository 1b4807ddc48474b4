"""A :class:`~proof_orchestrator.search.proofstate.ProofStates` view of a Coq session.

``coqtop`` keeps one line of states: running a tactic from an older state
(``BackTo``) drops the states after it. So :meth:`CoqStates.reach` rebuilds a
state before the search branches from it, replaying its script from the
deepest state coqtop still holds (:meth:`CoqSession.reach`).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..provers.base import ProofState, TacticResult
from ..search.features import GoalSyntax
from ..search.proofstate import Hypothesis, hypotheses
from .display import COQ
from .session import CoqSession

__all__ = ["CoqStates"]


class CoqStates:
    """Coq's proof states through the prover-neutral interface (an adapter, no new machinery)."""

    syntax: GoalSyntax = COQ

    def __init__(self, session: CoqSession, start: ProofState | None = None) -> None:
        self.session = session
        #: where a search starts: the goal's root, or a state inside its proof
        self.start = start

    @property
    def root(self) -> ProofState:
        return self.start if self.start is not None else self.session.root

    async def apply(self, tactic: str, state: ProofState, *, timeout: float) -> TacticResult:
        return await self.session.run_tactic(tactic, state, timeout=timeout)

    async def show(self, state: ProofState, *, timeout: float) -> tuple[str, ...]:
        shown = await self.session.run_tactic("idtac.", state, timeout=timeout)
        return shown.goals

    async def reach(self, state: ProofState, *, timeout: float) -> ProofState | None:
        if not state.script:
            return self.session.root
        return await self.session.reach(state.script, timeout=timeout)

    def hypotheses(self, goal: str) -> list[Hypothesis]:
        return hypotheses(goal, self.syntax)

    async def check(self, script: Sequence[str], *, timeout: float) -> TacticResult:
        return await self.session.run_script(script, self.session.root, timeout=timeout)

    def cpu_seconds(self) -> float:
        return self.session.cpu_seconds()
