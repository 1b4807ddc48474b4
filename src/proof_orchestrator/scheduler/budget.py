"""One goal's CPU budget, split between the strategies that try it.

``--budget B`` is the CPU time one pass over a goal may use, all strategies
together. The strategies run in the bandit's order with the cheap ones first
(quick tactics: their whole list costs little), each granted a small share
(:data:`CHEAP_SHARE` of ``B``, times its boost: up to :data:`MAX_BOOST` for one
that wins more often than the expensive ones on this project); the expensive
ones (search, hammer...) then share what is left, in proportion to the
bandit's estimate of their success rate on goals of this class, each keeping
back the floor of those still waiting (CoqHammer's ATPs need a few seconds to
be of any use); the last one gets all that is left. A strategy that is alone
on the goal, cheap or not, gets the whole budget.

A grant is reserved when its strategy starts and settled when it ends: what a
strategy did not use goes back to the goal's account, so a strategy that
starts later (the portfolio runs a few at once) can use it. A goal whose pass
ends with no proof and some strategy out of budget is tried again later with
twice the budget, up to ``--budget-cap``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

__all__ = ["CHEAP_SHARE", "MAX_BOOST", "MIN_GRANT", "GoalBudget", "cheap_first"]

#: the share of the goal's budget one cheap strategy may use at most
CHEAP_SHARE = 0.1
#: a cheap strategy's grant is at most this many times :data:`CHEAP_SHARE`
MAX_BOOST = 4.0
#: a grant below this many CPU seconds is not worth opening a session for
MIN_GRANT = 0.5


def cheap_first(ranked: Sequence[str], heavy: Mapping[str, bool]) -> list[str]:
    """``ranked`` with the cheap strategies first, each part in the given (bandit) order."""
    return [n for n in ranked if not heavy.get(n, False)] + [
        n for n in ranked if heavy.get(n, False)
    ]


class GoalBudget:
    """The CPU account of one pass over one goal.

    ``heavy`` says which strategies are expensive; ``shares`` weighs the
    expensive ones against each other (any positive numbers; missing: 1).
    ``floors`` are the CPU seconds below which an expensive strategy cannot
    do its work (CoqHammer's ATPs need a few seconds): a grant to one leaves
    the floors of those still waiting, and a strategy gets at least its floor
    when that much is left. ``boosts`` multiply the cheap strategies' share
    (at least 1, at most :data:`MAX_BOOST`; missing: 1).
    """

    def __init__(
        self,
        total: float,
        heavy: Mapping[str, bool],
        shares: Mapping[str, float] | None = None,
        floors: Mapping[str, float] | None = None,
        boosts: Mapping[str, float] | None = None,
    ) -> None:
        if not total > 0:
            raise ValueError(f"a goal's budget must be positive, got {total!r}")
        self.total = total
        self.heavy = dict(heavy)
        self.shares = {n: max(1e-3, (shares or {}).get(n, 1.0)) for n, h in heavy.items() if h}
        self.floors = {n: max(0.0, (floors or {}).get(n, 0.0)) for n in self.shares}
        asked = boosts or {}
        self.boosts = {
            n: min(MAX_BOOST, max(1.0, asked.get(n, 1.0))) for n, h in heavy.items() if not h
        }
        #: expensive strategies not started yet
        self._waiting = set(self.shares)
        self.used = 0.0
        self.reserved = 0.0
        #: every grant made, in order: (strategy, CPU seconds)
        self.grants: list[tuple[str, float]] = []

    @property
    def left(self) -> float:
        """CPU seconds neither used nor reserved."""
        return max(0.0, self.total - self.used - self.reserved)

    def grant(self, name: str) -> float:
        """Reserve and return the CPU seconds ``name`` may use now (0: none is left)."""
        left = self.left
        if len(self.heavy) == 1:
            amount = left  # a strategy alone on the goal has it all
        elif self.heavy.get(name, False):
            weights = {n: self.shares[n] for n in self._waiting | {name}}
            self._waiting.discard(name)
            amount = left * weights[name] / sum(weights.values())
            reserved = sum(self.floors[n] for n in self._waiting)
            amount = max(min(amount, left - reserved), min(left, self.floors[name]))
        else:
            share = CHEAP_SHARE * self.boosts.get(name, 1.0)
            amount = min(left, max(MIN_GRANT, share * self.total))
        if amount < MIN_GRANT:
            return 0.0
        self.reserved += amount
        self.grants.append((name, amount))
        return amount

    def settle(self, granted: float, used: float) -> None:
        """A strategy granted ``granted`` finished having used ``used``."""
        self.reserved = max(0.0, self.reserved - granted)
        self.used += max(0.0, used)
