"""The time a run has left, from the CPU its goal passes take and the rate it spends CPU.

Goals are not alike: the easy ones end in a fraction of a second and come
first, the hard ones use their whole budget and are then revisited with
twice as much. Counting goals done per second (what a progress bar does)
therefore gets a run's end wrong in both directions. This model counts CPU
instead:

* the CPU still to spend is, for every goal whose first pass has not ended,
  the mean CPU of a first pass so far, plus, for every revisit still to come
  (queued, or expected at the rate first passes have timed out), the mean CPU
  of a revisit (before any revisit ended: twice the mean of the first passes
  that timed out, since a revisit has twice their budget);
* the passes still running count too (:func:`restricted_mean`). The passes
  that end first are the quick ones; a mean over them alone said a third of
  the time left on a run at 160 CPU s per goal, where the hard goals ran the
  whole time. A running pass is an observation cut off at the CPU it has
  used (Kaplan-Meier), what survives past every observation ends at the
  pass's budget, and a running pass is expected to take the mean of the
  passes that lasted longer than it has so far;
* a goal whose first pass has not started is expected to take the larger of that
  mean and the restricted mean of the latest-*started* half of the first passes,
  running ones included (goals run easiest first, so the later ones are harder;
  the latest to *end* are the quick ones, and following them said 0.46 of the
  time left at half the goals of extructures at 40 CPU s per goal). A revisit
  not started is expected the same way from the revisits so far;
* a running pass counts the most its meter was seen to say: a meter that drops
  (a child process reaped, an attempt's CPU moving from its slot to its goal's
  report) would otherwise move the estimate with no pass ended;
* the rate is the CPU the passes spent (those that ended, and what the ones
  running have used so far) over the recent past: the last third of the
  search, at least a minute. A machine that other work loads, or stops
  loading, changes the rate; the build before the search is not counted.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

__all__ = ["RECENT_MIN", "PaceModel", "restricted_mean"]

#: passes of a kind seen before the latest-started half of them can say more than all
RECENT_MIN = 8


def _survival(observations: Sequence[tuple[float, bool]]) -> list[tuple[float, float]]:
    """Kaplan-Meier: ``(t, S(t))`` after each time at which a pass ended.

    ``observations``: ``(CPU seconds, ended)``; a pass not ended is cut off there.
    """
    points: list[tuple[float, float]] = []
    survival = 1.0
    ordered = sorted(observations, key=lambda o: (o[0], not o[1]))
    at_risk = len(ordered)
    index = 0
    while index < len(ordered):
        time_ = ordered[index][0]
        ended = 0
        leaving = 0
        while index < len(ordered) and ordered[index][0] == time_:
            ended += ordered[index][1]
            leaving += 1
            index += 1
        if ended and at_risk:
            survival *= 1 - ended / at_risk
            points.append((time_, survival))
        at_risk -= leaving
    return points


def restricted_mean(
    observations: Sequence[tuple[float, bool]], cap: float, after: float = 0.0
) -> float:
    """The mean CPU of a pass, knowing it lasts longer than ``after`` (0: any pass).

    Passes still running are cut-off observations; the share that survives past
    the last pass that ended is taken to end at ``cap`` (its budget), or at the
    longest observation when that is later.
    """
    if not observations:
        return max(cap, after)
    end = max(cap, after, max(o[0] for o in observations))
    points = _survival(observations)
    # S at ``after``, and the area under S from ``after`` to ``end``
    start_survival = 1.0
    for time_, value in points:
        if time_ <= after:
            start_survival = value
    if start_survival <= 0.0:
        return after  # every pass ended by then: this one is about to
    area = 0.0
    previous_time, previous_value = after, start_survival
    for time_, value in points:
        if time_ <= after:
            continue
        area += previous_value * (min(time_, end) - previous_time)
        previous_time, previous_value = time_, value
    area += previous_value * max(0.0, end - previous_time)
    return after + area / start_survival


@dataclass(slots=True)
class _Running:
    """A pass that has not ended: what it has used so far, and its CPU budget."""

    revisit: bool
    used: Callable[[], float]
    cap: float
    #: the most it was seen to have used: a meter that drops (a child process
    #: reaped, an attempt's CPU moved to its goal's report) does not take CPU back
    seen: float = 0.0

    def read(self) -> float:
        self.seen = max(self.seen, self.used())
        return self.seen


@dataclass(slots=True)
class PaceModel:
    """Counts goal passes as they end; :meth:`eta_seconds` is the time left."""

    clock: Callable[[], float] = time.monotonic
    #: when the first pass started (None: the search has not started)
    started: float | None = None
    first_passes: int = 0
    first_cpu: float = 0.0
    #: first passes that ended with the goal queued for a revisit
    first_timeouts: int = 0
    timeout_cpu: float = 0.0
    revisits: int = 0
    revisit_cpu: float = 0.0
    #: revisits queued and not ended yet
    revisits_waiting: int = 0
    #: the CPU of each first pass that ended
    first_samples: list[float] = field(default_factory=list)
    #: (start order, CPU) of each first pass and each revisit that ended
    first_ended: list[tuple[int, float]] = field(default_factory=list)
    revisit_ended: list[tuple[int, float]] = field(default_factory=list)
    #: the largest budget a first pass, and a revisit, was given
    first_cap: float = 0.0
    revisit_cap: float = 0.0
    #: passes running now, by the token :meth:`pass_started` gave
    running: dict[int, _Running] = field(default_factory=dict)
    _tokens: int = 0
    #: (time, CPU spent so far) at each estimate: the recent rate
    curve: deque[tuple[float, float]] = field(default_factory=lambda: deque(maxlen=4096))

    def pass_started(
        self,
        *,
        revisit: bool = False,
        used: Callable[[], float] | None = None,
        cap: float = 0.0,
    ) -> int:
        """A pass starts; with ``used`` (the CPU it has used so far) and ``cap`` (its
        budget) it counts while it runs. Returns the token to end it with."""
        if self.started is None:
            self.started = self.clock()
        self._tokens += 1
        if revisit:
            self.revisit_cap = max(self.revisit_cap, cap)
        else:
            self.first_cap = max(self.first_cap, cap)
        if used is not None:
            self.running[self._tokens] = _Running(revisit, used, max(0.0, cap))
        return self._tokens

    def pass_ended(
        self, *, revisit: bool, cpu_seconds: float, requeued: bool, token: int | None = None
    ) -> None:
        """A pass ended: a goal's first one or a revisit; ``requeued``: it comes back."""
        if token is not None:
            self.running.pop(token, None)
        order = token if token is not None else self._tokens
        cpu = max(0.0, cpu_seconds)
        if revisit:
            self.revisits += 1
            self.revisit_cpu += cpu
            self.revisits_waiting = max(0, self.revisits_waiting - 1)
            self.revisit_ended.append((order, cpu))
        else:
            self.first_passes += 1
            self.first_cpu += cpu
            self.first_samples.append(cpu)
            self.first_ended.append((order, cpu))
            if requeued:
                self.first_timeouts += 1
                self.timeout_cpu += cpu
        if requeued:
            self.revisits_waiting += 1

    def eta_seconds(self, goals: int, in_flight_cpu: float = 0.0) -> float | None:
        """Seconds left for a run of ``goals`` goals (None until a first pass has ended).

        ``in_flight_cpu``: what the passes running now have used so far (counted
        as spent; when the passes were started with ``used``, they say it).
        """
        if self.started is None or not self.first_passes:
            return None
        now = self.clock()
        running = [(token, r, r.read()) for token, r in self.running.items()]
        if running:
            in_flight_cpu = sum(used for _, _, used in running)
        spent = self.first_cpu + self.revisit_cpu + max(0.0, in_flight_cpu)
        self.curve.append((now, spent))
        rate = self._rate(now, spent)
        if rate is None:
            return None
        first_running = [(t, r, used) for t, r, used in running if not r.revisit]
        revisit_running = [(t, r, used) for t, r, used in running if r.revisit]
        first_seen = [(o, cpu, True) for o, cpu in self.first_ended] + [
            (t, used, False) for t, _, used in first_running
        ]
        cap = self.first_cap or max(cpu for _, cpu in self.first_ended)
        first_mean = _next_mean(first_seen, cap)
        timeout_rate = self.first_timeouts / self.first_passes
        revisit_seen = [(o, cpu, True) for o, cpu in self.revisit_ended] + [
            (t, used, False) for t, _, used in revisit_running
        ]
        revisit_cap = self.revisit_cap or 2 * cap
        if self.revisits or revisit_running:
            revisit_mean = _next_mean(revisit_seen, revisit_cap)
        elif self.first_timeouts:
            revisit_mean = 2 * self.timeout_cpu / self.first_timeouts
        else:
            revisit_mean = 2 * first_mean
        if running:
            # the passes running: each the mean of the passes that lasted longer than it
            # has so far, less what it used; the others as below
            first_left = max(0, goals - self.first_passes - len(first_running))
            first_obs = [(cpu, ended) for _, cpu, ended in first_seen]
            each = [
                restricted_mean(first_obs, max(cap, r.cap), used) - used
                for _, r, used in first_running
            ] + [max(0.0, revisit_mean - used) for _, _, used in revisit_running]
            left_now = sum(each)
            waiting = max(0, self.revisits_waiting - len(revisit_running))
            left = (
                left_now
                + first_left * first_mean
                + (waiting + (first_left + len(first_running)) * timeout_rate) * revisit_mean
            )
            # the end waits for the longest pass, which one core runs (the tail of a
            # run: the other cores have nothing left to take)
            longest = max(each, default=0.0) / min(rate, 1.0)
            return round(max(max(0.0, left) / rate, longest), 1)
        first_left = max(0, goals - self.first_passes)
        left = (
            first_left * first_mean
            + (self.revisits_waiting + first_left * timeout_rate) * revisit_mean
        )
        return round(max(0.0, left - max(0.0, in_flight_cpu)) / rate, 1)

    def _rate(self, now: float, spent: float) -> float | None:
        """CPU seconds spent per second over the recent past (see the module's docstring)."""
        assert self.started is not None
        elapsed = now - self.started
        if spent <= 0 or elapsed <= 0:
            return None
        window = max(60.0, elapsed / 3)
        since = next(((t, c) for t, c in self.curve if t >= now - window), None)
        if since is None or now - since[0] < 30.0 or spent <= since[1]:
            return spent / elapsed
        return (spent - since[1]) / (now - since[0])


def _next_mean(seen: Sequence[tuple[int, float, bool]], cap: float) -> float:
    """The CPU expected of a pass of one kind (first passes, or revisits) not started yet.

    ``seen``: ``(start order, CPU, ended)`` of the passes of that kind so far, the
    running ones cut off at what they used; ``cap``: their budget. The larger of
    the mean of all the passes and that of the latest-started half (once there are
    :data:`RECENT_MIN`), since goals are taken easiest first.
    """
    mean = restricted_mean([(cpu, ended) for _, cpu, ended in seen], cap)
    if len(seen) < RECENT_MIN:
        return mean
    recent = sorted(seen)[-max(RECENT_MIN // 2, len(seen) // 2) :]
    return max(mean, restricted_mean([(cpu, ended) for _, cpu, ended in recent], cap))
