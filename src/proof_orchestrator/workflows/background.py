"""``orch bg``: keep working on a project until told to stop.

Each *cycle* is one fill run over the project. Between cycles:

* if the last cycle still searched (some open goal was below the budget
  cap), the next cycle starts at once. A goal's budget doubles from the
  ledger's record of failures, so stuck goals get more time on each visit and
  are parked for good once they failed at the cap;
* otherwise it waits for the user to change a ``.v`` file (watchfiles).

A change to a file by the user (not a proof this process wrote) cancels the
running cycle. Its attempts are recorded, candidates already found are
replayed in the next cycle, and the project is scanned again, so goals whose
statement changed get new fingerprints and start afresh. One CPU governor
serves every cycle, so the CPU target holds for as long as the process runs.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import watchfiles

from ..ledger import Ledger
from ..project.statedir import in_state_dir
from ..provers.tasks import cancel_and_wait
from ..run.pipeline import FillOptions, FillReport, collect_files, fill
from ..scheduler.governor import CpuGovernor

__all__ = ["BackgroundReport", "run_background"]


@dataclass(slots=True)
class BackgroundReport:
    cycles: int = 0
    proved: int = 0
    #: cycles cancelled because the user changed a file
    restarts: int = 0
    wall_seconds: float = 0.0
    governor_trace: list[float] = field(default_factory=list)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class _OwnWrites:
    """Remembers what this process wrote, to tell the user's edits from our own."""

    def __init__(self) -> None:
        self.digests: dict[Path, str] = {}

    def record(self, path: Path, text: str) -> None:
        self.digests[path.resolve()] = _digest(text)

    def is_ours(self, path: Path) -> bool:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return False  # gone, or not text we wrote
        return self.digests.get(path.resolve()) == _digest(text)


async def _watch(paths: Sequence[Path], own: _OwnWrites, found: asyncio.Queue[set[Path]]) -> None:
    """For the whole run: put every batch of user changes to .v files on ``found``."""
    roots = [p if p.is_dir() else p.parent for p in paths]
    async for changes in watchfiles.awatch(
        *roots,
        # not .orch/: verification compiles copies of the files in scratch folders there
        watch_filter=lambda _change, name: name.endswith(".v") and not in_state_dir(name),
        debounce=300,
        rust_timeout=500,
    ):
        theirs = {p for p in (Path(name) for _, name in changes) if not own.is_ours(p)}
        if theirs:
            found.put_nowait(theirs)


async def run_background(
    paths: Sequence[Path],
    ledger: Ledger,
    options: FillOptions,
    *,
    duration: float | None = None,
    on_cycle: Callable[[int, FillReport | None, str], None] | None = None,
) -> BackgroundReport:
    """Work on ``paths`` until ``duration`` seconds have passed (or forever, until cancelled)."""
    collect_files(paths)  # fail early on a bad path
    started = time.monotonic()
    deadline = started + duration if duration is not None else None
    sessions = options.orch.max_light + options.orch.max_heavy
    governor = CpuGovernor.for_settings(options.orch, sessions)
    own = _OwnWrites()
    report = BackgroundReport()
    changes: asyncio.Queue[set[Path]] = asyncio.Queue()
    watcher = asyncio.create_task(_watch(paths, own, changes), name="bg-watch")
    searching = True
    try:
        while deadline is None or time.monotonic() < deadline:
            remaining = None if deadline is None else max(deadline - time.monotonic(), 0.0)
            change = asyncio.create_task(changes.get(), name="bg-next-change")
            cycle: asyncio.Task[FillReport] | None = None
            if searching:
                cycle = asyncio.create_task(
                    fill(paths, ledger, options, governor=governor, on_write=own.record),
                    name=f"bg-cycle-{report.cycles + 1}",
                )
            handled = False
            waiting: set[asyncio.Task[Any]] = {change}
            if cycle is not None:
                waiting.add(cycle)
            done, _ = await asyncio.wait(
                waiting, timeout=remaining, return_when=asyncio.FIRST_COMPLETED
            )
            if cycle is not None and cycle in done:
                fill_report = cycle.result()
                report.cycles += 1
                report.proved += fill_report.proved
                # keep going while this cycle still searched something
                searching = any(g.tactics_tried > 0 for g in fill_report.goals)
                if on_cycle:
                    on_cycle(
                        report.cycles,
                        fill_report,
                        "revisiting" if searching else "waiting for changes",
                    )
            elif change in done:
                handled = True
                changed = change.result()
                report.restarts += 1
                searching = True
                if on_cycle:
                    names = ", ".join(sorted(p.name for p in changed))
                    on_cycle(report.cycles, None, f"changed by the user: {names}; starting over")
            for task in (change, cycle):
                if task is not None and not task.done():
                    await cancel_and_wait(task)
            if change.done() and not change.cancelled() and not handled:
                changes.put_nowait(change.result())  # arrived as a cycle ended: keep it
    finally:
        await cancel_and_wait(watcher)
    report.wall_seconds = time.monotonic() - started
    report.governor_trace = [s.fraction for s in governor.trace]
    return report
