"""A handler-driven fake backend at the language seam, for the engine's scheduling logic.

Like httpx's ``MockTransport(handler)``: a test gives a handler that decides
what each strategy's attempt does (use CPU, time out, raise, hang until
cancelled). It is registered for the suffix ``.fake`` only, so that no real
file ever reaches it, and its verifier refuses everything: it can never show
that a proof exists. The real prover's tests stay with real Coq.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Hashable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from proof_orchestrator.backends import register, unregister
from proof_orchestrator.coq.display import COQ
from proof_orchestrator.goals import Budget, Goal, HoleKind, Outcome, fingerprint_of
from proof_orchestrator.provers.backend import LineupInputs, ToolSettings
from proof_orchestrator.provers.base import Verdict, VerificationResult
from proof_orchestrator.search.features import GoalSyntax
from proof_orchestrator.strategies.base import Strategy, StrategyDefaults, StrategyResult

LANGUAGE = "fake"
_HOLE = re.compile(r"^hole (\w+) : (.*)$", re.M)

#: what a strategy does on a goal: (strategy name, goal, budget) -> its result
Handler = Callable[[str, Goal, Budget], Awaitable[StrategyResult]]


@dataclass(frozen=True)
class FakeHole:
    goal: Goal
    statement_start: int
    proof_start: int
    proof_end: int

    @property
    def declaration(self) -> str:
        return self.goal.qualified_name

    def replacement(self, sentences: tuple[str, ...]) -> str:
        return " ".join(sentences)


class FakeSession:
    def __init__(self) -> None:
        self.cpu = 0.0

    def cpu_seconds(self) -> float:
        return self.cpu


class RefusingVerifier:
    """Refuses every candidate: the fake backend never proves anything."""

    cpu_seconds = 0.0
    compilations = 0

    async def compiles(self, path: Path, text: str) -> tuple[bool, str]:
        return True, ""

    async def verify(
        self,
        path: Path,
        original: str,
        patched: str,
        goals: Sequence[Goal],
        declared_axioms: frozenset[str] = frozenset(),
    ) -> VerificationResult:
        return VerificationResult(Verdict.DOES_NOT_COMPILE, "the fake backend proves nothing")

    async def aclose(self) -> None:
        return None


class FakeTools:
    language = LANGUAGE
    #: nothing to build: the fake has no compiled files
    builder = None

    def __init__(self) -> None:
        self.verifier = RefusingVerifier()
        self.sessions: list[FakeSession] = []

    def stand_in(self, path: Path, text: str) -> None:
        return None

    @contextlib.asynccontextmanager
    async def _session(self) -> AsyncIterator[FakeSession]:
        session = FakeSession()
        self.sessions.append(session)
        yield session

    def open_session(self, hole: Any, text: str) -> contextlib.AbstractAsyncContextManager[Any]:
        return self._session()

    def gate(self, sentences: Sequence[str]) -> tuple[str, ...]:
        return tuple(sentences)

    def declared_axioms(self, text: str) -> set[str]:
        return set()

    def join_script(self, sentences: Sequence[str]) -> str:
        return " ".join(sentences)

    def split_script(self, text: str) -> tuple[str, ...]:
        return tuple(text.split())

    def parse_script(self, text: str) -> tuple[str, ...]:
        return tuple(text.split())

    async def aclose(self) -> None:
        return None


@dataclass
class FakeStrategy(StrategyDefaults):
    """A strategy whose attempts the backend's handler plays."""

    name: str
    handler: Handler
    weight: str = "light"
    language: str = LANGUAGE
    uses_slot: bool = True
    needs_ledger: bool = False

    async def prove(self, session: Any, goal: Goal, budget: Budget) -> StrategyResult:
        result = await self.handler(self.name, goal, budget)
        session.cpu = result.cpu_seconds
        return result


@dataclass
class FakeBackend:
    """Files ``*.fake`` whose lines ``hole NAME : STATEMENT`` are holes."""

    handler: Handler
    #: (name, weight) of the strategies of the lineup
    lineup: Sequence[tuple[str, str]] = (("quick", "light"), ("deep", "heavy"))
    language: str = LANGUAGE
    suffixes: tuple[str, ...] = (".fake",)
    tools_made: list[FakeTools] = field(default_factory=list)
    inputs: list[LineupInputs] = field(default_factory=list)

    def join_script(self, sentences: Sequence[str]) -> str:
        return " ".join(sentences)

    def scan(self, path: Path, text: str) -> list[Any]:
        holes = []
        for match in _HOLE.finditer(text):
            name, statement = match.group(1), match.group(2)
            goal = Goal(
                path,
                text.count("\n", 0, match.start()) + 1,
                name,
                statement,
                HoleKind.SORRY,
                fingerprint_of(statement),
                LANGUAGE,
            )
            holes.append(FakeHole(goal, match.start(), match.start(2), match.end()))
        return holes

    def builder(self, path: Path, command: str = "") -> None:
        return None

    def project_files(self, path: Path) -> list[Path] | None:
        return None

    def project_key(self, path: Path) -> Hashable:
        return (LANGUAGE, str(path.parent))

    def project_root(self, path: Path) -> Path:
        return path.parent

    importable: dict[str, str] = field(default_factory=dict)
    goal_syntax: GoalSyntax = COQ

    def described_root(self, path: Path) -> None:
        return None

    def tools(self, path: Path, settings: ToolSettings, throttle: Any = None) -> FakeTools:
        tools = FakeTools()
        self.tools_made.append(tools)
        return tools

    def strategies(self, inputs: LineupInputs) -> list[Strategy]:
        self.inputs.append(inputs)
        return [FakeStrategy(n, self.handler, weight) for n, weight in self.lineup]

    def import_insertion(self, text: str, patches: Sequence[Any]) -> tuple[int, str]:
        return 0, ""

    async def compile_alone(self, path: Path, *, timeout: float) -> Any:
        raise NotImplementedError("compile_alone")

    async def version(self, files: Sequence[Path], settings: ToolSettings) -> str:
        return "fake 1"

    def agent(self) -> Any:
        raise NotImplementedError("agent")

    def repair(self) -> Any:
        raise NotImplementedError("repair")

    def golf(self) -> None:
        return None

    def evaluation(self) -> None:
        return None

    def declarations(self, paths: Sequence[Path]) -> None:
        return None


@contextlib.contextmanager
def fake_backend(handler: Handler, **kwargs: Any) -> Any:
    """Register a :class:`FakeBackend` for ``.fake`` files for the duration of a test."""
    backend = FakeBackend(handler, **kwargs)
    register(backend)
    try:
        yield backend
    finally:
        unregister(LANGUAGE)


def result(outcome: Outcome, cpu: float, message: str = "") -> StrategyResult:
    return StrategyResult(
        outcome, ("t.",) if outcome is Outcome.CANDIDATE else (), 1, cpu, cpu, message
    )
