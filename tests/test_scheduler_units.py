"""Pure scheduling logic: bandit determinism and learning, governor control."""

from __future__ import annotations

import asyncio
import random
import time

import pytest

from proof_orchestrator.scheduler import Bandit, CpuGovernor, goal_class
from proof_orchestrator.scheduler.queue import GoalQueue, priority

STRATEGIES = ["micro", "induction", "cached"]


def _schedule(seed: int, policy: str) -> list[list[str]]:
    """Rankings produced while feeding a fixed sequence of outcomes."""
    bandit = Bandit(policy, random.Random(seed))
    outcomes = [
        ("eq/nat", "induction", True, 0.2),
        ("eq/nat", "micro", False, 1.0),
        ("order/nat", "micro", True, 0.1),
        ("eq/nat", "cached", False, 0.0),
    ] * 5
    ranks = []
    for klass, strategy, success, cpu in outcomes:
        ranks.append(bandit.rank(klass, STRATEGIES))
        bandit.update(klass, strategy, success=success, cpu_seconds=cpu)
    return ranks


def test_same_seed_same_schedule() -> None:
    assert _schedule(7, "thompson") == _schedule(7, "thompson")
    assert _schedule(7, "ucb1") == _schedule(7, "ucb1")


def test_different_seeds_can_differ() -> None:
    assert any(_schedule(seed, "thompson") != _schedule(0, "thompson") for seed in range(1, 10))


def test_ucb1_tries_every_arm_first_then_prefers_the_cheap_winner() -> None:
    bandit = Bandit("ucb1", random.Random(0))
    assert bandit.rank("eq", STRATEGIES) == STRATEGIES  # all untried: given order
    for _ in range(20):
        bandit.update("eq", "micro", success=False, cpu_seconds=1.0)
        bandit.update("eq", "induction", success=True, cpu_seconds=0.1)
        bandit.update("eq", "cached", success=True, cpu_seconds=5.0)
    assert bandit.rank("eq", STRATEGIES)[0] == "induction"


def test_thompson_learns_per_class() -> None:
    bandit = Bandit("thompson", random.Random(1))
    for _ in range(30):
        bandit.update("eq/list", "induction", success=True, cpu_seconds=0.2)
        bandit.update("eq/list", "micro", success=False, cpu_seconds=0.2)
        bandit.update("logic", "micro", success=True, cpu_seconds=0.2)
        bandit.update("logic", "induction", success=False, cpu_seconds=0.2)
    assert bandit.rank("eq/list", ["micro", "induction"])[0] == "induction"
    assert bandit.rank("logic", ["micro", "induction"])[0] == "micro"


def test_goal_class() -> None:
    assert goal_class("Lemma a : forall l : list nat, length l = length l.") == "eq/nat/list"
    assert goal_class("Lemma b : forall n m : nat, n <= n + m.") == "order/nat"
    assert goal_class("Lemma c : forall b : bool, b = true \\/ b = false.") == "logic/bool"


async def test_governor_limits_concurrent_slots() -> None:
    governor = CpuGovernor(0.5, max_slots=3, interval=0.05)
    governor.limit = 2
    running = 0
    peak = 0

    async def work() -> None:
        nonlocal running, peak
        async with governor.slot():
            running += 1
            peak = max(peak, running)
            await asyncio.sleep(0.05)
            running -= 1

    await asyncio.gather(*(work() for _ in range(8)))
    assert peak == 2
    assert governor.active == 0


def test_governor_lowers_the_limit_above_target_and_raises_it_below() -> None:
    governor = CpuGovernor(0.5, max_slots=4)
    governor.limit, governor.active = 3, 3
    governor._adjust(0.9, others=0.0, rss_mb=0)
    assert governor.limit == 2
    governor.active = 1
    governor._adjust(0.2, others=0.0, rss_mb=0)  # under target but not saturated: no change
    assert governor.limit == 2
    governor.active = 2
    governor._adjust(0.2, others=0.0, rss_mb=0)
    assert governor.limit == 3


def test_governor_backs_off_when_the_machine_is_busy_elsewhere() -> None:
    governor = CpuGovernor(0.5, max_slots=4)
    governor.limit, governor.active = 3, 3
    governor._adjust(0.3, others=0.8, rss_mb=0)
    assert governor.limit == 1


def test_the_whole_machine_opens_every_slot_and_ignores_other_work() -> None:
    governor = CpuGovernor(1.0, max_slots=4)
    assert governor.limit == 4
    governor.active = 4
    governor._adjust(0.3, others=0.8, rss_mb=0)  # ATPs read as other work: no back-off
    assert governor.limit == 4
    governor._adjust(0.3, others=0.0, rss_mb=10_000)  # the memory budget still holds
    assert governor.limit == 3


def test_governor_measures_its_own_busy_process() -> None:
    """It sees the CPU this process burnt, however loaded the machine is.

    (Burning for a span of wall time and asking for a high fraction failed on a
    machine busy with other work: the process got 28 % of a core.)
    """
    governor = CpuGovernor(0.5, max_slots=2, cpus=1)
    start = time.process_time()
    while time.process_time() - start < 0.3:
        pass  # burn 0.3 CPU s in this process
    sample = governor.sample()
    # with one CPU, the fraction over the window times the window is the CPU seen
    assert sample.fraction * sample.t >= 0.25


async def test_gate_holds_requests_while_the_bucket_is_empty() -> None:
    governor = CpuGovernor(0.5, max_slots=1, interval=0.02)
    governor.tokens = -0.05  # 0.05 core-seconds ahead of a 1 core-second/second target
    started = time.monotonic()
    await governor.gate()
    assert time.monotonic() - started >= 0.045


async def test_gate_lets_requests_go_once_the_debt_is_repaid_at_a_recovered_rate() -> None:
    # a debt taken while the machine looked busy (rate at its floor) would mean a
    # 20 s wait at that rate; the rate recovers and the bucket refills in 0.1 s
    governor = CpuGovernor(0.5, max_slots=1, interval=0.02)
    governor.rate = 0.1
    governor.tokens = -2.0

    async def refill() -> None:
        await asyncio.sleep(0.1)
        governor.rate = 1.0
        governor.tokens = 0.1

    started = time.monotonic()
    await asyncio.gather(governor.gate(), refill())
    assert 0.09 <= time.monotonic() - started < 1.0


def test_priority_prefers_user_choice_dependents_and_easy_goals() -> None:
    base = priority("Lemma a : forall n : nat, n = n.")
    assert priority("Lemma a : forall n : nat, n = n.", user=10) > base
    assert priority("Lemma a : forall n : nat, n = n.", dependents=2) > base
    assert priority("Lemma a : forall n : nat, n = n.", failures=8) < base
    assert priority("Lemma a : forall n : nat, n = n.", revisits=1) < base
    long = "Lemma b : forall (l1 l2 l3 : list nat) (f : nat -> nat), map f (l1 ++ l2 ++ l3) = l1."
    assert priority(long) < base


def test_goal_queue_pops_highest_first_and_fifo_among_equals() -> None:
    queue: GoalQueue[str] = GoalQueue()
    queue.push("low", 1.0)
    queue.push("high-1", 5.0)
    queue.push("high-2", 5.0)
    assert [queue.pop(), queue.pop(), queue.pop()] == ["high-1", "high-2", "low"]


def test_goal_queue_prefers_the_workers_file_within_a_margin() -> None:
    queue: GoalQueue[str] = GoalQueue()
    for item, prio in (("A1", 5.0), ("B1", 4.0), ("A2", 4.0), ("B2", 0.5), ("A3", 3.0)):
        queue.push(item, prio)

    def at_b(item: str) -> float | None:
        return 0.0 if item.startswith("B") else None

    assert queue.pop(at_b, margin=2.0) == "B1"  # 4.0 is within 2 of 5.0
    assert queue.pop(at_b, margin=2.0) == "A1"  # B2 (0.5) is not: the highest goes
    assert queue.pop(at_b, margin=10.0) == "B2"
    assert [queue.pop(), queue.pop()] == ["A2", "A3"]  # the heap is still in order
    assert len(queue) == 0


def test_goal_queue_takes_the_next_goal_down_the_file_within_the_margin() -> None:
    """The worker ranks its file's goals by how far past its last goal they are: the
    next one down the file goes first, then the ones above it (wrapping around)."""
    queue: GoalQueue[tuple[str, int]] = GoalQueue()
    for item, prio in ((("F", 50), 5.0), (("F", 10), 4.5), (("F", 30), 4.0), (("G", 5), 4.8)):
        queue.push(item, prio)
    last = 20

    def ahead(item: tuple[str, int]) -> float | None:
        return None if item[0] != "F" else float((item[1] - last) % 1000)

    assert queue.pop(ahead, margin=2.0) == ("F", 30)
    last = 30
    assert queue.pop(ahead, margin=2.0) == ("F", 50)
    last = 50
    assert queue.pop(ahead, margin=2.0) == ("F", 10)  # round again from the top
    assert queue.pop(ahead, margin=2.0) == ("G", 5)


def test_dependents_count_whole_identifiers_only() -> None:
    from proof_orchestrator.scheduler.queue import Mentions

    later = "Lemma b : a = a. Proof. apply a. Qed. Lemma c : ab = 1. rewrite a_b. exact L.a."
    assert Mentions(later).after("a") == 3
    assert Mentions(later).after("ab") == 1


def test_ray_routing_keeps_a_file_warm_and_gives_idle_nodes_work() -> None:
    """Three nodes, two files: the third node takes a file when the warm one is busy."""
    from proof_orchestrator.config import Settings
    from proof_orchestrator.run.executors import RayExecutor, _Actor
    from proof_orchestrator.run.reports import FillOptions

    executor = RayExecutor(FillOptions(orch=Settings()))
    executor.actors = [_Actor(handle=None, node_id=n) for n in ("a", "b", "c")]
    first = executor._pick("List.v")
    first.busy += 1
    second = executor._pick("Option.v")
    second.busy += 1
    assert second is not first  # an idle node is taken before a busy one
    third = executor._pick("List.v")  # List.v's node is busy, the third node is idle
    third.busy += 1
    assert len({id(first), id(second), id(third)}) == 3
    for actor in executor.actors:
        actor.busy = 0
    # once idle again, each file goes back to a node that has it warm
    assert executor._pick("Option.v") is second
    assert executor._pick("List.v") in (first, third)
    # an unreachable node is avoided while another can run the attempt
    first.suspect_until = third.suspect_until = time.monotonic() + 60
    assert executor._pick("List.v") is second


def _bandit_with(record: dict[str, tuple[int, int]]) -> Bandit:
    """A bandit that saw each strategy fail or win so many times, over two goal classes."""
    bandit = Bandit("thompson", random.Random(0))
    for name, (fails, wins) in record.items():
        for i in range(fails + wins):
            klass = "eq/nat" if i % 2 else "logic"
            bandit.update(klass, name, success=i < wins, cpu_seconds=1.0)
    return bandit


def test_a_strategy_that_never_won_after_twenty_attempts_only_explores() -> None:
    from proof_orchestrator.scheduler.budget import GoalBudget
    from proof_orchestrator.scheduler.shares import EXPLORE_RATE, PlanCounts, plan_pass

    names = ["micro", "search", "hammer"]
    heavy = {"micro": False, "search": True, "hammer": True}
    floors = {"search": 0.0, "hammer": 6.5}
    # 19 attempts with no win: not enough evidence, hammer keeps its prior (every goal)
    young = _bandit_with({"micro": (30, 5), "search": (20, 6), "hammer": (19, 0)})
    rng = random.Random(1)
    assert all(
        "hammer" in plan_pass(young, "logic", names, heavy, floors, rng).names for _ in range(50)
    )
    # 19 ended and one more planned by a pass still running: that is the 20th (at
    # 160 CPU s per goal, passes that started before the 20th ended planned it in full)
    running = {"hammer": 1}
    assert any(
        "hammer" not in plan_pass(young, "logic", names, heavy, floors, rng, running).names
        for _ in range(50)
    )
    # 20 attempts, no win: hammer runs on a seeded tenth of the goals, with its floor
    bandit = _bandit_with({"micro": (30, 5), "search": (20, 6), "hammer": (20, 0)})
    counts = PlanCounts()
    used = {"micro": 0.0, "search": 0.0, "hammer": 0.0}
    for _ in range(2000):
        plan = plan_pass(bandit, "logic", names, heavy, floors, rng)
        counts.count(plan)
        assert plan.names[:2] == ["micro", "search"]
        account = GoalBudget(10.0, {n: heavy[n] for n in plan.names}, plan.shares, plan.floors)
        for name in plan.names:  # every strategy uses all it is granted: the worst case
            granted = account.grant(name)
            account.settle(granted, granted)
            used[name] += granted
    hammer = counts.as_dict()["hammer"]
    assert hammer["planned"] == hammer["explored"]
    assert abs(hammer["planned"] / 2000 - EXPLORE_RATE) < 0.03
    assert hammer["planned"] + hammer["rested"] == 2000
    assert used["hammer"] / sum(used.values()) < 0.15
    # the same draws for the same seed
    again = [
        plan_pass(bandit, "logic", names, heavy, floors, random.Random(5)).names for _ in range(3)
    ]
    assert again == [
        plan_pass(bandit, "logic", names, heavy, floors, random.Random(5)).names for _ in range(3)
    ]
    # one win puts it back on every goal
    bandit.update("eq/nat", "hammer", success=True, cpu_seconds=5.0)
    assert all(
        "hammer" in plan_pass(bandit, "logic", names, heavy, floors, rng).names for _ in range(50)
    )


def test_when_every_strategy_rests_the_best_rated_one_still_runs() -> None:
    from proof_orchestrator.scheduler.shares import plan_pass

    bandit = _bandit_with({"micro": (25, 0), "search": (40, 0)})
    bandit.update("logic", "search", success=False, cpu_seconds=1.0)
    rng = random.Random(3)
    for _ in range(100):
        plan = plan_pass(bandit, "logic", ["micro", "search"], {"search": True}, {}, rng)
        assert plan.names  # never an empty pass
        assert set(plan.names) | plan.resting == {"micro", "search"}


def test_a_cheap_strategy_that_wins_more_than_the_expensive_ones_gets_a_larger_grant() -> None:
    from proof_orchestrator.scheduler.budget import CHEAP_SHARE, MAX_BOOST, GoalBudget
    from proof_orchestrator.scheduler.shares import plan_pass

    names = ["micro", "rewrite", "search", "hammer"]
    heavy = {"micro": False, "rewrite": False, "search": True, "hammer": True}
    rng = random.Random(2)
    # no evidence yet: every cheap strategy has the cheap share
    fresh = plan_pass(Bandit("thompson", random.Random(0)), "logic", names, heavy, {}, rng)
    assert fresh.boosts == {}
    # rewrite won 6 of 10, search 2 of 10, hammer none, micro 1 of 10
    bandit = _bandit_with({"micro": (9, 1), "rewrite": (4, 6), "search": (8, 2), "hammer": (10, 0)})
    plan = plan_pass(bandit, "logic", names, heavy, {}, rng)
    assert "micro" not in plan.boosts  # no better than search: the cheap share
    assert plan.boosts["rewrite"] == pytest.approx((7 / 12) / (3 / 12))
    account = GoalBudget(10.0, heavy, plan.shares, plan.floors, plan.boosts)
    assert account.grant("micro") == pytest.approx(CHEAP_SHARE * 10.0)
    assert account.grant("rewrite") == pytest.approx(CHEAP_SHARE * 10.0 * 7 / 3)
    # a boost is capped
    capped = GoalBudget(10.0, heavy, boosts={"rewrite": 50.0})
    assert capped.grant("rewrite") == pytest.approx(CHEAP_SHARE * MAX_BOOST * 10.0)
