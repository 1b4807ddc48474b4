"""The live view of a running command: what it does now, published to the ledger.

A :class:`LiveBoard` is kept up to date by the run itself (plain attribute
writes, no I/O): the slots that hold a goal now (goal, file, strategy, budget,
CPU used so far), the goals done, proved and in total. A
:class:`LivePublisher` task turns it, with the queue length and the CPU
governor's target and measured share, into one JSON document and writes it
with :meth:`.ledger.Ledger.publish_live` (one UPSERT) every two seconds
(the dashboard redraws its charts at most that often).
The row is cleared when the run ends; a run that dies leaves a row whose
heartbeat stops, which readers show as dead.

On the Ray executor the driver publishes: its slots are the attempts in
flight on the cluster, whose CPU is only known when they finish.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ..errors import LedgerError
from ..ledger import Ledger
from ..scheduler.governor import CpuGovernor
from .pace import PaceModel

__all__ = [
    "CHECKS_KEPT",
    "LIVE_TRACE_POINTS",
    "PUBLISH_INTERVAL",
    "VERIFY_SLOT",
    "LiveBoard",
    "LivePublisher",
    "LiveSlot",
    "live_trace",
]

log = logging.getLogger(__name__)

#: seconds between two publications of the live state
PUBLISH_INTERVAL = 2.0
#: at most this many samples of the governor's trace are published (the whole run, thinned)
LIVE_TRACE_POINTS = 180


def live_trace(governor: CpuGovernor) -> dict[str, Any] | None:
    """The governor's trace so far, for the dashboard's charts during the run.

    Columns, not rows (a smaller document): ``t`` (seconds since the
    governor started), ``cpu_share`` (measured share of the machine) and
    ``largest_prover_mb`` (the largest prover's resident memory). ``end`` is
    the wall-clock time of the newest sample, to within one sampling
    interval, so a sample's time is ``end - (t[-1] - t)``. A long run is
    thinned to :data:`LIVE_TRACE_POINTS` evenly spaced samples, the newest
    always among them.
    """
    trace = governor.trace
    if not trace:
        return None
    last = len(trace) - 1
    if last < LIVE_TRACE_POINTS:
        picked = trace
    else:
        step = last / (LIVE_TRACE_POINTS - 1)
        picked = [trace[round(j * step)] for j in range(LIVE_TRACE_POINTS)]
    return {
        "end": datetime.now(UTC).isoformat(),
        "t": [round(s.t, 1) for s in picked],
        "cpu_share": [round(s.fraction, 4) for s in picked],
        "largest_prover_mb": [max(s.prover_rss_mb, default=0.0) for s in picked],
    }


#: the strategy name of the slot a file's check runs in
VERIFY_SLOT = "verify"
#: the latest checks whose mean is the last check's expected length
CHECKS_KEPT = 5


@dataclass(slots=True)
class LiveSlot:
    """One piece of work running now."""

    goal: str
    file: str
    strategy: str
    #: the CPU budget it was given, seconds (0 when not budgeted: replays, verification)
    budget_seconds: float
    #: wall-clock start (``time.time()``)
    started_at: float
    #: reads the CPU seconds it used so far (None until its session is open, or on Ray)
    meter: Callable[[], float] | None = None

    def as_dict(self, now: float) -> dict[str, Any]:
        return {
            "goal": self.goal,
            "file": self.file,
            "strategy": self.strategy,
            "budget_seconds": round(self.budget_seconds, 3),
            "cpu_seconds": round(self.meter(), 3) if self.meter is not None else None,
            "started_at": datetime.fromtimestamp(self.started_at, UTC).isoformat(),
            "elapsed_seconds": round(now - self.started_at, 2),
        }


class LiveBoard:
    """What a run does now; updated by the run, read by the publisher."""

    def __init__(self) -> None:
        self.slots: dict[int, LiveSlot] = {}
        self._tokens = itertools.count()
        #: goals found in the run's files, goals finished (proved or given up), proofs verified
        self.total = 0
        self.done = 0
        self.proved = 0
        self._started_at = time.time()
        #: the CPU the goal passes take, for the ETA
        self.pace = PaceModel()
        #: wall seconds of each file's check (recompile and audit) that ended
        self.checks: list[float] = []

    @contextmanager
    def slot(
        self, goal: str, file: str, strategy: str, budget_seconds: float = 0.0
    ) -> Iterator[LiveSlot]:
        """Show a slot while the block runs."""
        token = next(self._tokens)
        entry = LiveSlot(goal, file, strategy, budget_seconds, time.time())
        self.slots[token] = entry
        try:
            yield entry
        finally:
            del self.slots[token]

    def check_ended(self, wall_seconds: float) -> None:
        """A file's check (recompile, audit, write) ended after ``wall_seconds``."""
        self.checks.append(max(0.0, wall_seconds))

    def eta_seconds(self) -> float | None:
        """Seconds left at the pace so far (None before the first pass has ended).

        From the CPU the goal passes take and the rate the run spends it
        (:class:`~.pace.PaceModel`), not from goals per second, plus the last
        file's check: it starts when the last goal ends, and nothing runs beside
        it (on extructures it was the last 28 s of a 794 s run, and the estimate
        said 0.6 of the time left at 80 % of the goals without it). A check is
        taken to last as long as the mean of the latest checks that ended.
        """
        slots = list(self.slots.values())
        recent = self.checks[-CHECKS_KEPT:]
        tail = sum(recent) / len(recent) if recent else 0.0
        if self.total and self.total <= self.done:
            now = time.time()
            checking = [now - s.started_at for s in slots if s.strategy == VERIFY_SLOT]
            return round(max(0.0, tail - min(checking)), 1) if checking else 0.0
        running = sum(s.meter() for s in slots if s.meter is not None)
        left = self.pace.eta_seconds(self.total, running)
        return None if left is None else round(left + tail, 1)

    def snapshot(self, *, queue: int, governor: CpuGovernor | None) -> dict[str, Any]:
        """The JSON document published for this run."""
        now = time.time()
        share: dict[str, Any] = {"target": None, "measured": None, "last": None}
        if governor is not None:
            share = {
                "target": governor.target,
                "measured": round(governor.smoothed, 4) if governor.smoothed is not None else None,
                "last": governor.trace[-1].fraction if governor.trace else None,
                "session_limit": governor.limit,
            }
            share["trace"] = live_trace(governor)
        return {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started_at": datetime.fromtimestamp(self._started_at, UTC).isoformat(),
            "elapsed_seconds": round(now - self._started_at, 1),
            "slots": [s.as_dict(now) for s in list(self.slots.values())],
            "queue": queue,
            "goals": {"total": self.total, "done": self.done, "proved": self.proved},
            "cpu": share,
            "eta_seconds": self.eta_seconds(),
        }


class LivePublisher:
    """Writes a board's state to the ledger every ``interval`` seconds until cancelled.

    It counts what publishing costs (:attr:`cpu_seconds`, the thread CPU of
    building and writing the documents) so that runs can report it.
    """

    def __init__(
        self,
        ledger: Ledger,
        run_id: int,
        board: LiveBoard,
        *,
        queue_length: Callable[[], int],
        governor: CpuGovernor | None = None,
        extra: dict[str, Any] | None = None,
        interval: float = PUBLISH_INTERVAL,
    ) -> None:
        self.ledger = ledger
        self.run_id = run_id
        self.board = board
        self.queue_length = queue_length
        self.governor = governor
        self.extra = extra or {}
        self.interval = interval
        self.publishes = 0
        self.failures = 0
        self.cpu_seconds = 0.0

    def publish(self) -> None:
        """Publish once. A ledger that cannot be written now is logged, never fatal."""
        started = time.thread_time()
        try:
            state = self.board.snapshot(queue=self.queue_length(), governor=self.governor)
            self.ledger.publish_live(self.run_id, {**self.extra, **state})
            self.publishes += 1
        except LedgerError as exc:
            self.failures += 1
            log.warning("live state of run %s not published: %s", self.run_id, exc)
        finally:
            self.cpu_seconds += time.thread_time() - started

    async def run(self) -> None:
        """Publish now and then every ``interval`` seconds, until cancelled."""
        while True:
            self.publish()
            await asyncio.sleep(self.interval)

    def clear(self) -> None:
        """Remove the run's live row (the run ended); a failure is logged."""
        try:
            self.ledger.clear_live(self.run_id)
        except LedgerError as exc:
            log.warning("live state of run %s not cleared: %s", self.run_id, exc)

    def summary(self) -> dict[str, float]:
        return {
            "publishes": self.publishes,
            "failures": self.failures,
            "cpu_seconds": round(self.cpu_seconds, 4),
            "interval_seconds": self.interval,
        }
