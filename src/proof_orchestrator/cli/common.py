"""What the commands share: consoles, exit codes, running a coroutine, settings, the ledger."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import signal
import sys
from collections.abc import Coroutine, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import typer
from rich.console import Console

from ..backends import check_imports, project_root
from ..config import ConfigError, Settings, load_settings
from ..errors import LedgerError, OrchError, PathNotFound, ProverNotFound
from ..ledger import Ledger, default_ledger_url
from ..provers.process import MEMORY_LIMIT, resolve
from ..run.pipeline import FileReport, FileStatus, FillOptions, collect_files
from ..workflows.gitops import GitError, GitRepo

console = Console(stderr=True)
out = Console()

T = TypeVar("T")

#: exit codes (README "Exit status"): 0 every file with holes was checked, 1 the run
#: failed (a broken part: the ledger, a prover), 2 bad input, 3 some file with holes
#: could not be checked (a file it imports could not be built, or it does not compile),
#: 130 interrupted
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_NOT_CHECKED = 3
EXIT_INTERRUPTED = 130


def run_command(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro``; SIGINT and SIGTERM cancel it (cleanup runs), then exit 130."""

    async def main() -> T:
        task = asyncio.current_task()
        loop = asyncio.get_running_loop()
        if task is not None:
            loop.add_signal_handler(signal.SIGTERM, task.cancel)
        try:
            return await coro
        finally:
            loop.remove_signal_handler(signal.SIGTERM)

    try:
        return asyncio.run(main())
    except (KeyboardInterrupt, asyncio.CancelledError):
        console.print(
            "[yellow]Interrupted.[/] Files hold either their old text or verified proofs; "
            "every finished attempt is in the ledger. Run the same command again to resume."
        )
        raise typer.Exit(EXIT_INTERRUPTED) from None


def run_on_ledger(coro: Coroutine[Any, Any, T], ledger: Ledger) -> T:
    """:func:`run_command` for a command that reports at the end: its progress goes to
    stderr, an :class:`~..errors.OrchError` exits with its message, and ``ledger``
    is closed whatever happens."""
    try:
        with contextlib.redirect_stdout(sys.stderr):
            return run_command(coro)
    except OrchError as exc:
        raise fail(str(exc)) from exc
    finally:
        ledger.close()


def ready_repo(anchor: Path, allow_dirty: bool) -> GitRepo:
    """The git repository holding ``anchor``, checked ready for ``--git`` (exit 2 if not)."""
    try:
        repo = GitRepo(anchor.resolve())
        repo.check_ready(allow_dirty)
    except GitError as exc:
        raise fail(str(exc), EXIT_BAD_INPUT) from exc
    return repo


def fail(message: str, code: int = 1) -> typer.Exit:
    """Print ``message`` as an error on stderr; the caller raises the exit it returns."""
    console.print(f"[red]error:[/] {message}")
    return typer.Exit(code)


def exit_if_unreadable(files: Sequence[FileReport]) -> None:
    """One line on stderr for each input that could not be read, then exit code 2."""
    unreadable = [f for f in files if f.status is FileStatus.UNREADABLE]
    for f in unreadable:
        console.print(f"orch: {f.message}", soft_wrap=True, markup=False, highlight=False)
    if unreadable:
        raise typer.Exit(EXIT_BAD_INPUT)


def load_command_settings(anchor: Path, flags: Mapping[str, object]) -> Settings:
    """Settings for the project at ``anchor``, ``flags`` (None: not given) over the rest.

    The command's children started without a memory cap of their own (builds,
    verification) get the settings' ``prover_memory_mb``.
    """
    try:
        settings, _ = load_settings(project_root(anchor), flags)
        check_imports(settings.allowed_imports)
    except ConfigError as exc:
        raise fail(str(exc), EXIT_BAD_INPUT) from exc
    MEMORY_LIMIT.set(settings.prover_memory_mb * 1024**2)
    return settings


#: where ``orch bank`` and ``orch eval`` write their results unless ``--out`` says otherwise
#: (relative to the folder they run in)
RESULTS = Path(".orch/results")


def results_folder(path: Path) -> Path:
    """``path`` made ready for result files; exit 2 if it cannot be a folder.

    A name ending in ``.json`` is refused: ``--out`` names the folder the results
    go into, and a folder named like a file is a trap for whoever reads it.
    """
    if path.suffix.lower() == ".json":
        raise fail(
            f"--out {path} is named like a JSON file, but it is the folder the results go "
            f"into (as <timestamp>.json): give a folder, e.g. --out {path.with_suffix('')}",
            EXIT_BAD_INPUT,
        )
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise fail(
            f"--out {path} cannot be used as the results folder: {exc}", EXIT_BAD_INPUT
        ) from exc
    return path


def check_inputs(paths: list[Path]) -> None:
    """Fail with exit 2 before any work if a path is missing or a needed prover is not installed."""
    try:
        files = collect_files(paths)
        if not files or any(p.suffix == ".v" for p in files):
            resolve("coqtop")
        if any(p.suffix == ".lean" for p in files) and not (
            shutil.which("lean") or shutil.which("lake")
        ):
            raise ProverNotFound(
                "these files include Lean sources but neither `lean` nor `lake` is on PATH. "
                "Install elan (https://github.com/leanprover/elan), then run "
                "`orch lean setup` in the project."
            )
    except (PathNotFound, ProverNotFound) as exc:
        raise fail(str(exc), EXIT_BAD_INPUT) from exc


def fill_options(settings: Settings, *, dry_run: bool = False) -> FillOptions:
    """The options of a run with ``settings``."""
    return FillOptions(dry_run=dry_run, orch=settings)


def open_ledger(db: str | None, anchor: Path) -> Ledger:
    """The ledger at ``db`` (a URL or an SQLite path), else the project's; exit 2 if unusable."""
    url = db or default_ledger_url(project_root(anchor))
    if "://" not in url:
        url = f"sqlite:///{Path(url).resolve()}"
    try:
        return Ledger(url)
    except LedgerError as exc:
        raise fail(str(exc), EXIT_BAD_INPUT) from exc
