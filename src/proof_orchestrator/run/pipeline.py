"""The fill pipeline: scan files, search proofs, verify whole files, patch, record.

1. Read every file and find its holes, and build what they import; a file
   that does not compile before any change is reported and skipped (the
   files are checked at once, as the governor's slots allow).
2. Goals go into a priority queue (:mod:`.scheduler.queue`). Workers take
   them one at a time:
   - a proof the ledger already has (verified, or found and not yet
     verified when the last run was stopped) is replayed, never searched;
   - otherwise one pass runs the goal's strategies within the goal's CPU
     budget (``--budget``, all strategies together): the bandit ranks them
     for the goal's class, the cheap ones go first, the expensive ones share
     what is left (:mod:`.scheduler.budget`); ``portfolio`` of them run at
     once, each in a session slot granted by the CPU governor, and the first
     candidate cancels the others;
   - a goal that failed at budget B (in this run or an earlier one) is only
     tried again at 2B, up to ``--budget-cap``; a pass that ran out of budget
     goes back into the queue at twice the budget (parked), behind fresher
     goals.
3. When a file's last goal is done, its candidates are verified together
   (one recompilation and the axiom audit, narrowing failures to the blamed
   candidates) and the file is written once, atomically.

Every attempt is recorded as it ends. Cancelling the run (Ctrl-C, SIGTERM)
cancels the running attempts, which closes their provers; candidates found so
far are in the ledger and are replayed by the next run.

Nothing in here starts a process or writes SQL itself: provers and the
ledger do.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from ..backends import (
    SOURCE_SUFFIXES,
    backend_for,
    backend_named,
    backends,
    language_of,
    load_source,
)
from ..errors import LedgerUnavailable, OrchError, PathNotFound, ProverNotFound, UnreadableSource
from ..goals import Budget, Outcome, RunStatus
from ..ledger import Ledger
from ..provers.build import BuildFailure, StepCallback
from ..scheduler.governor import CpuGovernor
from ..search.features import nearest_first
from ..strategies.base import Strategy
from .attempts import FileState, GoalItem
from .building import build_needed, explain_failure
from .executors import AttemptRequest, RayExecutor
from .lineup import build_lineup
from .live import LiveBoard, LivePublisher
from .refusals import Refusals
from .reports import (
    CANDIDATE_REPLAY,
    LEDGER_REPLAY,
    FileReport,
    FileStatus,
    FillOptions,
    FillReport,
    GoalCallback,
    GoalReport,
    summarize,
)
from .toolbox import Toolbox, tool_settings
from .worker import GoalRun

__all__ = [
    "CANDIDATE_REPLAY",
    "LEDGER_REPLAY",
    "FileReport",
    "FileStatus",
    "FillOptions",
    "FillReport",
    "GoalReport",
    "collect_files",
    "fill",
    "scan",
]


log = logging.getLogger(__name__)

#: folders never searched for sources (build output and Lake's package checkouts)
_SKIPPED_FOLDERS = frozenset({"_build", "build", "lake-packages", "node_modules"})


def collect_files(paths: Iterable[Path]) -> list[Path]:
    """Expand files, directories and ``_CoqProject`` files into ``.v`` and ``.lean`` files."""
    files: list[Path] = []
    for path in paths:
        if not path.exists():
            raise PathNotFound(f"{path} does not exist")
        listed = _project_files(path)
        if listed is not None:
            files.extend(listed)
        elif path.is_dir():
            files.extend(
                p
                for p in sorted(path.rglob("*"))
                if p.suffix in SOURCE_SUFFIXES
                and p.is_file()
                and not any(
                    part.startswith(".") or part in _SKIPPED_FOLDERS
                    for part in p.relative_to(path).parts[:-1]
                )
                and not p.name.startswith(".")
            )
        elif path.suffix in SOURCE_SUFFIXES:
            files.append(path)
        else:
            raise PathNotFound(f"{path} is not a .v or .lean file, a directory or a _CoqProject")
    return list(dict.fromkeys(p.resolve() for p in files))


def _project_files(path: Path) -> list[Path] | None:
    """The files a project description (``_CoqProject``) lists; None for any other path."""
    for language in dict.fromkeys(SOURCE_SUFFIXES.values()):
        listed = backend_named(language).project_files(path)
        if listed is not None:
            return listed
    return None


#: one scanned file: (path, its text or None if unreadable, its holes, the error if any)
Scanned = tuple[Path, str | None, list[Any], str]


def scan(files: Iterable[Path]) -> list[Scanned]:
    """Read every file and find its holes; an unreadable file keeps its error."""
    scanned: list[Scanned] = []
    for path in files:
        try:
            content, holes = load_source(path)
            scanned.append((path, content, holes, ""))
        except UnreadableSource as exc:
            scanned.append((path, None, [], str(exc)))
    return scanned


async def fill(
    paths: Sequence[Path],
    ledger: Ledger,
    options: FillOptions | None = None,
    *,
    strategies: Sequence[Strategy] | None = None,
    on_goal: GoalCallback | None = None,
    on_files: Callable[[list[tuple[Path, int]]], None] | None = None,
    governor: CpuGovernor | None = None,
    on_write: Callable[[Path, str], None] | None = None,
    on_build: StepCallback | None = None,
    refusals: Refusals | None = None,
    on_board: Callable[[LiveBoard], None] | None = None,
) -> FillReport:
    """Fill the holes of ``paths``. Raises :class:`PathNotFound` before doing anything.

    First the files that the files with holes import are built (``on_build`` sees
    each step); ``on_files`` then gets the files whose holes are searched (those
    that could be checked), and ``on_goal`` each of their goals as it ends.
    ``refusals``: the scripts refused earlier (``orch bg`` passes its own);
    ``on_board`` gets the run's live board (what it does now, its ETA)."""
    options = options or FillOptions()
    files = collect_files(paths)
    if strategies is None:
        root = backend_for(files[0]).project_root(files[0]) if files else None
        strategies = build_lineup(options.orch, ledger, root=root)
    report = FillReport()
    started = time.monotonic()
    scanned = scan(files)

    sessions = options.orch.max_light + options.orch.max_heavy
    governor = governor or CpuGovernor.for_settings(options.orch, sessions)
    report.prover_version = await _versions(files, options)
    report.run_id = ledger.start_run(
        options.command,
        {
            "paths": [str(p) for p in paths],
            "dry_run": options.dry_run,
            "budget_cpu_seconds": options.budget.cpu_seconds,
            "tactic_seconds": options.budget.tactic_seconds,
            "cpu_target": options.orch.cpu_target,
            "seed": options.orch.seed,
        },
        report.prover_version,
    )
    run = GoalRun(ledger, options, strategies, report, governor, on_goal, refusals)
    run.on_write = on_write
    if on_board is not None:
        on_board(run.live)
    publisher = LivePublisher(
        ledger,
        run.run_id,
        run.live,
        queue_length=lambda: len(run.queue),
        governor=governor,
        extra={"command": options.command, "executor": options.orch.executor},
    )
    tools = Toolbox(options, governor.gate)
    status = RunStatus.FINISHED
    error: OrchError | None = None
    executor: RayExecutor | None = None
    try:
        if options.orch.executor == "ray":
            executor = RayExecutor(options, options.orch.ray_address)
            await executor.start()
            run.runner.executor = executor
            run.runner.request = _requests(ledger)
        async with asyncio.TaskGroup() as group:
            sampler = group.create_task(governor.run(), name="cpu-governor")
            live = group.create_task(publisher.run(), name="live-publisher")
            try:
                targets = [path for path, text, holes, _ in scanned if text is not None and holes]
                blocked = await build_needed(targets, tools, report, on_build)
                await _plan(run, scanned, tools, blocked, on_files)
                # every file checked first: the workers take the goals easiest first
                # across the files, not the first checked file's
                async with asyncio.TaskGroup() as workers:
                    for index in range(max(1, options.orch.max_light)):
                        workers.create_task(run.work(), name=f"goal-worker-{index}")
            finally:
                # the task group waits for both; no await here: on Python 3.11 a worker
                # that failed leaves this task's cancel count raised (the inner group
                # does not uncancel it), so awaiting a cancelled task here would turn
                # the worker's error into a CancelledError ("interrupted")
                sampler.cancel()
                live.cancel()
    except BaseException as exc:
        failure = _orch_error(exc)
        if failure is None:
            status = RunStatus.INTERRUPTED
            report.interrupted = True
            raise
        # a broken part (ledger unreachable, disk full...) stops the run: the
        # error itself is raised, not the task group around it
        status = RunStatus.FAILED
        error = failure
        raise failure from exc
    finally:
        publisher.clear()
        for file_report in report.files:
            if file_report.status is FileStatus.PENDING:  # the run stopped before its end
                file_report.status = FileStatus.INTERRUPTED
        if executor is not None:
            report.nodes = executor.node_stats()
            try:
                report.worker_stats = await executor.worker_stats()
            except Exception as exc:
                log.warning("the Ray workers' figures could not be collected: %r", exc)
            await executor.aclose()
        rebuilt, rebuild_cpu = tools.rebuilds()
        if rebuilt:
            report.build["rebuilt"] = rebuilt
            report.build["rebuild_cpu_seconds"] = round(rebuild_cpu, 3)
        await tools.aclose()
        report.wall_seconds = time.monotonic() - started
        report.strategy_plan = run.runner.plans.as_dict()
        summary = summarize(report)
        summary["cpu_target"] = options.orch.cpu_target
        summary["executor"] = options.orch.executor
        if report.worker_stats:
            summary["workers"] = report.worker_stats
        summary["live_publisher"] = report.live_publisher = publisher.summary()
        if report.nodes:
            summary["nodes"] = report.nodes
        summary["cpu_trace"] = [[s.t, s.fraction] for s in governor.trace]
        summary["prover_rss_mb"] = [
            [s.t, max(s.prover_rss_mb, default=0.0)] for s in governor.trace
        ]
        summary["attempts_recorded"] = run.recorded
        if error is not None:
            summary["error"] = str(error)
        if not isinstance(error, LedgerUnavailable):
            ledger.finish_run(report.run_id, status, summary)
    return report


def _orch_error(exc: BaseException) -> OrchError | None:
    """The first :class:`OrchError` in ``exc`` (itself, or inside nested task groups)."""
    if isinstance(exc, OrchError):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = _orch_error(inner)
            if found is not None:
                return found
    return None


def _requests(ledger: Ledger) -> Callable[[GoalItem, str, Budget], AttemptRequest]:
    """What the driver sends an executor for one attempt (the ledger stays here)."""
    popular = tuple(ledger.popular_scripts())
    proved = {b.language: ledger.proved_statements(b.language) for b in backends()}

    def request(item: GoalItem, name: str, budget: Budget) -> AttemptRequest:
        goal = item.hole.goal
        syntax = backend_named(goal.language).goal_syntax
        near = nearest_first(goal.statement, proved.get(goal.language, []), popular, syntax)
        return AttemptRequest(
            item.hole, item.file.text, name, budget, tuple(near), route=str(goal.file)
        )

    return request


async def _versions(files: Sequence[Path], options: FillOptions) -> str:
    """The provers' versions, for the languages among ``files`` (Coq's when there is none)."""
    present = {language_of(p) for p in files}
    languages = [b.language for b in backends() if b.language in present] or ["coq"]
    settings = tool_settings(options)
    versions = [
        await backend_named(language).version(
            [p for p in files if language_of(p) == language], settings
        )
        for language in languages
    ]
    return "; ".join(versions)


async def _plan(
    run: GoalRun,
    scanned: list[Scanned],
    tools: Toolbox,
    blocked: dict[Path, BuildFailure],
    on_files: Callable[[list[tuple[Path, int]]], None] | None = None,
) -> None:
    """Check that each file compiles, and queue its goals (a file whose imports could
    not be built is not checked, nor one that does not compile: their goals are
    reported, not counted as attempted).

    The checks run at once, each in a session slot of the governor (at the target
    1.0 every slot is open: extructures' five checks took 30 s one after the
    other, on one core of two); a file's goals are queued (and ``on_files`` told)
    as soon as its own check passes. The files' reports keep the order of
    ``scanned``."""
    report = run.report
    checks: list[tuple[Path, str, list[Any], FileReport]] = []
    for path, text, holes, error in scanned:
        if text is None:
            report.files.append(FileReport(path, FileStatus.UNREADABLE, message=error))
            continue
        if not holes:
            report.files.append(FileReport(path, FileStatus.DONE))
            continue
        file_report = FileReport(path, FileStatus.PENDING, original_text=text)
        report.files.append(file_report)
        checks.append((path, text, holes, file_report))
    async with asyncio.TaskGroup() as group:
        for path, text, holes, file_report in checks:
            group.create_task(
                _plan_file(run, path, text, holes, file_report, tools, blocked, on_files),
                name=f"check-{path.name}",
            )


async def _plan_file(
    run: GoalRun,
    path: Path,
    text: str,
    holes: list[Any],
    file_report: FileReport,
    tools: Toolbox,
    blocked: dict[Path, BuildFailure],
    on_files: Callable[[list[tuple[Path, int]]], None] | None,
) -> None:
    """Check one file of :func:`_plan` and queue its goals."""
    project_tools = tools.for_path(path)
    failure = blocked.get(path)
    if failure is not None:
        compiles, output = (
            False,
            f"needs {failure.one_line(backend_for(path).project_root(path))}",
        )
        status, why = FileStatus.NOT_BUILT, "a file it imports could not be built"
    else:
        try:
            async with run.governor.slot():
                compiles, output = await project_tools.verifier.compiles(path, text)
            status, why = FileStatus.DOES_NOT_COMPILE, "file does not compile"
            output = output if compiles else explain_failure(project_tools, path, output)
        except ProverNotFound as exc:
            compiles, output = False, str(exc)
            status, why = FileStatus.NO_PROVER, "prover not installed"
    if not compiles:
        file_report.status = status
        file_report.message = output.strip()
        file_report.goals += [GoalReport(h.goal, Outcome.ERROR, message=why) for h in holes]
        return
    run.live.total += len(holes)
    state = FileState(path, text, project_tools, file_report, pending=len(holes), holes=holes)
    if on_files is not None:  # the goals searched: those of files that were checked
        on_files([(path, len(holes))])
    for hole in holes:
        goal_report = GoalReport(hole.goal, Outcome.FAILED, hole=hole)
        file_report.goals.append(goal_report)
        goal_id = run.ledger.upsert_goal(hole.goal)
        failures, first_seen, failed = run.ledger.history(hole.goal.fingerprint)
        budget = run.budget_for(failed)
        if budget is None:
            # parked: it failed at the cap before; replaying a known proof is all
            # this run does (larger --budget-cap to search again)
            budget = 0.0
        item = GoalItem(hole, state, goal_id, goal_report, budget)
        run.enqueue(item, failures, first_seen)
