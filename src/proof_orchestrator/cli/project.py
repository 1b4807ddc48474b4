"""``orch info``: the project as its build tool sees it.

``orch info`` (and ``orch fill --dry-run``, before it searches) prints the
project's root and description, its logical names, and its files in
dependency order, each with the state of its compiled form (built, stale,
not built) and its holes.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from ..backends import load_source, project_builders
from ..errors import OrchError, UnreadableSource
from ..provers.build import FileBuild, ProjectModel
from .common import EXIT_BAD_INPUT, fail, out

__all__ = ["info_command", "model_json", "print_model"]


def _shown(path: Path, root: Path) -> str:
    return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)


def _holes(path: Path) -> int | None:
    try:
        return len(load_source(path)[1])
    except (UnreadableSource, OSError):
        return None


def _where(model: ProjectModel, output: Path | None) -> str:
    if output is None:
        return ""
    return _shown(output, model.root)


def model_json(model: ProjectModel) -> dict[str, Any]:
    return {
        "root": str(model.root),
        "kind": model.kind,
        "names": [{"logical": name, "folder": str(folder)} for name, folder in model.names],
        "build": model.build,
        "flags": [{"for": label, "flags": list(flags)} for label, flags in model.flags],
        "files": [
            {
                "path": _shown(f.path, model.root),
                "module": f.logical,
                "state": f.state.value,
                "compiled": _where(model, f.output),
                "imports": [_shown(d, model.root) for d in f.deps],
                "holes": _holes(f.path),
            }
            for f in model.files
        ],
    }


def print_model(model: ProjectModel, console: Console) -> None:
    """The project's root, names and files in dependency order with their state."""
    console.print(f"[bold]project[/] {model.root} ({model.kind})")
    for name, folder in model.names:
        console.print(f"  {name or '<empty prefix>'} -> {_shown(folder, model.root)}")
    console.print(f"  builds with: {model.build}")
    for label, flags in model.flags:
        console.print(f"  flags for {label}: {shlex.join(flags)}", markup=False)
    table = Table(title="files in dependency order", title_justify="left")
    for column in ("#", "file", "module", "state", "compiled file", "holes"):
        table.add_column(column, overflow="fold")
    colours = {FileBuild.BUILT: "green", FileBuild.STALE: "yellow", FileBuild.MISSING: "red"}
    for index, f in enumerate(model.files, 1):
        holes = _holes(f.path)
        table.add_row(
            str(index),
            _shown(f.path, model.root),
            f.logical,
            f"[{colours[f.state]}]{f.state.value}[/]",
            _where(model, f.output) if f.state is not FileBuild.MISSING else "",
            "?" if holes is None else str(holes),
        )
    console.print(table)
    counts = {state: sum(1 for f in model.files if f.state is state) for state in FileBuild}
    console.print(
        f"{len(model.files)} file(s): {counts[FileBuild.BUILT]} built, "
        f"{counts[FileBuild.STALE]} stale, {counts[FileBuild.MISSING]} not built"
    )


def info_command(
    path: Annotated[Path, typer.Argument(help="a project folder or one of its files")] = Path("."),
    build: Annotated[
        str | None, typer.Option("--build", help="the project's own build command, if any")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """The project as its build tool reads it: root, logical names, files in dependency
    order, and which are built or stale (_CoqProject, dune, lakefile)."""
    if not path.exists():
        raise fail(f"{path} does not exist", EXIT_BAD_INPUT)
    try:
        models = [b.model() for b in project_builders(path.resolve(), build or "")]
    except OrchError as exc:
        raise fail(str(exc)) from exc
    if not models:
        raise fail(
            f"{path} is in no project (no _CoqProject, dune-project or lakefile above it)",
            EXIT_BAD_INPUT,
        )
    if as_json:
        out.print_json(json.dumps([model_json(m) for m in models]))
        return
    for model in models:
        print_model(model, out)
