"""The speculative portfolio: several strategies race on one goal.

Up to ``width`` strategies run at once, in the bandit's order; when one of
them finishes, the next in line starts. The first result that is a candidate
proof wins, and every strategy still running is cancelled at once (its
session, and so its prover process, is closed by the cancellation). A
candidate that is not ``final`` (it likely rests on other holes) is kept in
reserve while the others go on within the budget: a final candidate that
arrives wins, else the first one in reserve does. All tasks
are owned by a ``TaskGroup``: none is left running when :func:`race` returns.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..goals import Outcome
from ..strategies.base import StrategyResult
from .budget import GoalBudget, cheap_first

__all__ = ["RaceResult", "goal_pass", "race"]


@dataclass(slots=True)
class RaceResult:
    #: the strategy whose candidate won, if any
    winner: str | None = None
    #: results of the strategies that finished (the cancelled ones are not here)
    results: dict[str, StrategyResult] = field(default_factory=dict)
    #: strategies that were cancelled because another won
    cancelled: list[str] = field(default_factory=list)


async def race(
    ranked: Sequence[str],
    width: int,
    attempt: Callable[[str], Coroutine[Any, Any, StrategyResult]],
    final: Callable[[StrategyResult], bool] | None = None,
) -> RaceResult:
    """Run ``attempt(name)`` for the names in ``ranked``, ``width`` at a time.

    A candidate for which ``final`` is false does not end the race; it wins
    only if no final candidate comes (None: every candidate is final).
    """
    outcome = RaceResult()
    reserve: str | None = None
    pending = list(ranked)
    running: dict[asyncio.Task[StrategyResult], str] = {}
    async with asyncio.TaskGroup() as group:
        while pending or running:
            while pending and len(running) < width and outcome.winner is None:
                name = pending.pop(0)
                running[group.create_task(attempt(name), name=f"attempt-{name}")] = name
            if not running:
                break
            done, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                name = running.pop(task)
                result = task.result()
                outcome.results[name] = result
                if result.outcome is Outcome.CANDIDATE and outcome.winner is None:
                    if final is None or final(result):
                        outcome.winner = name
                    elif reserve is None:
                        reserve = name
            if outcome.winner is not None:
                for task, name in running.items():
                    task.cancel()
                    outcome.cancelled.append(name)
                running.clear()
    if outcome.winner is None:
        outcome.winner = reserve
    return outcome


async def goal_pass(
    ranked: Sequence[str],
    heavy: Mapping[str, bool],
    shares: Mapping[str, float],
    total: float,
    width: int,
    attempt: Callable[[str, GoalBudget], Coroutine[Any, Any, StrategyResult]],
    *,
    retry_errors: bool = True,
    final: Callable[[StrategyResult], bool] | None = None,
    floors: Mapping[str, float] | None = None,
    boosts: Mapping[str, float] | None = None,
) -> RaceResult:
    """One pass over a goal with ``total`` CPU seconds: the code every portfolio runs.

    ``ranked`` is the bandit's order; the cheap strategies go first and the
    expensive ones share what they leave (:class:`~.budget.GoalBudget`, which
    ``attempt`` draws its grant from when its strategy really starts). With
    ``retry_errors``, when no strategy found a proof, those that ended in a
    prover error go once more (each in a fresh session) with a budget of their
    own: a broken prover says nothing about the goal. ``final``: see :func:`race`.
    """
    budget = GoalBudget(total, heavy, shares, floors, boosts)
    outcome = await race(
        cheap_first(ranked, heavy), width, lambda name: attempt(name, budget), final
    )
    errored = [n for n, r in outcome.results.items() if r.outcome is Outcome.ERROR]
    if outcome.winner is None and errored and retry_errors:
        again = GoalBudget(total, heavy, shares, floors, boosts)
        retry = await race(errored, width, lambda name: attempt(name, again), final)
        outcome.results.update(retry.results)
        outcome.winner = retry.winner
        outcome.cancelled += retry.cancelled
    return outcome
