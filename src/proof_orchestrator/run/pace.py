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
* the rate is the CPU the passes spent (those that ended, and what the ones
  running have used so far) over the recent past: the last third of the
  search, at least a minute. A machine that other work loads, or stops
  loading, changes the rate; the build before the search is not counted.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["PaceModel"]


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
    #: (time, CPU spent so far) at each estimate: the recent rate
    curve: deque[tuple[float, float]] = field(default_factory=lambda: deque(maxlen=4096))

    def pass_started(self) -> None:
        if self.started is None:
            self.started = self.clock()

    def pass_ended(self, *, revisit: bool, cpu_seconds: float, requeued: bool) -> None:
        """A pass ended: a goal's first one or a revisit; ``requeued``: it comes back."""
        cpu = max(0.0, cpu_seconds)
        if revisit:
            self.revisits += 1
            self.revisit_cpu += cpu
            self.revisits_waiting = max(0, self.revisits_waiting - 1)
        else:
            self.first_passes += 1
            self.first_cpu += cpu
            if requeued:
                self.first_timeouts += 1
                self.timeout_cpu += cpu
        if requeued:
            self.revisits_waiting += 1

    def eta_seconds(self, goals: int, in_flight_cpu: float = 0.0) -> float | None:
        """Seconds left for a run of ``goals`` goals (None until a first pass has ended).

        ``in_flight_cpu``: what the passes running now have used so far.
        """
        if self.started is None or not self.first_passes:
            return None
        now = self.clock()
        spent = self.first_cpu + self.revisit_cpu + max(0.0, in_flight_cpu)
        self.curve.append((now, spent))
        rate = self._rate(now, spent)
        if rate is None:
            return None
        first_left = max(0, goals - self.first_passes)
        first_mean = self.first_cpu / self.first_passes
        timeout_rate = self.first_timeouts / self.first_passes
        if self.revisits:
            revisit_mean = self.revisit_cpu / self.revisits
        elif self.first_timeouts:
            revisit_mean = 2 * self.timeout_cpu / self.first_timeouts
        else:
            revisit_mean = 2 * first_mean
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
