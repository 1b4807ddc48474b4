"""``orch repair``: find the proofs that an edit or an upgrade broke, and repair them.

For each file, in the project's dependency order:

1. **Find what broke** (the backend's ``repair`` feature): the file is compiled
   with the project's flags; each proof where the prover stops is recorded in
   the ledger as a broken goal (its old script, the failing sentence, the
   error and its kind) and admitted in a *stand-in* text, until the stand-in
   compiles (or an error outside any proof leaves the file stuck).
2. **Repair**: each broken goal goes through the same runner as ``orch fill``'s
   holes (:meth:`~..run.worker.GoalRun.search`: slots, budget, bandit, ledger
   records): first the ``repair`` strategy alone, which starts from the old
   proof, with half the goal's budget; then, if it found nothing, the fill
   lineup with what is left. Sessions open on the stand-in, so what precedes
   the goal loads.
3. **Write like fill**: the candidates are verified together in the stand-in
   (whole-file recompilation and the axiom audit); the accepted ones are
   recorded, then written into the file as it was, through an atomic
   replace, and only if the file still holds that text. A proof that was not
   repaired stays byte for byte as it was, unless ``admit_broken``, which
   writes the stand-in instead (unrepaired proofs admitted, under a comment
   naming the error) so that the files after it can be checked.

The files that import a repaired file are then built from what it became (the
builder's overrides), so that detection goes on in them.

Each file's outcome is kept in :attr:`RepairReport.repaired_files` (the text
the repairs were found for, and the text with them), so that ``orch repair
--git`` (:func:`..workflows.gitops.publish_repairs`) can put them on branches
instead of into the working tree. ``orch bg`` calls :func:`repair_files` on
the files the user edits, with its own governor and ``on_write``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..backends import backend_for
from ..errors import (
    OrchError,
    SourceSyntaxError,
    UnreadableSource,
)
from ..goals import Budget, Goal, GoalStatus, Outcome, RunStatus
from ..ledger import Ledger
from ..project.source import read_source
from ..run.attempts import FileState, GoalItem
from ..run.lineup import build_lineup
from ..run.repairing import verify_and_write_repairs
from ..run.reports import Candidate, FileReport, FileStatus, FillOptions, FillReport, GoalReport
from ..run.toolbox import Toolbox, tool_settings
from ..run.worker import GoalRun
from ..scheduler.governor import CpuGovernor
from ..strategies.base import StrategyDefaults, StrategyResult

__all__ = [
    "REPAIR_SHARE",
    "BrokenGoalReport",
    "FileRepairs",
    "RepairReport",
    "RepairStrategies",
    "repair_files",
]

#: the share of a broken goal's budget that the old proof's repair has first
REPAIR_SHARE = 0.5


class RepairStrategies(StrategyDefaults):
    """The ``repair`` strategy of a run: each broken goal's own (old proof, names),
    looked up by the goal; a goal that is not broken is skipped."""

    name = "repair"
    weight = "light"
    uses_slot = True
    needs_ledger = False

    def __init__(self) -> None:
        self._by_goal: dict[tuple[str, str, int], Any] = {}
        #: the language of the goal added last: each goal is searched right after it is
        #: added, so the runner offers this strategy to that goal (Coq's or Lean's)
        self.language = "coq"

    @staticmethod
    def _key(goal: Goal) -> tuple[str, str, int]:
        return (str(goal.file), goal.qualified_name, goal.line)

    def add(self, goal: Goal, strategy: Any) -> None:
        self._by_goal[self._key(goal)] = strategy
        self.language = goal.language

    async def prove(self, session: Any, goal: Goal, budget: Budget) -> StrategyResult:
        strategy = self._by_goal.get(self._key(goal))
        if strategy is None:
            return StrategyResult(Outcome.SKIPPED, message="not a broken proof")
        result: StrategyResult = await strategy.prove(session, goal, budget)
        return result


@dataclass(slots=True)
class BrokenGoalReport:
    """One broken proof: what broke it and what became of it."""

    file: Path
    name: str
    line: int
    kind: str
    failing: str
    error: str
    old: tuple[str, ...]
    new: tuple[str, ...] = ()
    strategy: str = ""
    #: repaired, verified and (unless a dry run) written
    repaired: bool = False
    cpu_seconds: float = 0.0
    message: str = ""
    #: the goal as the stand-in holds it (its scope names a branch)
    goal: Goal | None = None


@dataclass(slots=True)
class FileRepairs:
    """One file's verified repairs: the text they were found for, and that text with them."""

    path: Path
    #: the file's text when it was read (the repairs were found for it)
    original: str
    #: its broken proofs, repaired or not, in file order
    rows: list[BrokenGoalReport]
    detection: Any
    #: the verified repairs: (broken proof, new sentences)
    repaired: list[tuple[Any, tuple[str, ...]]]
    admit_broken: bool = False

    def text(self, only: Collection[str] | None = None) -> str:
        """:attr:`original` with the repairs (those of the lemmas named in ``only``, or all)
        written in, as ``orch repair`` would write it."""
        chosen = [(b, s) for b, s in self.repaired if only is None or b.hole.goal.name in only]
        feature = backend_for(self.path).repair()
        text: str = feature.written_text(self.original, self.detection, chosen, self.admit_broken)
        return text


@dataclass(slots=True)
class RepairReport:
    broken: list[BrokenGoalReport] = field(default_factory=list)
    files: list[FileReport] = field(default_factory=list)
    #: per file with broken proofs, its verified repairs (for ``--git``)
    repaired_files: list[FileRepairs] = field(default_factory=list)
    prover_version: str = ""
    #: files where an error outside any proof stopped the search for broken proofs
    stuck: dict[str, str] = field(default_factory=dict)
    cpu_seconds: float = 0.0
    wall_seconds: float = 0.0
    run_id: int = 0

    def summary(self) -> dict[str, object]:
        return {
            "broken": len(self.broken),
            "repaired": sum(1 for b in self.broken if b.repaired),
            "stuck": self.stuck,
            "cpu_seconds": round(self.cpu_seconds, 3),
            "wall_seconds": round(self.wall_seconds, 3),
            "by_kind": {
                kind: {
                    "broken": sum(1 for b in self.broken if b.kind == kind),
                    "repaired": sum(1 for b in self.broken if b.kind == kind and b.repaired),
                }
                for kind in sorted({b.kind for b in self.broken})
            },
            "proofs": [
                {
                    "file": str(b.file),
                    "name": b.name,
                    "line": b.line,
                    "kind": b.kind,
                    "failing": b.failing,
                    "error": b.error,
                    "old": " ".join(b.old),
                    "new": " ".join(b.new),
                    "strategy": b.strategy,
                    "repaired": b.repaired,
                    "cpu_seconds": round(b.cpu_seconds, 3),
                    "message": b.message,
                }
                for b in self.broken
            ],
        }


def _in_dependency_order(files: Sequence[Path], toolbox: Toolbox) -> list[Path]:
    """``files`` with each project's in its builder's order (dependencies first)."""
    position: dict[Path, int] = {}
    for path in files:
        builder = toolbox.for_path(path).builder
        if builder is None:
            continue
        try:
            order = [f.path for f in builder.model().files]
        except (OrchError, OSError):
            continue
        for index, source in enumerate(order):
            position.setdefault(source.resolve(), index)
    return sorted(files, key=lambda p: position.get(p.resolve(), len(position)))


async def repair_files(
    files: Sequence[Path],
    ledger: Ledger,
    options: FillOptions,
    *,
    admit_broken: bool = False,
    on_goal: Callable[[BrokenGoalReport], None] | None = None,
    governor: CpuGovernor | None = None,
    on_write: Callable[[Path, str], None] | None = None,
) -> RepairReport:
    """Find and repair the broken proofs of ``files``; see the module's docstring.

    ``governor`` is the CPU governor to share (``orch bg``'s; a new one when
    None); ``on_write`` sees each file written, with its new text."""
    report = RepairReport()
    started = time.monotonic()
    governor = governor or CpuGovernor.for_settings(options.orch, options.orch.max_light + 1)
    if files:
        report.prover_version = await backend_for(files[0]).version(
            list(files), tool_settings(options)
        )
    run_id = ledger.start_run(
        "repair",
        {"paths": [str(p) for p in files], "dry_run": options.dry_run},
        report.prover_version,
    )
    report.run_id = run_id
    toolbox = Toolbox(options, governor.gate)
    root = backend_for(files[0]).project_root(files[0]) if files else None
    repairs = RepairStrategies()
    fill_report = FillReport()
    fill_report.run_id = run_id
    fill_report.prover_version = report.prover_version
    # the old proof first, alone (a lone strategy has the pass's whole budget), then
    # the fill portfolio with what it left
    first = GoalRun(ledger, options, [repairs], fill_report, governor, None)
    lineup = build_lineup(options.orch, ledger, root=root)
    then = GoalRun(ledger, options, lineup, fill_report, governor, None)
    try:
        for path in _in_dependency_order(files, toolbox):
            await _repair_file(
                path,
                ledger,
                options,
                toolbox,
                (first, then),
                repairs,
                report,
                admit_broken,
                on_goal,
                on_write,
            )
    finally:
        await toolbox.aclose()
        report.wall_seconds = time.monotonic() - started
        ledger.finish_run(run_id, RunStatus.FINISHED, report.summary())
    return report


async def _repair_file(
    path: Path,
    ledger: Ledger,
    options: FillOptions,
    toolbox: Toolbox,
    runs: tuple[GoalRun, GoalRun],
    repairs: RepairStrategies,
    report: RepairReport,
    admit_broken: bool,
    on_goal: Callable[[BrokenGoalReport], None] | None,
    on_write: Callable[[Path, str], None] | None = None,
) -> None:
    try:
        repair = backend_for(path).repair()
        text = read_source(path)
    except (UnreadableSource, SourceSyntaxError, OrchError, ValueError) as exc:
        report.files.append(FileReport(path, FileStatus.UNREADABLE, message=str(exc)))
        return
    file_report = FileReport(path, FileStatus.DONE, original_text=text)
    report.files.append(file_report)
    tools = toolbox.for_path(path)
    root = backend_for(path).project_root(path)
    if tools.builder is not None:
        built = await tools.builder.build([path])
        failure = built.failure_for(path)
        if failure is not None:
            file_report.status = FileStatus.NOT_BUILT
            file_report.message = failure.one_line(built.root)
            return

    async def compile_text(candidate: str) -> tuple[bool, str]:
        ok, output = await tools.verifier.compiles(path, candidate)
        return bool(ok), str(output)

    detection = await repair.find_broken(path, text, compile_text)
    if detection.stuck:
        report.stuck[str(path)] = detection.stuck
    if not detection.broken:
        # the files that import it are built from what it compiles as now
        tools.stand_in(path, text)
        return
    standin = detection.standin
    state = FileState(path, standin, tools, file_report, len(detection.broken))
    candidates: list[Candidate] = []
    rows: dict[int, tuple[Any, BrokenGoalReport]] = {}
    file_rows: list[BrokenGoalReport] = []
    for broken in detection.broken:
        goal = broken.hole.goal
        row = BrokenGoalReport(
            path,
            goal.name,
            goal.line,
            broken.kind.value,
            broken.failing,
            broken.error,
            broken.script,
            goal=goal,
        )
        report.broken.append(row)
        file_rows.append(row)
        goal_id = ledger.upsert_goal(goal)
        ledger.set_goal_status(goal_id, GoalStatus.BROKEN)
        ledger.record_attempt(
            run_id=report.run_id,
            goal_id=goal_id,
            fingerprint=goal.fingerprint,
            strategy="detect",
            outcome=Outcome.FAILED,
            tactic=backend_for(path).join_script(broken.script),
            message=f"broken ({broken.kind.value}) at {broken.failing}: {broken.error}"[:2000],
        )
        repairs.add(goal, repair.strategy(broken, standin, root))
        goal_report = GoalReport(goal, Outcome.FAILED, hole=broken.hole)
        budget = options.budget.cpu_seconds
        item = GoalItem(broken.hole, state, goal_id, goal_report, budget * REPAIR_SHARE)
        outcome = await runs[0].search(item)
        if outcome.winner is None:
            left = budget - goal_report.cpu_seconds
            item = GoalItem(broken.hole, state, goal_id, goal_report, max(left, 0.5))
            outcome = await runs[1].search(item)
        row.cpu_seconds = goal_report.cpu_seconds
        if outcome.winner is not None:
            found = outcome.results[outcome.winner]
            goal_report.outcome = Outcome.CANDIDATE
            goal_report.strategy = outcome.winner
            goal_report.sentences = tools.gate(found.sentences)
            goal_report.imports = found.imports
            goal_report.helpers = found.helpers
            candidates.append(Candidate.of(broken.hole, goal_report, goal_id))
            rows[goal_id] = (broken, row)
        else:
            messages = [r.message for r in outcome.results.values() if r.message]
            row.message = "; ".join(dict.fromkeys(messages))[:500]
            ledger.set_goal_status(goal_id, GoalStatus.BROKEN)
        if on_goal is not None and outcome.winner is None:
            on_goal(row)
    done = await verify_and_write_repairs(
        path,
        text,
        detection,
        candidates,
        tools,
        ledger,
        report.run_id,
        file_report,
        write=not options.dry_run,
        admit_broken=admit_broken,
    )
    verified: list[tuple[Any, tuple[str, ...]]] = []
    for accepted in done.accepted:
        goal_report, goal_id = accepted.report, accepted.goal_id
        broken, row = rows[goal_id]
        row.new, row.strategy, row.repaired = goal_report.sentences, goal_report.strategy, True
        verified.append((broken, goal_report.sentences))
        if not done.written:
            # verified, not written (a dry run, --git): the repair exists, in the ledger
            ledger.set_goal_status(goal_id, GoalStatus.REPAIRED)
    repaired = FileRepairs(path, text, file_rows, detection, verified, admit_broken)
    report.repaired_files.append(repaired)
    if done.written and on_write is not None:
        on_write(path, repaired.text())
    for candidate in candidates:
        goal_report, row = candidate.report, rows[candidate.goal_id][1]
        if not row.repaired:
            row.message = goal_report.message[:500] or "rejected by the whole-file check"
        if on_goal is not None:
            on_goal(row)
    report.cpu_seconds += sum(row.cpu_seconds for row in file_rows)
    tools.stand_in(path, done.standin)
