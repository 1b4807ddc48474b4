"""The ETA's model (run/pace.py) on simulated runs: pure arithmetic, a fake clock."""

from __future__ import annotations

import random
import statistics

from proof_orchestrator.run.pace import PaceModel, restricted_mean


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _simulate(seed: int, easy: int, hard: int, build: float) -> list[tuple[int, float, float]]:
    """One worker at one CPU second per second: easy goals take 0.3 s, hard ones time
    out at 10 s and come back once at 20 s after every first pass. Returns, at each
    goal done, (goals done, the model's ETA, the true time left)."""
    rng = random.Random(seed)
    goals = ["easy"] * easy + ["hard"] * hard
    rng.shuffle(goals)
    clock = Clock()
    clock.now += build  # the build before the search is not the search's pace
    pace = PaceModel(clock=clock)
    total = len(goals)
    done = 0
    estimates: list[tuple[int, float | None]] = []
    revisits = []
    for kind in goals:
        pace.pass_started()
        cost = 0.3 if kind == "easy" else 10.0
        clock.now += cost
        pace.pass_ended(revisit=False, cpu_seconds=cost, requeued=kind == "hard")
        if kind == "hard":
            revisits.append(kind)
        else:
            done += 1
            estimates.append((done, clock.now, pace.eta_seconds(total)))  # type: ignore[arg-type]
    for _ in revisits:
        pace.pass_started()
        clock.now += 20.0
        pace.pass_ended(revisit=True, cpu_seconds=20.0, requeued=False)
        done += 1
        estimates.append((done, clock.now, pace.eta_seconds(total)))  # type: ignore[arg-type]
    end = clock.now
    return [(d, eta, end - t) for d, t, eta in estimates]  # type: ignore[misc]


def test_the_eta_is_within_a_factor_of_one_and_a_half_after_a_fifth_of_the_goals() -> None:
    """On 20 shuffled runs, at 20, 50 and 80 % of the goals: nine estimates in ten are
    within 1.5x of the time really left (an early sample can hold few hard goals)."""
    ratios = []
    for seed in range(20):
        points = _simulate(seed, easy=60, hard=40, build=120.0)
        for fraction in (0.2, 0.5, 0.8):
            _, eta, truth = next(p for p in points if p[0] >= fraction * 100)
            assert eta is not None
            ratios.append(eta / truth)
    within = [r for r in ratios if 1 / 1.5 <= r <= 1.5]
    assert len(within) >= 0.9 * len(ratios), sorted(ratios)
    assert all(1 / 2 <= r <= 2 for r in ratios), sorted(ratios)


def test_goals_per_second_would_be_far_off_on_the_same_runs() -> None:
    """The estimate the board used before (elapsed / goals done x goals left) misses by
    more than 1.5x at a fifth of the goals: easy goals end first, hard ones come back."""
    points = _simulate(0, easy=60, hard=40, build=120.0)
    done, _, truth = next(p for p in points if p[0] >= 20)
    # goals finish in order; by then the clock has run the build plus the passes so far
    elapsed = sum(0.3 for _ in range(done)) + 120.0
    naive = elapsed / done * (100 - done)
    assert not truth / 1.5 <= naive <= truth * 1.5


def test_no_estimate_before_the_first_pass_and_none_left_at_the_end() -> None:
    clock = Clock()
    pace = PaceModel(clock=clock)
    assert pace.eta_seconds(10) is None
    pace.pass_started()
    clock.now += 2.0
    pace.pass_ended(revisit=False, cpu_seconds=2.0, requeued=False)
    assert pace.eta_seconds(10) == 18.0  # nine more goals at 2 CPU s each, 1 CPU s per s
    assert pace.eta_seconds(1) == 0.0


def test_the_rate_follows_the_machine_when_other_work_slows_the_run_down() -> None:
    """100 goals of 1 CPU s each; after the 50th, other work leaves the run a quarter of
    the CPU it had. At 80 % of the goals the estimate uses the recent rate: the rate
    since the start would say 42 s where 80 s are left."""
    clock = Clock()
    pace = PaceModel(clock=clock)
    pace.pass_started()
    estimate = None
    for goal in range(80):
        clock.now += 1.0 if goal < 50 else 4.0
        pace.pass_ended(revisit=False, cpu_seconds=1.0, requeued=False)
        estimate = pace.eta_seconds(100)
    assert estimate is not None
    truth = 20 * 4.0
    assert truth / 1.5 <= estimate <= truth * 1.5, estimate


def test_what_running_passes_used_counts_as_spent_and_as_done() -> None:
    clock = Clock()
    pace = PaceModel(clock=clock)
    pace.pass_started()
    clock.now += 10.0
    pace.pass_ended(revisit=False, cpu_seconds=5.0, requeued=False)
    # 5 CPU s in 10 s, and a running pass has used 5 more: 1 CPU s per s, not 0.5
    assert pace.eta_seconds(3, in_flight_cpu=5.0) == 5.0  # 2 x 5 s left, 5 of them spent


def _simulate_parallel(
    seed: int, easy: int, hard: int, *, track_running: bool
) -> list[tuple[int, float | None, float]]:
    """Two workers at one CPU second per second each, no revisits (the budget is the
    cap): easy goals end at 3 s, hard ones run their whole 160 s. Returns, at each goal
    done, (goals done, the model's ETA, the true time left)."""
    rng = random.Random(seed)
    goals = [3.0] * easy + [160.0] * hard
    rng.shuffle(goals)
    clock = Clock()
    pace = PaceModel(clock=clock)
    total = len(goals)
    # (end time, start time, cost, token) of the passes running
    running: list[tuple[float, float, float, int]] = []
    queue = list(goals)
    done = 0
    estimates: list[tuple[int, float, float | None]] = []

    def start() -> None:
        cost = queue.pop(0)
        begun = clock.now
        token = pace.pass_started(
            used=(lambda: clock.now - begun) if track_running else None, cap=160.0
        )
        running.append((clock.now + cost, clock.now, cost, token))

    while queue and len(running) < 2:
        start()
    while running:
        running.sort()
        end, _, cost, token = running.pop(0)
        clock.now = end
        pace.pass_ended(revisit=False, cpu_seconds=cost, requeued=False, token=token)
        done += 1
        in_flight = sum(clock.now - begun for _, begun, _, _ in running)
        if queue:
            start()
        estimates.append((done, clock.now, pace.eta_seconds(total, in_flight)))
    finish = clock.now
    return [(d, eta, finish - t) for d, t, eta in estimates]


def test_running_passes_count_so_that_long_budgets_are_not_underestimated() -> None:
    """At 160 CPU s per goal the quick goals end first while the hard ones run: a mean
    over the passes that ended alone said a third of the time left on extructures.
    With the running passes counted as cut-off observations, the median estimate at
    20, 50 and 80 % of the goals (20 shuffled runs each) is within 1.5x of the truth
    on two mixes; without them, one is not (0.07x at 20 % on one; before the estimate
    also followed the latest passes, three were not)."""

    def medians(easy: int, hard: int, track_running: bool) -> list[float]:
        found = []
        for fraction in (0.2, 0.5, 0.8):
            ratios = []
            for seed in range(20):
                points = _simulate_parallel(seed, easy, hard, track_running=track_running)
                _, eta, truth = next(p for p in points if p[0] >= fraction * (easy + hard))
                assert eta is not None
                ratios.append(eta / truth)
            found.append(statistics.median(ratios))
        return found

    for easy, hard in ((20, 10), (24, 6)):
        tracked = medians(easy, hard, True)
        assert all(1 / 1.5 <= m <= 1.5 for m in tracked), (easy, hard, tracked)
    untracked = medians(20, 10, False) + medians(24, 6, False)
    assert min(untracked) < 0.2, untracked


def test_the_restricted_mean_counts_cut_off_passes_up_to_the_budget() -> None:
    # two passes ended at 2 s, two still run at 50 s: half the passes go past 50 s,
    # and with nothing seen beyond, they end at the budget of 100 s
    observations = [(2.0, True), (2.0, True), (50.0, False), (50.0, False)]
    assert restricted_mean(observations, 100.0) == 0.5 * 2.0 + 0.5 * 100.0
    # a pass known to have run 50 s is expected to end at the budget
    assert restricted_mean(observations, 100.0, after=50.0) == 100.0
    # every pass ended: the plain mean
    assert restricted_mean([(1.0, True), (3.0, True)], 100.0) == 2.0


def test_later_goals_are_expected_to_be_like_the_latest_not_like_the_mean() -> None:
    """Goals run easiest first: the first ten of 30 time out (40 CPU s) one time in ten,
    the next ten one in two, the last ten nine in ten. At half and at four fifths of the
    goals the estimate follows the latest passes, so it says more time than the mean of
    all passes would, and is nearer the truth."""
    rng = random.Random(7)
    costs: list[float] = []
    for timeouts in (0.1, 0.5, 0.9):
        costs += [40.0 if rng.random() < timeouts else rng.uniform(0.3, 5) for _ in range(10)]
    clock = Clock()
    pace = PaceModel(clock=clock)
    points = []
    for index, cost in enumerate(costs):
        pace.pass_started()
        clock.now += cost
        pace.pass_ended(revisit=False, cpu_seconds=cost, requeued=False)
        points.append((index + 1, clock.now, pace.eta_seconds(len(costs))))
    end = clock.now
    for done in (15, 24):
        _, now, eta = points[done - 1]
        assert eta is not None
        mean_of_all = statistics.mean(costs[:done]) * (len(costs) - done)
        truth = end - now
        assert mean_of_all < eta <= truth * 1.5, (done, mean_of_all, eta, truth)


def test_a_meter_that_drops_does_not_take_back_the_cpu_a_running_pass_used() -> None:
    """A running pass's meter can drop (a child process reaped, an attempt's CPU moved
    from its slot to its goal's report): the pass keeps the most it was seen to use,
    so the estimate does not jump with no pass ended."""
    clock = Clock()
    pace = PaceModel(clock=clock)
    pace.pass_started()
    clock.now += 10.0
    pace.pass_ended(revisit=False, cpu_seconds=10.0, requeued=False)
    meter = [40.0]
    pace.pass_started(used=lambda: meter[0], cap=100.0)
    clock.now += 40.0
    before = pace.eta_seconds(10)
    meter[0] = 5.0  # the slot went, the CPU not yet in the report
    clock.now += 1.0
    after = pace.eta_seconds(10)
    assert before is not None
    assert after is not None
    assert abs(after - before) < 0.1 * before, (before, after)


def test_goals_not_started_are_like_the_latest_started_passes_running_ones_too() -> None:
    """Goals run easiest first: eight quick passes, then four hard ones that started
    last and still run at 30 CPU s of their 40 while four more quick ones (started
    before them) end. The latest-started half are the hard ones: the goals not
    started are expected to take about their budget, not the quick passes' time (the
    latest-ended half, which the old model followed, said 9 CPU s a goal)."""
    clock = Clock()
    pace = PaceModel(clock=clock)
    for _ in range(8):
        token = pace.pass_started(used=lambda: 0.0, cap=40.0)
        clock.now += 1.0
        pace.pass_ended(revisit=False, cpu_seconds=1.0, requeued=False, token=token)
    quick = [pace.pass_started(used=lambda: 0.0, cap=40.0) for _ in range(4)]
    begun = clock.now
    for _ in range(4):
        pace.pass_started(used=lambda: (clock.now - begun) / 4 * 2, cap=40.0)
    clock.now += 60.0
    for token in quick:
        pace.pass_ended(revisit=False, cpu_seconds=1.0, requeued=False, token=token)
    eta = pace.eta_seconds(24)
    assert eta is not None
    # 8 goals not started at about 20 CPU s each, 4 running with about 10 left, at
    # about 2 CPU s per s
    assert 90 <= eta <= 150, eta
