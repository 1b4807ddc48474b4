"""``orch bank``: the benchmark bank, on one executor or on both to compare them."""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from ..errors import OrchError, ProverNotFound
from ..provers.process import resolve
from ..run.pipeline import FillOptions
from ..workflows.bank import compare_executors, run_bank
from .common import (
    EXIT_BAD_INPUT,
    RESULTS,
    fail,
    fill_options,
    load_command_settings,
    out,
    results_folder,
    run_command,
)
from .options import SettingFlags, settings_flags
from .progress import Tracker


@settings_flags()
def bank_command(
    bank: Annotated[Path, typer.Option(help="the benchmark bank folder")] = Path("bench/bank"),
    out_dir: Annotated[
        Path,
        typer.Option(
            "--out", help="the folder the result JSON goes to (not a file: not named *.json)"
        ),
    ] = RESULTS,
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
    *,
    flags: SettingFlags,
) -> None:
    """Run the Coq benchmark bank on copies and write .orch/results/<timestamp>.json
    (or into --out)."""
    if not bank.is_dir():
        raise fail(
            f"{bank} does not exist; run from the repository root or pass --bank", EXIT_BAD_INPUT
        )
    if rounds < 1:
        raise fail("--rounds must be at least 1", EXIT_BAD_INPUT)
    try:
        resolve("coqtop")
    except ProverNotFound as exc:
        raise fail(str(exc), EXIT_BAD_INPUT) from exc
    out_dir = results_folder(out_dir)
    settings = load_command_settings(Path.cwd(), flags)
    options = fill_options(settings)
    if compare_executors:
        _compare_executors(bank, out_dir, options, as_json)
        return
    try:
        tracker = Tracker("bank")
        with tracker.live(), contextlib.redirect_stdout(sys.stderr):
            result, path = run_command(
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
        raise fail(str(exc)) from exc
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
        f"{overhead['prover_cpu_seconds']:.1f} s "
        f"({overhead['prover_writes']} writes to provers, "
        f"{overhead['orchestrator_ms_per_write'] or 0:.2f} ms of orchestrator CPU each)."
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
        tracker = Tracker("bank: local, then ray")
        with tracker.live(), contextlib.redirect_stdout(sys.stderr):
            result, path = run_command(
                compare_executors(
                    bank, out_dir, options, on_goal=tracker.goal, on_files=tracker.files
                )
            )
    except OrchError as exc:
        raise fail(str(exc)) from exc
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
