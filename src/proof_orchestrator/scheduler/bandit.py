"""A multi-armed bandit over strategies, one set of arms per goal class.

The reward of one pull (one strategy on one goal) is ``success / (1 + cpu)``:
proofs per CPU-second, squashed into [0, 1], so that a strategy that proves
as much for less CPU ranks first.

* **UCB1**: untried arms first; then mean reward + ``sqrt(2 ln N / n)``.
* **Thompson sampling**: draw ``p ~ Beta(1 + successes, 1 + failures)`` and
  rank by ``p / (1 + mean CPU)``. A timeout is *censored* (the strategy might
  have succeeded with more time), so it counts as half a failure.

All randomness comes from the injected ``random.Random``: the same seed and
the same outcomes give the same ranking (tested).
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Iterable, Sequence

from ..goals import ArmStats

__all__ = ["ArmStats", "Bandit", "goal_class"]

_TYPES = (
    ("nat", r"\bnat\b|\bNat\."),
    ("list", r"\blist\b|\+\+|\bList\."),
    ("bool", r"\bbool\b|\b(?:andb|orb|negb)\b|&&|\|\|"),
    ("option", r"\boption\b|\bSome\b|\bNone\b"),
)


def goal_class(statement: str) -> str:
    """A cheap class for a statement: its conclusion's shape and the types it mentions."""
    body = statement.split(":", 1)[1] if ":" in statement else statement
    conclusion = re.split(r"->|,", body)[-1]
    if "<->" in body:
        head = "iff"
    elif re.search(r"\\/|/\\|\bexists\b|~", conclusion):
        head = "logic"
    elif "=" in conclusion and "<=" not in conclusion and "<>" not in conclusion:
        head = "eq"
    elif re.search(r"<=|<|>=|>", conclusion):
        head = "order"
    elif re.search(r"\\/|/\\|exists|~|<>|False|True", body):
        head = "logic"
    else:
        head = "other"
    types = [name for name, pattern in _TYPES if re.search(pattern, body)]
    return "/".join([head, *types]) if types else head


class Bandit:
    """Ranks strategies for a goal class; learns from every finished attempt."""

    def __init__(
        self,
        policy: str,
        rng: random.Random,
        stats: dict[tuple[str, str], ArmStats] | None = None,
    ) -> None:
        if policy not in ("ucb1", "thompson"):
            raise ValueError(f"unknown bandit policy {policy!r}")
        self.policy = policy
        self.rng = rng
        self.stats: dict[tuple[str, str], ArmStats] = stats if stats is not None else {}

    def arm(self, klass: str, strategy: str) -> ArmStats:
        return self.stats.setdefault((klass, strategy), ArmStats())

    def rank(self, klass: str, strategies: Sequence[str]) -> list[str]:
        """``strategies`` ordered best first for goals of class ``klass``."""
        if self.policy == "ucb1":
            scores = self._ucb1(klass, strategies)
        else:
            scores = self._thompson(klass, strategies)
        # stable: equal scores keep the given order (which encodes the profile's preference)
        order = sorted(range(len(strategies)), key=lambda i: -scores[i])
        return [strategies[i] for i in order]

    def _ucb1(self, klass: str, strategies: Sequence[str]) -> list[float]:
        arms = [self.arm(klass, s) for s in strategies]
        total = sum(a.pulls for a in arms)
        scores = []
        for arm in arms:
            if arm.pulls == 0:
                scores.append(math.inf)
            else:
                scores.append(arm.reward / arm.pulls + math.sqrt(2 * math.log(total) / arm.pulls))
        return scores

    def _thompson(self, klass: str, strategies: Sequence[str]) -> list[float]:
        scores = []
        for strategy in strategies:
            arm = self.arm(klass, strategy)
            p = self.rng.betavariate(1 + arm.successes, 1 + arm.failures)
            scores.append(p / (1 + arm.mean_cpu))
        return scores

    def success_rate(self, klass: str, strategy: str) -> float:
        """The expected chance that ``strategy`` proves a goal of class ``klass`` (Beta mean).

        A timeout counts as half a failure, as in the ranking.
        """
        arm = self.arm(klass, strategy)
        return (1 + arm.successes) / (2 + arm.successes + arm.failures)

    def update(
        self,
        klass: str,
        strategy: str,
        *,
        success: bool,
        cpu_seconds: float,
        censored: bool = False,
    ) -> ArmStats:
        arm = self.arm(klass, strategy)
        arm.pulls += 1
        arm.cpu_seconds += cpu_seconds
        if success:
            arm.successes += 1
            arm.reward += 1 / (1 + cpu_seconds)
        else:
            arm.failures += 0.5 if censored else 1.0
        return arm

    def items(self) -> Iterable[tuple[tuple[str, str], ArmStats]]:
        return self.stats.items()
