"""The prover seam: what a strategy may do with a prover, whatever the prover.

A :class:`ProofSession` is opened at one hole (the file's content up to and
including the statement). It runs tactics, hands out :class:`ProofState`
handles, and goes back to any earlier handle. Whole-file verification is a
separate object, :class:`Verifier`, because it answers a different question
(does the *file* compile with this proof, and does it assume nothing new?).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

from ..goals import Goal, HoleUse

__all__ = [
    "Candidate",
    "KernelChecked",
    "ProofSession",
    "ProofState",
    "Prover",
    "TacticResult",
    "TacticStatus",
    "Verdict",
    "VerificationResult",
    "Verifier",
]


class TacticStatus(enum.StrEnum):
    """What happened to one tactic sent to a session."""

    #: no goals remain: the proof can be closed
    COMPLETE = "complete"
    #: the tactic worked and goals remain
    GOALS = "goals"
    #: the prover rejected the tactic (message in ``TacticResult.message``)
    FAILED = "failed"
    #: the tactic ran out of time (the prover's own timeout or the hard guard)
    TIMEOUT = "timeout"


@dataclass(frozen=True, slots=True)
class ProofState:
    """A handle on a proof state inside one session.

    ``script`` is the list of sentences from the hole to this state; it lets a
    session rebuild the state in a fresh prover if the old one had to be killed.
    """

    script: tuple[str, ...]
    #: an opaque, prover-specific token (Coq: the coqtop state number)
    token: int
    #: which prover process handed the token out
    generation: int


@dataclass(frozen=True, slots=True)
class TacticResult:
    """The typed reply to one tactic."""

    status: TacticStatus
    #: the state after the tactic (the unchanged state when it failed)
    state: ProofState
    #: remaining goals as the prover prints them (empty when complete or failed)
    goals: tuple[str, ...] = ()
    #: the prover's message for FAILED / TIMEOUT
    message: str = ""
    #: CPU seconds the prover spent on this tactic
    cpu_seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status in (TacticStatus.COMPLETE, TacticStatus.GOALS)


class ProofSession(Protocol):
    """An open proof of one goal."""

    @property
    def root(self) -> ProofState:
        """The state right after the statement."""

    async def run_tactic(
        self, tactic: str, state: ProofState | None = None, *, timeout: float
    ) -> TacticResult:
        """Run one sentence from ``state`` (default: the current state)."""

    async def run_script(
        self, sentences: Sequence[str], state: ProofState | None = None, *, timeout: float
    ) -> TacticResult:
        """Run several sentences in order, stopping at the first failure."""

    async def back_to(self, state: ProofState) -> None:
        """Make ``state`` current again."""

    def cpu_seconds(self) -> float:
        """CPU seconds used by this session's prover processes so far."""


@runtime_checkable
class KernelChecked(Protocol):
    """A session that can close a proof the way the file will (Coq: ``Qed``)."""

    async def kernel_accepts(self, sentences: Sequence[str], timeout: float) -> tuple[bool, str]:
        """Whether ``sentences`` prove the goal from the root and the proof closes
        (ssreflect's ``exact/`` can leave no goal and a term the kernel refuses), with
        the prover's message; the session is back at its root afterwards."""


class Prover(Protocol):
    """Opens sessions on goals of one project."""

    name: str

    async def version(self) -> str: ...

    def session(self, goal: Goal, source: str) -> AbstractAsyncContextManager[ProofSession]:
        """A session positioned at ``goal`` in ``source`` (the file's current text)."""

    async def aclose(self) -> None: ...


class Verdict(enum.StrEnum):
    """The verifier's answer for one candidate proof."""

    #: the file compiles and the proof assumes nothing new
    ACCEPTED = "accepted"
    #: the patched file does not compile
    DOES_NOT_COMPILE = "does_not_compile"
    #: the file compiles but the proof relies on a new assumption
    NEW_ASSUMPTIONS = "new_assumptions"


@dataclass(frozen=True, slots=True)
class Candidate:
    """A proof script for one goal, proposed by a strategy."""

    goal: Goal
    sentences: tuple[str, ...]
    strategy: str


@dataclass(frozen=True, slots=True)
class VerificationResult:
    verdict: Verdict
    #: the compiler's output when it failed, or the offending assumptions
    detail: str = ""
    new_assumptions: tuple[str, ...] = field(default=())
    cpu_seconds: float = 0.0
    #: for DOES_NOT_COMPILE: the 1-based line of the patched text the compiler stopped at
    error_line: int | None = None
    #: for NEW_ASSUMPTIONS: the qualified names of the lemmas that assume something new
    offending: tuple[str, ...] = field(default=())
    #: per lemma (qualified name), the holes of the project its proof rests on and
    #: nothing else new: accepted, closed modulo those holes (``--strict-holes`` refuses them)
    holes_used: dict[str, tuple[HoleUse, ...]] = field(default_factory=dict)

    @property
    def accepted(self) -> bool:
        return self.verdict is Verdict.ACCEPTED


class Verifier(Protocol):
    """Checks whole files."""

    #: CPU seconds its compilations and audits have used so far
    cpu_seconds: float
    #: the compiler runs so far (a check is one, more when it failed or could not decide)
    compilations: int

    async def compiles(self, path: Path, text: str) -> tuple[bool, str]:
        """Does ``text`` compile as the content of ``path``? Returns (ok, output)."""

    async def verify(
        self,
        path: Path,
        original: str,
        patched: str,
        goals: Sequence[Goal],
        declared_axioms: frozenset[str] = frozenset(),
    ) -> VerificationResult:
        """Recompile ``patched`` and audit the axioms of ``goals`` against ``original``
        (``declared_axioms``: what the file declares itself, the user's own trust)."""

    async def aclose(self) -> None: ...
