"""Building a Coq project's files before a run: the file graph and ``.orch/build``.

The graph comes from ``coqdep`` run with the project's ``-Q``/``-R``/``-I``
flags (:meth:`CoqBuilder.read_graph`, the one way it runs). Whether a file's
compiled form is up to date is :mod:`.manifest`'s question; compiling one
file is :mod:`.compiler`'s; reading coqc's errors is :mod:`.build_output`'s.

Each ``-Q``/``-R`` folder under the root is mapped a second time, to its
mirror in ``.orch/build``, after the project's own: Coq's later binding wins,
so a ``.vo`` orch built shadows a stale one in the user's tree (and one of
orch's is removed when the user's is the one up to date). Nothing is written
outside ``.orch/``. With a build command of the user's (``--build "make
-j2"``), that command builds instead and the user's tree is the only place.
"""

from __future__ import annotations

import asyncio
import graphlib
import time
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from pathlib import Path

from ..errors import ProverError, ProverHung
from ..project.statedir import build_root, make_state_dir
from ..provers.build import (
    BuildFailure,
    BuildResult,
    BuildStep,
    FileBuild,
    ProjectFile,
    ProjectModel,
    ReadersWriter,
    StepCallback,
)
from ..provers.process import resolve, run_command, run_sync
from .build_output import first_error, parse_coqdep
from .compiler import compile_file
from .manifest import BuildManifest, Choice
from .project import CoqProject

__all__ = ["CoqBuilder"]

#: folders never searched for sources
_SKIPPED = frozenset({"_build", "_opam", "node_modules"})
#: seconds one ``coqdep`` may take
_COQDEP_TIMEOUT = 600.0


class CoqBuilder:
    """The :class:`~..provers.build.ProjectBuilder` of one Coq project."""

    def __init__(
        self,
        project: CoqProject,
        *,
        coqc: str = "coqc",
        coqdep: str = "coqdep",
        command: str = "",
        timeout: float = 3600.0,
        jobs: int = 1,
    ) -> None:
        self.project = project
        #: files compiled at once (a file starts once the files it requires are built)
        self.jobs = max(1, jobs)
        self.root = project.root
        self.build_dir = build_root(project.root)
        self.coqc = coqc
        self.coqdep = coqdep
        #: the user's build command (empty: orch builds into .orch/build)
        self.command = command.strip()
        self.timeout = timeout
        #: rebuilds write the ``.vo`` files that sessions and whole-file checks read
        self._access = ReadersWriter()
        #: counts the builds that replaced a ``.vo``: a file compiled against the
        #: ``.vo`` files of an earlier generation may not load with these
        self.generation = 0
        self.rebuilt_files = 0
        self.rebuild_cpu_seconds = 0.0
        #: the generation at which each file's requirements were last up to date for a load
        self._loaded_at: dict[Path, int] = {}
        self._graph: dict[Path, set[Path]] | None = None
        #: texts compiled in place of the files on disk (``orch repair``: a file with
        #: broken proofs, as the files that import it should see it)
        self.overrides: dict[Path, str] = {}
        self.manifest = BuildManifest(
            self.root,
            self.build_dir,
            lambda source: None if self.command else self.output_of(source),
            self.overrides,
        )

    def override(self, source: Path, text: str) -> None:
        """Build ``source`` from ``text`` from now on, not from the file on disk."""
        self.overrides[source.resolve()] = text

    # -- the load path ------------------------------------------------------------------

    def mirror(self, folder: Path) -> Path | None:
        """``folder``'s twin in ``.orch/build`` (None for a folder outside the root)."""
        folder = folder.resolve()
        if not folder.is_relative_to(self.root):
            return None
        return self.build_dir / folder.relative_to(self.root)

    def output_of(self, source: Path) -> Path | None:
        mirrored = self.mirror(source.parent)
        return None if mirrored is None else mirrored / source.with_suffix(".vo").name

    @property
    def flags(self) -> tuple[str, ...]:
        """The project's flags, then each of its folders mapped again to its mirror (made
        now, so that ``coqc`` and ``coqtop`` find it)."""
        return self._mirrored(self.project.flags)

    def flags_for(self, source: Path) -> tuple[str, ...]:
        """:attr:`flags` for one file: those of its dune theory when it has one."""
        return self._mirrored(self.project.flags_for(source))

    def _mirrored(self, flags: tuple[str, ...]) -> tuple[str, ...]:
        if self.command:
            return flags
        extra: list[str] = []
        for flag, folder, name in self.project.mappings(flags):
            mirrored = self.mirror(folder)
            if mirrored is not None:
                make_state_dir(mirrored)
                extra += [flag, str(mirrored), name]
        return (*flags, *extra)

    @staticmethod
    def _path_flags(flags: Sequence[str]) -> tuple[str, ...]:
        """Only the ``-Q``/``-R``/``-I`` flags (what ``coqdep`` takes)."""
        kept: list[str] = []
        i = 0
        while i < len(flags):
            width = {"-Q": 3, "-R": 3, "-I": 2}.get(flags[i], 1)
            if width > 1 and i + width <= len(flags):
                kept += flags[i : i + width]
            i += width
        return tuple(kept)

    # -- the model ----------------------------------------------------------------------

    def sources(self) -> list[Path]:
        """The project's ``.v`` files: those it lists, else every one in its mapped folders."""
        if self.project.files:
            return [p for p in self.project.files if p.is_file()]
        found: set[Path] = set()
        for _, folder, _ in self.project.mappings():
            if not folder.is_dir() or not folder.resolve().is_relative_to(self.root):
                continue
            for path in folder.rglob("*.v"):
                parts = path.relative_to(folder).parts[:-1]
                if not any(p.startswith(".") or p in _SKIPPED for p in parts):
                    found.add(path.resolve())
        return sorted(found)

    def _coqdep_argvs(self, sources: Sequence[Path]) -> list[list[str]]:
        """One ``coqdep`` per set of flags (a dune theory's files together, as dune runs it)."""
        groups: dict[tuple[str, ...], list[Path]] = {}
        for source in sources:
            groups.setdefault(self._path_flags(self.project.flags_for(source)), []).append(source)
        return [[self.coqdep, *flags, *map(str, group)] for flags, group in groups.items()]

    def _set_graph(self, sources: Sequence[Path], output: str) -> dict[Path, set[Path]]:
        listed = set(sources)
        parsed = parse_coqdep(output)
        self._graph = {
            s: {d for d in parsed.get(s, set()) if d in listed and d != s} for s in sources
        }
        return self._graph

    def read_graph(self) -> dict[Path, set[Path]]:
        """Run ``coqdep`` on the project's sources now: file -> the project files it imports.

        The one way coqdep runs (synchronous: :meth:`model` is; the async paths
        call it in a thread, :meth:`_read_graph_async`).
        """
        sources = self.sources()
        if not sources:
            self._graph = {}
            return self._graph
        output = ""
        for argv in self._coqdep_argvs(sources):
            try:
                run = run_sync(
                    [resolve(argv[0]), *argv[1:]], cwd=self.root, timeout=_COQDEP_TIMEOUT
                )
            except (OSError, ProverHung) as exc:
                raise ProverError(
                    f"coqdep could not read the project at {self.root}: {exc}"
                ) from exc
            output += run.stdout + "\n"
        return self._set_graph(sources, output)

    async def _read_graph_async(self) -> dict[Path, set[Path]]:
        return await asyncio.to_thread(self.read_graph)

    @staticmethod
    def _order(graph: dict[Path, set[Path]]) -> list[Path]:
        """Dependency order; on a cycle (coqc would refuse it anyway), the files' order."""
        try:
            return list(graphlib.TopologicalSorter(graph).static_order())
        except graphlib.CycleError:
            return sorted(graph)

    def logical(self, source: Path) -> str:
        """The module name of ``source`` (``RegLang.dfa``), from the longest mapping that
        holds it; its bare stem outside every mapping."""
        best: tuple[int, str] | None = None
        for _, folder, name in self.project.mappings():
            folder = folder.resolve()
            if source.is_relative_to(folder):
                rest = source.relative_to(folder).with_suffix("").parts
                full = ".".join(p for p in (name, *rest) if p)
                depth = len(folder.parts)
                if best is None or depth > best[0]:
                    best = (depth, full)
        return best[1] if best else source.stem

    def _assess_all(self, graph: dict[Path, set[Path]]) -> tuple[list[Path], dict[Path, Choice]]:
        order = self._order(graph)
        return order, self.manifest.assess_all(order, graph)

    def model(self) -> ProjectModel:
        graph = self._graph if self._graph is not None else self.read_graph()
        order, chosen = self._assess_all(graph)
        files = tuple(
            ProjectFile(
                path=source,
                logical=self.logical(source),
                deps=tuple(sorted(graph.get(source, set()))),
                state=chosen[source].state,
                output=chosen[source].output,
            )
            for source in order
        )
        names = tuple((name, folder) for _, folder, name in self.project.mappings())
        build = self.command or str(self.build_dir)
        flags = tuple(
            (f"theory {t.name} ({t.origin})", t.flags) for t in self.project.theories
        ) or (("every file", self.project.flags),)
        return ProjectModel(self.root, self.project.kind, names, files, build, flags)

    # -- building -----------------------------------------------------------------------

    async def build(
        self, targets: Sequence[Path], on_step: StepCallback | None = None
    ) -> BuildResult:
        async with self._access.writing():
            graph = await self._read_graph_async()
            result = await self._build(graph, targets, on_step)
            for target in targets:  # what each target requires is up to date now
                self._loaded_at[target.resolve()] = self.generation
            return result

    def checking(self, path: Path) -> AbstractAsyncContextManager[None]:
        """Rebuild what ``path`` needs that changed since the run's build (a file a proof
        was written into, and the files between it and ``path``); then, for the
        block (``path``'s whole-file check), no rebuild replaces those ``.vo``."""

        async def rebuild() -> None:
            graph = self._graph if self._graph is not None else await self._read_graph_async()
            if path.resolve() in graph:
                result = await self._build(graph, [path], None)
                self.rebuilt_files += len(result.built)
                self.rebuild_cpu_seconds += result.cpu_seconds

        return self._access.writing_then_reading(rebuild)

    def loading(self, path: Path | None = None) -> AbstractAsyncContextManager[None]:
        """For the block (a session loading ``path``'s prefix), no rebuild runs.

        When a rebuild replaced ``.vo`` files since ``path``'s last load, what
        ``path`` needs is brought up to date first: a check rebuilds only the
        files between a written file and the checked one, and a file compiled
        against the older ``.vo`` of a file it requires does not load ("makes
        inconsistent assumptions over library ...").
        """
        if path is None or self._loaded_at.get(path.resolve()) == self.generation:
            return self._access.reading()
        source = path.resolve()

        async def rebuild() -> None:
            graph = self._graph if self._graph is not None else await self._read_graph_async()
            if source in graph:
                result = await self._build(graph, [source], None)
                self.rebuilt_files += len(result.built)
                self.rebuild_cpu_seconds += result.cpu_seconds
            # as the writer: no other rebuild ran since, whatever this one compiled
            self._loaded_at[source] = self.generation

        return self._access.writing_then_reading(rebuild)

    async def _build(
        self,
        graph: dict[Path, set[Path]],
        targets: Sequence[Path],
        on_step: StepCallback | None,
    ) -> BuildResult:
        started = time.monotonic()
        result = BuildResult(command=self._suggested_command(), root=self.root)
        model = ProjectModel(
            self.root,
            self.project.kind,
            files=tuple(
                ProjectFile(s, "", tuple(graph.get(s, set())), FileBuild.MISSING)
                for s in self._order(graph)
            ),
        )
        needed = [f.path for f in model.needed_by(targets)]
        if self.command and needed:
            await self._run_users_command(graph, needed, result, on_step)
        else:
            await self._compile_each(graph, needed, result, on_step)
        if result.built or (self.command and needed):
            self.generation += 1
        failed = {f.path: f for f in result.failed}
        for source in [*needed, *(t.resolve() for t in targets)]:
            cause = next((failed[d] for d in self._closure(graph, source) if d in failed), None)
            if cause is not None and source not in failed:
                result.blocked[source] = cause
        result.wall_seconds = time.monotonic() - started
        return result

    @staticmethod
    def _closure(graph: dict[Path, set[Path]], source: Path) -> list[Path]:
        seen: list[Path] = []
        stack = list(graph.get(source, set()))
        while stack:
            path = stack.pop()
            if path not in seen:
                seen.append(path)
                stack.extend(graph.get(path, set()))
        return seen

    async def _compile_each(
        self,
        graph: dict[Path, set[Path]],
        needed: list[Path],
        result: BuildResult,
        on_step: StepCallback | None,
    ) -> None:
        """Compile what ``needed`` lacks, up to :attr:`jobs` files at once, each once the
        files it requires are built (in the graph's order when ``jobs`` is 1)."""
        order, first = self._assess_all(graph)
        entries = self.manifest.read()
        total = sum(1 for p in needed if first[p].state is not FileBuild.BUILT)
        chosen: dict[Path, Choice] = {}
        todo = set(needed)
        broken: set[Path] = set()
        waiting = list(order)
        running: dict[asyncio.Task[BuildFailure | None], tuple[Path, Path, int]] = {}
        started = 0

        def ready(source: Path) -> bool:
            """Every file ``source`` requires is assessed, and none is being compiled."""
            return all(
                dep not in compiling and (dep in chosen or dep not in first)
                for dep in graph.get(source, set())
            )

        compiling: set[Path] = set()
        try:
            while waiting or running:
                for source in list(waiting):
                    if len(running) >= self.jobs:
                        break
                    if not ready(source):
                        continue
                    waiting.remove(source)
                    deps = graph.get(source, set())
                    choice = self.manifest.assess(source, deps, chosen, entries)
                    chosen[source] = choice
                    if source not in todo:
                        continue
                    ours = self.output_of(source)
                    if choice.state is FileBuild.BUILT:
                        result.reused.append(source)
                        if choice.users and ours is not None and ours.exists():
                            # it would shadow the user's
                            self.manifest.remove_ours(entries, source, ours)
                        continue
                    if deps & broken:
                        broken.add(source)
                        continue
                    started += 1
                    if on_step is not None:
                        on_step(BuildStep(source, started, total, done=False))
                    if ours is None:
                        result.failed.append(
                            BuildFailure(source, None, "outside the project's root: build it first")
                        )
                        broken.add(source)
                        if on_step is not None:
                            on_step(BuildStep(source, started, total, done=True, ok=False))
                        continue
                    task = asyncio.ensure_future(self._compile(source, ours, result))
                    running[task] = (source, ours, started)
                    compiling.add(source)
                if not running:
                    if waiting:  # the order is topological: a file waits only on a build
                        raise RuntimeError(f"nothing to build before {waiting[0]}")
                    break
                done, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    source, ours, index = running.pop(task)
                    compiling.discard(source)
                    failure = task.result()
                    if on_step is not None:
                        on_step(BuildStep(source, index, total, done=True, ok=failure is None))
                    if failure is not None:
                        result.failed.append(failure)
                        broken.add(source)
                        continue
                    self.manifest.record(entries, source, ours, graph.get(source, set()), chosen)
                    chosen[source] = Choice(FileBuild.BUILT, ours)
                    result.built.append(source)
        finally:
            for task in running:
                task.cancel()
            if running:
                await asyncio.gather(*running, return_exceptions=True)

    async def _compile(self, source: Path, ours: Path, result: BuildResult) -> BuildFailure | None:
        compiled = await compile_file(
            self.coqc,
            self.flags_for(source),
            source,
            logical=self.logical(source),
            output=ours,
            build_dir=self.build_dir,
            root=self.root,
            text=self.overrides.get(source),
            timeout=self.timeout,
        )
        result.cpu_seconds += compiled.cpu_seconds
        return compiled.failure

    async def _run_users_command(
        self,
        graph: dict[Path, set[Path]],
        needed: list[Path],
        result: BuildResult,
        on_step: StepCallback | None,
    ) -> None:
        """The user's build command, once, if anything needed is not up to date; a file
        still not up to date after it is a failure (with the command's first error)."""
        _, chosen = self._assess_all(graph)
        stale = [p for p in needed if chosen[p].state is not FileBuild.BUILT]
        result.reused += [p for p in needed if p not in stale]
        if not stale:
            return
        if on_step is not None:
            on_step(BuildStep(stale[0], 1, 1, done=False))
        run = await run_command(
            ["sh", "-c", self.command], cwd=str(self.root), timeout=self.timeout
        )
        result.cpu_seconds += run.cpu_seconds
        _, chosen = self._assess_all(graph)
        error = first_error(run.output)
        for source in stale:
            if chosen[source].state is FileBuild.BUILT:
                result.built.append(source)
                continue
            if any(d in {f.path for f in result.failed} for d in self._closure(graph, source)):
                continue
            named = error.file is not None and (self.root / error.file).resolve() == source
            why = (
                f"error: {error.message}"
                if run.returncode != 0
                else f"`{self.command}` did not build it"
            )
            result.failed.append(BuildFailure(source, error.line if named else None, why))
        if on_step is not None:
            on_step(BuildStep(stale[0], 1, 1, done=True, ok=not result.failed))

    # -- reporting ----------------------------------------------------------------------

    def explain(self, path: Path, output: str) -> str:
        """``file:line: error: message`` for a failed compilation of ``path`` (its copy
        in a scratch folder is named as ``path``)."""
        error = first_error(output)
        where = path
        if error.file is not None and Path(error.file).name != path.name:
            file = Path(error.file)
            where = file if file.is_absolute() else (self.root / file).resolve()
        return BuildFailure(where, error.line, f"error: {error.message}").one_line(self.root)

    def _suggested_command(self) -> str:
        makefile = "coq_makefile -f _CoqProject -o CoqMakefile && make -f CoqMakefile"
        kinds = {"dune": "dune build", "_CoqProject": makefile}
        return self.command or kinds.get(self.project.kind, "coqc")

    def next_step(self, failures: Sequence[BuildFailure]) -> str:
        if not failures:
            return ""
        first = failures[0].one_line(self.root).split(": ", 1)[0]
        return (
            f"{len(failures)} file(s) could not be built: fix {first} (then run orch again), "
            f"or build the project yourself (`{self._suggested_command()}`) and pass "
            "--build '<that command>'"
        )
