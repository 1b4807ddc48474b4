"""The ``orch`` command: thin Typer commands over the pipeline, the bank and the ledger.

One module per command group; this one only assembles them, in the order
``orch --help`` lists them:

- :mod:`.fill`: ``fill``, ``bg``; :mod:`.bank`: ``bank``
- :mod:`.serve`: ``dashboard``, ``mcp``
- :mod:`.info`: ``report``, ``stats``, ``config``, ``doctor``; :mod:`.project`: ``info``
- :mod:`.eval`: ``eval``; :mod:`.golf`: ``golf``; :mod:`.repair`: ``repair``
- :mod:`.market`, :mod:`.blueprint`, :mod:`.lean`: the sub-commands of each

:mod:`.common` holds what they share (consoles, exit codes, settings, the
ledger), :mod:`.options` the shared flags, :mod:`.progress` the live views.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated

import typer

from .bank import bank_command
from .blueprint import blueprint_app
from .eval import eval_command
from .fill import bg_command, fill_command
from .golf import golf_command
from .info import config_command, doctor_command, report_command, stats_command
from .lean import lean_app
from .market import market_app
from .project import info_command
from .repair import repair_command
from .serve import dashboard_command, mcp_command

__all__ = ["app", "main"]

app = typer.Typer(
    help=(
        "Fill the holes of Coq files (Admitted.) and Lean 4 files (sorry) with proofs "
        "found by search and checked by the prover (coqc, or lake env lean)."
    ),
    no_args_is_help=True,
    add_completion=False,
)


@app.callback()
def _root(
    log_file: Annotated[
        Path | None,
        typer.Option(
            "--log-file",
            envvar="ORCH_LOG_FILE",
            help=(
                "Append a debug log to this file: prover processes started, loaded, "
                "reused and killed, and why (for reports and for finding where CPU goes)."
            ),
        ),
    ] = None,
) -> None:
    if log_file is not None:
        handler = logging.FileHandler(log_file, encoding="utf-8")
        handler.setFormatter(
            logging.Formatter("%(asctime)s %(process)d %(name)s %(levelname)s %(message)s")
        )
        package = logging.getLogger("proof_orchestrator")
        package.addHandler(handler)
        package.setLevel(logging.DEBUG)


app.command("fill")(fill_command)
app.command("bank")(bank_command)
app.command("bg")(bg_command)
app.command("dashboard")(dashboard_command)
app.command("mcp")(mcp_command)
app.command("report")(report_command)
app.command("stats")(stats_command)
app.command("config")(config_command)
app.command("info")(info_command)
app.command("doctor")(doctor_command)
app.command("eval")(eval_command)
app.command("golf")(golf_command)
app.command("repair")(repair_command)
app.add_typer(market_app, name="market")
app.add_typer(blueprint_app, name="blueprint")
app.add_typer(lean_app, name="lean")


def main() -> None:  # pragma: no cover - console entry point
    app()
