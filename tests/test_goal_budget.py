"""The per-goal budget: how one goal's CPU is split between its strategies."""

from __future__ import annotations

import pytest

from proof_orchestrator.scheduler.budget import (
    CHEAP_SHARE,
    MIN_GRANT,
    GoalBudget,
    cheap_first,
)
from proof_orchestrator.search.bestfirst import search_limits

HEAVY = {"micro": False, "induction": False, "search": True, "hammer": True}


def test_cheap_strategies_go_first_in_the_bandits_order() -> None:
    ranked = ["hammer", "micro", "search", "induction"]
    assert cheap_first(ranked, HEAVY) == ["micro", "induction", "hammer", "search"]


def test_cheap_strategies_get_a_small_share_and_the_expensive_ones_share_the_rest() -> None:
    budget = GoalBudget(10.0, HEAVY, {"search": 3.0, "hammer": 1.0})
    micro = budget.grant("micro")
    assert micro == pytest.approx(CHEAP_SHARE * 10.0)
    budget.settle(micro, 0.2)  # finished early: the rest goes back
    induction = budget.grant("induction")
    budget.settle(induction, 1.0)
    left = 10.0 - 0.2 - 1.0
    search = budget.grant("search")
    assert search == pytest.approx(left * 3 / 4)  # in proportion to the shares
    budget.settle(search, search)
    hammer = budget.grant("hammer")  # the last one gets all that is left
    assert hammer == pytest.approx(left - search)
    budget.settle(hammer, hammer)
    assert budget.left == pytest.approx(0.0)
    assert budget.used == pytest.approx(10.0)


def test_nothing_is_granted_once_the_budget_is_spent() -> None:
    budget = GoalBudget(2.0, HEAVY)
    search = budget.grant("search")
    assert search == pytest.approx(1.0)  # two expensive strategies wait: half each
    budget.settle(search, 1.9)  # it overran its grant: the goal's account pays
    assert budget.grant("hammer") == 0.0
    assert budget.grant("micro") == 0.0
    assert budget.left < MIN_GRANT


def test_grants_running_at_once_never_exceed_the_budget() -> None:
    budget = GoalBudget(4.0, HEAVY)
    grants = [budget.grant(n) for n in ("micro", "induction", "search", "hammer")]
    assert sum(grants) <= 4.0 + 1e-9
    assert budget.reserved == pytest.approx(sum(grants))


def test_a_budget_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        GoalBudget(0.0, HEAVY)


def test_search_grows_with_its_budget() -> None:
    limits = [search_limits(b) for b in (2.5, 5.0, 10.0, 20.0, 40.0)]
    depths = [d for d, _ in limits]
    expansions = [e for _, e in limits]
    assert expansions == sorted(expansions)
    assert len(set(expansions)) == len(expansions)
    assert depths == sorted(depths)
    assert depths[-1] > depths[0]
    assert search_limits(40.0, max_expansions=7)[1] == 7  # an explicit limit wins


def test_a_strategy_alone_on_a_goal_gets_the_whole_budget_cheap_or_not() -> None:
    for name, heavy in (("micro", False), ("search", True)):
        budget = GoalBudget(10.0, {name: heavy})
        assert budget.grant(name) == pytest.approx(10.0)


def test_a_waiting_strategys_floor_is_kept_back_and_granted() -> None:
    """Search ranks higher (share 9 to 1) but hammer's ATPs need 5 s: search's grant
    leaves hammer its floor, and hammer gets it."""
    budget = GoalBudget(10.0, HEAVY, {"search": 9.0, "hammer": 1.0}, {"hammer": 5.0})
    micro = budget.grant("micro")
    budget.settle(micro, 1.0)
    search = budget.grant("search")
    assert search == pytest.approx(9.0 - 5.0)
    assert budget.grant("hammer") == pytest.approx(5.0)
    # started first, hammer gets its share or its floor, whichever is larger
    first = GoalBudget(10.0, HEAVY, {"search": 9.0, "hammer": 1.0}, {"hammer": 5.0})
    assert first.grant("hammer") == pytest.approx(5.0)
    assert first.grant("search") == pytest.approx(5.0)
    # less than the floor left: what is left
    short = GoalBudget(3.0, HEAVY, {"search": 1.0, "hammer": 1.0}, {"hammer": 5.0})
    assert short.grant("hammer") == pytest.approx(3.0)
