"""A Lake project as Lake reads it: its libraries, modules, imports and ``.olean`` files.

``lakefile.toml`` is read with ``tomllib``; ``lakefile.lean`` (a Lean
program) is read for its plain declarations only: ``package NAME``,
``lean_lib NAME where roots := #[`A, `B] srcDir := "src"``. A library's
modules are its roots and the files under each root's folder. A module's
imports come from the file's header. A module is built when its ``.olean``
(``.lake/build/lib/lean/A/B.olean``, or ``.lake/build/lib/A/B.olean`` with
older Lake) is newer than its source and than the ``.olean`` of every
project module it imports.

Building is ``lake build <modules>`` when ``lake`` is on ``PATH``. Without it
each module that is not built is reported in one line naming its missing
``.olean`` and the command that builds it. Lean's own message for an import
without ``.olean`` (``object file '….olean' of module A.B does not exist``,
``unknown module prefix 'A'``) is turned into the same line by
:meth:`LakeBuilder.explain`. (None of the recorded REPL transcripts in
``shared/lean-repl-transcripts`` has this error; its wording here is Lean's,
as printed by ``lean`` and ``lake env lean`` and quoted in Lean's issue
tracker.)
"""

from __future__ import annotations

import graphlib
import re
import shutil
import time
import tomllib
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path

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
from ..provers.process import run_command

__all__ = ["LakeBuilder", "LakeLibrary", "find_lakefile", "missing_olean", "read_imports"]

_LAKEFILES = ("lakefile.lean", "lakefile.toml")
#: where Lake puts a module's .olean, newest layout first
_OLEAN_DIRS = (".lake/build/lib/lean", ".lake/build/lib", "build/lib")
_MISSING_OBJECT = re.compile(r"object file '(?P<olean>[^']+)' of module (?P<module>[\w.«»']+)")
_UNKNOWN_PREFIX = re.compile(r"unknown module prefix '(?P<module>[^']+)'")
_POSITION = re.compile(
    r"^(?P<file>[^\s:][^:\n]*\.lean):(?P<line>\d+):(?P<col>\d+): (?P<rest>.*)$", re.M
)
_BLOCK_COMMENT = re.compile(r"/-.*?-/", re.S)
_NAME = r"[«»\w.']+"


@dataclass(frozen=True, slots=True)
class LakeLibrary:
    name: str
    roots: tuple[str, ...]
    src_dir: Path


def find_lakefile(start: Path) -> Path | None:
    here = start if start.is_dir() else start.parent
    for folder in (here, *here.parents):
        for name in _LAKEFILES:
            if (folder / name).is_file():
                return folder / name
    return None


def _unquote(name: str) -> str:
    return name.replace("«", "").replace("»", "").lstrip("`")


def read_libraries(lakefile: Path) -> tuple[str, list[LakeLibrary]]:
    """The package name and its ``lean_lib`` libraries."""
    root = lakefile.parent.resolve()
    text = lakefile.read_text(encoding="utf-8")
    if lakefile.suffix == ".toml":
        data = tomllib.loads(text)
        package = str(data.get("name", root.name))
        base = root / str(data.get("srcDir", "."))
        listed = [
            LakeLibrary(
                str(lib["name"]),
                tuple(str(r) for r in lib.get("roots", [lib["name"]])),
                (base / str(lib.get("srcDir", "."))).resolve(),
            )
            for lib in data.get("lean_lib", [])
            if "name" in lib
        ]
        return package, listed
    text = re.sub(r"--[^\n]*", "", _BLOCK_COMMENT.sub("", text))
    found = re.search(rf"^package\s+({_NAME})", text, re.M)
    package = _unquote(found.group(1)) if found else root.name
    blocks = re.split(
        r"^(?=lean_lib\b|lean_exe\b|package\b|require\b|@\[|target\b)", text, flags=re.M
    )
    libraries: list[LakeLibrary] = []
    package_src = re.search(
        r'srcDir\s*:=\s*"([^"]*)"', next((b for b in blocks if b.startswith("package")), "")
    )
    base = root / (package_src.group(1) if package_src else ".")
    for block in blocks:
        head = re.match(rf"lean_lib\s+({_NAME})", block)
        if head is None:
            continue
        name = _unquote(head.group(1))
        roots_found = re.search(r"roots\s*:=\s*#\[([^\]]*)\]", block)
        roots = (
            tuple(_unquote(r) for r in re.findall(rf"`{_NAME}", roots_found.group(1)))
            if roots_found
            else (name,)
        )
        src = re.search(r'srcDir\s*:=\s*"([^"]*)"', block)
        libraries.append(
            LakeLibrary(name, roots, (base / (src.group(1) if src else ".")).resolve())
        )
    return package, libraries


def read_imports(text: str) -> list[str]:
    """The modules a Lean file's header imports (``import A.B``, ``public import C``)."""
    modules: list[str] = []
    for line in _BLOCK_COMMENT.sub("", text).splitlines():
        code = line.split("--", 1)[0].strip()
        if not code or code in ("module", "prelude"):
            continue
        found = re.match(
            rf"^(?:(?:public|private|meta)\s+)*import\s+(?:all\s+)?((?:{_NAME}\s*)+)$", code
        )
        if found is None:
            break
        modules += [_unquote(m) for m in found.group(1).split()]
    return modules


def missing_olean(message: str) -> tuple[str, str] | None:
    """(module, .olean path or '') when ``message`` is Lean's error for an unbuilt import."""
    found = _MISSING_OBJECT.search(message)
    if found:
        return found["module"], found["olean"]
    found = _UNKNOWN_PREFIX.search(message)
    if found:
        return found["module"], ""
    return None


class LakeBuilder:
    """The :class:`~..provers.build.ProjectBuilder` of a Lake project."""

    def __init__(self, lakefile: Path, *, command: str = "", timeout: float = 7200.0) -> None:
        self.lakefile = lakefile
        self.root = lakefile.parent.resolve()
        self.command = command.strip()
        self.timeout = timeout
        self.package, self.libraries = read_libraries(lakefile)
        #: rebuilds write the ``.olean`` files that REPLs and checks read
        self._access = ReadersWriter()
        self.rebuilt_files = 0
        self.rebuild_cpu_seconds = 0.0

    def _modules(self) -> dict[str, Path]:
        found: dict[str, Path] = {}
        for library in self.libraries:
            for root in library.roots:
                parts = root.split(".")
                single = library.src_dir.joinpath(*parts).with_suffix(".lean")
                folder = library.src_dir.joinpath(*parts)
                files = [single] if single.is_file() else []
                files += sorted(folder.rglob("*.lean")) if folder.is_dir() else []
                for file in files:
                    module = ".".join(file.relative_to(library.src_dir).with_suffix("").parts)
                    found.setdefault(module, file.resolve())
        return found

    def olean_of(self, module: str) -> Path:
        """Where the module's ``.olean`` is (the first layout that has it, else the newest)."""
        relative = Path(*module.split(".")).with_suffix(".olean")
        for folder in _OLEAN_DIRS:
            if (self.root / folder / relative).exists():
                return self.root / folder / relative
        return self.root / _OLEAN_DIRS[0] / relative

    def model(self) -> ProjectModel:
        modules = self._modules()
        by_path = {p: m for m, p in modules.items()}
        graph: dict[Path, set[Path]] = {}
        for path in modules.values():
            try:
                imports = read_imports(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError):
                imports = []
            graph[path] = {modules[m] for m in imports if m in modules}
        try:
            order = list(graphlib.TopologicalSorter(graph).static_order())
        except graphlib.CycleError:
            order = sorted(graph)
        states: dict[Path, FileBuild] = {}
        files: list[ProjectFile] = []
        for path in order:
            olean = self.olean_of(by_path[path])
            if not olean.exists():
                state = FileBuild.MISSING
            else:
                mtime = olean.stat().st_mtime_ns
                fresh = mtime >= path.stat().st_mtime_ns and all(
                    states[d] is FileBuild.BUILT
                    and self.olean_of(by_path[d]).stat().st_mtime_ns <= mtime
                    for d in graph[path]
                )
                state = FileBuild.BUILT if fresh else FileBuild.STALE
            states[path] = state
            files.append(ProjectFile(path, by_path[path], tuple(sorted(graph[path])), state, olean))
        names = tuple((lib.name, lib.src_dir) for lib in self.libraries)
        kind = self.lakefile.name
        return ProjectModel(self.root, kind, names, tuple(files), self.command or "lake build")

    async def build(
        self, targets: Sequence[Path], on_step: StepCallback | None = None
    ) -> BuildResult:
        async with self._access.writing():
            return await self._build(targets, on_step)

    async def _build(
        self, targets: Sequence[Path], on_step: StepCallback | None = None
    ) -> BuildResult:
        started = time.monotonic()
        model = self.model()
        needed = [f for f in model.needed_by(targets) if f.state is not FileBuild.BUILT]
        result = BuildResult(command=self._command([f.logical for f in needed]), root=self.root)
        result.reused = [f.path for f in model.needed_by(targets) if f.state is FileBuild.BUILT]
        if needed:
            lake = shutil.which("lake")
            if lake is None and not self.command:
                result.failed = [self._unbuilt(f) for f in needed]
            else:
                if on_step is not None:
                    on_step(BuildStep(needed[0].path, 1, 1, done=False))
                argv = (
                    ["sh", "-c", self.command]
                    if self.command
                    else [lake or "lake", "build", *(f.logical for f in needed)]
                )
                run = await run_command(argv, cwd=str(self.root), timeout=self.timeout)
                result.cpu_seconds += run.cpu_seconds
                after = {f.path: f for f in self.model().files}
                errors = self._errors(run.output)
                for f in needed:
                    if after[f.path].state is FileBuild.BUILT:
                        result.built.append(f.path)
                    else:
                        result.failed.append(errors.get(f.path) or self._unbuilt(f))
                if on_step is not None:
                    on_step(BuildStep(needed[0].path, 1, 1, done=True, ok=not result.failed))
        failed = {f.path: f for f in result.failed}
        by_path = {f.path: f for f in model.files}
        for target in targets:
            found = by_path.get(target.resolve())
            stack = list(found.deps) if found else []
            seen: set[Path] = set()
            while stack:
                dep = stack.pop()
                if dep in seen:
                    continue
                seen.add(dep)
                if dep in failed:
                    result.blocked[target.resolve()] = failed[dep]
                    break
                stack.extend(by_path[dep].deps if dep in by_path else ())
        result.wall_seconds = time.monotonic() - started
        return result

    def _errors(self, output: str) -> dict[Path, BuildFailure]:
        found: dict[Path, BuildFailure] = {}
        for match in _POSITION.finditer(output):
            rest = match["rest"]
            if not rest.startswith("error"):
                continue
            path = (self.root / match["file"]).resolve()
            found.setdefault(path, BuildFailure(path, int(match["line"]), rest))
        return found

    def _unbuilt(self, file: ProjectFile) -> BuildFailure:
        olean = self.olean_of(file.logical)
        shown = olean.relative_to(self.root) if olean.is_relative_to(self.root) else olean
        return BuildFailure(
            file.path,
            None,
            f"no up-to-date {shown} for module {file.logical}: "
            f"run `{self._command([file.logical])}`",
        )

    def _command(self, modules: Sequence[str]) -> str:
        if self.command:
            return self.command
        return " ".join(["lake", "build", *modules])

    def checking(self, path: Path) -> AbstractAsyncContextManager[None]:
        """Rebuild what ``path`` imports that changed, when Lake is there to do it; then,
        for the block (``path``'s check), no rebuild replaces those ``.olean``."""

        async def rebuild() -> None:
            model = self.model()
            if any(f.state is not FileBuild.BUILT for f in model.needed_by([path])) and (
                self.command or shutil.which("lake")
            ):
                result = await self._build([path])
                self.rebuilt_files += len(result.built)
                self.rebuild_cpu_seconds += result.cpu_seconds

        return self._access.writing_then_reading(rebuild)

    def loading(self) -> AbstractAsyncContextManager[None]:
        """For the block (a REPL importing ``.olean`` files), no rebuild runs."""
        return self._access.reading()

    def explain(self, path: Path, output: str) -> str:
        """One line for a failed check of ``path``: an import without ``.olean`` names the
        ``.olean`` and the command; otherwise the first error with its place."""
        missing = missing_olean(output)
        place = _POSITION.search(output)
        line = int(place["line"]) if place else None
        if missing is not None:
            module, olean = missing
            what = (
                f"object file {olean} of module {module} does not exist"
                if olean
                else f"unknown module prefix {module}"
            )
            message = f"error: {what}: run `lake build {module}` in {self.root}"
        else:
            errors = [m for m in _POSITION.finditer(output) if m["rest"].startswith("error")]
            if errors:
                line = int(errors[0]["line"])
                message = errors[0]["rest"]
            else:
                lines = [x.strip() for x in output.splitlines() if x.strip()]
                message = "error: " + (lines[0] if lines else "Lean failed without a message")
        return BuildFailure(path, line, message[:400]).one_line(self.root)

    def next_step(self, failures: Sequence[BuildFailure]) -> str:
        if not failures:
            return ""
        first = failures[0].one_line(self.root).split(": ", 1)[0]
        return (
            f"{len(failures)} module(s) could not be built: run `lake build` in {self.root}"
            f" or fix {first}"
        )
