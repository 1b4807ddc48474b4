"""The Lean 4 backend: warm REPL pools, proof sessions at ``sorry`` holes, whole-file checks.

A session at a hole sends the REPL, in order: the file's ``import`` header
(the first command of a fresh REPL, because imports are only allowed there),
the text between the header and the hole's declaration, and the declaration
itself with its ``sorry``s. The REPL's ``sorries`` reply names the goal of each
``sorry`` and a proof state for it; the session picks the one at the hole's
position and runs tactics on it. Environments and proof states are REPL
numbers, so trying another tactic from the root is just reusing the root's
number.

REPLs are pooled by import header (importing Mathlib costs seconds to
minutes, never paid per goal) together with the environments they already
built, keyed by the exact command texts. A REPL that times out or breaks is
killed and replaced; the commands a session needs are sent again to the new
one, and proof states are rebuilt from their scripts.

The REPL is known to accept some incorrect proofs in tactic mode
(leanprover-community/repl issue 44), so a session's success is only a
candidate: :class:`~.verify.LeanVerifier` recompiles the whole patched file with
``lake env lean --json`` and audits ``#print axioms``.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from ..config import cache_folder
from ..errors import (
    ProverError,
    ProverHung,
    ProverNotFound,
    ProverRequestError,
)
from ..provers.base import ProofState, TacticResult, TacticStatus
from ..provers.settings import LeanSettings
from ..search.features import GoalSyntax
from ..search.proofstate import Hypothesis, hypotheses
from .display import LEAN
from .holes import LeanHole
from .repl import LeanRepl, TacticReply

__all__ = [
    "STANDARD_AXIOMS",
    "LeanGoalError",
    "LeanProject",
    "LeanProver",
    "LeanSession",
    "LeanSettings",
    "find_repl",
    "registry_path",
]

#: axioms every Lean proof may use
STANDARD_AXIOMS = frozenset({"propext", "Classical.choice", "Quot.sound"})


class LeanGoalError(ProverError):
    """The REPL does not report a goal at the hole (or reports several)."""


@dataclass(frozen=True, slots=True)
class LeanProject:
    """Where a ``.lean`` file's project lives and how to run Lean in it."""

    root: Path
    #: the project has a ``lakefile.lean``/``lakefile.toml``: run tools under ``lake env``
    lake: bool
    toolchain: str

    @classmethod
    def for_file(cls, path: Path) -> LeanProject:
        start = path.resolve().parent
        for folder in (start, *start.parents):
            if any((folder / name).exists() for name in ("lakefile.lean", "lakefile.toml")):
                return cls(folder, True, _toolchain(folder))
            if (folder / "lean-toolchain").exists():
                return cls(folder, False, _toolchain(folder))
        return cls(start, False, "")

    def depends_on(self, package: str) -> bool:
        """Does the project's manifest or lakefile mention ``package``?"""
        for name in ("lake-manifest.json", "lakefile.lean", "lakefile.toml"):
            with contextlib.suppress(OSError):
                if package.lower() in (self.root / name).read_text(encoding="utf-8").lower():
                    return True
        return False


def _toolchain(folder: Path) -> str:
    try:
        return (folder / "lean-toolchain").read_text(encoding="utf-8").strip()
    except OSError:
        return ""


def registry_path() -> Path:
    """Where ``orch lean setup`` records the REPL it built for each toolchain."""
    return cache_folder("lean-repl") / "registry.json"


def repl_from_environment() -> list[str] | None:
    """``ORCH_LEAN_REPL`` as a command line (None: unset or empty); the one place it is read."""
    raw = os.environ.get("ORCH_LEAN_REPL", "")
    return shlex.split(raw) if raw else None


def find_repl(project: LeanProject, settings: LeanSettings) -> list[str]:
    """The command line that starts a REPL for ``project``.

    Order: the setting, ``ORCH_LEAN_REPL`` (a command line), the build that
    ``orch lean setup`` recorded for the project's toolchain, ``repl`` on
    ``PATH``. In a Lake project the REPL runs under ``lake env`` so that the
    project's imports resolve.
    """
    argv: list[str] | None = list(settings.repl) if settings.repl else repl_from_environment()
    if argv is None:
        with contextlib.suppress(OSError, ValueError):
            recorded = json.loads(registry_path().read_text(encoding="utf-8"))
            binary = recorded.get(project.toolchain or "default")
            if binary and Path(binary).exists():
                argv = [binary]
    if argv is None and shutil.which("repl"):
        argv = ["repl"]
    if argv is None:
        raise ProverNotFound(
            "no Lean REPL found: run `orch lean setup` in the project (it builds "
            "leanprover-community/repl for the project's toolchain), or set ORCH_LEAN_REPL "
            "to the command that starts one"
        )
    if project.lake and Path(argv[0]).name != "lake":
        if shutil.which("lake") is None:
            raise ProverNotFound(
                f"{project.root} is a Lake project but `lake` is not on PATH; install elan "
                "(https://github.com/leanprover/elan) or put the toolchain's bin folder on PATH"
            )
        argv = ["lake", "env", *argv]
    return argv


@dataclass(slots=True)
class _Warm:
    """One REPL and the environments it has built, keyed by the command texts that built them."""

    repl: LeanRepl
    generation: int
    envs: dict[tuple[str, ...], int] = field(default_factory=dict)


Throttle = Callable[[], Awaitable[None]]


class LeanProver:
    """Opens sessions on ``sorry`` holes of one Lean project."""

    name = "lean"

    def __init__(
        self,
        project: LeanProject,
        settings: LeanSettings | None = None,
        *,
        throttle: Throttle | None = None,
    ) -> None:
        self.project = project
        self.settings = settings or LeanSettings()
        self.throttle = throttle
        self._idle: dict[str, list[_Warm]] = {}
        self._generation = 0
        self._closed = False

    async def version(self) -> str:
        return f"lean {self.project.toolchain or '(toolchain unknown)'}"

    def argv(self) -> list[str]:
        return find_repl(self.project, self.settings)

    async def _start(self) -> _Warm:
        memory = (
            self.settings.memory_mb * 1024**2
            if self.settings.memory_mb
            else int(psutil.virtual_memory().total * 0.75)
        )
        repl = LeanRepl(self.argv(), cwd=str(self.project.root), memory_bytes=memory)
        await repl.start()
        self._generation += 1
        return _Warm(repl, self._generation)

    async def _take(self, header: str) -> _Warm:
        idle = self._idle.get(header, [])
        while idle:
            warm = idle.pop()
            if warm.repl.alive:
                return warm
            await warm.repl.close()
        return await self._start()

    async def _give_back(self, header: str, warm: _Warm) -> None:
        settings = self.settings
        idle = self._idle.setdefault(header, [])
        if (
            self._closed
            or not warm.repl.alive
            or warm.repl.requests >= settings.max_requests
            or warm.repl.rss_bytes() > settings.rss_cap
            or len(idle) >= settings.max_idle
        ):
            await warm.repl.close()
            return
        idle.append(warm)

    async def replace(self, warm: _Warm) -> _Warm:
        """Kill a poisoned REPL and start a fresh one (its environments are rebuilt on demand)."""
        await warm.repl.close()
        return await self._start()

    @contextlib.asynccontextmanager
    async def session(self, hole: LeanHole, source: str) -> AsyncIterator[LeanSession]:
        header = source[: hole.header_end].strip()
        warm = await self._take(header)
        session = LeanSession(self, warm, hole, source)
        try:
            await session.open()
            yield session
        finally:
            await self._give_back(header, session.warm)

    @contextlib.asynccontextmanager
    async def repl(self, header: str) -> AsyncIterator[LeanRepl]:
        """A REPL of the pool for files whose import header is ``header``, given back after
        use (``orch repair``'s detection sends a whole file through it, command by command)."""
        warm = await self._take(header)
        try:
            yield warm.repl
        finally:
            await self._give_back(header, warm)

    async def aclose(self) -> None:
        self._closed = True
        for idle in self._idle.values():
            for warm in idle:
                await warm.repl.close()
        self._idle.clear()


class LeanSession:
    """An open proof of one ``sorry``.

    It is a :class:`~.base.ProofSession` and a
    :class:`~proof_orchestrator.search.proofstate.ProofStates`: a proof state is
    a REPL number that stays valid, so a search branches from any state for free.
    """

    #: how Lean prints goals (hypotheses above ``⊢``) and spells names
    syntax: GoalSyntax = LEAN

    def __init__(self, prover: LeanProver, warm: _Warm, hole: LeanHole, source: str) -> None:
        self.prover = prover
        self.warm = warm
        self.hole = hole
        #: the file's text the session was opened on
        self.source = source
        header = source[: hole.header_end].strip()
        body = source[hole.header_end : hole.decl_start].strip()
        self.chain = tuple(part for part in (header, body) if part)
        self.declaration = source[hole.decl_start : hole.decl_end]
        self.goal_text = ""
        self._root: ProofState | None = None
        #: the goals the REPL reported for each (generation, proof state) reached
        self._goals: dict[tuple[int, int], tuple[str, ...]] = {}
        self._cpu_done = 0.0
        self._cpu_start = warm.repl.cpu_seconds()

    @property
    def root(self) -> ProofState:
        if self._root is None:
            raise RuntimeError("the session is not open")
        return self._root

    def cpu_seconds(self) -> float:
        return self._cpu_done + self.warm.repl.cpu_seconds() - self._cpu_start

    async def _throttle(self) -> None:
        if self.prover.throttle is not None:
            await self.prover.throttle()

    async def _environment(self) -> int | None:
        """The environment just before the declaration, built once per REPL."""
        env: int | None = None
        timeout = self.prover.settings.load_timeout
        for index in range(len(self.chain)):
            key = self.chain[: index + 1]
            known = self.warm.envs.get(key)
            if known is not None:
                env = known
                continue
            await self._throttle()
            reply = await self.warm.repl.command(self.chain[index], env, timeout=timeout)
            if reply.errors:
                raise LeanGoalError(
                    "the file has errors before this declaration: "
                    + "; ".join(m.data for m in reply.errors)[:800]
                )
            env = self.warm.envs[key] = reply.env
        return env

    async def open(self) -> None:
        env = await self._environment()
        await self._throttle()
        reply = await self.warm.repl.command(
            self.declaration, env, timeout=self.prover.settings.load_timeout
        )
        where = (self.hole.line_in_decl, self.hole.column_in_decl)
        found = [
            s for s in reply.sorries if s.pos is not None and (s.pos.line, s.pos.column) == where
        ]
        if not found:
            errors = "; ".join(m.data for m in reply.errors)[:800]
            raise LeanGoalError(
                f"the REPL reports no goal at {self.hole.goal.label()}"
                + (f" (errors: {errors})" if errors else "")
            )
        if len(found) > 1:
            raise LeanGoalError(
                f"the sorry at {self.hole.goal.label()} stands for {len(found)} goals "
                "(as after `all_goals sorry`); one script for several goals is not supported"
            )
        self.goal_text = found[0].goal
        self._root = ProofState((), found[0].proof_state, self.warm.generation)

    async def all_tactics(self, path: str) -> tuple[Mapping[str, Any], ...]:
        """Every tactic of the file at ``path`` with the goals it ran on (REPL file mode).

        ``path`` is read by the REPL (relative paths from the project's root).
        Refusals raise :class:`~proof_orchestrator.errors.ProverRequestError`; a
        REPL that hangs on the file is replaced (the session goes on) and
        :class:`~proof_orchestrator.errors.ProverHung` is raised.
        """
        await self._throttle()
        try:
            reply = await self.warm.repl.file(
                path, all_tactics=True, timeout=self.prover.settings.load_timeout
            )
        except ProverError:
            if not self.warm.repl.alive:
                await self._restart()
            raise
        return reply.tactics

    async def _restart(self) -> None:
        self._cpu_done = self.cpu_seconds()
        self.warm = await self.prover.replace(self.warm)
        self._cpu_start = self.warm.repl.cpu_seconds()
        await self.open()

    async def _token(self, state: ProofState) -> int:
        """``state``'s proof-state number in the current REPL (rebuilt after a restart)."""
        if state.generation == self.warm.generation:
            return state.token
        if self.root.generation != self.warm.generation:
            await self.open()
        token = self.root.token
        for tactic in state.script:
            reply = await self._send(tactic, token, self.prover.settings.load_timeout)
            if reply.proof_state is None or reply.failed:
                raise LeanGoalError(
                    f"could not rebuild a proof state after a restart at {tactic!r}"
                )
            token = reply.proof_state
        return token

    async def _send(self, tactic: str, token: int, timeout: float) -> TacticReply:
        await self._throttle()
        return await self.warm.repl.tactic(tactic, token, timeout=timeout)

    async def run_tactic(
        self, tactic: str, state: ProofState | None = None, *, timeout: float
    ) -> TacticResult:
        state = state or self.root
        token = await self._token(state)
        wall = max(timeout, self.prover.settings.tactic_floor)
        cpu_before = self.cpu_seconds()
        try:
            reply = await self._send(tactic, token, wall)
        except ProverHung as exc:
            await self._restart()
            return TacticResult(TacticStatus.TIMEOUT, self.root, message=str(exc), cpu_seconds=0.0)
        except ProverRequestError:
            raise
        cpu = self.cpu_seconds() - cpu_before
        if reply.failed or reply.proof_state is None:
            message = "; ".join(reply.errors) or reply.proof_status or "the tactic failed"
            return TacticResult(TacticStatus.FAILED, state, message=message, cpu_seconds=cpu)
        after = ProofState((*state.script, tactic), reply.proof_state, self.warm.generation)
        info = "\n".join(m.data for m in reply.messages if m.severity == "info")
        status = TacticStatus.COMPLETE if reply.complete else TacticStatus.GOALS
        self._goals[(after.generation, after.token)] = reply.goals
        return TacticResult(status, after, reply.goals, info, cpu)

    async def run_script(
        self, sentences: Sequence[str], state: ProofState | None = None, *, timeout: float
    ) -> TacticResult:
        current = state or self.root
        result = TacticResult(TacticStatus.GOALS, current)
        for sentence in sentences:
            result = await self.run_tactic(sentence, current, timeout=timeout)
            if not result.ok:
                return result
            current = result.state
        return result

    async def back_to(self, state: ProofState) -> None:
        """Nothing to do: every tactic names the proof state it starts from."""
        del state

    # -- the search's view (search.proofstate.ProofStates) --------------------------

    async def apply(self, tactic: str, state: ProofState, *, timeout: float) -> TacticResult:
        return await self.run_tactic(tactic, state, timeout=timeout)

    async def show(self, state: ProofState, *, timeout: float) -> tuple[str, ...]:
        """The goals at ``state``: the hole's goal at the root, else the REPL's last word on it."""
        if state == self.root:
            return (self.goal_text,) if self.goal_text else ()
        known = self._goals.get((state.generation, state.token))
        if known is not None:
            return known
        shown = await self.run_tactic("skip", state, timeout=timeout)
        return shown.goals

    async def reach(self, state: ProofState, *, timeout: float) -> ProofState | None:
        """``state`` itself: REPL proof states are immutable (rebuilt only after a restart)."""
        del timeout
        return state

    def hypotheses(self, goal: str) -> list[Hypothesis]:
        return hypotheses(goal, self.syntax)

    async def check(self, script: Sequence[str], *, timeout: float) -> TacticResult:
        return await self.run_script(script, self.root, timeout=timeout)


# -- whole-file verification ---------------------------------------------------------
