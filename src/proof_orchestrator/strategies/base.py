"""The strategy seam."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from ..goals import Budget, Goal, Outcome
from ..provers.coq import CoqSession

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


class Strategy(Protocol):
    #: a short stable name, used in the ledger and in reports
    name: str
    #: "light" (quick tactics) or "heavy" (search, hammer): which slots it uses
    weight: str

    async def prove(self, session: CoqSession, goal: Goal, budget: Budget) -> StrategyResult: ...
