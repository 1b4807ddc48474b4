"""The strategy seam."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from ..goals import Budget, Goal, Outcome

__all__ = ["Strategy", "StrategyResult"]


@dataclass(frozen=True, slots=True)
class StrategyResult:
    """What one strategy achieved on one goal.

    ``outcome`` is at best :attr:`Outcome.CANDIDATE`: the session accepted the
    script, but only the whole-file verifier can make it ``PROVED``.
    """

    outcome: Outcome
    sentences: tuple[str, ...] = ()
    tactics_tried: int = 0
    cpu_seconds: float = 0.0
    wall_seconds: float = 0.0
    message: str = ""
    #: whole helper lemmas the script needs, to insert before the declaration
    helpers: tuple[str, ...] = ()
    #: imports the script needs (allowed ones only, see ``project.patch.ALLOWED_IMPORTS``)
    imports: tuple[str, ...] = ()
    #: model tokens, cost (USD) and waiting time of the attempt (the llm strategies)
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    llm_seconds: float = 0.0


class Strategy(Protocol):
    """A way of proving goals of one language.

    A strategy may say ``language = "lean"``; without it, it works on Coq
    goals. ``prove`` receives a session of that language's prover
    (:class:`~proof_orchestrator.coq.session.CoqSession` or
    :class:`~proof_orchestrator.lean.session.LeanSession`).
    """

    #: a short stable name, used in the ledger and in reports
    name: str
    #: "light" (quick tactics) or "heavy" (search, hammer): which slots it uses
    weight: str

    async def prove(self, session: Any, goal: Goal, budget: Budget) -> StrategyResult: ...
