"""The ``orch`` command: thin Typer commands over the pipeline, the bank and the ledger."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import ipaddress
import json
import os
import shutil
import signal
import sys
from collections.abc import Coroutine, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
import uvicorn
from rich.console import Console, Group
from rich.live import Live
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from .background import run_background
from .bank import compare_executors, run_bank
from .blueprint import critical_path_weights, scan_declarations, sync
from .config import ConfigError, Settings, env_name, load_settings
from .dashboard import create_app
from .dashboard.report import render_html, render_markdown
from .doctor import run_checks
from .errors import LedgerError, OrchError, PathNotFound, ProverNotFound
from .evaluate import GoalRow, evaluate, write_result
from .gitops import GitError, GitRepo, ProofBranch, publish
from .goals import Budget, Outcome
from .golf import golf_files
from .lean_setup import LeanSetupError, setup_repl
from .ledger import Ledger, default_ledger_url
from .pipeline import (
    FileReport,
    FileStatus,
    FillOptions,
    FillReport,
    GoalReport,
    collect_files,
    fill,
)
from .project.coqproject import project_for
from .project.patch import write_atomic
from .provers.lean import LeanProject
from .provers.process import resolve

app = typer.Typer(
    help="Fill the holes (Admitted.) of Coq files with proofs found by search and checked by Coq.",
    no_args_is_help=True,
    add_completion=False,
)
console = Console(stderr=True)
out = Console()

T = TypeVar("T")

#: exit codes
EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130


def _run(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro``; SIGINT and SIGTERM cancel it (cleanup runs), then exit 130."""

    async def main() -> T:
        task = asyncio.current_task()
        loop = asyncio.get_running_loop()
        if task is not None:
            loop.add_signal_handler(signal.SIGTERM, task.cancel)
        try:
            return await coro
        finally:
            loop.remove_signal_handler(signal.SIGTERM)

    try:
        return asyncio.run(main())
    except (KeyboardInterrupt, asyncio.CancelledError):
        console.print(
            "[yellow]Interrupted.[/] Files hold either their old text or verified proofs; "
            "every finished attempt is in the ledger. Run the same command again to resume."
        )
        raise typer.Exit(EXIT_INTERRUPTED) from None


def _fail(message: str, code: int = 1) -> typer.Exit:
    console.print(f"[red]error:[/] {message}")
    return typer.Exit(code)


CpuTarget = Annotated[
    float | None, typer.Option(help="fraction of the machine to use [ORCH_CPU_TARGET, 0.5]")
]
MaxLight = Annotated[int | None, typer.Option(help="quick sessions at once [ORCH_MAX_LIGHT, 2]")]
MaxHeavy = Annotated[int | None, typer.Option(help="heavy sessions at once [ORCH_MAX_HEAVY, 1]")]
Profile = Annotated[
    int | None, typer.Option(help="0 quick tactics, 1 + search, 2 + learned [ORCH_PROFILE, 1]")
]
Seed = Annotated[int | None, typer.Option(help="random seed of the bandit [ORCH_SEED, 0]")]
BanditOpt = Annotated[str | None, typer.Option(help="thompson or ucb1 [ORCH_BANDIT]")]
Portfolio = Annotated[
    int | None, typer.Option(help="strategies raced per goal [ORCH_PORTFOLIO, 2]")
]
BudgetOpt = Annotated[
    float | None,
    typer.Option(
        help="CPU seconds per goal for its first pass, all strategies and the orchestrator "
        "together: cheap tactics first, the expensive strategies share the rest; a pass "
        "that runs out is revisited at twice the budget [ORCH_BUDGET, 10]"
    ),
]
BudgetCap = Annotated[
    float | None,
    typer.Option(
        help="largest per-goal budget: a goal that failed at it is parked (set it to "
        "--budget for a single pass) [ORCH_BUDGET_CAP, 160]"
    ),
]
ProverMemory = Annotated[
    int | None, typer.Option(help="memory cap of one prover, MiB [ORCH_PROVER_MEMORY_MB]")
]
MemoryBudget = Annotated[
    int | None, typer.Option(help="memory of all provers, MiB [ORCH_MEMORY_BUDGET_MB]")
]
ExecutorOpt = Annotated[
    str | None, typer.Option(help="where attempts run: local or ray [ORCH_EXECUTOR, local]")
]
RayAddress = Annotated[
    str | None,
    typer.Option(help="Ray cluster: auto, HOST:PORT, or empty for a local one [ORCH_RAY_ADDRESS]"),
]
AllowImport = Annotated[
    str | None,
    typer.Option(
        help="imports a proof may add, comma-separated: hammer-tactics (`From Hammer Require "
        "Import Tactics.`, for proofs only CoqHammer's sauto/hauto rebuild) [ORCH_ALLOW_IMPORT]"
    ),
]
UseLlm = Annotated[
    bool | None,
    typer.Option("--llm/--no-llm", help="add the llm strategies (model in [llm]) [ORCH_USE_LLM]"),
]
LlmBudget = Annotated[
    float | None, typer.Option(help="cap the run's model spend, USD [ORCH_LLM_BUDGET_USD]")
]
TacticTimeout = Annotated[
    float | None, typer.Option(help="timeout of one tactic, s [ORCH_TACTIC_TIMEOUT, 1]")
]


def _exit_if_unreadable(files: Sequence[FileReport]) -> None:
    """One line on stderr for each input that could not be read, then exit code 2."""
    unreadable = [f for f in files if f.status is FileStatus.UNREADABLE]
    for f in unreadable:
        console.print(f"orch: {f.message}", soft_wrap=True, markup=False, highlight=False)
    if unreadable:
        raise typer.Exit(EXIT_BAD_INPUT)


def _settings(anchor: Path, arguments: dict[str, object]) -> Settings:
    """Settings for the project at ``anchor``; flags are the arguments named like fields."""
    flags = {name: arguments.get(name) for name in Settings.__slots__}
    try:
        settings, _ = load_settings(project_for(anchor).root, flags)
    except ConfigError as exc:
        raise _fail(str(exc), EXIT_BAD_INPUT) from exc
    return settings


def _check_inputs(paths: list[Path]) -> None:
    """Fail with exit 2 before any work if a path is missing or a needed prover is not installed."""
    try:
        files = collect_files(paths)
        if not files or any(p.suffix == ".v" for p in files):
            resolve("coqtop")
        if any(p.suffix == ".lean" for p in files) and not (
            shutil.which("lean") or shutil.which("lake")
        ):
            raise ProverNotFound(
                "these files include Lean sources but neither `lean` nor `lake` is on PATH. "
                "Install elan (https://github.com/leanprover/elan), then run "
                "`orch lean setup` in the project."
            )
    except (PathNotFound, ProverNotFound) as exc:
        raise _fail(str(exc), EXIT_BAD_INPUT) from exc


def _options(settings: Settings, *, dry_run: bool = False) -> FillOptions:
    budget = Budget(cpu_seconds=settings.budget, tactic_seconds=settings.tactic_timeout)
    return FillOptions(budget=budget, dry_run=dry_run, orch=settings)


def _progress_bar() -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("proved {task.fields[proved]}"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
    )


@contextlib.contextmanager
def _live(view: Any) -> Iterator[Live]:
    """Show ``view`` (a Rich renderable) on stderr, refreshed four times a second."""
    with Live(view, console=console, refresh_per_second=4, transient=False) as live:
        yield live
    if not console.is_terminal:
        console.line()  # Rich leaves the last line of a non-terminal render open


class _Tracker:
    """Live terminal view: a progress bar with ETA and a table of wins per strategy."""

    def __init__(self, description: str) -> None:
        self.progress = _progress_bar()
        self.task = self.progress.add_task(description, total=None, proved=0)
        self.proved = 0
        self.expected = 0
        self.wins: dict[str, int] = {}
        self.cpu: dict[str, float] = {}

    def files(self, files: list[tuple[Path, int]]) -> None:
        """Add a run's holes to the total (bank rounds and executor comparisons run several)."""
        self.expected += sum(n for _, n in files)
        self.progress.update(self.task, total=self.expected)

    def goal(self, report: GoalReport) -> None:
        if report.outcome is Outcome.PROVED:
            self.proved += 1
            self.wins[report.strategy] = self.wins.get(report.strategy, 0) + 1
        if report.strategy:
            self.cpu[report.strategy] = self.cpu.get(report.strategy, 0.0) + report.cpu_seconds
        self.progress.update(self.task, advance=1, proved=self.proved)

    def __rich__(self) -> Group:
        table = Table(title="wins by strategy", title_justify="left")
        for column in ("strategy", "proofs", "CPU s"):
            table.add_column(column)
        for name in sorted(self.cpu, key=lambda n: -self.wins.get(n, 0)):
            table.add_row(name, str(self.wins.get(name, 0)), f"{self.cpu[name]:.1f}")
        return Group(self.progress.get_renderable(), table)

    def live(self) -> contextlib.AbstractContextManager[Live]:
        return _live(self)


class _EvalTracker:
    """Live view of ``orch eval``: goals done with ETA, and the solved count of each arm."""

    def __init__(self) -> None:
        self.progress = _progress_bar()
        self.task = self.progress.add_task("eval", total=None, proved=0)
        self.solved: dict[str, int] = {}
        self.arm_cpu: dict[str, float] = {}
        self.unloadable = 0

    def total(self, goals: int, arms: Sequence[str]) -> None:
        self.progress.update(self.task, total=goals)
        self.solved = dict.fromkeys(arms, 0)
        self.arm_cpu = dict.fromkeys(arms, 0.0)

    def goal(self, row: GoalRow) -> None:
        self.unloadable += bool(row.unloadable)
        for arm, result in row.arms.items():
            self.solved[arm] = self.solved.get(arm, 0) + int(result.solved)
            self.arm_cpu[arm] = self.arm_cpu.get(arm, 0.0) + result.cpu_seconds
        self.progress.update(self.task, advance=1, proved=self.solved.get("portfolio", 0))

    def __rich__(self) -> Group:
        table = Table(title="solved per arm", title_justify="left")
        for column in ("arm", "solved", "CPU s"):
            table.add_column(column)
        for arm, count in self.solved.items():
            table.add_row(arm, str(count), f"{self.arm_cpu.get(arm, 0.0):.0f}")
        if self.unloadable:
            table.caption = f"{self.unloadable} goal(s) unloadable, not scored"
        return Group(self.progress.get_renderable(), table)

    def live(self) -> contextlib.AbstractContextManager[Live]:
        return _live(self)


def _goal_table(report: FillReport) -> Table:
    table = Table(title="Holes")
    for column in ("file", "line", "lemma", "result", "strategy", "script", "cpu s"):
        table.add_column(column, overflow="fold")
    for file_report in report.files:
        for g in file_report.goals:
            colour = {"proved": "green", "rejected": "red", "error": "red"}.get(
                g.outcome.value, "yellow"
            )
            table.add_row(
                file_report.path.name,
                str(g.goal.line),
                g.goal.name,
                f"[{colour}]{g.outcome.value}[/]",
                g.strategy,
                " ".join(g.sentences) if g.outcome is Outcome.PROVED else g.message[:60],
                f"{g.cpu_seconds:.2f}",
            )
    return table


def _fill_json(report: FillReport) -> dict[str, Any]:
    return {
        "run_id": report.run_id,
        "prover_version": report.prover_version,
        "proved": report.proved,
        "errors": report.errors,
        "goals": len(report.goals),
        "cpu_seconds": round(report.cpu_seconds, 3),
        "wall_seconds": round(report.wall_seconds, 3),
        "files": [
            {
                "path": str(f.path),
                "status": f.status.value,
                "written": f.written,
                "message": f.message,
                "goals": [
                    {
                        "name": g.goal.name,
                        "line": g.goal.line,
                        "outcome": g.outcome.value,
                        "strategy": g.strategy,
                        "script": " ".join(g.sentences),
                        "cpu_seconds": round(g.cpu_seconds, 4),
                        "message": g.message,
                    }
                    for g in f.goals
                ],
            }
            for f in report.files
        ],
    }


def _open_ledger(db: str | None, anchor: Path) -> Ledger:
    url = db or default_ledger_url(project_for(anchor).root)
    if "://" not in url:
        url = f"sqlite:///{Path(url).resolve()}"
    try:
        return Ledger(url)
    except LedgerError as exc:
        raise _fail(str(exc), EXIT_BAD_INPUT) from exc


@app.command("fill")
def fill_command(
    paths: Annotated[list[Path], typer.Argument(help=".v files, directories or _CoqProject files")],
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="prove and verify, but write no file")
    ] = False,
    db: Annotated[
        str | None,
        typer.Option(
            help="ledger URL or SQLite path (default: ORCH_DB_URL or <project>/.orch/ledger.sqlite)"
        ),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="print a JSON report instead of tables")
    ] = False,
    prioritize: Annotated[
        list[str] | None, typer.Option(help="lemma to work on first (repeatable)")
    ] = None,
    git: Annotated[
        bool,
        typer.Option(
            "--git",
            help="put each verified proof on its own branch auto/lem/<namespace>/<decl> "
            "(made in a git worktree; your files, index and branch are not touched)",
        ),
    ] = False,
    git_per: Annotated[
        str, typer.Option(help="with --git: a branch per 'proof' or one per 'run'")
    ] = "proof",
    push: Annotated[
        bool, typer.Option("--push", help="with --git: push the branches and open pull requests")
    ] = False,
    allow_dirty: Annotated[
        bool, typer.Option("--allow-dirty", help="with --git: run on a tree with changes")
    ] = False,
    blueprint: Annotated[
        Path | None,
        typer.Option(help="a blueprint content.tex: goals on its critical path go first"),
    ] = None,
    cpu_target: CpuTarget = None,
    max_light: MaxLight = None,
    max_heavy: MaxHeavy = None,
    profile: Profile = None,
    seed: Seed = None,
    bandit: BanditOpt = None,
    executor: ExecutorOpt = None,
    ray_address: RayAddress = None,
    portfolio: Portfolio = None,
    budget: BudgetOpt = None,
    tactic_timeout: TacticTimeout = None,
    budget_cap: BudgetCap = None,
    prover_memory_mb: ProverMemory = None,
    memory_budget_mb: MemoryBudget = None,
    allow_import: AllowImport = None,
    use_llm: UseLlm = None,
    llm_budget_usd: LlmBudget = None,
) -> None:
    """Find holes, search proofs, verify each file, and write verified proofs back."""
    _check_inputs(paths)
    repo: GitRepo | None = None
    if git:
        if git_per not in ("proof", "run"):
            raise _fail("--git-per must be 'proof' or 'run'", EXIT_BAD_INPUT)
        try:
            repo = GitRepo(paths[0].resolve())
            repo.check_ready(allow_dirty)
        except GitError as exc:
            raise _fail(str(exc), EXIT_BAD_INPUT) from exc
    settings = _settings(paths[0], locals())
    # with --git the proofs go to branches: the files in the working tree stay as they are
    weights: dict[str, float] = {}
    if blueprint is not None:
        try:
            weights = critical_path_weights(blueprint.read_text(encoding="utf-8"))
        except (OSError, OrchError) as exc:
            raise _fail(f"cannot read the blueprint {blueprint}: {exc}", EXIT_BAD_INPUT) from exc
    options = dataclasses.replace(
        _options(settings, dry_run=dry_run or git),
        prioritize=frozenset(prioritize or ()),
        weights=weights,
    )
    ledger = _open_ledger(db, paths[0])
    try:
        tracker = _Tracker("fill")
        # stdout carries only the result (libraries such as Ray print worker notices there)
        with tracker.live(), contextlib.redirect_stdout(sys.stderr):
            report = _run(
                fill(paths, ledger, options, on_goal=tracker.goal, on_files=tracker.files)
            )
    except OrchError as exc:
        raise _fail(str(exc)) from exc
    finally:
        ledger.close()
    branches: list[ProofBranch] = []
    if repo is not None and not dry_run:
        try:
            branches, notes = publish(repo, report, per=git_per, push=push)
        except GitError as exc:
            raise _fail(str(exc)) from exc
        for note in notes:
            console.print(note)
    if as_json:
        result = _fill_json(report)
        if repo is not None:
            result["branches"] = [
                {"branch": b.branch, "commit": b.commit, "pr_body": str(b.pr_body)}
                for b in branches
            ]
        out.print_json(json.dumps(result))
        _exit_if_unreadable(report.files)
        return
    for b in branches:
        out.print(
            f"branch [bold]{b.branch}[/] {b.commit[:10]} ({', '.join(b.goals)}); "
            f"PR text {b.pr_body}"
        )
    out.print(_goal_table(report))
    for f in report.files:
        if f.status not in (FileStatus.DONE, FileStatus.UNREADABLE):
            out.print(f"[red]{f.path}[/]: {f.status.value}. {f.message[:500]}")
    if repo is not None and not dry_run:
        files_note = f"{len(branches)} branch(es) made, working tree unchanged"
    elif dry_run:
        touched = sum(1 for f in report.files if any(g.outcome is Outcome.PROVED for g in f.goals))
        files_note = f"{touched} file(s) would change (dry run, nothing written)"
    else:
        files_note = f"{sum(1 for f in report.files if f.written)} file(s) written"
    out.print(
        f"[bold]{report.proved}/{len(report.goals)}[/] holes proved and verified; {files_note}; "
        f"{report.cpu_seconds:.1f} CPU s, {report.wall_seconds:.1f} s wall; ledger {ledger.url}"
    )
    _exit_if_unreadable(report.files)


@app.command("bank")
def bank_command(
    bank: Annotated[Path, typer.Option(help="the benchmark bank folder")] = Path("bench/bank"),
    out_dir: Annotated[Path, typer.Option("--out", help="where result JSON goes")] = Path(
        "bench/results"
    ),
    rounds: Annotated[
        int, typer.Option(help="repeat the bank (fresh copies and ledger each time)")
    ] = 1,
    as_json: Annotated[bool, typer.Option("--json", help="print the result JSON")] = False,
    compare_executors: Annotated[
        bool,
        typer.Option(
            "--compare-executors",
            help="run the bank with the local executor, then with Ray, and compare",
        ),
    ] = False,
    cpu_target: CpuTarget = None,
    max_light: MaxLight = None,
    max_heavy: MaxHeavy = None,
    profile: Profile = None,
    seed: Seed = None,
    bandit: BanditOpt = None,
    executor: ExecutorOpt = None,
    ray_address: RayAddress = None,
    portfolio: Portfolio = None,
    budget: BudgetOpt = None,
    tactic_timeout: TacticTimeout = None,
    budget_cap: BudgetCap = None,
    prover_memory_mb: ProverMemory = None,
    memory_budget_mb: MemoryBudget = None,
) -> None:
    """Run the Coq benchmark bank on copies and write bench/results/<timestamp>.json."""
    if not bank.is_dir():
        raise _fail(
            f"{bank} does not exist; run from the repository root or pass --bank", EXIT_BAD_INPUT
        )
    if rounds < 1:
        raise _fail("--rounds must be at least 1", EXIT_BAD_INPUT)
    try:
        resolve("coqtop")
    except ProverNotFound as exc:
        raise _fail(str(exc), EXIT_BAD_INPUT) from exc
    settings = _settings(Path.cwd(), locals())
    options = _options(settings)
    if compare_executors:
        _compare_executors(bank, out_dir, options, as_json)
        return
    try:
        tracker = _Tracker("bank")
        with tracker.live(), contextlib.redirect_stdout(sys.stderr):
            result, path = _run(
                run_bank(
                    bank,
                    out_dir,
                    options,
                    rounds=rounds,
                    on_goal=tracker.goal,
                    on_files=tracker.files,
                )
            )
    except OrchError as exc:
        raise _fail(str(exc)) from exc
    if as_json:
        out.print_json(json.dumps(result))
        return
    for key, title in (("by_domain", "By domain"), ("by_level", "By level")):
        table = Table(title=title)
        for column in ("category", "solved", "total", "rate", "cpu s"):
            table.add_column(column)
        for name, g in sorted(result[key].items()):
            table.add_row(
                name,
                str(g["solved"]),
                str(g["total"]),
                f"{g['rate']:.0%}",
                f"{g['cpu_seconds']:.1f}",
            )
        out.print(table)
    table = Table(title="By strategy")
    for column in ("strategy", "solved", "cpu s"):
        table.add_column(column)
    for name, s in sorted(result["per_strategy"].items()):
        table.add_row(name, str(s["solved"]), f"{s['cpu_seconds']:.1f}")
    out.print(table)
    totals = result["totals"]
    recheck = result["recheck"]
    out.print(
        f"[bold]{totals['solved']}/{totals['lemmas']} solved ({totals['rate']:.1%})[/] "
        f"with Coq {result['prover_version']} in {totals['wall_seconds']:.1f} s wall; "
        f"search {totals['search_cpu_seconds']:.1f} CPU s, "
        f"verification {totals['verify_cpu_seconds']:.1f} CPU s. "
        f"Re-check: {recheck['compiled']}/{recheck['files']} patched files compile from scratch."
    )
    trace = result["cpu_trace_summary"]["all"]
    overhead = result["overhead"]
    out.print(
        f"CPU of the process tree (fraction of {result['machine']['cpus']} cores, target "
        f"{result['settings']['cpu_target']}): mean {trace['mean']:.2f}, p10 {trace['p10']:.2f}, "
        f"p90 {trace['p90']:.2f} over {trace['samples']} samples. Orchestrator CPU "
        f"{overhead['orchestrator_cpu_seconds']:.1f} s = {overhead['ratio'] or 0:.1%} "
        f"of prover CPU "
        f"{overhead['prover_cpu_seconds']:.1f} s."
        f"\nResult: {path}"
    )
    if result.get("nodes"):
        out.print(_nodes_table(result["nodes"]))


def _nodes_table(nodes: list[dict[str, Any]]) -> Table:
    """Per Ray node: attempts, prover CPU, and the share of attempts that found the file warm."""
    table = Table(title="By Ray node")
    for column in ("node", "address", "CPUs", "attempts", "prover CPU s", "warm", "lost"):
        table.add_column(column)
    for n in nodes:
        table.add_row(
            n["node_id"][:12],
            n["address"],
            f"{n['cpus']:g}",
            str(n["attempts"]),
            f"{n['prover_cpu_seconds']:.1f}",
            f"{n['warm_share']:.0%}",
            "yes" if n["lost"] else "",
        )
    return table


def _compare_executors(bank: Path, out_dir: Path, options: FillOptions, as_json: bool) -> None:
    try:
        tracker = _Tracker("bank: local, then ray")
        with tracker.live(), contextlib.redirect_stdout(sys.stderr):
            result, path = _run(
                compare_executors(
                    bank, out_dir, options, on_goal=tracker.goal, on_files=tracker.files
                )
            )
    except OrchError as exc:
        raise _fail(str(exc)) from exc
    if as_json:
        out.print_json(json.dumps(result))
        return
    table = Table(title="The bank on each executor (same run)")
    for column in ("executor", "solved", "wall s", "search CPU s", "total CPU s"):
        table.add_column(column)
    for name in ("local", "ray"):
        side = result[name]
        table.add_row(
            name,
            f"{side['solved']}/{side['lemmas']}",
            f"{side['wall_seconds']:.1f}",
            f"{side['search_cpu_seconds']:.1f}",
            f"{side['total_cpu_seconds']:.1f}",
        )
    out.print(table)
    same = "the same lemmas" if result["same_solved"] else "DIFFERENT lemmas"
    out.print(f"Both executors solved {same}. Result: {path}")


@app.command("bg")
def bg_command(
    paths: Annotated[list[Path], typer.Argument(help=".v files, directories or _CoqProject files")],
    duration: Annotated[
        float | None, typer.Option(help="stop after this many seconds (default: run until stopped)")
    ] = None,
    db: Annotated[str | None, typer.Option(help="ledger URL or SQLite path")] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="print a JSON summary at the end")
    ] = False,
    cpu_target: CpuTarget = None,
    max_light: MaxLight = None,
    max_heavy: MaxHeavy = None,
    profile: Profile = None,
    seed: Seed = None,
    bandit: BanditOpt = None,
    executor: ExecutorOpt = None,
    ray_address: RayAddress = None,
    portfolio: Portfolio = None,
    budget: BudgetOpt = None,
    tactic_timeout: TacticTimeout = None,
    budget_cap: BudgetCap = None,
    prover_memory_mb: ProverMemory = None,
    memory_budget_mb: MemoryBudget = None,
    allow_import: AllowImport = None,
) -> None:
    """Keep filling holes: revisit stuck goals, react to edits, hold the CPU target."""
    _check_inputs(paths)
    if duration is not None and duration <= 0:
        raise _fail("--duration must be positive", EXIT_BAD_INPUT)
    settings = _settings(paths[0], locals())
    ledger = _open_ledger(db, paths[0])

    def cycle(number: int, report: FillReport | None, next_step: str) -> None:
        if report is None:
            console.print(f"[yellow]{next_step}[/]")
            return
        console.print(
            f"cycle {number}: {report.proved}/{len(report.goals)} holes proved, "
            f"{report.cpu_seconds:.1f} CPU s; {next_step}"
        )

    console.print(
        f"orch bg: working on {', '.join(map(str, paths))} "
        f"(CPU target {settings.cpu_target:.0%}); Ctrl-C stops"
    )
    try:
        result = _run(
            run_background(paths, ledger, _options(settings), duration=duration, on_cycle=cycle)
        )
    except OrchError as exc:
        raise _fail(str(exc)) from exc
    finally:
        ledger.close()
    trace = result.governor_trace
    mean = sum(trace) / len(trace) if trace else 0.0
    if as_json:
        out.print_json(
            json.dumps(
                {
                    "cycles": result.cycles,
                    "proved": result.proved,
                    "restarts": result.restarts,
                    "wall_seconds": round(result.wall_seconds, 3),
                    "mean_cpu_fraction": round(mean, 4),
                }
            )
        )
        return
    out.print(
        f"{result.cycles} cycle(s), {result.proved} proof(s) written, {result.restarts} "
        f"restart(s) after edits, {result.wall_seconds:.0f} s; mean CPU {mean:.2f} of the machine"
    )


@app.command("dashboard")
def dashboard_command(
    path: Annotated[Path, typer.Argument(help="the project folder (its ledger and files)")] = Path(
        "."
    ),
    host: Annotated[
        str, typer.Option(help="address to bind; non-loopback needs ORCH_DASHBOARD_TOKEN")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="port")] = 8000,
    db: Annotated[str | None, typer.Option(help="ledger URL or SQLite path")] = None,
    results: Annotated[Path | None, typer.Option(help="folder of benchmark result JSON")] = None,
) -> None:
    """Serve the web dashboard (read-only) over the ledger."""
    if not path.is_dir():
        raise _fail(f"{path} is not a folder", EXIT_BAD_INPUT)
    token = os.environ.get("ORCH_DASHBOARD_TOKEN") or None
    if not _is_loopback(host) and token is None:
        raise _fail(
            f"refusing to serve on {host} without a token: set ORCH_DASHBOARD_TOKEN "
            "(clients then send it as 'Authorization: Bearer ...' or ?token=...)",
            EXIT_BAD_INPUT,
        )
    ledger = _open_ledger(db, path)
    app_ = create_app(ledger, path, token=token, results_dir=results)
    console.print(f"orch dashboard on http://{host}:{port}/ (Ctrl-C stops)")
    try:
        uvicorn.run(app_, host=host, port=port, log_level="warning")
    finally:
        ledger.close()


@app.command("mcp")
def mcp_command(
    project: Annotated[Path, typer.Argument(help="the project folder agents may work on")] = Path(
        "."
    ),
    http: Annotated[
        bool, typer.Option("--http", help="serve streamable HTTP instead of stdio")
    ] = False,
    host: Annotated[
        str, typer.Option(help="with --http: address; non-loopback needs ORCH_MCP_TOKEN")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="with --http: port (path /mcp)")] = 8765,
    db: Annotated[str | None, typer.Option(help="ledger URL or SQLite path")] = None,
    git: Annotated[
        bool, typer.Option("--git", help="verified proofs go to branches, files stay unchanged")
    ] = False,
    allow_dirty: Annotated[
        bool, typer.Option("--allow-dirty", help="with --git: run on a tree with changes")
    ] = False,
    cpu_target: CpuTarget = None,
    profile: Profile = None,
    budget: BudgetOpt = None,
    tactic_timeout: TacticTimeout = None,
    use_llm: UseLlm = None,
    llm_budget_usd: LlmBudget = None,
) -> None:
    """Serve the project to AI agents over the Model Context Protocol (stdio by default)."""
    try:
        from .agents.mcp_server import build_server, http_app
        from .agents.service import AgentService
    except ImportError as exc:
        raise _fail(
            f"orch mcp needs the MCP SDK ({exc}): pip install 'proof-orchestrator[mcp]'",
            EXIT_BAD_INPUT,
        ) from exc
    if not project.is_dir():
        raise _fail(f"{project} is not a folder", EXIT_BAD_INPUT)
    token = os.environ.get("ORCH_MCP_TOKEN") or None
    if http and not _is_loopback(host) and token is None:
        raise _fail(f"refusing to serve on {host} without ORCH_MCP_TOKEN", EXIT_BAD_INPUT)
    settings = _settings(project, locals())
    repo: GitRepo | None = None
    if git:
        try:
            repo = GitRepo(project.resolve())
            repo.check_ready(allow_dirty)
        except GitError as exc:
            raise _fail(str(exc), EXIT_BAD_INPUT) from exc
    ledger = _open_ledger(db, project)
    server = build_server(AgentService(project, ledger, _options(settings), git=repo))
    try:
        if http:
            console.print(f"orch mcp on http://{host}:{port}/mcp (Ctrl-C stops)")
            asgi = http_app(server, host, port, token)
            uvicorn.run(asgi, host=host, port=port, log_level="warning")
        else:
            server.run()
    finally:
        ledger.close()


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@app.command("report")
def report_command(
    result: Annotated[Path, typer.Argument(help="a bench/results/<timestamp>.json file")],
    fmt: Annotated[str, typer.Option("--format", help="html or md")] = "html",
    out_path: Annotated[
        Path | None, typer.Option("--out", help="where to write (default: next to the JSON)")
    ] = None,
) -> None:
    """Render a benchmark result as an HTML (with plots) or Markdown report."""
    if fmt not in ("html", "md"):
        raise _fail("--format must be html or md", EXIT_BAD_INPUT)
    try:
        data = json.loads(result.read_text(encoding="utf-8"))
        text = render_html(data) if fmt == "html" else render_markdown(data)
    except FileNotFoundError as exc:
        raise _fail(f"{result} does not exist", EXIT_BAD_INPUT) from exc
    except (ValueError, KeyError) as exc:
        raise _fail(f"{result} is not an orch bank result: {exc}", EXIT_BAD_INPUT) from exc
    target = out_path or result.with_suffix(f".{fmt}")
    target.write_text(text, encoding="utf-8")
    out.print(f"report written to {target}")


@app.command("stats")
def stats_command(
    path: Annotated[
        Path, typer.Argument(help="a project folder or file (finds its ledger)")
    ] = Path("."),
    db: Annotated[str | None, typer.Option(help="ledger URL or SQLite path")] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Summarise the ledger: goals, attempts, proofs, strategies, recent runs."""
    if not path.exists():
        raise _fail(f"{path} does not exist", EXIT_BAD_INPUT)
    ledger = _open_ledger(db, path)
    try:
        stats = ledger.stats()
    except LedgerError as exc:
        raise _fail(str(exc)) from exc
    finally:
        ledger.close()
    if as_json:
        out.print_json(json.dumps(stats))
        return
    out.print(f"Ledger: {stats['url']}")
    out.print(
        f"Goals: {stats['goals'] or 'none'}; attempts: {stats['attempts'] or 'none'}; "
        f"verified proofs: {stats['proofs']}; CPU: {stats['cpu_seconds']:.1f} s"
    )
    llm = stats["llm"]
    if llm["attempts"]:
        out.print(
            f"Model spend: ${llm['cost_usd']:.4f} on {llm['attempts']} attempts, "
            f"{llm['tokens_in']} tokens in, {llm['tokens_out']} out, {llm['llm_seconds']:.1f} s"
        )
    table = Table(title="Strategies")
    for column in ("strategy", "attempts", "proved", "cpu s"):
        table.add_column(column)
    for s in stats["strategies"]:
        table.add_row(
            s["strategy"], str(s["attempts"]), str(s["proved"]), f"{s['cpu_seconds']:.1f}"
        )
    out.print(table)
    runs = Table(title="Recent runs")
    for column in ("id", "command", "status", "started", "finished"):
        runs.add_column(column)
    for r in stats["recent_runs"]:
        runs.add_row(
            str(r["id"]), r["command"], r["status"], r["started_at"] or "", r["finished_at"] or ""
        )
    out.print(runs)


@app.command("config")
def config_command(
    path: Annotated[Path, typer.Argument(help="a project folder or file")] = Path("."),
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Show every setting, its value and where it comes from (flag > env > file > default)."""
    if not path.exists():
        raise _fail(f"{path} does not exist", EXIT_BAD_INPUT)
    try:
        settings, sources = load_settings(project_for(path).root)
    except ConfigError as exc:
        raise _fail(str(exc), EXIT_BAD_INPUT) from exc
    rows = [(name, getattr(settings, name), sources[name]) for name in settings.__slots__]
    if as_json:
        out.print_json(json.dumps({n: {"value": v, "source": src} for n, v, src in rows}))
        return
    table = Table(title="orch config")
    for column in ("setting", "value", "source", "environment variable"):
        table.add_column(column)
    for name, value, source in rows:
        table.add_row(name, str(value), source, env_name(name))
    out.print(table)


@app.command("doctor")
def doctor_command(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Which provers and tools are available, with versions, and what is missing."""
    checks = run_checks()
    if as_json:
        out.print_json(
            json.dumps(
                [
                    c.__dict__
                    if hasattr(c, "__dict__")
                    else {
                        "name": c.name,
                        "found": c.found,
                        "version": c.version,
                        "detail": c.detail,
                        "need": c.need,
                    }
                    for c in checks
                ]
            )
        )
    else:
        table = Table(title="orch doctor")
        for column in ("tool", "status", "version", "detail", "needed for"):
            table.add_column(column)
        for c in checks:
            status = (
                "[green]found[/]"
                if c.found
                else ("[red]missing[/]" if c.need == "required" else "[yellow]missing[/]")
            )
            table.add_row(
                c.name,
                status,
                c.version,
                c.detail,
                "the Coq pipeline" if c.need == "required" else "optional",
            )
        out.print(table)
    if any(c.need == "required" and not c.found for c in checks):
        raise typer.Exit(1)


@app.command("eval")
def eval_command(
    paths: Annotated[
        list[Path], typer.Argument(help="Coq files or folders whose Qed proofs to re-prove")
    ],
    budget: Annotated[float, typer.Option(help="CPU seconds per goal and per arm")] = 10.0,
    baseline: Annotated[
        list[str] | None,
        typer.Option(
            help="peers run on the same goals: hammer (`Timeout B hammer.`, CoqHammer's "
            "defaults), hammer-capped (as the portfolio runs it), tactics"
        ),
    ] = None,
    limit: Annotated[int | None, typer.Option(help="only the first N goals")] = None,
    sample: Annotated[
        int | None, typer.Option(help="N goals drawn at random (seeded) from all the files")
    ] = None,
    seed: Annotated[int, typer.Option(help="seed of the arm order and of --sample")] = 0,
    workers: Annotated[int, typer.Option(help="files evaluated at once")] = 1,
    out_dir: Annotated[Path, typer.Option("--out", help="where the result JSON goes")] = Path(
        "bench/results"
    ),
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Hide each Qed proof and re-prove it with only what precedes it (position-faithful)."""
    files = [p for p in collect_files(paths) if p.suffix == ".v"] if paths else []
    if not files:
        raise _fail("no .v files to evaluate", EXIT_BAD_INPUT)
    try:
        resolve("coqtop")
    except ProverNotFound as exc:
        raise _fail(str(exc), EXIT_BAD_INPUT) from exc
    progress = _EvalTracker()
    out_dir.mkdir(parents=True, exist_ok=True)
    journal = out_dir / f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}-eval.partial.jsonl"
    try:
        with progress.live(), contextlib.redirect_stdout(sys.stderr):
            result = _run(
                evaluate(
                    files,
                    budget=budget,
                    baselines=baseline or (),
                    seed=seed,
                    limit=limit,
                    sample=sample,
                    workers=workers,
                    on_goal=progress.goal,
                    on_total=progress.total,
                    journal=journal,
                )
            )
    except OrchError as exc:
        raise _fail(str(exc), EXIT_BAD_INPUT) from exc
    path = write_result(result, out_dir)
    journal.unlink(missing_ok=True)
    if as_json:
        out.print_json(json.dumps({k: v for k, v in result.items() if k != "rows"}))
        return
    table = Table(title=f"orch eval: {result['goals']} goals, {budget:g} CPU s each")
    for column in ("arm", "solved", "rate", "CPU s", "PAR-2", "by strategy"):
        table.add_column(column)
    for arm, a in result["arms"].items():
        table.add_row(
            arm,
            str(a["solved"]),
            f"{a['rate']:.1%}",
            f"{a['cpu_seconds']:.0f}",
            f"{a['par2']:.2f}",
            ", ".join(f"{k} {v}" for k, v in sorted(a["per_strategy"].items())),
        )
    out.print(table)
    if "baselines_union" in result:
        out.print(f"baselines together: {result['baselines_union']} goals")
    if result["unloadable"]:
        out.print(
            f"{len(result['unloadable'])} goal(s) not scored: their file does not load up to "
            "them with CoqHammer loaded in front (see 'unloadable' in the JSON)"
        )
    out.print(f"Result: {path}")


@app.command("golf")
def golf_command(
    paths: Annotated[list[Path], typer.Argument(help=".v files, directories or _CoqProject files")],
    only: Annotated[
        list[str] | None, typer.Option(help="golf only this lemma (repeatable)")
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="find and verify shorter proofs, write nothing")
    ] = False,
    db: Annotated[str | None, typer.Option(help="ledger URL or SQLite path")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the result as JSON")] = False,
    tactic_timeout: TacticTimeout = None,
    cpu_target: CpuTarget = None,
) -> None:
    """Shorten finished (Qed) Coq proofs; keep a shorter one only if the whole file verifies."""
    _check_inputs(paths)
    coq_files = [p for p in collect_files(paths) if p.suffix == ".v"]
    settings = _settings(paths[0], locals())
    options = _options(settings, dry_run=dry_run)
    ledger = _open_ledger(db, paths[0])
    try:
        with contextlib.redirect_stdout(sys.stderr):
            report = _run(golf_files(coq_files, ledger, options, names=frozenset(only or ())))
    except OrchError as exc:
        raise _fail(str(exc)) from exc
    finally:
        ledger.close()
    summary = report.summary()
    if as_json:
        out.print_json(json.dumps(summary))
        _exit_if_unreadable(report.files)
        return
    table = Table(title="shortened proofs")
    for column in ("lemma", "before", "after"):
        table.add_column(column, overflow="fold")
    for proof in report.shortened:
        if proof.accepted:
            table.add_row(proof.name, " ".join(proof.before), " ".join(proof.after))
    out.print(table)
    for file_report in report.files:
        if file_report.status not in (FileStatus.DONE, FileStatus.UNREADABLE):
            out.print(
                f"[red]{file_report.path}[/]: {file_report.status.value}. "
                f"{file_report.message[:300]}"
            )
    verb = "would be" if dry_run else "were"
    out.print(
        f"{summary['shortened']}/{report.proofs} proofs {verb} shortened; total length "
        f"{report.chars_before} -> {report.chars_after} characters, "
        f"{report.sentences_before} -> {report.sentences_after} sentences; "
        f"{report.cpu_seconds:.1f} CPU s, {report.wall_seconds:.1f} s wall"
    )
    _exit_if_unreadable(report.files)


market_app = typer.Typer(help="The helper-lemma market: tickets published by `fill --profile 2`.")
app.add_typer(market_app, name="market")
LedgerOpt = Annotated[str | None, typer.Option("--db", help="ledger URL or SQLite path")]


def _market_ledger(db: str | None) -> Ledger:
    return _open_ledger(db, Path.cwd())


@market_app.command("list")
def market_list_command(
    state: Annotated[str | None, typer.Option(help="only tickets in this state")] = None,
    db: LedgerOpt = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Every ticket: state, helper name, statement, who holds it."""
    ledger = _market_ledger(db)
    try:
        expired = ledger.expire_leases()
        rows = ledger.tickets(state)
    finally:
        ledger.close()
    if as_json:
        out.print_json(
            json.dumps(
                [
                    {"id": t.id, "state": t.state, "name": t.name, "statement": t.statement}
                    for t in rows
                ]
            )
        )
        return
    table = Table(title="helper-lemma tickets")
    for column in ("#", "state", "helper", "statement", "claimed by"):
        table.add_column(column, overflow="fold")
    for t in rows:
        table.add_row(str(t.id), t.state, t.name, t.statement, t.claimed_by or "")
    out.print(table)
    if expired:
        out.print(f"{expired} expired lease(s) returned to open")


@market_app.command("show")
def market_show_command(ticket_id: int, db: LedgerOpt = None) -> None:
    """One ticket in full, with its proof when completed."""
    ledger = _market_ledger(db)
    try:
        ticket = ledger.ticket(ticket_id)
    finally:
        ledger.close()
    if ticket is None:
        raise _fail(f"no ticket {ticket_id}", EXIT_BAD_INPUT)
    out.print(f"ticket {ticket.id}: {ticket.state}")
    out.print(f"helper    {ticket.name}")
    out.print(f"statement {ticket.statement}")
    out.print(f"for goal  {ticket.parent_goal_id}")
    out.print(f"priority  {ticket.priority}")
    if ticket.claimed_by:
        out.print(f"claimed by {ticket.claimed_by} until {ticket.lease_until}")
    if ticket.proof:
        out.print("proof     " + " ".join(ticket.proof))


@market_app.command("cancel")
def market_cancel_command(ticket_id: int, db: LedgerOpt = None) -> None:
    """Cancel an open or claimed ticket."""
    ledger = _market_ledger(db)
    try:
        cancelled = ledger.cancel_ticket(ticket_id)
    finally:
        ledger.close()
    if not cancelled:
        raise _fail(f"ticket {ticket_id} does not exist or is not open or claimed", EXIT_BAD_INPUT)
    out.print(f"ticket {ticket_id} cancelled")


blueprint_app = typer.Typer(help="leanblueprint: keep \\leanok honest, report coverage.")
app.add_typer(blueprint_app, name="blueprint")


def _lean_sources(root: Path) -> list[Path]:
    return [
        p
        for p in sorted(root.rglob("*.lean"))
        if not any(part.startswith(".") or part == "lake-packages" for part in p.parts)
    ]


@blueprint_app.command("sync")
def blueprint_sync_command(
    content: Annotated[Path, typer.Argument(help="the blueprint's content.tex")],
    project: Annotated[
        Path | None,
        typer.Option(help="the Lean project (default: the folder with the lakefile above)"),
    ] = None,
    check: Annotated[
        bool, typer.Option("--check", help="change nothing; exit 1 if the file is out of date")
    ] = False,
) -> None:
    """Add \\leanok where the declarations exist and are proved, remove stale ones, print
    coverage. Nothing else in the file changes."""
    if not content.is_file():
        raise _fail(f"{content} does not exist", EXIT_BAD_INPUT)
    root = project or LeanProject.for_file(content.resolve()).root
    sources = _lean_sources(root)
    if not sources:
        raise _fail(f"no .lean files under {root}; pass --project", EXIT_BAD_INPUT)
    text = content.read_text(encoding="utf-8")
    try:
        new_text, coverage, changes = sync(text, scan_declarations(sources))
    except OrchError as exc:
        raise _fail(str(exc), EXIT_BAD_INPUT) from exc
    for change in changes:
        out.print(change)
    out.print(
        f"coverage: {coverage.stated}/{coverage.total} stated, "
        f"{coverage.proved}/{coverage.total} proved ({len(sources)} Lean files under {root})"
    )
    if check:
        if new_text != text:
            raise typer.Exit(1)
        return
    if new_text != text:
        write_atomic(content, new_text, text)


lean_app = typer.Typer(help="Lean 4 projects: prepare the REPL that orch talks to.")
app.add_typer(lean_app, name="lean")


@lean_app.command("setup")
def lean_setup_command(
    project: Annotated[
        Path, typer.Argument(help="the Lean project folder (with lean-toolchain)")
    ] = Path("."),
    force: Annotated[bool, typer.Option("--force", help="clone and build again")] = False,
) -> None:
    """Build leanprover-community/repl for the project's toolchain and record where it is.

    Clones the REPL tag that matches `lean-toolchain` into ~/.cache/orch/lean-repl,
    runs `lake build` there, and records the binary. ORCH_LEAN_REPL overrides it.
    """
    try:
        result = setup_repl(project, force=force)
    except LeanSetupError as exc:
        raise _fail(str(exc), EXIT_BAD_INPUT) from exc
    verb = "built" if result.built else "already built"
    out.print(f"Lean REPL for {result.toolchain}: {verb} at {result.binary}")
    out.print("Next: orch fill <your project folder>")


def main() -> None:  # pragma: no cover - console entry point
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
