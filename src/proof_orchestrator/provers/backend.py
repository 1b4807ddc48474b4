"""The language seam: what the engine asks of a prover backend.

A :class:`Backend` is everything the engine (``run/``), the workflows and the
agents know about one prover language: which files are its own (by suffix),
how to find their holes, the tools of one project (a prover that opens
sessions at holes, a verifier, the script gate, how a script is stored), the
strategies of a profile, and where a patch's imports go. ``coq/backend.py``
and ``lean/backend.py`` implement it; :mod:`proof_orchestrator.backends`
chooses one by file suffix. Nothing above the seam imports a prover package.

Optional abilities (``orch eval``'s side, ``orch golf``, ``orch repair``, an
agent's view, the blueprint's declarations) are typed methods returning a
protocol of :mod:`.abilities`, or ``None`` where a language has none.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ..goals import Goal
from ..strategies.base import Strategy
from .abilities import AgentSide, Evaluation, Golf, Repair
from .base import ProofSession, Verifier
from .build import ProjectBuilder
from .settings import CoqSettings, LeanSettings
from .syntax import GoalSyntax

__all__ = [
    "Backend",
    "CompiledFile",
    "Hole",
    "LineupInputs",
    "ProjectTools",
    "ToolSettings",
]


class Hole(Protocol):
    """One hole as the engine sees it: its goal and the spans a patch rewrites."""

    @property
    def goal(self) -> Goal: ...

    #: where the declaration starts (helper lemmas are inserted here)
    @property
    def statement_start(self) -> int: ...

    #: the span a proof replaces
    @property
    def proof_start(self) -> int: ...

    @property
    def proof_end(self) -> int: ...

    #: the name a proof's :class:`~..goals.HoleUse` gives the hole: its declaration's
    #: full name (a Lean declaration with several ``sorry`` is one hole)
    @property
    def declaration(self) -> str: ...

    def replacement(self, sentences: tuple[str, ...]) -> str:
        """The text that replaces ``proof_start:proof_end`` for this proof."""


class ProjectTools(Protocol):
    """One project's prover tools: sessions at holes, the verifier, the script rules."""

    @property
    def language(self) -> str:
        """The language these tools speak."""

    @property
    def verifier(self) -> Verifier:
        """The project's whole-file verifier."""

    @property
    def builder(self) -> ProjectBuilder | None:
        """Builds what the project's files need before they are checked (None: nothing to do)."""

    def stand_in(self, path: Path, text: str) -> None:
        """Build the files that import ``path`` from ``text`` (what it compiles as now,
        while the file on disk still differs); a backend that builds nothing ignores it."""

    def open_session(self, hole: Any, text: str) -> AbstractAsyncContextManager[ProofSession]:
        """A session at ``hole`` of ``text`` (the file's current content)."""

    def gate(self, sentences: Sequence[str]) -> tuple[str, ...]:
        """The script as it may be written, or :class:`~..errors.ScriptRejected`."""

    def declared_axioms(self, text: str) -> set[str]:
        """Short names of the axioms ``text`` declares itself (the user's own trust)."""

    def join_script(self, sentences: Sequence[str]) -> str:
        """A script as the one string the ledger records."""

    def split_script(self, text: str) -> tuple[str, ...]:
        """A recorded script (see :meth:`join_script`) as sentences again."""

    def parse_script(self, text: str) -> tuple[str, ...]:
        """A script a person or an agent wrote, as sentences (not gated yet)."""

    async def aclose(self) -> None: ...


@dataclass(frozen=True, slots=True)
class ToolSettings:
    """What a backend needs to make one project's tools."""

    #: prover sessions the run may hold at once (light and heavy slots together)
    sessions: int = 3
    #: address-space cap of one prover process, MiB (None: the backend's default)
    memory_mb: int | None = None
    #: the user's build command (``make -j2``); empty: the backend builds into ``.orch/build``
    build_command: str = ""
    #: files the backend's own build compiles at once (the CPU target's share of the cores)
    build_jobs: int = 1
    #: refuse library axioms the original file's proofs do not use (Coq's audit)
    strict_axioms: bool = False
    coq: CoqSettings = field(default_factory=CoqSettings)
    lean: LeanSettings = field(default_factory=LeanSettings)


@dataclass(frozen=True, slots=True)
class LineupInputs:
    """What a backend builds a profile's strategies from."""

    profile: int = 1
    #: (statement, script) pairs the ledger holds verified, of this backend's language
    proved: Sequence[tuple[str, Sequence[str]]] = ()
    #: the scripts that proved most goals (the ``cached`` strategy)
    popular: Sequence[str] = ()
    #: ``--allow-import`` names (``hammer-tactics``)
    allowed_imports: frozenset[str] = frozenset()
    #: the ledger, for strategies that keep state there (the market, the LLM cache);
    #: None where attempts run away from it (a Ray actor)
    ledger: Any = None
    #: the project's root (the LLM strategies read its settings there)
    root: Path | None = None
    use_llm: bool = False
    llm_budget_usd: float | None = None


@dataclass(frozen=True, slots=True)
class CompiledFile:
    """A file compiled on its own, outside any session (``orch bank``'s recheck)."""

    ok: bool
    #: CPU seconds of the prover's process tree
    cpu_seconds: float
    #: what the prover printed
    output: str = ""


class Backend(Protocol):
    """One prover language, as the engine uses it."""

    #: ``coq`` / ``lean``: the goals' ``language`` and the strategies' ``language``
    language: str
    #: file suffixes this backend owns (``.v``)
    suffixes: tuple[str, ...]

    #: how the prover displays a goal and spells names (the neutral search reads goals with it)
    goal_syntax: GoalSyntax

    @property
    def importable(self) -> Mapping[str, str]:
        """The imports a proof may bring into a file: the name ``--allow-import`` gives
        each -> the sentence written."""

    def join_script(self, sentences: Sequence[str]) -> str:
        """A script as the one string the ledger records (as :meth:`ProjectTools.join_script`)."""

    def scan(self, path: Path, text: str) -> Sequence[Hole]:
        """The holes of ``text`` (the content of ``path``), in file order."""

    def project_files(self, path: Path) -> list[Path] | None:
        """The files a project description lists (``_CoqProject``); None if ``path`` is none."""

    def project_key(self, path: Path) -> Hashable:
        """Files with the same key share one :class:`ProjectTools`."""

    def project_root(self, path: Path) -> Path:
        """The root of the project ``path`` belongs to (its own folder when none is described)."""

    def described_root(self, path: Path) -> Path | None:
        """The root of the project description ``path`` (a file or a folder) is under
        (``_CoqProject``, ``dune-project``, a ``lakefile``), None when there is none."""

    def tools(self, path: Path, settings: ToolSettings, throttle: Any = None) -> ProjectTools:
        """The tools of ``path``'s project; ``throttle`` gates prover processes (the governor)."""

    def strategies(self, inputs: LineupInputs) -> list[Strategy]:
        """The profile's strategies for this language, in the order preferred a priori."""

    def import_insertion(self, text: str, patches: Sequence[Any]) -> tuple[int, str]:
        """Where the patches' imports go in ``text`` and the text inserted there."""

    async def compile_alone(self, path: Path, *, timeout: float) -> CompiledFile:
        """Compile ``path`` as it is on disk, from scratch, as its project describes it."""

    async def version(self, files: Sequence[Path], settings: ToolSettings) -> str:
        """The prover's version (for the ledger), for ``files`` of this language."""

    def builder(self, path: Path, command: str = "") -> ProjectBuilder | None:
        """The builder of the project ``path`` belongs to (``orch info``), None when ``path``
        is in no project this backend reads (a ``_CoqProject``, dune, a ``lakefile``)."""

    def agent(self) -> AgentSide:
        """What an agent (``orch mcp``) reads and checks in this language's files."""

    def repair(self) -> Repair:
        """``orch repair``'s side (a new one per file: it may keep the file's models)."""

    def golf(self) -> Golf | None:
        """``orch golf``'s side (None: the language's proofs are not golfed)."""

    def evaluation(self) -> Evaluation | None:
        """``orch eval``'s side (None: the language has no peers to run)."""

    def declarations(self, paths: Sequence[Path]) -> dict[str, bool] | None:
        """Every declaration of ``paths``: full name -> unproved (the blueprint sync);
        None where the language's declarations are not read."""
