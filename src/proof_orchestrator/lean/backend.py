"""Lean 4 behind the language seam (:class:`~..provers.backend.Backend`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ..provers.abilities import AgentSide, Repair
from ..provers.backend import CompiledFile, LineupInputs, ToolSettings
from ..provers.base import ProofSession
from ..strategies.base import Strategy
from . import holes
from .display import LEAN
from .project import LakeBuilder, find_lakefile
from .script import check_lean_script
from .session import LeanProject, LeanProver
from .strategies.knn import LeanModels
from .strategies.search import LeanSearchStrategy
from .strategies.tactics import LeanQuickStrategy
from .verify import LeanVerifier

__all__ = ["LeanBackend", "LeanTools"]

#: the files that describe a Lean project (its root is their folder)
LEAN_PROJECT_FILES = ("lakefile.lean", "lakefile.toml", "lean-toolchain")


class LeanTools:
    """One REPL pool and one verifier per Lean project."""

    language = "lean"

    def __init__(self, project: LeanProject, settings: ToolSettings, throttle: Any = None) -> None:
        lean = dataclasses.replace(
            settings.lean, max_idle=max(settings.lean.max_idle, settings.sessions)
        )
        self.project = project
        self.prover = LeanProver(project, lean, throttle=throttle)
        self.verifier = LeanVerifier(project, lean)
        lakefile = find_lakefile(project.root) if project.lake else None
        #: ``lake build`` of what the files import (None outside a Lake project)
        self.builder = (
            LakeBuilder(lakefile, command=settings.build_command) if lakefile is not None else None
        )

    def stand_in(self, path: Path, text: str) -> None:
        """Lake builds from the files on disk: nothing stands in for one."""

    def open_session(self, hole: Any, text: str) -> AbstractAsyncContextManager[ProofSession]:
        if not isinstance(hole, holes.LeanHole):
            raise TypeError("a Lean project got a hole of another language")
        return self.prover.session(hole, text)

    @staticmethod
    def gate(sentences: Sequence[str]) -> tuple[str, ...]:
        return check_lean_script(sentences)

    @staticmethod
    def declared_axioms(text: str) -> set[str]:
        return holes.declared_axioms(text)

    @staticmethod
    def join_script(sentences: Sequence[str]) -> str:
        """Tactics one per line: Lean's layout matters, so they are not joined by spaces."""
        return "\n".join(sentences)

    @staticmethod
    def split_script(text: str) -> tuple[str, ...]:
        """A recorded script as one tactic block: Lean's layout is not sentence-split here."""
        return (text,) if text.strip() else ()

    @staticmethod
    def parse_script(text: str) -> tuple[str, ...]:
        """A written script: its non-blank lines, each a tactic."""
        return tuple(line for line in text.splitlines() if line.strip())

    async def aclose(self) -> None:
        await self.prover.aclose()
        await self.verifier.aclose()


class LeanBackend:
    """Lean 4 files (``.lean``): holes are ``sorry``; REPL sessions, ``lean --json`` checks."""

    language = "lean"
    suffixes: tuple[str, ...] = (".lean",)
    #: a Lean proof brings no import into its file
    importable: Mapping[str, str] = MappingProxyType({})
    goal_syntax = LEAN

    join_script = staticmethod(LeanTools.join_script)

    def scan(self, path: Path, text: str) -> list[holes.LeanHole]:
        return list(holes.scan_lean_text(path, text))

    def project_files(self, path: Path) -> list[Path] | None:
        return None

    def project_key(self, path: Path) -> Hashable:
        return ("lean", str(LeanProject.for_file(path).root))

    def project_root(self, path: Path) -> Path:
        return LeanProject.for_file(path).root

    def described_root(self, path: Path) -> Path | None:
        start = path.resolve()
        for folder in (start, *start.parents) if start.is_dir() else start.parents:
            if any((folder / name).exists() for name in LEAN_PROJECT_FILES):
                return folder
        return None

    def tools(self, path: Path, settings: ToolSettings, throttle: Any = None) -> LeanTools:
        return LeanTools(LeanProject.for_file(path), settings, throttle)

    @staticmethod
    def builder(path: Path, command: str = "") -> LakeBuilder | None:
        """The Lake project ``path`` is in (None outside one): ``orch info``'s model."""
        lakefile = find_lakefile(path.resolve())
        return LakeBuilder(lakefile, command=command) if lakefile is not None else None

    def strategies(self, inputs: LineupInputs) -> list[Strategy]:
        """Profile 0: ``lean-quick``; 1 and above: best-first ``lean-search`` too."""
        lineup: list[Strategy] = [LeanQuickStrategy()]
        if inputs.profile >= 1:
            lineup.append(LeanSearchStrategy(LeanModels(inputs.proved)))
        return lineup

    def import_insertion(self, text: str, patches: Sequence[Any]) -> tuple[int, str]:
        if any(p.imports for p in patches):
            raise ValueError("a Lean proof cannot bring imports into its file")
        return 0, ""

    async def compile_alone(self, path: Path, *, timeout: float) -> CompiledFile:
        """``lean`` on the file, in its project's environment (the verifier's check)."""
        verifier = LeanVerifier(LeanProject.for_file(path))
        try:
            ok, output = await verifier.compiles(path, path.read_text(encoding="utf-8"))
            return CompiledFile(ok, verifier.cpu_seconds, output)
        finally:
            await verifier.aclose()

    async def version(self, files: Sequence[Path], settings: ToolSettings) -> str:
        toolchains = sorted({LeanProject.for_file(p).toolchain for p in files})
        return "lean " + (", ".join(t for t in toolchains if t) or "(no lean-toolchain)")

    @staticmethod
    def agent() -> AgentSide:
        from .agent import LeanAgentSide

        return LeanAgentSide()

    def repair(self) -> Repair:
        from .repair import LeanRepair

        return LeanRepair()

    @staticmethod
    def golf() -> None:
        """Lean proofs are not golfed (``orch golf`` is Coq's)."""
        return None

    @staticmethod
    def evaluation() -> None:
        """``orch eval``'s peers (CoqHammer) are Coq's."""
        return None

    @staticmethod
    def declarations(paths: Sequence[Path]) -> dict[str, bool]:
        """Every declaration of ``paths``: full name -> unproved (has ``sorry``, or is an
        ``axiom``). The blueprint sync reads them."""
        unproved: dict[str, bool] = {}
        for path in paths:
            for declaration in holes.declarations(path.read_text(encoding="utf-8")):
                open_ = declaration.has_sorry or declaration.keyword == "axiom"
                unproved[declaration.name] = unproved.get(declaration.name, False) or open_
        return unproved
