"""The prover tools of one project: a prover that opens sessions, a verifier, a script gate.

:class:`ProjectTools` serves a Coq project (one set of ``_CoqProject`` flags),
:class:`LeanTools` a Lean project. The driver (:mod:`.worker`, :mod:`.pipeline`)
and the executors (:mod:`.executors`, on this machine or in a Ray actor) both
make them, so they live here, below both.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any

from ..coq import holes as coq_holes
from ..coq.project import CoqProject
from ..coq.script import check_script
from ..coq.session import CoqProver
from ..coq.strategies.hammer import hammer_environment
from ..coq.syntax import split_sentences
from ..coq.verify import CoqVerifier
from ..lean import holes as lean_holes
from ..lean.holes import LeanHole
from ..lean.script import check_lean_script
from ..lean.session import LeanProject, LeanProver, LeanSettings, LeanVerifier
from ..project.holes import Hole
from ..scheduler.governor import CpuGovernor
from .reports import FillOptions

__all__ = ["LeanTools", "ProjectTools", "Tools"]


class ProjectTools:
    """One prover and one verifier per Coq project (per set of flags)."""

    language = "coq"

    def __init__(self, project: CoqProject, options: FillOptions, governor: CpuGovernor) -> None:
        cwd = str(project.root)
        sessions = options.orch.max_light + options.orch.max_heavy
        coq = dataclasses.replace(
            options.coq,
            max_idle=max(options.coq.max_idle, sessions),
            memory_mb=options.coq.memory_mb or options.orch.prover_memory_mb,
        )
        hammer_environment()  # the provers started here find CoqHammer's ATP helpers
        self.prover = CoqProver(project.flags, cwd=cwd, settings=coq, throttle=governor.gate)
        self.verifier = CoqVerifier(project.flags, cwd=cwd, coqc=coq.coqc, coqtop=coq.coqtop)

    def open_session(self, hole: Hole, text: str) -> AbstractAsyncContextManager[Any]:
        if not isinstance(hole, coq_holes.CoqHole):
            raise TypeError("a Coq project got a hole of another language")
        return self.prover.session(hole.goal, text, hole.prefix_end, hole.statement_start)

    @staticmethod
    def gate(sentences: Sequence[str]) -> tuple[str, ...]:
        return check_script(sentences)

    @staticmethod
    def declared_axioms(text: str) -> set[str]:
        return set(coq_holes.declared_axioms(text))

    @staticmethod
    def join_script(sentences: Sequence[str]) -> str:
        """Sentences as the one string the ledger records."""
        return " ".join(sentences)

    @staticmethod
    def split_script(text: str) -> tuple[str, ...]:
        """A script recorded as one string (see :meth:`Ledger.candidate_script`), as sentences."""
        return tuple(s.code for s in split_sentences(text))

    async def aclose(self) -> None:
        await self.prover.aclose()
        await self.verifier.aclose()


class LeanTools:
    """One REPL pool and one verifier per Lean project."""

    language = "lean"

    def __init__(
        self,
        project: LeanProject,
        options: FillOptions,
        governor: CpuGovernor,
        settings: LeanSettings | None = None,
    ) -> None:
        settings = settings or LeanSettings(
            max_idle=options.orch.max_light + options.orch.max_heavy
        )
        self.prover = LeanProver(project, settings, throttle=governor.gate)
        self.verifier = LeanVerifier(project, settings)

    def open_session(self, hole: Hole, text: str) -> AbstractAsyncContextManager[Any]:
        if not isinstance(hole, LeanHole):
            raise TypeError("a Lean project got a hole of another language")
        return self.prover.session(hole, text)

    @staticmethod
    def gate(sentences: Sequence[str]) -> tuple[str, ...]:
        return check_lean_script(sentences)

    @staticmethod
    def declared_axioms(text: str) -> set[str]:
        return lean_holes.declared_axioms(text)

    @staticmethod
    def join_script(sentences: Sequence[str]) -> str:
        """Tactics one per line: Lean's layout matters, so they are not joined by spaces."""
        return "\n".join(sentences)

    @staticmethod
    def split_script(text: str) -> tuple[str, ...]:
        """A recorded script as one tactic block: Lean's layout is not sentence-split here."""
        return (text,) if text.strip() else ()

    async def aclose(self) -> None:
        await self.prover.aclose()
        await self.verifier.aclose()


Tools = ProjectTools | LeanTools
