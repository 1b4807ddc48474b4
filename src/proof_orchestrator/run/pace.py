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
* the rate is the CPU the passes that ended used, over the time since the
  search started (the build before it is not counted).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

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

    def eta_seconds(self, goals: int) -> float | None:
        """Seconds left for a run of ``goals`` goals (None until a first pass has ended)."""
        if self.started is None or not self.first_passes:
            return None
        spent = self.first_cpu + self.revisit_cpu
        elapsed = self.clock() - self.started
        if spent <= 0 or elapsed <= 0:
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
        return round(left / (spent / elapsed), 1)
