"""The fill pipeline: scan files, search proofs, verify whole files, patch, record.

Per file:

1. read it and find its holes; check that it compiles *before* any change
   (a file that does not is reported and skipped);
2. for each hole: reuse a verified proof from the ledger if its fingerprint
   has one, else run the strategies in order until one proposes a candidate;
   every attempt is recorded as it ends;
3. verify all candidates together (one recompilation plus the axiom audit);
   if that fails, add them one at a time and keep those that pass;
4. write the file once, atomically, only if something was verified and the
   file on disk is still the text the proofs were found for.

Nothing in here starts a process or writes SQL itself: provers and the
ledger do.
"""

from __future__ import annotations

import difflib
import enum
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

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
from .strategies.base import Strategy
from .strategies.micro import MicroStrategy

__all__ = [
    "FileReport",
    "FileStatus",
    "FillOptions",
    "FillReport",
    "GoalReport",
    "collect_files",
    "fill",
]

#: the strategy name under which proofs replayed from the ledger are recorded
LEDGER_REPLAY = "ledger-replay"


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
    budget: Budget = field(default_factory=lambda: Budget(cpu_seconds=10.0, tactic_seconds=1.0))
    dry_run: bool = False
    #: reuse verified proofs from the ledger instead of searching again
    reuse: bool = True
    settings: CoqSettings = field(default_factory=CoqSettings)
    command: str = "fill"


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


class _ProjectTools:
    """One prover and one verifier per Coq project (per set of flags)."""

    def __init__(self, project: CoqProject, settings: CoqSettings) -> None:
        cwd = str(project.root)
        self.prover = CoqProver(project.flags, cwd=cwd, settings=settings)
        self.verifier = CoqVerifier(
            project.flags, cwd=cwd, coqc=settings.coqc, coqtop=settings.coqtop
        )

    async def aclose(self) -> None:
        await self.prover.aclose()
        await self.verifier.aclose()


async def fill(
    paths: Sequence[Path],
    ledger: Ledger,
    options: FillOptions | None = None,
    *,
    strategies: Sequence[Strategy] | None = None,
    on_goal: GoalCallback | None = None,
    on_files: Callable[[list[tuple[Path, int]]], None] | None = None,
) -> FillReport:
    """Fill the holes of ``paths``. Raises :class:`PathNotFound` before doing anything."""
    options = options or FillOptions()
    strategies = list(strategies) if strategies is not None else [MicroStrategy()]
    files = collect_files(paths)
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

    tools: dict[tuple[str, ...], _ProjectTools] = {}
    version_probe = CoqProver(settings=options.settings)
    report.prover_version = await version_probe.version()
    await version_probe.aclose()
    report.run_id = ledger.start_run(
        options.command,
        {
            "paths": [str(p) for p in paths],
            "dry_run": options.dry_run,
            "budget_cpu_seconds": options.budget.cpu_seconds,
            "tactic_seconds": options.budget.tactic_seconds,
        },
        report.prover_version,
    )
    status = "finished"
    try:
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
                project_tools = tools[project.flags] = _ProjectTools(project, options.settings)
            file_report = FileReport(path, FileStatus.INTERRUPTED)
            report.files.append(file_report)
            await _fill_file(
                path,
                text,
                holes,
                project_tools,
                ledger,
                report,
                file_report,
                options,
                strategies,
                on_goal,
            )
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


async def _fill_file(
    path: Path,
    text: str,
    holes: list[CoqHole],
    tools: _ProjectTools,
    ledger: Ledger,
    report: FillReport,
    file_report: FileReport,
    options: FillOptions,
    strategies: Sequence[Strategy],
    on_goal: GoalCallback | None,
) -> None:
    run_id = report.run_id
    if run_id is None:
        raise ValueError("_fill_file needs a started run")
    compiles, output = await tools.verifier.compiles(path, text)
    if not compiles:
        file_report.status = FileStatus.DOES_NOT_COMPILE
        file_report.message = output.strip()[-1500:]
        for hole in holes:
            goal_report = GoalReport(hole.goal, Outcome.ERROR, message="file does not compile")
            file_report.goals.append(goal_report)
            if on_goal:
                on_goal(goal_report)
        return

    candidates: list[Candidate] = []
    for hole in holes:
        goal_id = ledger.upsert_goal(hole.goal)
        goal_report = await _search(
            hole,
            text,
            tools.prover,
            ledger,
            options,
            strategies,
            run_id,
            goal_id,
            report.prover_version,
        )
        file_report.goals.append(goal_report)
        if goal_report.outcome is Outcome.CANDIDATE:
            candidates.append((hole, goal_report, goal_id))
        elif on_goal:
            on_goal(goal_report)

    accepted = await _verify(
        path, text, candidates, tools.verifier, ledger, run_id, report.prover_version, file_report
    )
    final_text = apply_patches(text, [Patch(h, r.sentences) for h, r, _ in accepted])
    written = False
    if accepted and not options.dry_run:
        try:
            write_atomic(path, final_text, text)
            written = True
        except FileChangedError as exc:
            file_report.status = FileStatus.CHANGED
            file_report.message = str(exc)
    diff = "".join(
        difflib.unified_diff(
            text.splitlines(keepends=True),
            final_text.splitlines(keepends=True),
            fromfile=str(path),
            tofile=str(path),
        )
    )
    for hole, goal_report, goal_id in accepted:
        ledger.record_proof(
            run_id=run_id,
            goal_id=goal_id,
            fingerprint=hole.goal.fingerprint,
            sentences=goal_report.sentences,
            strategy=goal_report.strategy,
            prover_version=report.prover_version,
            diff=diff,
            written=written,
        )
    for _, goal_report, _ in candidates:
        if on_goal:
            on_goal(goal_report)
    file_report.written = written
    if file_report.status is FileStatus.INTERRUPTED:
        file_report.status = FileStatus.DONE


async def _search(
    hole: CoqHole,
    text: str,
    prover: CoqProver,
    ledger: Ledger,
    options: FillOptions,
    strategies: Sequence[Strategy],
    run_id: int,
    goal_id: int,
    version: str,
) -> GoalReport:
    goal = hole.goal
    if options.reuse:
        known = ledger.verified_proof(goal.fingerprint)
        if known is not None:
            replay = await _replay(hole, text, prover, known, options.budget)
            if replay is not None:
                return replay
    last = GoalReport(goal, Outcome.FAILED)
    total_cpu = 0.0
    total_wall = 0.0
    tried = 0
    for strategy in strategies:
        started = time.monotonic()
        try:
            async with prover.session(goal, text, hole.prefix_end) as session:
                result = await strategy.prove(session, goal, options.budget)
        except (ProverError, PrefixError) as exc:
            ledger.record_attempt(
                run_id=run_id,
                goal_id=goal_id,
                fingerprint=goal.fingerprint,
                strategy=strategy.name,
                outcome=Outcome.ERROR,
                prover_version=version,
                wall_seconds=time.monotonic() - started,
                message=str(exc),
            )
            last = GoalReport(goal, Outcome.ERROR, strategy.name, message=str(exc))
            continue
        total_cpu += result.cpu_seconds
        total_wall += result.wall_seconds
        tried += result.tactics_tried
        outcome = result.outcome
        sentences = result.sentences
        message = result.message
        if outcome is Outcome.CANDIDATE:
            try:
                sentences = check_script(sentences)
            except ScriptRejected as exc:
                outcome, message = Outcome.REJECTED, str(exc)
        ledger.record_attempt(
            run_id=run_id,
            goal_id=goal_id,
            fingerprint=goal.fingerprint,
            strategy=strategy.name,
            outcome=outcome,
            tactic=" ".join(sentences),
            tactics_tried=result.tactics_tried,
            cpu_seconds=result.cpu_seconds,
            wall_seconds=result.wall_seconds,
            prover_version=version,
            message=message,
        )
        last = GoalReport(
            goal, outcome, strategy.name, sentences, tried, total_cpu, total_wall, message
        )
        if outcome is Outcome.CANDIDATE:
            return last
    ledger.set_goal_status(goal_id, "failed")
    return last


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
