"""The CPU governor: keep the orchestrator's process tree near a CPU target.

Every ``interval`` seconds (0.5) it measures the CPU time used by this
process and every prover it started (``getrusage`` and psutil, not the load
average). Two controls follow from it:

* a **token bucket** refilled at ``target * cores`` core-seconds per second
  and emptied by what the tree used; provers await :meth:`CpuGovernor.gate`
  before every request, so when the tree is ahead of its share, the next
  tactic waits. This keeps the average at the target even on two cores,
  where one session is already about half the machine;
* a **limit on sessions at once**, from the fraction of the machine used
  per second (``cpu seconds / (wall seconds * cores)``) smoothed with an
  exponential moving average:

* the number of sessions the target allows, given the cores one session
  uses (``smoothed * cores / active``): one step toward it per sample, up
  only while every slot is busy and usage is below ``target - band``;
* the rest of the machine busy with other work (its share above
  ``1 - target``): back off to a single slot;
* provers' resident memory above the memory budget: one slot fewer.

A target of 1.0 asks for the whole machine: every slot is open from the
start, nothing is paced, and other work on the machine is not backed off
from (CoqHammer's ATPs, which coqtop does not always reap, would otherwise
read as "other work" and hold the run to one core). The memory budget still
applies.

Sessions call :meth:`CpuGovernor.slot` around their work. Every sample is kept
in :attr:`CpuGovernor.trace` for benchmark results.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import resource
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

import psutil

from ..config import Settings
from ..provers.process import (
    busy_processes,
    descendants_cpu_seconds,
    live_cpu_seconds,
    live_processes,
)
from ..provers.procfs import rss_bytes
from ..provers.tasks import task_group

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
    #: resident memory of each live prover process, MiB
    prover_rss_mb: tuple[float, ...] = ()


_SELF = psutil.Process()


def _tree_cpu() -> float:
    """CPU seconds used so far by this process, every prover it started, and what
    those started in turn (CoqHammer's ATPs).

    This process and its reaped children come from ``getrusage``; live provers
    from one ``/proc`` read each; the live children of provers in a request
    from their own ``/proc`` files (:func:`~..provers.process.descendants_cpu_seconds`).
    """
    own = resource.getrusage(resource.RUSAGE_SELF)
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = own.ru_utime + own.ru_stime + reaped.ru_utime + reaped.ru_stime
    return cpu + live_cpu_seconds() + descendants_cpu_seconds(busy_processes())


def _tree_rss_mb() -> tuple[float, tuple[float, ...]]:
    """RSS of the whole tree and of each live prover, MiB."""
    provers: list[float] = []
    for proc in live_processes():
        rss = rss_bytes(proc)
        if rss is not None:
            provers.append(rss / 1024**2)
    own = rss_bytes(_SELF) or 0
    return own / 1024**2 + sum(provers), tuple(round(p, 1) for p in provers)


class CpuGovernor:
    """Measures our CPU share, limits sessions, and paces prover requests."""

    @classmethod
    def for_settings(cls, settings: Settings, slots: int | None = None) -> CpuGovernor:
        """The governor a command runs under: the settings' CPU target and memory budget,
        ``slots`` prover sessions (default: the light and heavy slots together)."""
        return cls(
            settings.cpu_target,
            slots if slots is not None else settings.max_light + settings.max_heavy,
            memory_budget_mb=settings.memory_budget_mb,
        )

    def __init__(
        self,
        target: float,
        max_slots: int,
        *,
        interval: float = 0.5,
        trace_every: float = 1.0,
        smoothing: float = 0.2,
        band: float = 0.05,
        burst: float = 0.1,
        memory_budget_mb: float = 8192,
        cpus: int | None = None,
    ) -> None:
        self.target = target
        self.max_slots = max_slots
        self.interval = interval
        self.trace_every = trace_every
        self.smoothing = smoothing
        self.band = band
        self.memory_budget_mb = memory_budget_mb
        self.cpus = cpus or os.cpu_count() or 1
        #: core-seconds of CPU that may still be spent now (token bucket)
        self.tokens = burst
        self.burst = burst
        self.rate = target * self.cpus
        #: the whole machine: every slot open, no pacing (see the module's docstring)
        self.whole_machine = target >= 1.0
        self.limit = max_slots if self.whole_machine else 1
        self.active = 0
        self.smoothed: float | None = None
        self.trace: list[CpuSample] = []
        self._changed = asyncio.Condition()
        self._started = time.monotonic()
        self._last_cpu = _tree_cpu()
        #: CPU counted so far: the sum of the rises of :func:`_tree_cpu` (which falls when
        #: an unreaped helper ends: its time drops out of every counter)
        self._counted = 0.0
        self._last_wall = self._started
        self._window_cpu = 0.0
        self._window_wall = self._started
        psutil.cpu_percent(None)  # prime the system-wide counter

    # -- slots and pacing -------------------------------------------------------

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

    async def gate(self) -> None:
        """Wait while the CPU already spent is ahead of the target rate.

        Provers call this before every request, so the average CPU use follows
        the target even when one session alone would use more or less of it.
        """
        if self.tokens >= 0 or self.whole_machine:
            return
        # the bucket refills at `rate`: wait at most until the debt is repaid at the
        # rate of now, but look again every interval. The rate drops to a twentieth
        # while the machine looks busy (CoqHammer's ATPs, which are not metered as
        # ours, for a few seconds): a wait fixed at that rate would hold every
        # request back for ten times the debt after the machine is quiet again.
        deadline = time.monotonic() - self.tokens / self.rate
        while self.tokens < 0:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            await asyncio.sleep(min(left, self.interval))

    # -- measuring ------------------------------------------------------------

    def _measure(self) -> tuple[float, float]:
        """Read the tree's CPU, refill the bucket; returns (now, CPU counted so far)."""
        now = time.monotonic()
        cpu = _tree_cpu()
        used = max(cpu - self._last_cpu, 0.0)
        elapsed = max(now - self._last_wall, 1e-6)
        self._last_cpu, self._last_wall = cpu, now
        self._counted += used
        self.tokens = min(self.burst, self.tokens + self.rate * elapsed - used)
        return now, self._counted

    def tick(self) -> CpuSample | None:
        """Measure and refill; every ``trace_every`` seconds also record a sample."""
        now, cpu = self._measure()
        if now - self._window_wall < self.trace_every:
            return None
        return self._record(now, cpu)

    def sample(self) -> CpuSample:
        """Measure and record a sample now."""
        return self._record(*self._measure())

    def _record(self, now: float, cpu: float) -> CpuSample:
        rss_mb, prover_rss = _tree_rss_mb()
        wall = max(now - self._window_wall, 1e-6)
        fraction = max(cpu - self._window_cpu, 0.0) / (wall * self.cpus)
        self._window_cpu, self._window_wall = cpu, now
        machine = psutil.cpu_percent(None) / 100.0
        others = max(machine - fraction, 0.0)
        if self.smoothed is None:
            self.smoothed = fraction
        else:
            self.smoothed = self.smoothing * fraction + (1 - self.smoothing) * self.smoothed
        self._adjust(self.smoothed, others, rss_mb)
        # leave room for other work on a busy machine
        self.rate = max(min(self.target, 1.0 - others), 0.05) * self.cpus
        sample = CpuSample(
            round(now - self._started, 3),
            round(fraction, 4),
            round(self.smoothed, 4),
            round(others, 4),
            self.limit,
            self.active,
            round(rss_mb, 1),
            prover_rss,
        )
        self.trace.append(sample)
        return sample

    def _adjust(self, smoothed: float, others: float, rss_mb: float) -> None:
        """Move the session limit one step toward what the target allows."""
        limit = self.limit
        if self.whole_machine:
            limit = self.max_slots - (1 if rss_mb > self.memory_budget_mb else 0)
        elif others > 1 - self.target + self.band:
            limit = 1
        elif rss_mb > self.memory_budget_mb:
            limit -= 1
        elif self.active > 0 and smoothed > 0:
            per_session = smoothed * self.cpus / self.active  # cores one session uses
            ideal = int(self.target * self.cpus / max(per_session, 0.05) + 1e-9)
            if ideal > limit and self.active >= limit and smoothed < self.target - self.band:
                limit += 1
            elif ideal < limit:
                limit -= 1
        self.limit = max(1, min(self.max_slots, limit))

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Tick while the block runs: the ticking task belongs to a task group and ends
        with the block (an error of the block comes out as itself)."""
        async with task_group() as group:
            ticking = group.create_task(self.run(), name="cpu-governor")
            try:
                yield
            finally:
                ticking.cancel()

    async def run(self) -> None:
        """Tick forever (cancel to stop), waking waiting sessions when the limit grows."""
        while True:
            await asyncio.sleep(self.interval)
            before = self.limit
            self.tick()
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
