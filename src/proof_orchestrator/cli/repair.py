"""``orch repair``: find the proofs that no longer check, and repair them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from ..run.pipeline import FileStatus, collect_files
from ..workflows.gitops import GitError, GitRepo, ProofBranch, publish_repairs
from ..workflows.repair import repair_files
from .common import (
    EXIT_BAD_INPUT,
    check_inputs,
    console,
    exit_if_unreadable,
    fail,
    fill_options,
    load_command_settings,
    open_ledger,
    out,
    ready_repo,
    run_on_ledger,
)
from .options import AllowDirty, PushOpt, SettingFlags, settings_flags


@settings_flags()
def repair_command(
    paths: Annotated[
        list[Path], typer.Argument(help=".v or .lean files, directories or _CoqProject files")
    ],
    admit_broken: Annotated[
        bool,
        typer.Option(
            "--admit-broken",
            help="replace what cannot be repaired with Admitted. and a comment naming the "
            "error, so that the files after it can be checked",
        ),
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="find, repair and verify, but write nothing")
    ] = False,
    git: Annotated[
        bool,
        typer.Option(
            "--git",
            help="put the repairs on branches auto/repair/... whose commit message and PR text "
            "list each repair, its cause and the diff of its proof (made in a git worktree; "
            "your files, index and branch are not touched)",
        ),
    ] = False,
    git_per: Annotated[
        str, typer.Option(help="with --git: a branch per 'file', per 'proof' or one per 'run'")
    ] = "file",
    push: PushOpt = False,
    allow_dirty: AllowDirty = False,
    db: Annotated[str | None, typer.Option(help="ledger URL or SQLite path")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the result as JSON")] = False,
    *,
    flags: SettingFlags,
) -> None:
    """Find the proofs an edit or an upgrade broke, repair them from the old proof, and
    write each repair once the whole file verifies (statements are never changed)."""
    check_inputs(paths)
    sources = [p for p in collect_files(paths) if p.suffix in (".v", ".lean")]
    if not sources:
        raise fail("no .v or .lean files to repair", 2)
    repo: GitRepo | None = None
    if git:
        if git_per not in ("file", "proof", "run"):
            raise fail("--git-per must be 'file', 'proof' or 'run'", EXIT_BAD_INPUT)
        repo = ready_repo(paths[0], allow_dirty)
    settings = load_command_settings(paths[0], flags)
    # with --git the repairs go to branches: the files in the working tree stay as they are
    options = fill_options(settings, dry_run=dry_run or git)
    ledger = open_ledger(db, paths[0])
    report = run_on_ledger(
        repair_files(sources, ledger, options, admit_broken=admit_broken), ledger
    )
    branches: list[ProofBranch] = []
    if repo is not None and not dry_run:
        try:
            branches, notes = publish_repairs(repo, report, per=git_per, push=push)
        except GitError as exc:
            raise fail(str(exc)) from exc
        for note in notes:
            console.print(note)
    summary = report.summary()
    if as_json:
        if repo is not None:
            summary["branches"] = [
                {
                    "branch": b.branch,
                    "commit": b.commit,
                    "pr_body": str(b.pr_body),
                    "repaired": list(b.goals),
                }
                for b in branches
            ]
        out.print_json(json.dumps(summary))
        exit_if_unreadable(report.files)
        return
    for b in branches:
        out.print(
            f"branch [bold]{b.branch}[/] {b.commit[:10]} ({', '.join(b.goals) or 'admitted'}); "
            f"PR text {b.pr_body}"
        )
    table = Table(title="broken proofs")
    for column in ("lemma", "kind", "broke at", "repaired with"):
        table.add_column(column, overflow="fold")
    for proof in report.broken:
        done = " ".join(proof.new) if proof.repaired else f"[red]not repaired[/] {proof.message}"
        table.add_row(
            f"{proof.file.name}:{proof.line} {proof.name}", proof.kind, proof.failing, done
        )
    out.print(table)
    for file_report in report.files:
        if file_report.status not in (FileStatus.DONE, FileStatus.UNREADABLE):
            out.print(
                f"[red]{file_report.path}[/]: {file_report.status.value}. "
                f"{file_report.message[:300]}"
            )
    for path, why in report.stuck.items():
        out.print(f"[yellow]{path}[/]: stopped looking: {why}")
    verb = "would be" if dry_run else "were"
    if repo is not None and not dry_run:
        out.print(f"{len(branches)} branch(es) made; the working tree is unchanged")
    out.print(
        f"{summary['repaired']}/{summary['broken']} broken proofs {verb} repaired; "
        f"{report.cpu_seconds:.1f} CPU s, {report.wall_seconds:.1f} s wall"
    )
    exit_if_unreadable(report.files)
