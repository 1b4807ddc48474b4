"""Which strategies a goal's pass runs, and their weights, from the bandit's evidence.

Every strategy starts with its profile's prior: it runs on every goal, the
expensive ones share the budget by their estimated success rate, and each
keeps its floor (CoqHammer's ATPs need a few seconds). Evidence then moves
the budget: a strategy that has had :data:`EXPLORE_AFTER` attempts on this
project and no win runs only on a seeded :data:`EXPLORE_RATE` of the goals
from then on (with its floor, so each of those tries is a real one), and its
grant goes to the strategies that win. One win puts it back on every goal.
A cheap strategy that wins more often on this project than the best expensive
one gets a larger grant, in proportion (its boost, up to
:data:`~.budget.MAX_BOOST`): rewrite chains on a mathcomp project.

The evidence is the bandit's arms summed over goal classes: the ledger keeps
them across runs, so a second run on a project starts where the first ended.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from .bandit import Bandit

__all__ = [
    "EXPLORE_AFTER",
    "EXPLORE_RATE",
    "PassPlan",
    "PlanCounts",
    "boost",
    "plan_pass",
    "project_record",
]

#: attempts with no win after which a strategy only explores
EXPLORE_AFTER = 20
#: the share of goals an exploring strategy still runs on
EXPLORE_RATE = 0.1


@dataclass(frozen=True, slots=True)
class PassPlan:
    """What one pass over a goal runs."""

    #: the strategies that run, in the order given
    names: list[str]
    #: the expensive strategies' weights (their success rate on the goal's class)
    shares: dict[str, float]
    #: CPU seconds below which an expensive strategy cannot work
    floors: dict[str, float]
    #: strategies that run on this goal only to explore (no win on the project yet)
    exploring: frozenset[str]
    #: strategies left out of this goal's pass (no win on the project yet)
    resting: frozenset[str]
    #: the cheap strategies' grants, as multiples of the cheap share (see :func:`boost`)
    boosts: dict[str, float] = field(default_factory=dict)


def project_record(bandit: Bandit, strategy: str) -> tuple[int, int]:
    """``strategy``'s attempts and wins over every goal class the bandit has seen."""
    pulls = wins = 0
    for (_, name), arm in bandit.items():
        if name == strategy:
            pulls += arm.pulls
            wins += arm.successes
    return pulls, wins


def plan_pass(
    bandit: Bandit,
    klass: str,
    names: Sequence[str],
    heavy: Mapping[str, bool],
    floors: Mapping[str, float],
    rng: random.Random,
    running: Mapping[str, int] | None = None,
) -> PassPlan:
    """The strategies of one pass over a goal of class ``klass`` and their weights.

    ``running``: per strategy, the passes that planned it and have not ended. They
    count as attempts: at 160 CPU s per goal a pass lasts minutes, and the passes
    started before the 20th attempt ended would otherwise all plan it in full.
    """
    kept: list[str] = []
    exploring: set[str] = set()
    resting: set[str] = set()
    for name in names:
        pulls, wins = project_record(bandit, name)
        pulls += (running or {}).get(name, 0)
        if pulls < EXPLORE_AFTER or wins > 0:
            kept.append(name)
        elif rng.random() < EXPLORE_RATE:
            kept.append(name)
            exploring.add(name)
        else:
            resting.add(name)
    if not kept and names:
        # every strategy is resting: the one the bandit rates best still runs
        best = max(names, key=lambda n: bandit.success_rate(klass, n))
        kept.append(best)
        resting.discard(best)
        exploring.add(best)
    shares = {n: bandit.success_rate(klass, n) for n in kept if heavy.get(n, False)}
    expensive = [n for n in names if heavy.get(n, False)]
    boosts = {n: boost(bandit, n, expensive) for n in kept if not heavy.get(n, False)}
    return PassPlan(
        kept,
        shares,
        {n: floors.get(n, 0.0) for n in shares},
        frozenset(exploring),
        frozenset(resting),
        {n: b for n, b in boosts.items() if b > 1.0},
    )


def _project_rate(bandit: Bandit, strategy: str) -> float:
    """``strategy``'s chance of a win on this project (Beta mean over every class)."""
    pulls, wins = project_record(bandit, strategy)
    return (1 + wins) / (2 + pulls)


def boost(bandit: Bandit, strategy: str, expensive: Sequence[str]) -> float:
    """How many cheap shares cheap ``strategy`` is granted: its chance of a win on
    this project over the best expensive strategy's, at least 1 (the budget
    module caps it). With no evidence both are 1/2 and the boost is 1."""
    if not expensive:
        return 1.0
    best = max(_project_rate(bandit, n) for n in expensive)
    return max(1.0, _project_rate(bandit, strategy) / best)


class PlanCounts:
    """Per strategy: the goal passes it was planned in, explored in, and rested from."""

    def __init__(self) -> None:
        self._counts: dict[str, dict[str, int]] = {}

    def count(self, plan: PassPlan) -> None:
        for name in plan.names:
            entry = self._entry(name)
            entry["planned"] += 1
            if name in plan.exploring:
                entry["explored"] += 1
        for name in plan.resting:
            self._entry(name)["rested"] += 1

    def _entry(self, name: str) -> dict[str, int]:
        return self._counts.setdefault(name, {"planned": 0, "explored": 0, "rested": 0})

    def as_dict(self) -> dict[str, dict[str, int]]:
        return {name: dict(entry) for name, entry in sorted(self._counts.items())}
