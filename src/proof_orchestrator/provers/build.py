"""A project as its build tool sees it, and building what a run needs, as plain data.

A backend reads its project's description (``_CoqProject``, dune's
``coq.theory`` stanzas, a ``lakefile``) into a :class:`ProjectModel`: the
root, the logical names of its folders, its files in dependency order and
whether each one's compiled form is up to date. A :class:`ProjectBuilder`
builds the files that the files with holes need (in dependency order, into
``.orch/build`` or with the user's own build command) and reports what could
not be built as :class:`BuildFailure` lines (``file:line: the first error``).
The engine reaches both through :attr:`~.backend.ProjectTools.builder`;
``orch info`` through the backend's ``build`` feature.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

__all__ = [
    "BuildFailure",
    "BuildResult",
    "BuildStep",
    "FileBuild",
    "ProjectBuilder",
    "ProjectFile",
    "ProjectModel",
    "ReadersWriter",
    "StepCallback",
]


class FileBuild(enum.StrEnum):
    """Where a file's compiled form stands."""

    #: compiled and up to date (in the user's tree or in ``.orch/build``)
    BUILT = "built"
    #: compiled, but its source or a dependency changed since
    STALE = "stale"
    #: never compiled
    MISSING = "not built"


@dataclass(frozen=True, slots=True)
class ProjectFile:
    """One source file of a project."""

    path: Path
    #: its module's full name (``RegLang.dfa``)
    logical: str
    #: the project files it imports (directly)
    deps: tuple[Path, ...]
    state: FileBuild
    #: the compiled file that is (or would be) loaded for it
    output: Path | None = None


@dataclass(frozen=True, slots=True)
class ProjectModel:
    """A project: where it is, what describes it, its logical names and files."""

    root: Path
    #: ``_CoqProject``, ``dune``, ``lakefile.lean``, ``lakefile.toml`` or ``none``
    kind: str
    #: (logical prefix, folder) pairs
    names: tuple[tuple[str, Path], ...] = ()
    #: in dependency order (a file after every file it imports)
    files: tuple[ProjectFile, ...] = ()
    #: where the orchestrator builds (``<root>/.orch/build``), or the user's build command
    build: str = ""
    #: the flags the files are compiled with: (what they are for, the flags), one
    #: entry per set (a dune project: one per theory, with where they come from)
    flags: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def file(self, path: Path) -> ProjectFile | None:
        resolved = path.resolve()
        return next((f for f in self.files if f.path == resolved), None)

    def needed_by(self, targets: Sequence[Path]) -> list[ProjectFile]:
        """Every project file some target imports, directly or not, in dependency order
        (a target is in it only when another target needs it)."""
        by_path = {f.path: f for f in self.files}
        wanted: set[Path] = set()
        stack = [d for t in targets if (f := by_path.get(t.resolve())) for d in f.deps]
        while stack:
            path = stack.pop()
            if path in wanted or path not in by_path:
                continue
            wanted.add(path)
            stack.extend(by_path[path].deps)
        return [f for f in self.files if f.path in wanted]


@dataclass(frozen=True, slots=True)
class BuildFailure:
    """A file that could not be built, and the first real error (never a warning)."""

    path: Path
    line: int | None
    message: str

    def one_line(self, root: Path | None = None) -> str:
        """``theories/x.v:12: Error: ...`` (relative to ``root`` when under it)."""
        shown = self.path
        if root is not None and self.path.is_relative_to(root):
            shown = self.path.relative_to(root)
        where = f"{shown}:{self.line}" if self.line is not None else str(shown)
        return f"{where}: {self.message}"


@dataclass(slots=True)
class BuildResult:
    """What a build did."""

    built: list[Path] = field(default_factory=list)
    #: up to date already (nothing to do)
    reused: list[Path] = field(default_factory=list)
    failed: list[BuildFailure] = field(default_factory=list)
    #: a file -> the failure of a file it needs (it was not built)
    blocked: dict[Path, BuildFailure] = field(default_factory=dict)
    cpu_seconds: float = 0.0
    wall_seconds: float = 0.0
    #: what the user can run to build it themselves
    command: str = ""
    #: the project's root (failures are shown relative to it)
    root: Path | None = None

    def failure_for(self, path: Path) -> BuildFailure | None:
        """Why ``path`` cannot be checked: a file it needs failed (None if none did)."""
        return self.blocked.get(path.resolve())


@dataclass(frozen=True, slots=True)
class BuildStep:
    """Progress: ``index`` of ``total`` files, ``path`` starting (done False) or done."""

    path: Path
    index: int
    total: int
    done: bool
    ok: bool = True


StepCallback = Callable[[BuildStep], None]


class ProjectBuilder(Protocol):
    """Reads one project and builds what its files with holes need."""

    #: files compiled again during the run, before a check (after a proof was
    #: written into a file they need), and the CPU seconds that took
    rebuilt_files: int
    rebuild_cpu_seconds: float

    def model(self) -> ProjectModel:
        """The project as it is on disk now (reads files; may run the dependency tool)."""

    async def build(
        self, targets: Sequence[Path], on_step: StepCallback | None = None
    ) -> BuildResult:
        """Build every file ``targets`` need that is not up to date, in dependency order;
        a file whose dependency failed is not tried (:attr:`BuildResult.blocked`)."""

    def checking(self, path: Path) -> AbstractAsyncContextManager[None]:
        """For the block (a whole-file check of ``path``): first rebuild what ``path``
        needs that changed since (a file a proof was written into, and everything
        between it and ``path``), then keep those compiled files as they are until
        the block ends (no other file's rebuild replaces them mid-check)."""

    def loading(self) -> AbstractAsyncContextManager[None]:
        """For the block (a session loading compiled files): no rebuild runs meanwhile."""

    def explain(self, path: Path, output: str) -> str:
        """One line for a failed compilation of ``path``: ``file:line: first error``."""

    def next_step(self, failures: Sequence[BuildFailure]) -> str:
        """What the user should run or fix, in one sentence."""


class ReadersWriter:
    """Many readers at once, or one writer; a writer that waits holds new readers back.

    Readers are prover processes loading compiled files and whole-file checks;
    the writer is a rebuild replacing them. :meth:`writing_then_reading` rebuilds
    and then reads with no other writer in between.
    """

    def __init__(self) -> None:
        self._writer = asyncio.Lock()
        self._readers = 0
        self._no_readers = asyncio.Event()
        self._no_readers.set()

    def _enter(self) -> None:
        self._readers += 1
        self._no_readers.clear()

    def _leave(self) -> None:
        self._readers -= 1
        if self._readers == 0:
            self._no_readers.set()

    @contextlib.asynccontextmanager
    async def reading(self) -> AsyncIterator[None]:
        async with self._writer:  # waits for a rebuild under way or asked for
            self._enter()
        try:
            yield
        finally:
            self._leave()

    @contextlib.asynccontextmanager
    async def writing(self) -> AsyncIterator[None]:
        async with self._writer:
            await self._no_readers.wait()
            yield

    @contextlib.asynccontextmanager
    async def writing_then_reading(
        self, write: Callable[[], Awaitable[object]]
    ) -> AsyncIterator[None]:
        """Await ``write()`` as the writer, then hold the block as a reader, with no
        writer between the two."""
        async with self._writer:
            await self._no_readers.wait()
            await write()
            self._enter()
        try:
            yield
        finally:
            self._leave()
