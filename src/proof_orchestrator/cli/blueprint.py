"""``orch blueprint``: keep a leanblueprint's ``\\leanok`` marks honest."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer

from ..backends import backend_named
from ..errors import OrchError
from ..ledger import default_ledger_url
from ..project.locks import file_lock
from ..project.patch import write_atomic
from ..workflows.blueprint import scan_declarations, sync
from .common import (
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    fail,
    open_ledger,
    out,
)

blueprint_app = typer.Typer(help="leanblueprint: keep \\leanok honest, report coverage.")


def _lean_sources(root: Path) -> list[Path]:
    return [
        p
        for p in sorted(root.rglob("*.lean"))
        if not any(part.startswith(".") or part == "lake-packages" for part in p.parts)
    ]


def _modulo_holes(db: str | None, root: Path) -> dict[str, list[str]]:
    """Lean declaration -> holes still open its proof rests on, from the ledger
    (``db``, else the project's ledger if it exists; none: nothing is modulo holes)."""
    url = db or default_ledger_url(root)
    if db is None and url.startswith("sqlite:///") and not Path(url[10:]).is_file():
        return {}
    ledger = open_ledger(url, root)
    try:
        rows = ledger.modulo_holes()
    finally:
        ledger.close()
    return {row["name"]: row["open"] for row in rows if str(row["file"]).endswith(".lean")}


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
    db: Annotated[
        str | None,
        typer.Option(
            help="ledger URL or SQLite path, for the proofs closed modulo holes "
            "(default: the project's ledger, when there is one)"
        ),
    ] = None,
) -> None:
    """Add \\leanok where the declarations exist and are proved, remove stale ones, print
    coverage. Nothing else in the file changes."""
    if not content.is_file():
        raise fail(f"{content} does not exist", EXIT_BAD_INPUT)
    root = project or backend_named("lean").project_root(content.resolve())
    sources = _lean_sources(root)
    if not sources:
        raise fail(f"no .lean files under {root}; pass --project", EXIT_BAD_INPUT)
    text = content.read_text(encoding="utf-8")
    try:
        new_text, coverage, changes = sync(
            text, scan_declarations(sources), _modulo_holes(db, root)
        )
    except OrchError as exc:
        raise fail(str(exc), EXIT_BAD_INPUT) from exc
    for change in changes:
        out.print(change)
    out.print(
        f"coverage: {coverage.stated}/{coverage.total} stated, "
        f"{coverage.proved}/{coverage.total} proved ({coverage.closed} closed, "
        f"{coverage.modulo_holes} closed modulo holes) ({len(sources)} Lean files under {root})"
    )
    if check:
        if new_text != text:
            raise typer.Exit(1)
        return
    if new_text != text:
        try:
            asyncio.run(_write(content, new_text, text))
        except OrchError as exc:  # the file changed meanwhile, or the disk failed
            raise fail(str(exc), EXIT_FAILED) from exc


async def _write(content: Path, new_text: str, text: str) -> None:
    """The commit step's write (no proof, no ledger): under the file's lock, only if
    ``content`` still holds ``text`` (else FileChangedError: the user's edit stays)."""
    async with file_lock(content):
        write_atomic(content, new_text, text)
