"""``orch golf``: shorten finished Coq proofs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from ..run.pipeline import FileStatus, collect_files
from ..workflows.golf import golf_files
from .common import (
    check_inputs,
    exit_if_unreadable,
    fill_options,
    load_command_settings,
    open_ledger,
    out,
    run_on_ledger,
)
from .options import SettingFlags, settings_flags

#: the settings golf uses: a tactic's timeout, and the machine share of its sessions
GOLF_SETTINGS = ("tactic_timeout", "cpu_target")


@settings_flags(GOLF_SETTINGS)
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
    *,
    flags: SettingFlags,
) -> None:
    """Shorten finished (Qed) Coq proofs; keep a shorter one only if the whole file verifies."""
    check_inputs(paths)
    coq_files = [p for p in collect_files(paths) if p.suffix == ".v"]
    settings = load_command_settings(paths[0], flags)
    options = fill_options(settings, dry_run=dry_run)
    ledger = open_ledger(db, paths[0])
    report = run_on_ledger(
        golf_files(coq_files, ledger, options, names=frozenset(only or ())), ledger
    )
    summary = report.summary()
    if as_json:
        out.print_json(json.dumps(summary))
        exit_if_unreadable(report.files)
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
    exit_if_unreadable(report.files)
