"""The optional abilities of a backend, typed: what ``orch mcp``, ``orch repair``,
``orch golf``, ``orch eval`` and the blueprint sync ask of one language.

A :class:`~.backend.Backend` offers each through a method that returns the
ability, or ``None`` where the language has none (Lean has no ``golf``); the
caller names what is missing. The protocols say what the neutral rooms use of
each and nothing more.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from ..goals import BreakKind, Goal
from ..strategies.base import Strategy
from .base import ProofSession

__all__ = [
    "AgentSide",
    "BrokenProof",
    "Detection",
    "Evaluation",
    "Golf",
    "Repair",
]

#: a whole-file compilation: (it compiles, the prover's output)
CompileText = Callable[[str], Awaitable[tuple[bool, str]]]


class AgentSide(Protocol):
    """What an agent (``orch mcp``) reads and checks in a file of this language."""

    async def describe(
        self,
        session: Any,
        goal: Goal,
        proved: Sequence[tuple[str, Sequence[str]]],
        errors: Sequence[tuple[str, str, str]],
    ) -> tuple[str, list[tuple[str, str]], list[tuple[str, str]]]:
        """(the goal as the prover prints it, premises (name, statement), nearest proofs)."""

    async def check_helper(
        self, tools: Any, hole: Any, text: str, name: str, statement: str, sentences: Sequence[str]
    ) -> tuple[bool, str, float]:
        """A helper lemma's proof checked before ``hole``: (accepted, why not, CPU seconds);
        :class:`~..errors.OrchError` where the language checks no helpers."""


class BrokenProof(Protocol):
    """A proof that no longer checks, as the repair sees it."""

    #: the goal as a hole of the stand-in text (its proof admitted)
    @property
    def hole(self) -> Any: ...

    #: the old proof's steps
    @property
    def script(self) -> tuple[str, ...]: ...

    @property
    def error(self) -> str: ...

    @property
    def kind(self) -> BreakKind: ...

    #: the step where the prover stopped
    @property
    def failing(self) -> str: ...


class Detection(Protocol):
    """The broken proofs of one file, in file order, and the file with them admitted."""

    @property
    def broken(self) -> Sequence[BrokenProof]: ...

    #: the file with every broken proof admitted
    @property
    def standin(self) -> str: ...

    #: why the file does not compile outside any proof ("" when the stand-in compiles)
    @property
    def stuck(self) -> str: ...


class Repair(Protocol):
    """What ``orch repair`` needs of one language (one per file)."""

    async def find_broken(self, path: Path, text: str, compile_text: CompileText) -> Any:
        """The file's :class:`Detection`."""

    def strategy(self, broken: Any, text: str, root: Path | None) -> Strategy:
        """The strategy that repairs ``broken`` (a :class:`BrokenProof` of this language)."""

    def written_text(
        self,
        text: str,
        detection: Any,
        repaired: Sequence[tuple[Any, Sequence[str]]],
        admit_broken: bool = False,
    ) -> str:
        """The file once ``repaired`` are written (the others admitted with ``admit_broken``)."""


class Golf(Protocol):
    """What ``orch golf`` needs of one language."""

    def finished_proofs(self, path: Path, text: str) -> list[tuple[Any, tuple[str, ...]]]:
        """(hole, proof steps) of every finished proof, in file order."""

    async def shorten(
        self, session: ProofSession, sentences: tuple[str, ...], tactic_seconds: float
    ) -> tuple[str, ...]:
        """The shortest script found that still closes the session's goal."""

    def script_length(self, sentences: Sequence[str]) -> int: ...


class Evaluation(Protocol):
    """What ``orch eval`` needs of one language: its peers and each file's checks."""

    #: the peers (baselines) this language can run
    @property
    def baselines(self) -> tuple[str, ...]: ...

    def prepare(self) -> None:
        """Ready the process for the peers (their helper programs findable)."""

    async def clashes(self, files: Sequence[Path]) -> list[str]:
        """The evaluated files a peer's own load already brings in."""

    def goal_names(self, path: Path, text: str) -> list[str]:
        """The names of the file's finished proofs, in file order (the goals)."""

    def open_file(self, path: Path, text: str, *, strict_axioms: bool = False) -> Any:
        """The file's evaluation: baselines, checks and audits of its goals."""
