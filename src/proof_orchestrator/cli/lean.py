"""``orch lean``: prepare the Lean REPL a project needs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..lean.setup import LeanSetupError, setup_repl
from .common import (
    EXIT_BAD_INPUT,
    fail,
    out,
)

lean_app = typer.Typer(help="Lean 4 projects: prepare the REPL that orch talks to.")


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
        raise fail(str(exc), EXIT_BAD_INPUT) from exc
    verb = "built" if result.built else "already built"
    out.print(f"Lean REPL for {result.toolchain}: {verb} at {result.binary}")
    out.print("Next: orch fill <your project folder>")
