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

**Repairs** (unless ``repair=False``, ``orch bg --no-repair``): a cycle first
runs ``orch repair``'s detection and repair (:func:`..workflows.repair.repair_files`,
with the same governor, budget and ledger records) on the files that need
it, then fills. A file needs it when the user edited it or a file it imports
(a renamed lemma breaks the proofs that use it), when the fill refused it
because it does not compile before its first hole, or when a file it
imports could not be built (the file that failed is repaired). A file's text
is repaired once: the same text, unchanged since its last repair pass, is not
tried again until it or a file it imports changes.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import watchfiles

from ..backends import SOURCE_SUFFIXES, project_builders
from ..errors import LedgerError, OrchError
from ..ledger import Ledger
from ..project.statedir import in_state_dir
from ..provers.build import ProjectModel
from ..provers.tasks import task_group
from ..run.pipeline import FileStatus, FillOptions, FillReport, collect_files, fill
from ..run.refusals import Refusals
from ..scheduler.governor import CpuGovernor
from .repair import RepairReport, repair_files

__all__ = ["BackgroundReport", "run_background"]


#: seconds bg waits after the ledger could not be written, doubled each time in a row...
LEDGER_PAUSE = 5.0
#: ... up to this
LEDGER_PAUSE_MAX = 120.0


@dataclass(slots=True)
class BackgroundReport:
    cycles: int = 0
    proved: int = 0
    #: cycles cancelled because the user changed a file
    restarts: int = 0
    #: broken proofs found, and those repaired (written)
    broken: int = 0
    repaired: int = 0
    #: cycles that ended because the ledger could not be written (disk full, database
    #: down); bg waited and went on
    ledger_errors: int = 0
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


async def _watch(
    paths: Sequence[Path],
    own: _OwnWrites,
    found: asyncio.Queue[set[Path]],
    stop: asyncio.Event,
) -> None:
    """Until ``stop`` is set: put every batch of user changes to source files on ``found``."""
    roots = [p if p.is_dir() else p.parent for p in paths]
    suffixes = tuple(SOURCE_SUFFIXES)
    async for changes in watchfiles.awatch(
        *roots,
        # not .orch/: verification compiles copies of the files in scratch folders there
        watch_filter=lambda _change, name: name.endswith(suffixes) and not in_state_dir(name),
        debounce=300,
        rust_timeout=500,
        stop_event=stop,
    ):
        theirs = {p for p in (Path(name) for _, name in changes) if not own.is_ours(p)}
        if theirs:
            found.put_nowait(theirs)


class _Repairs:
    """Which files need detection and repair, and the text each had when last repaired."""

    def __init__(self, build: str) -> None:
        self.build = build
        self.pending: set[Path] = set()
        #: per file, the digest of its text after its last repair pass
        self.tried: dict[Path, str] = {}

    def _models(self, paths: Sequence[Path]) -> list[ProjectModel]:
        models: dict[Path, ProjectModel] = {}
        for path in paths:
            try:
                for builder in project_builders(path, self.build):
                    model = builder.model()
                    models.setdefault(model.root, model)
            except (OrchError, OSError):
                continue  # the file alone, then
        return list(models.values())

    def edited(self, paths: Sequence[Path]) -> None:
        """The user changed ``paths``: they and the project files that import them need a pass."""
        changed = {p.resolve() for p in paths if p.suffix in SOURCE_SUFFIXES}
        wanted = set(changed)
        for model in self._models(sorted(changed)):
            for file in model.files:  # in dependency order: a dependent after its imports
                if set(file.deps) & wanted:
                    wanted.add(file.path)
        for path in wanted:
            self.tried.pop(path, None)
        self.pending |= wanted

    def after_fill(self, report: FillReport) -> None:
        """Files the fill refused (not compiling before a hole), and the imports of files
        it could not build, need a pass unless their text had one."""
        refused = [
            f.path.resolve() for f in report.files if f.status is FileStatus.DOES_NOT_COMPILE
        ]
        blocked = [f.path for f in report.files if f.status is FileStatus.NOT_BUILT]
        needed = [f.path for model in self._models(blocked) for f in model.needed_by(blocked)]
        for path in [*refused, *needed]:
            if path.suffix in SOURCE_SUFFIXES and self.tried.get(path) != _text_digest(path):
                self.pending.add(path)

    def take(self) -> list[Path]:
        return sorted(p for p in self.pending if p.exists())

    def done(self, paths: Sequence[Path]) -> None:
        for path in paths:
            self.pending.discard(path)
            self.tried[path] = _text_digest(path)


def _text_digest(path: Path) -> str:
    try:
        return _digest(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return ""


async def _cycle_or_change(
    cycle: Callable[[], Coroutine[Any, Any, FillReport]] | None,
    changes: asyncio.Queue[set[Path]],
    timeout: float | None,
    number: int,
) -> tuple[FillReport | None, set[Path] | None]:
    """Run ``cycle`` (when there is one) until it ends, a change arrives or ``timeout``
    passes, whichever comes first: (its report or None, the change or None). A task group
    owns both; what did not end is cancelled, and none outlives the call."""
    async with task_group() as race:
        change = race.create_task(changes.get(), name="bg-next-change")
        running: asyncio.Task[FillReport] | None = (
            race.create_task(cycle(), name=f"bg-cycle-{number}") if cycle else None
        )
        waiting: set[asyncio.Task[Any]] = {change} if running is None else {change, running}
        done, _ = await asyncio.wait(waiting, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        for task in waiting - done:
            task.cancel()
    fill_report = running.result() if running is not None and running in done else None
    return fill_report, change.result() if change in done else None


async def run_background(
    paths: Sequence[Path],
    ledger: Ledger,
    options: FillOptions,
    *,
    duration: float | None = None,
    on_cycle: Callable[[int, FillReport | None, str], None] | None = None,
    repair: bool = True,
    on_repair: Callable[[RepairReport], None] | None = None,
) -> BackgroundReport:
    """Work on ``paths`` until ``duration`` seconds have passed (or forever, until cancelled).

    With ``repair``, each cycle first repairs the broken proofs of the files that
    need it (see the module's docstring); ``on_repair`` sees each such pass."""
    collect_files(paths)  # fail early on a bad path
    started = time.monotonic()
    deadline = started + duration if duration is not None else None
    sessions = options.orch.max_light + options.orch.max_heavy
    governor = CpuGovernor.for_settings(options.orch, sessions)
    own = _OwnWrites()
    report = BackgroundReport()
    changes: asyncio.Queue[set[Path]] = asyncio.Queue()
    repairs = _Repairs(options.orch.build)
    #: what the whole-file check refused, for every cycle (a refusal is not searched again)
    refusals = Refusals()

    async def one_cycle() -> FillReport:
        todo = repairs.take() if repair else []
        if todo:
            repaired = await repair_files(
                todo, ledger, options, governor=governor, on_write=own.record
            )
            repairs.done(todo)
            report.broken += len(repaired.broken)
            report.repaired += sum(1 for b in repaired.broken if b.repaired)
            if on_repair is not None:
                on_repair(repaired)
        return await fill(
            paths, ledger, options, governor=governor, on_write=own.record, refusals=refusals
        )

    searching = True
    in_a_row = 0  # cycles in a row that the ledger stopped
    stop_watching = asyncio.Event()
    async with task_group() as group:
        group.create_task(_watch(paths, own, changes, stop_watching), name="bg-watch")
        try:
            while deadline is None or time.monotonic() < deadline:
                remaining = None if deadline is None else max(deadline - time.monotonic(), 0.0)
                try:
                    fill_report, changed = await _cycle_or_change(
                        one_cycle if searching else None, changes, remaining, report.cycles + 1
                    )
                except LedgerError as exc:
                    # the disk is full or the database is down: nothing was written that
                    # the ledger does not hold; wait (or for an edit) and go on
                    report.ledger_errors += 1
                    in_a_row += 1
                    pause = min(LEDGER_PAUSE * 2 ** (in_a_row - 1), LEDGER_PAUSE_MAX)
                    if on_cycle:
                        on_cycle(report.cycles, None, f"{exc}; trying again in {pause:.0f} s")
                    wait = pause if remaining is None else min(pause, remaining)
                    _, changed = await _cycle_or_change(None, changes, wait, report.cycles + 1)
                    if changed is not None:
                        changes.put_nowait(changed)
                    searching = True
                    continue
                if fill_report is not None:
                    in_a_row = 0
                    report.cycles += 1
                    report.proved += fill_report.proved
                    if repair:
                        repairs.after_fill(fill_report)
                    # keep going while this cycle still searched something (or has files
                    # to repair)
                    searching = any(g.tactics_tried > 0 for g in fill_report.goals) or bool(
                        repair and repairs.take()
                    )
                    if on_cycle:
                        on_cycle(
                            report.cycles,
                            fill_report,
                            "revisiting" if searching else "waiting for changes",
                        )
                    if changed is not None:
                        changes.put_nowait(changed)  # arrived as the cycle ended: keep it
                elif changed is not None:
                    repairs.edited(sorted(changed))
                    report.restarts += 1
                    searching = True
                    if on_cycle:
                        names = ", ".join(sorted(p.name for p in changed))
                        on_cycle(
                            report.cycles, None, f"changed by the user: {names}; starting over"
                        )
        finally:
            stop_watching.set()
    report.wall_seconds = time.monotonic() - started
    report.governor_trace = [s.fraction for s in governor.trace]
    return report
