"""``orch repair``: find the proofs that no longer check, and repair them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from ..run.pipeline import FileStatus, collect_files
from ..workflows.repair import repair_files
from .common import (
    check_inputs,
    exit_if_unreadable,
    fail,
    fill_options,
    load_command_settings,
    open_ledger,
    out,
    run_on_ledger,
)
from .options import BudgetOpt, CpuTarget, Profile, TacticTimeout


def repair_command(
    paths: Annotated[list[Path], typer.Argument(help=".v files, directories or _CoqProject files")],
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
    db: Annotated[str | None, typer.Option(help="ledger URL or SQLite path")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the result as JSON")] = False,
    budget: BudgetOpt = None,
    tactic_timeout: TacticTimeout = None,
    cpu_target: CpuTarget = None,
    profile: Profile = None,
) -> None:
    """Find the proofs an edit or an upgrade broke, repair them from the old proof, and
    write each repair once the whole file verifies (statements are never changed)."""
    check_inputs(paths)
    coq_files = [p for p in collect_files(paths) if p.suffix == ".v"]
    if not coq_files:
        raise fail("no .v files to repair (orch repair works on Coq files)", 2)
    settings = load_command_settings(paths[0], locals())
    options = fill_options(settings, dry_run=dry_run)
    ledger = open_ledger(db, paths[0])
    report = run_on_ledger(
        repair_files(coq_files, ledger, options, admit_broken=admit_broken), ledger
    )
    summary = report.summary()
    if as_json:
        out.print_json(json.dumps(summary))
        exit_if_unreadable(report.files)
        return
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
    out.print(
        f"{summary['repaired']}/{summary['broken']} broken proofs {verb} repaired; "
        f"{report.cpu_seconds:.1f} CPU s, {report.wall_seconds:.1f} s wall"
    )
    exit_if_unreadable(report.files)
