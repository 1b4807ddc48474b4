"""The fill pipeline: scan files, search proofs, verify whole files, patch, record.

1. Read every file and find its holes; a file that does not compile before
   any change is reported and skipped.
2. Goals go into a priority queue (:mod:`.scheduler.queue`). Workers take
   them one at a time:
   - a proof the ledger already has (verified, or found and not yet
     verified when the last run was stopped) is replayed, never searched;
   - otherwise the bandit ranks the strategies for the goal's class and the
     portfolio races the best ``portfolio`` of them, each in a session slot
     granted by the CPU governor; the first candidate cancels the others;
   - a strategy that failed on this fingerprint at budget B (in this run or
     an earlier one) is only run again at 2B, up to the cap; a goal whose
     strategies timed out goes back into the queue with doubled budgets
     (parked), behind fresher goals.
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
import dataclasses
import difflib
import enum
import random
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from .config import Settings
from .coqscript import check_script
from .errors import FileChangedError, OrchError, PathNotFound, ProverError, ScriptRejected
from .goals import Budget, Goal, Outcome
from .ledger import Ledger
from .project.coq_holes import CoqHole, declared_axioms, scan_coq_text
from .project.coqproject import CoqProject, load_coqproject, project_for
from .project.patch import Patch, apply_patches, write_atomic
from .provers.base import TacticStatus, Verdict, VerificationResult
from .provers.coq import CoqProver, CoqSettings, PrefixError
from .provers.coq_verify import CoqVerifier
from .scheduler.bandit import ArmStats, Bandit, goal_class
from .scheduler.governor import CpuGovernor
from .scheduler.portfolio import race
from .scheduler.queue import GoalQueue, priority
from .strategies.base import Strategy, StrategyResult
from .strategies.micro import CachedStrategy, InductionStrategy, MicroStrategy

__all__ = [
    "FileReport",
    "FileStatus",
    "FillOptions",
    "FillReport",
    "GoalReport",
    "collect_files",
    "default_strategies",
    "fill",
]

#: the strategy name under which verified proofs replayed from the ledger are recorded
LEDGER_REPLAY = "ledger-replay"
#: ... and candidates found by an earlier, interrupted run
CANDIDATE_REPLAY = "candidate-replay"


class FileStatus(enum.StrEnum):
    #: processed (whether or not anything was proved)
    DONE = "done"
    #: the file did not compile before any change; skipped
    DOES_NOT_COMPILE = "does_not_compile"
    #: the file changed on disk during the run; nothing written
    CHANGED = "changed"
    #: the file could not be read or split into sentences
    UNREADABLE = "unreadable"
    #: the run was interrupted while this file was in progress
    INTERRUPTED = "interrupted"


@dataclass(slots=True)
class GoalReport:
    goal: Goal
    outcome: Outcome
    strategy: str = ""
    sentences: tuple[str, ...] = ()
    tactics_tried: int = 0
    cpu_seconds: float = 0.0
    wall_seconds: float = 0.0
    message: str = ""


@dataclass(slots=True)
class FileReport:
    path: Path
    status: FileStatus
    goals: list[GoalReport] = field(default_factory=list)
    message: str = ""
    written: bool = False
    verify_cpu_seconds: float = 0.0


@dataclass(slots=True)
class FillReport:
    files: list[FileReport] = field(default_factory=list)
    run_id: int | None = None
    wall_seconds: float = 0.0
    interrupted: bool = False
    prover_version: str = ""

    @property
    def goals(self) -> list[GoalReport]:
        return [g for f in self.files for g in f.goals]

    @property
    def proved(self) -> int:
        return sum(1 for g in self.goals if g.outcome is Outcome.PROVED)

    @property
    def cpu_seconds(self) -> float:
        return sum(g.cpu_seconds for g in self.goals) + sum(
            f.verify_cpu_seconds for f in self.files
        )


@dataclass(frozen=True, slots=True)
class FillOptions:
    #: the first budget of every strategy on every goal
    budget: Budget = field(default_factory=lambda: Budget(cpu_seconds=10.0, tactic_seconds=1.0))
    dry_run: bool = False
    #: reuse proofs from the ledger instead of searching again
    reuse: bool = True
    coq: CoqSettings = field(default_factory=CoqSettings)
    orch: Settings = field(default_factory=Settings)
    command: str = "fill"
    #: lemma names (short or qualified) the user wants first: +10 priority each
    prioritize: frozenset[str] = frozenset()


def collect_files(paths: Iterable[Path]) -> list[Path]:
    """Expand files, directories and ``_CoqProject`` files into ``.v`` files."""
    files: list[Path] = []
    for path in paths:
        if not path.exists():
            raise PathNotFound(f"{path} does not exist")
        if path.name == "_CoqProject":
            files.extend(load_coqproject(path).files)
        elif path.is_dir():
            files.extend(
                p
                for p in sorted(path.rglob("*.v"))
                if not any(part.startswith(".") for part in p.relative_to(path).parts)
            )
        elif path.suffix == ".v":
            files.append(path)
        else:
            raise PathNotFound(f"{path} is not a .v file, a directory or a _CoqProject")
    return list(dict.fromkeys(p.resolve() for p in files))


GoalCallback = Callable[[GoalReport], None]
#: a hole, its report and its ledger goal id
Candidate = tuple[CoqHole, GoalReport, int]


def default_strategies(ledger: Ledger, profile: int) -> list[Strategy]:
    """The strategies of a profile, in the order preferred before anything is learned.

    Profile 0 is quick tactics only. Profiles 1 and 2 add search, hammer,
    retrieval, learned and LLM strategies as they become available; today
    they run the same quick strategies as profile 0.
    """
    del profile  # every strategy that exists today belongs to profile 0
    return [MicroStrategy(), InductionStrategy(), CachedStrategy(ledger.popular_scripts())]


class _ProjectTools:
    """One prover and one verifier per Coq project (per set of flags)."""

    def __init__(self, project: CoqProject, options: FillOptions, governor: CpuGovernor) -> None:
        cwd = str(project.root)
        sessions = options.orch.max_light + options.orch.max_heavy
        coq = dataclasses.replace(
            options.coq,
            max_idle=max(options.coq.max_idle, sessions),
            memory_mb=options.coq.memory_mb or options.orch.prover_memory_mb,
        )
        self.prover = CoqProver(project.flags, cwd=cwd, settings=coq, throttle=governor.gate)
        self.verifier = CoqVerifier(project.flags, cwd=cwd, coqc=coq.coqc, coqtop=coq.coqtop)

    async def aclose(self) -> None:
        await self.prover.aclose()
        await self.verifier.aclose()


@dataclass(slots=True)
class _FileState:
    path: Path
    text: str
    tools: _ProjectTools
    report: FileReport
    pending: int
    candidates: list[Candidate] = field(default_factory=list)


@dataclass(slots=True)
class _GoalItem:
    hole: CoqHole
    file: _FileState
    goal_id: int
    report: GoalReport
    #: CPU budget of each strategy still in play
    budgets: dict[str, float]
    revisits: int = 0
    replayed: bool = False


class _Run:
    """The state of one fill run."""

    def __init__(
        self,
        ledger: Ledger,
        options: FillOptions,
        strategies: Sequence[Strategy],
        report: FillReport,
        governor: CpuGovernor,
        on_goal: GoalCallback | None,
    ) -> None:
        self.ledger = ledger
        self.options = options
        self.strategies = {s.name: s for s in strategies}
        self.report = report
        self.governor = governor
        self.on_goal = on_goal
        self.bandit = Bandit(
            options.orch.bandit, random.Random(options.orch.seed), ledger.load_bandit()
        )
        self.queue: GoalQueue[_GoalItem] = GoalQueue()
        self.in_flight = 0
        self.changed = asyncio.Event()
        self.heavy = asyncio.Semaphore(options.orch.max_heavy)
        #: told about every file this run writes (``orch bg`` ignores its own writes)
        self.on_write: Callable[[Path, str], None] | None = None

    @property
    def run_id(self) -> int:
        if self.report.run_id is None:
            raise ValueError("the run has not been started in the ledger")
        return self.report.run_id

    # -- planning --------------------------------------------------------------

    def budgets_for(self, failed: dict[str, float]) -> dict[str, float]:
        """Each strategy's budget: the base, doubled past every budget it already failed at."""
        base = self.options.budget.cpu_seconds
        budgets: dict[str, float] = {}
        for name in self.strategies:
            budget = base
            while budget <= failed.get(name, 0.0):
                budget *= 2
            if budget <= self.options.orch.budget_cap:
                budgets[name] = budget
        return budgets

    def enqueue(
        self, item: _GoalItem, failures: int = 0, first_seen: datetime | None = None
    ) -> None:
        hole = item.hole
        dependents = item.file.text.count(hole.goal.name, hole.proof_end) if hole.goal.name else 0
        stuck = 0.0
        if first_seen is not None:
            seen = first_seen if first_seen.tzinfo else first_seen.replace(tzinfo=UTC)
            stuck = (datetime.now(UTC) - seen).total_seconds() / 3600
        self.queue.push(
            item,
            priority(
                hole.goal.statement,
                user=10.0
                if {hole.goal.name, hole.goal.qualified_name} & self.options.prioritize
                else 0.0,
                dependents=dependents,
                stuck_hours=stuck,
                failures=failures,
                revisits=item.revisits,
            ),
        )
        self.changed.set()

    # -- workers -----------------------------------------------------------------

    async def work(self) -> None:
        while True:
            if len(self.queue):
                item = self.queue.pop()
                self.in_flight += 1
                try:
                    await self.prove(item)
                finally:
                    self.in_flight -= 1
                    self.changed.set()
            elif self.in_flight == 0:
                return
            else:
                self.changed.clear()
                await self.changed.wait()

    async def prove(self, item: _GoalItem) -> None:
        goal = item.hole.goal
        if not item.replayed and self.options.reuse:
            item.replayed = True
            replay = await self.replay(item)
            if replay is not None:
                await self.goal_done(item, replay)
                return
        names = [n for n in self.strategies if n in item.budgets]
        if not names:
            item.report.outcome = (
                Outcome.FAILED if item.report.outcome is Outcome.CANDIDATE else item.report.outcome
            )
            await self.goal_done(item, None)
            return
        klass = goal_class(goal.statement)
        ranked = self.bandit.rank(klass, names)

        async def attempt(name: str) -> StrategyResult:
            return await self.attempt(item, name, klass)

        outcome = await race(ranked, self.options.orch.portfolio, attempt)
        if outcome.winner is not None:
            result = outcome.results[outcome.winner]
            try:
                sentences = check_script(result.sentences)
            except ScriptRejected as exc:
                item.report.outcome = Outcome.REJECTED
                item.report.message = str(exc)
                self.record(item, outcome.winner, Outcome.REJECTED, result, str(exc))
                await self.goal_done(item, None)
                return
            item.report.strategy = outcome.winner
            item.report.sentences = sentences
            await self.goal_done(item, item.report)
            return
        # no candidate: strategies that ran out of time get a doubled budget later
        timed_out = {
            n: item.budgets[n] * 2
            for n, r in outcome.results.items()
            if r.outcome is Outcome.TIMEOUT
        }
        doubled = {n: b for n, b in timed_out.items() if b <= self.options.orch.budget_cap}
        worst = [r.outcome for r in outcome.results.values()]
        item.report.outcome = (
            Outcome.TIMEOUT
            if Outcome.TIMEOUT in worst
            else (
                Outcome.ERROR
                if worst and all(o is Outcome.ERROR for o in worst)
                else Outcome.FAILED
            )
        )
        if doubled:
            item.budgets = doubled
            item.revisits += 1
            self.enqueue(item)  # parked: revisited after fresher goals
            return
        self.ledger.set_goal_status(item.goal_id, "failed")
        await self.goal_done(item, None)

    async def attempt(self, item: _GoalItem, name: str, klass: str) -> StrategyResult:
        strategy = self.strategies[name]
        base = self.options.budget
        cpu = item.budgets[name]
        budget = Budget(
            cpu_seconds=cpu,
            tactic_seconds=base.tactic_seconds * cpu / base.cpu_seconds,
            grace_seconds=base.grace_seconds,
        )
        goal = item.hole.goal
        started = time.monotonic()
        result: StrategyResult
        async with self.governor.slot():
            heavy = self.heavy if getattr(strategy, "weight", "light") == "heavy" else None
            if heavy is not None:
                await heavy.acquire()
            try:
                async with item.file.tools.prover.session(
                    goal, item.file.text, item.hole.prefix_end
                ) as session:
                    try:
                        result = await strategy.prove(session, goal, budget)
                    except asyncio.CancelledError:
                        cancelled = StrategyResult(
                            Outcome.CANCELLED,
                            (),
                            0,
                            session.cpu_seconds(),
                            time.monotonic() - started,
                        )
                        self.record(
                            item, name, Outcome.CANCELLED, cancelled, "", budget.cpu_seconds
                        )
                        item.report.cpu_seconds += cancelled.cpu_seconds
                        raise
            except (ProverError, PrefixError) as exc:
                result = StrategyResult(
                    Outcome.ERROR, (), 0, 0.0, time.monotonic() - started, str(exc)
                )
            finally:
                if heavy is not None:
                    heavy.release()
        item.report.cpu_seconds += result.cpu_seconds
        item.report.wall_seconds += result.wall_seconds
        item.report.tactics_tried += result.tactics_tried
        arm = None
        if result.outcome is not Outcome.ERROR:
            stats = self.bandit.update(
                klass,
                name,
                success=result.outcome is Outcome.CANDIDATE,
                cpu_seconds=result.cpu_seconds,
                censored=result.outcome is Outcome.TIMEOUT,
            )
            arm = (klass, stats)
        self.record(item, name, result.outcome, result, result.message, budget.cpu_seconds, arm)
        return result

    def record(
        self,
        item: _GoalItem,
        strategy: str,
        outcome: Outcome,
        result: StrategyResult,
        message: str,
        budget: float = 0.0,
        arm: tuple[str, ArmStats] | None = None,
    ) -> None:
        self.ledger.record_attempt(
            run_id=self.run_id,
            goal_id=item.goal_id,
            fingerprint=item.hole.goal.fingerprint,
            strategy=strategy,
            outcome=outcome,
            tactic=" ".join(result.sentences),
            tactics_tried=result.tactics_tried,
            budget_seconds=budget,
            cpu_seconds=result.cpu_seconds,
            wall_seconds=result.wall_seconds,
            prover_version=self.report.prover_version,
            message=message,
            arm=arm,
        )

    async def replay(self, item: _GoalItem) -> GoalReport | None:
        """Re-check a proof the ledger already has; no search."""
        fingerprint = item.hole.goal.fingerprint
        for source, known in (
            (LEDGER_REPLAY, self.ledger.verified_proof(fingerprint)),
            (CANDIDATE_REPLAY, self.ledger.candidate_script(fingerprint)),
        ):
            if known is None:
                continue
            async with self.governor.slot():
                replayed = await _replay(
                    item.hole, item.file.text, item.file.tools.prover, known, self.options.budget
                )
            if replayed is not None:
                replayed.strategy = source
                item.report.strategy = source
                item.report.sentences = replayed.sentences
                item.report.cpu_seconds += replayed.cpu_seconds
                item.report.wall_seconds += replayed.wall_seconds
                return item.report
        return None

    async def goal_done(self, item: _GoalItem, candidate: GoalReport | None) -> None:
        state = item.file
        if candidate is not None:
            candidate.outcome = Outcome.CANDIDATE
            state.candidates.append((item.hole, candidate, item.goal_id))
        elif self.on_goal:
            self.on_goal(item.report)
        state.pending -= 1
        if state.pending == 0:
            async with self.governor.slot():
                await self.finish_file(state)

    async def finish_file(self, state: _FileState) -> None:
        accepted = await _verify(
            state.path,
            state.text,
            state.candidates,
            state.tools.verifier,
            self.ledger,
            self.run_id,
            self.report.prover_version,
            state.report,
        )
        final_text = apply_patches(state.text, [Patch(h, r.sentences) for h, r, _ in accepted])
        written = False
        if accepted and not self.options.dry_run:
            try:
                write_atomic(state.path, final_text, state.text)
                written = True
                if self.on_write is not None:
                    self.on_write(state.path, final_text)
            except FileChangedError as exc:
                state.report.status = FileStatus.CHANGED
                state.report.message = str(exc)
        diff = "".join(
            difflib.unified_diff(
                state.text.splitlines(keepends=True),
                final_text.splitlines(keepends=True),
                fromfile=str(state.path),
                tofile=str(state.path),
            )
        )
        for hole, goal_report, goal_id in accepted:
            self.ledger.record_proof(
                run_id=self.run_id,
                goal_id=goal_id,
                fingerprint=hole.goal.fingerprint,
                sentences=goal_report.sentences,
                strategy=goal_report.strategy,
                prover_version=self.report.prover_version,
                diff=diff,
                written=written,
            )
        for _, goal_report, _ in state.candidates:
            if self.on_goal:
                self.on_goal(goal_report)
        state.report.written = written
        if state.report.status is FileStatus.INTERRUPTED:
            state.report.status = FileStatus.DONE


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
) -> FillReport:
    """Fill the holes of ``paths``. Raises :class:`PathNotFound` before doing anything."""
    options = options or FillOptions()
    files = collect_files(paths)
    if strategies is None:
        strategies = default_strategies(ledger, options.orch.profile)
    report = FillReport()
    started = time.monotonic()
    scanned: list[tuple[Path, str | None, list[CoqHole], str]] = []
    for path in files:
        try:
            content = path.read_text(encoding="utf-8")
            scanned.append((path, content, scan_coq_text(path, content), ""))
        except (OSError, UnicodeDecodeError, OrchError) as exc:
            scanned.append((path, None, [], str(exc)))
    if on_files is not None:
        on_files([(path, len(holes)) for path, _, holes, _ in scanned])

    sessions = options.orch.max_light + options.orch.max_heavy
    governor = governor or CpuGovernor(
        options.orch.cpu_target, sessions, memory_budget_mb=options.orch.memory_budget_mb
    )
    version_probe = CoqProver(settings=options.coq)
    report.prover_version = await version_probe.version()
    await version_probe.aclose()
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
    run = _Run(ledger, options, strategies, report, governor, on_goal)
    run.on_write = on_write
    tools: dict[tuple[str, ...], _ProjectTools] = {}
    status = "finished"
    try:
        async with asyncio.TaskGroup() as group:
            sampler = group.create_task(governor.run(), name="cpu-governor")
            try:
                await _plan(run, scanned, tools, sessions)
                async with asyncio.TaskGroup() as workers:
                    for index in range(max(1, options.orch.max_light)):
                        workers.create_task(run.work(), name=f"goal-worker-{index}")
            finally:
                sampler.cancel()
    except BaseException:
        status = "interrupted"
        report.interrupted = True
        raise
    finally:
        for project_tools in tools.values():
            await project_tools.aclose()
        report.wall_seconds = time.monotonic() - started
        ledger.finish_run(report.run_id, status, summarize(report))
    return report


async def _plan(
    run: _Run,
    scanned: list[tuple[Path, str | None, list[CoqHole], str]],
    tools: dict[tuple[str, ...], _ProjectTools],
    sessions: int,
) -> None:
    """Check that each file compiles, and queue its goals."""
    report = run.report
    for path, text, holes, error in scanned:
        if text is None:
            report.files.append(FileReport(path, FileStatus.UNREADABLE, message=error))
            continue
        if not holes:
            report.files.append(FileReport(path, FileStatus.DONE))
            continue
        project = project_for(path)
        project_tools = tools.get(project.flags)
        if project_tools is None:
            project_tools = tools[project.flags] = _ProjectTools(project, run.options, run.governor)
        file_report = FileReport(path, FileStatus.INTERRUPTED)
        report.files.append(file_report)
        async with run.governor.slot():
            compiles, output = await project_tools.verifier.compiles(path, text)
        if not compiles:
            file_report.status = FileStatus.DOES_NOT_COMPILE
            file_report.message = output.strip()[-1500:]
            for hole in holes:
                goal_report = GoalReport(hole.goal, Outcome.ERROR, message="file does not compile")
                file_report.goals.append(goal_report)
                if run.on_goal:
                    run.on_goal(goal_report)
            continue
        state = _FileState(path, text, project_tools, file_report, pending=len(holes))
        for hole in holes:
            goal_report = GoalReport(hole.goal, Outcome.FAILED)
            file_report.goals.append(goal_report)
            goal_id = run.ledger.upsert_goal(hole.goal)
            failures, first_seen, failed = run.ledger.history(hole.goal.fingerprint)
            item = _GoalItem(hole, state, goal_id, goal_report, run.budgets_for(failed))
            run.enqueue(item, failures, first_seen)


async def _replay(
    hole: CoqHole, text: str, prover: CoqProver, sentences: tuple[str, ...], budget: Budget
) -> GoalReport | None:
    """Re-run a proof from the ledger in a session; None if it no longer closes the goal."""
    started = time.monotonic()
    try:
        async with prover.session(hole.goal, text, hole.prefix_end) as session:
            result = await session.run_script(sentences, session.root, timeout=budget.cpu_seconds)
            cpu = session.cpu_seconds()
    except (ProverError, PrefixError):
        return None
    if result.status is not TacticStatus.COMPLETE:
        return None
    return GoalReport(
        hole.goal,
        Outcome.CANDIDATE,
        LEDGER_REPLAY,
        sentences,
        len(sentences),
        cpu,
        time.monotonic() - started,
    )


async def _verify(
    path: Path,
    text: str,
    candidates: list[Candidate],
    verifier: CoqVerifier,
    ledger: Ledger,
    run_id: int,
    version: str,
    file_report: FileReport,
) -> list[Candidate]:
    """Keep the candidates that the whole-file check accepts; mark the others REJECTED."""
    if not candidates:
        return []
    axioms = declared_axioms(text)
    cpu_before = verifier.cpu_seconds

    def reject(item: Candidate, detail: str) -> None:
        _, goal_report, goal_id = item
        goal_report.outcome = Outcome.REJECTED
        goal_report.message = detail[-1000:]
        ledger.record_attempt(
            run_id=run_id,
            goal_id=goal_id,
            fingerprint=goal_report.goal.fingerprint,
            strategy=goal_report.strategy,
            outcome=Outcome.REJECTED,
            tactic=" ".join(goal_report.sentences),
            prover_version=version,
            message=detail,
        )

    async def check(chosen: list[Candidate]) -> VerificationResult:
        patched = apply_patches(text, [Patch(h, r.sentences) for h, r, _ in chosen])
        return await verifier.verify(path, text, patched, [h.goal for h, _, _ in chosen], axioms)

    # Verify everything at once; on failure, drop the candidates the verifier
    # blames (the lemma at the compiler's error line, or those with new
    # assumptions) and try again. Only when it blames nobody, fall back to
    # adding candidates one at a time.
    remaining = list(candidates)
    accepted: list[Candidate] = []
    while remaining:
        result = await check(remaining)
        if result.accepted:
            accepted = remaining
            break
        blamed = _blamed(text, remaining, result)
        if not blamed:
            for item in remaining:
                single = await check([*accepted, item])
                if single.accepted:
                    accepted.append(item)
                else:
                    reject(item, single.detail)
            break
        for item in blamed:
            reject(item, result.detail)
        remaining = [item for item in remaining if all(item is not b for b in blamed)]
    for _, goal_report, _ in accepted:
        goal_report.outcome = Outcome.PROVED
    file_report.verify_cpu_seconds = verifier.cpu_seconds - cpu_before
    return accepted


def _blamed(text: str, chosen: list[Candidate], result: VerificationResult) -> list[Candidate]:
    """The candidates that a failed verification points at."""
    if result.verdict is Verdict.NEW_ASSUMPTIONS:
        names = set(result.offending)
        return [item for item in chosen if item[0].goal.qualified_name in names]
    if result.error_line is None:
        return []
    # find the patched proof that contains the error line
    ordered = sorted(chosen, key=lambda item: item[0].proof_start)
    shift = 0
    for item in ordered:
        hole, goal_report, _ = item
        replacement = Patch(hole, goal_report.sentences).replacement()
        first = text.count("\n", 0, hole.statement_start) + 1 + shift
        last = text.count("\n", 0, hole.proof_start) + 1 + shift + replacement.count("\n")
        if first <= result.error_line <= last:
            return [item]
        shift += replacement.count("\n") - text.count("\n", hole.proof_start, hole.proof_end)
    return []


def summarize(report: FillReport) -> dict[str, object]:
    per_strategy: dict[str, dict[str, float]] = {}
    for g in report.goals:
        if not g.strategy:
            continue
        entry = per_strategy.setdefault(
            g.strategy, {"proved": 0, "attempted": 0, "cpu_seconds": 0.0}
        )
        entry["attempted"] += 1
        entry["cpu_seconds"] += g.cpu_seconds
        if g.outcome is Outcome.PROVED:
            entry["proved"] += 1
    return {
        "files": len(report.files),
        "goals": len(report.goals),
        "proved": report.proved,
        "cpu_seconds": round(report.cpu_seconds, 3),
        "wall_seconds": round(report.wall_seconds, 3),
        "interrupted": report.interrupted,
        "per_strategy": per_strategy,
    }
