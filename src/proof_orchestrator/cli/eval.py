"""``orch eval``: re-prove a library's ``Qed`` proofs against the baselines."""

from __future__ import annotations

import contextlib
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from ..errors import OrchError, ProverNotFound
from ..provers.process import resolve
from ..run.pipeline import collect_files
from ..workflows.evaluate import evaluate, write_result
from .common import (
    EXIT_BAD_INPUT,
    RESULTS,
    fail,
    load_command_settings,
    out,
    results_folder,
    run_command,
)
from .options import SettingFlags, settings_flags
from .progress import EvalTracker

#: the settings eval takes: each arm's budget per goal (one pass: it is also the cap), the
#: timeout of one tactic in every arm, the seed of the arm order and of --sample, and the
#: axiom audit
EVAL_SETTINGS = ("budget", "tactic_timeout", "seed", "strict_axioms")


@settings_flags(
    EVAL_SETTINGS,
    extra={"tactic_timeout": ("--tactic-seconds",)},
    notes={
        "budget": "CPU seconds per goal and per arm, one pass",
        "tactic_timeout": "timeout of one tactic in every arm",
        "seed": "seed of the arm order and of --sample",
    },
)
def eval_command(
    paths: Annotated[
        list[Path], typer.Argument(help="Coq files or folders whose Qed proofs to re-prove")
    ],
    baseline: Annotated[
        list[str] | None,
        typer.Option(
            help="peers run on the same goals: hammer (`Timeout B hammer.`, CoqHammer's "
            "defaults), hammer-capped (as the portfolio runs it), tactics (a fixed list, "
            "each under --tactic-seconds), solo:NAME (one strategy of the lineup alone, "
            "e.g. solo:search)"
        ),
    ] = None,
    portfolio: Annotated[
        bool, typer.Option(help="run the portfolio arm (--no-portfolio: the peers only)")
    ] = True,
    limit: Annotated[int | None, typer.Option(help="only the first N goals")] = None,
    sample: Annotated[
        int | None, typer.Option(help="N goals drawn at random (seeded) from all the files")
    ] = None,
    only: Annotated[
        list[str] | None, typer.Option(help="only the goals of this lemma name (repeatable)")
    ] = None,
    workers: Annotated[int, typer.Option(help="files evaluated at once")] = 1,
    out_dir: Annotated[
        Path,
        typer.Option(
            "--out", help="the folder the result JSON goes to (not a file: not named *.json)"
        ),
    ] = RESULTS,
    as_json: Annotated[bool, typer.Option("--json")] = False,
    resume: Annotated[
        Path | None,
        typer.Option(
            help="the *-eval.partial.jsonl journal of a run of the same files and options "
            "that stopped: its goals are not run again, and the run goes on in it",
            exists=True,
            dir_okay=False,
        ),
    ] = None,
    *,
    flags: SettingFlags,
) -> None:
    """Hide each Qed proof and re-prove it with only what precedes it (position-faithful)."""
    files = [p for p in collect_files(paths) if p.suffix == ".v"] if paths else []
    if not files:
        raise fail("no .v files to evaluate", EXIT_BAD_INPUT)
    try:
        resolve("coqtop")
    except ProverNotFound as exc:
        raise fail(str(exc), EXIT_BAD_INPUT) from exc
    # as for fill: a flag, else ORCH_*, else the project's file; one pass per arm, so the
    # budget is its own cap
    given = dict(flags)
    if given.get("budget") is not None:
        given["budget_cap"] = given["budget"]
    settings = load_command_settings(files[0], given)
    budget, seed = settings.budget, settings.seed
    out_dir = results_folder(out_dir)
    progress = EvalTracker()
    journal = resume or out_dir / f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}-eval.partial.jsonl"
    try:
        with progress.live(), contextlib.redirect_stdout(sys.stderr):
            result = run_command(
                evaluate(
                    files,
                    budget=budget,
                    baselines=baseline or (),
                    seed=seed,
                    limit=limit,
                    sample=sample,
                    only=only or (),
                    workers=workers,
                    portfolio=portfolio,
                    tactic_seconds=settings.tactic_timeout,
                    on_goal=progress.goal,
                    on_total=progress.total,
                    journal=journal,
                    strict_axioms=settings.strict_axioms,
                    resume=resume,
                )
            )
    except OrchError as exc:
        raise fail(str(exc), EXIT_BAD_INPUT) from exc
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
    if result.get("portfolio_lost"):
        lost = ", ".join(f"{g['name']} ({'/'.join(g['by'])})" for g in result["portfolio_lost"])
        out.print(f"proved by another arm, not by the portfolio: {lost}")
    if result["unloadable"]:
        out.print(
            f"{len(result['unloadable'])} goal(s) not scored: their file does not load up to "
            "them in the evaluation's session, which loads CoqHammer in front "
            "(the reasons are under 'unloadable' in the JSON)"
        )
    out.print(f"Result: {path}")
