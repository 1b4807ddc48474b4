"""The CPU governor: keep the orchestrator's process tree near a CPU target.

Every ``interval`` seconds it measures the CPU time used by this process and
all its descendants (psutil, not the load average) and turns it into a
fraction of the whole machine: ``cpu seconds / (wall seconds * cores)``. The
fraction is smoothed with an exponential moving average. A limit on the
number of sessions that run at once follows it:

* smoothed fraction above ``target + band``: one slot fewer (at least 1);
* below ``target - band`` while every slot is busy: one slot more (up to the
  maximum);
* the rest of the machine busy with other work (its share above
  ``1 - target``): back off to a single slot;
* provers' resident memory above the memory budget: one slot fewer.

Sessions call :meth:`CpuGovernor.slot` around their work. Every sample is kept
in :attr:`CpuGovernor.trace` for benchmark results.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import psutil

__all__ = ["CpuGovernor", "CpuSample", "trace_summary"]


@dataclass(frozen=True, slots=True)
class CpuSample:
    #: seconds since the governor started
    t: float
    #: fraction of the machine used by our process tree over the last interval
    fraction: float
    #: the smoothed fraction
    smoothed: float
    #: fraction used by everything else on the machine
    others: float
    #: sessions allowed at once after this sample
    limit: int
    #: sessions running at that moment
    active: int
    #: resident memory of our process tree, MiB
    rss_mb: float


def _tree(root: psutil.Process) -> list[psutil.Process]:
    try:
        return [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


@dataclass(slots=True)
class _TreeClock:
    """Cumulative CPU of a process tree, counting processes that already exited."""

    root: psutil.Process
    seen: dict[int, float] = field(default_factory=dict)
    finished: float = 0.0

    def total(self) -> tuple[float, float]:
        alive: dict[int, float] = {}
        rss = 0.0
        for proc in _tree(self.root):
            with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
                times = proc.cpu_times()
                alive[proc.pid] = times.user + times.system
                rss += proc.memory_info().rss
        for pid, seconds in self.seen.items():
            if pid not in alive:
                self.finished += seconds  # its last reading before it exited
        self.seen = alive
        return self.finished + sum(alive.values()), rss / 1024**2


class CpuGovernor:
    """Measures our CPU share and limits how many sessions run at once."""

    def __init__(
        self,
        target: float,
        max_slots: int,
        *,
        interval: float = 1.0,
        smoothing: float = 0.3,
        band: float = 0.05,
        memory_budget_mb: float = 8192,
        cpus: int | None = None,
        pid: int | None = None,
    ) -> None:
        self.target = target
        self.max_slots = max_slots
        self.interval = interval
        self.smoothing = smoothing
        self.band = band
        self.memory_budget_mb = memory_budget_mb
        self.cpus = cpus or os.cpu_count() or 1
        self._clock = _TreeClock(psutil.Process(pid or os.getpid()))
        self.limit = 1
        self.active = 0
        self.smoothed: float | None = None
        self.trace: list[CpuSample] = []
        self._changed = asyncio.Condition()
        self._started = time.monotonic()
        self._last_cpu, _ = self._clock.total()
        self._last_wall = self._started
        psutil.cpu_percent(None)  # prime the system-wide counter

    # -- slots ----------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Hold one of the allowed session slots while the block runs."""
        async with self._changed:
            await self._changed.wait_for(lambda: self.active < self.limit)
            self.active += 1
        try:
            yield
        finally:
            async with self._changed:
                self.active -= 1
                self._changed.notify_all()

    # -- measuring ------------------------------------------------------------

    def sample(self) -> CpuSample:
        """Take one measurement and adjust the limit."""
        now = time.monotonic()
        cpu, rss_mb = self._clock.total()
        wall = max(now - self._last_wall, 1e-6)
        fraction = max(cpu - self._last_cpu, 0.0) / (wall * self.cpus)
        self._last_cpu, self._last_wall = cpu, now
        machine = psutil.cpu_percent(None) / 100.0
        others = max(machine - fraction, 0.0)
        if self.smoothed is None:
            self.smoothed = fraction
        else:
            self.smoothed = self.smoothing * fraction + (1 - self.smoothing) * self.smoothed
        self._adjust(self.smoothed, others, rss_mb)
        sample = CpuSample(
            now - self._started,
            round(fraction, 4),
            round(self.smoothed, 4),
            round(others, 4),
            self.limit,
            self.active,
            round(rss_mb, 1),
        )
        self.trace.append(sample)
        return sample

    def _adjust(self, smoothed: float, others: float, rss_mb: float) -> None:
        limit = self.limit
        if others > 1 - self.target + self.band:
            limit = 1
        elif rss_mb > self.memory_budget_mb or smoothed > self.target + self.band:
            limit -= 1
        elif smoothed < self.target - self.band and self.active >= self.limit:
            limit += 1
        self.limit = max(1, min(self.max_slots, limit))

    async def run(self) -> None:
        """Sample forever (cancel to stop), waking waiting sessions when the limit grows."""
        while True:
            await asyncio.sleep(self.interval)
            before = self.limit
            self.sample()
            if self.limit != before:
                async with self._changed:
                    self._changed.notify_all()


def trace_summary(trace: list[CpuSample], skip_first: float = 0.0) -> dict[str, float]:
    """Mean, p10 and p90 of the measured fraction (after ``skip_first`` seconds)."""
    values = sorted(s.fraction for s in trace if s.t >= skip_first)
    if not values:
        return {"samples": 0, "mean": 0.0, "p10": 0.0, "p90": 0.0}

    def pct(p: float) -> float:
        return values[min(len(values) - 1, int(p * len(values)))]

    return {
        "samples": len(values),
        "mean": round(sum(values) / len(values), 4),
        "p10": round(pct(0.10), 4),
        "p90": round(pct(0.90), 4),
    }
