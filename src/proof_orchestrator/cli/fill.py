"""``orch fill`` and ``orch bg``: fill a project's holes once, or keep filling them."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from ..backends import project_builders
from ..errors import OrchError
from ..goals import Outcome
from ..learn import MINING
from ..provers.accounting import PROVER_PROCESSES
from ..run.pipeline import FileStatus, FillReport, fill
from ..search.memory import MEMORY_COUNTS
from ..workflows.background import run_background
from ..workflows.blueprint import critical_path_weights
from ..workflows.gitops import GitError, GitRepo, ProofBranch, publish
from ..workflows.repair import RepairReport
from .common import (
    EXIT_BAD_INPUT,
    EXIT_NOT_CHECKED,
    check_inputs,
    console,
    exit_if_unreadable,
    fail,
    fill_options,
    load_command_settings,
    open_ledger,
    out,
    ready_repo,
    run_command,
)
from .options import AllowDirty, PushOpt, SettingFlags, settings_flags
from .progress import Tracker
from .project import print_model


def goal_table(report: FillReport) -> Table:
    table = Table(title="Holes")
    for column in ("file", "line", "lemma", "result", "strategy", "script", "cpu s"):
        table.add_column(column, overflow="fold")
    for file_report in report.files:
        for g in file_report.goals:
            colour = {"proved": "green", "rejected": "red", "error": "red"}.get(
                g.outcome.value, "yellow"
            )
            uses = ", ".join(use.label for use in g.uses_holes)
            table.add_row(
                file_report.path.name,
                str(g.goal.line),
                g.goal.name,
                f"[{colour}]{g.outcome.value}[/]" + (f" (uses {uses})" if uses else ""),
                g.strategy,
                " ".join(g.sentences) if g.outcome is Outcome.PROVED else g.message[:60],
                f"{g.cpu_seconds:.2f}",
            )
    return table


def fill_json(report: FillReport) -> dict[str, Any]:
    return {
        "run_id": report.run_id,
        "prover_version": report.prover_version,
        "proved": report.proved,
        "errors": report.errors,
        "goals": len(report.goals),
        "unchecked_files": [str(f.path) for f in report.unchecked],
        "build": report.build,
        "build_failures": report.build_failures,
        "next_steps": report.next_steps,
        "cpu_seconds": round(report.cpu_seconds, 3),
        "wall_seconds": round(report.wall_seconds, 3),
        # what learning from the visible proofs cost this process (mining, the cache)
        "learning": MINING.as_dict(),
        # what the searches reused of earlier ones (refuted tactics skipped, closings rerun)
        "search_memory": MEMORY_COUNTS.as_dict(),
        # what the prover processes cost outside attempts: starts, loads up to each hole
        "prover_processes": PROVER_PROCESSES.as_dict(),
        # per strategy: goal passes it was planned in, explored in, or rested from (no win yet)
        "strategy_plan": report.strategy_plan,
        "files": [
            {
                "path": str(f.path),
                "status": f.status.value,
                "written": f.written,
                "message": f.message,
                "verify_cpu_seconds": round(f.verify_cpu_seconds, 3),
                "verify_compiles": f.verify_compiles,
                "goals": [
                    {
                        "name": g.goal.name,
                        "line": g.goal.line,
                        "outcome": g.outcome.value,
                        "strategy": g.strategy,
                        "script": " ".join(g.sentences),
                        "cpu_seconds": round(g.cpu_seconds, 4),
                        "message": g.message,
                        # proved closed modulo these holes (empty: closed)
                        "uses_holes": [use.label for use in g.uses_holes],
                    }
                    for g in f.goals
                ],
            }
            for f in report.files
        ],
    }


@settings_flags()
def fill_command(
    paths: Annotated[
        list[Path], typer.Argument(help=".v and .lean files, directories or _CoqProject files")
    ],
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
    push: PushOpt = False,
    allow_dirty: AllowDirty = False,
    blueprint: Annotated[
        Path | None,
        typer.Option(help="a blueprint content.tex: goals on its critical path go first"),
    ] = None,
    *,
    flags: SettingFlags,
) -> None:
    """Find holes, search proofs, verify each file, and write verified proofs back.

    Before the search, the files that the files with holes import are compiled in
    dependency order with the project's flags (_CoqProject, dune, lakefile) into
    .orch/build, or by --build. --dry-run also prints the project's files in
    dependency order and what is built.

    Exit status: 0 every file with holes was checked (whatever was proved); 1 the
    run failed (a broken ledger or prover); 2 bad input (a missing path, an unreadable
    file, a bad setting, no prover); 3 some file with holes could not be checked (a
    file it imports could not be built, or it does not compile); 130 interrupted.
    """
    check_inputs(paths)
    repo: GitRepo | None = None
    if git:
        if git_per not in ("proof", "run"):
            raise fail("--git-per must be 'proof' or 'run'", EXIT_BAD_INPUT)
        repo = ready_repo(paths[0], allow_dirty)
    settings = load_command_settings(paths[0], flags)
    # with --git the proofs go to branches: the files in the working tree stay as they are
    weights: dict[str, float] = {}
    if blueprint is not None:
        try:
            weights = critical_path_weights(blueprint.read_text(encoding="utf-8"))
        except (OSError, OrchError) as exc:
            raise fail(f"cannot read the blueprint {blueprint}: {exc}", EXIT_BAD_INPUT) from exc
    options = dataclasses.replace(
        fill_options(settings, dry_run=dry_run or git),
        prioritize=frozenset(prioritize or ()),
        weights=weights,
    )
    if dry_run and not as_json:
        _print_projects(paths, settings.build)
    ledger = open_ledger(db, paths[0])
    try:
        tracker = Tracker("fill")
        # stdout carries only the result (libraries such as Ray print worker notices there)
        with tracker.live(), contextlib.redirect_stdout(sys.stderr):
            report = run_command(
                fill(
                    paths,
                    ledger,
                    options,
                    on_goal=tracker.goal,
                    on_files=tracker.files,
                    on_build=tracker.build.step,
                    on_board=tracker.follow,
                )
            )
    except OrchError as exc:
        raise fail(str(exc)) from exc
    finally:
        ledger.close()
    branches: list[ProofBranch] = []
    if repo is not None and not dry_run:
        try:
            branches, notes = publish(repo, report, per=git_per, push=push)
        except GitError as exc:
            raise fail(str(exc)) from exc
        for note in notes:
            console.print(note)
    if as_json:
        result = fill_json(report)
        if repo is not None:
            result["branches"] = [
                {"branch": b.branch, "commit": b.commit, "pr_body": str(b.pr_body)}
                for b in branches
            ]
        out.print_json(json.dumps(result))
        exit_if_unreadable(report.files)
        _exit_if_unchecked(report, quiet=True)
        return
    for b in branches:
        out.print(
            f"branch [bold]{b.branch}[/] {b.commit[:10]} ({', '.join(b.goals)}); "
            f"PR text {b.pr_body}"
        )
    out.print(goal_table(report))
    for f in report.files:
        if f.status not in (FileStatus.DONE, FileStatus.UNREADABLE):
            out.print(
                f"{f.path}: {f.status.value}: {f.message[:500]}",
                markup=False,
                highlight=False,
                soft_wrap=True,
            )
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
    exit_if_unreadable(report.files)
    _exit_if_unchecked(report)


def _print_projects(paths: list[Path], build: str) -> None:
    """``--dry-run``: each project's files in dependency order, and what is built."""
    seen: set[Path] = set()
    for path in paths:
        try:
            builders = project_builders(path.resolve(), build)
            models = [b.model() for b in builders]
        except OrchError as exc:
            console.print(f"[yellow]cannot read the project of {path}: {exc}[/]")
            continue
        for model in models:
            if model.root not in seen:
                seen.add(model.root)
                print_model(model, out)


def _exit_if_unchecked(report: FillReport, *, quiet: bool = False) -> None:
    """Exit 3 when a file with holes could not be checked; the last line says what to do."""
    unchecked = report.unchecked
    if not unchecked:
        return
    if not quiet:
        steps = report.next_steps or [
            f"{len(unchecked)} file(s) could not be checked: fix "
            + ", ".join(f.message.split(": ", 1)[0] for f in unchecked[:3])
            + ", then run orch fill again"
        ]
        for step in steps:
            out.print(f"next: {step}", markup=False, highlight=False, soft_wrap=True)
    raise typer.Exit(EXIT_NOT_CHECKED)


@settings_flags()
def bg_command(
    paths: Annotated[
        list[Path], typer.Argument(help=".v and .lean files, directories or _CoqProject files")
    ],
    duration: Annotated[
        float | None, typer.Option(help="stop after this many seconds (default: run until stopped)")
    ] = None,
    db: Annotated[str | None, typer.Option(help="ledger URL or SQLite path")] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="print a JSON summary at the end")
    ] = False,
    repair: Annotated[
        bool,
        typer.Option(
            "--repair/--no-repair",
            help="repair the proofs an edit broke (orch repair's detection and repair on "
            "the edited files and the files that import them, and on files that do not "
            "compile before their first hole)",
        ),
    ] = True,
    *,
    flags: SettingFlags,
) -> None:
    """Keep filling holes: revisit stuck goals, react to edits (repairing the proofs they
    broke, unless --no-repair), hold the CPU target."""
    check_inputs(paths)
    if duration is not None and duration <= 0:
        raise fail("--duration must be positive", EXIT_BAD_INPUT)
    settings = load_command_settings(paths[0], flags)
    ledger = open_ledger(db, paths[0])

    def cycle(number: int, report: FillReport | None, next_step: str) -> None:
        if report is None:
            console.print(f"[yellow]{next_step}[/]")
            return
        console.print(
            f"cycle {number}: {report.proved}/{len(report.goals)} holes proved, "
            f"{report.cpu_seconds:.1f} CPU s; {next_step}"
        )
        for file in report.files:
            if file.status in (FileStatus.CHANGED, FileStatus.WRITE_FAILED):
                # verified proofs stay in the ledger; the next cycle writes them
                console.print(
                    f"  {file.path.name}: proofs not written: {file.message}",
                    markup=False,
                    highlight=False,
                )

    def repaired(report: RepairReport) -> None:
        for proof in report.broken:
            done = "repaired" if proof.repaired else "not repaired"
            console.print(
                f"broken proof {proof.file.name}:{proof.line} {proof.name} ({proof.kind}): {done}",
                markup=False,
                highlight=False,
            )

    console.print(
        f"orch bg: working on {', '.join(map(str, paths))} "
        f"(CPU target {settings.cpu_target:.0%}); Ctrl-C stops"
    )
    try:
        result = run_command(
            run_background(
                paths,
                ledger,
                fill_options(settings),
                duration=duration,
                on_cycle=cycle,
                repair=repair,
                on_repair=repaired,
            )
        )
    except OrchError as exc:
        raise fail(str(exc)) from exc
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
                    "broken": result.broken,
                    "repaired": result.repaired,
                    "ledger_errors": result.ledger_errors,
                    "wall_seconds": round(result.wall_seconds, 3),
                    "mean_cpu_fraction": round(mean, 4),
                }
            )
        )
        return
    out.print(
        f"{result.cycles} cycle(s), {result.proved} proof(s) written, {result.repaired}/"
        f"{result.broken} broken proof(s) repaired, {result.restarts} restart(s) after edits, "
        f"{result.wall_seconds:.0f} s; mean CPU {mean:.2f} of the machine"
    )
