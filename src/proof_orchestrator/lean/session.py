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
candidate: :class:`LeanVerifier` recompiles the whole patched file with
``lake env lean --json`` and audits ``#print axioms``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shlex
import shutil
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from ..errors import (
    ProverError,
    ProverHung,
    ProverNotFound,
    ProverRequestError,
)
from ..goals import Goal
from ..project.statedir import scratch_dir
from ..provers.base import ProofState, TacticResult, TacticStatus, Verdict, VerificationResult
from ..provers.process import run_command
from ..search.features import LEAN, GoalSyntax
from ..search.proofstate import Hypothesis, hypotheses
from .holes import LeanHole, command_spans, scan_lean_text
from .holes import declared_axioms as lean_declared_axioms
from .repl import LeanRepl, TacticReply

__all__ = [
    "STANDARD_AXIOMS",
    "LeanGoalError",
    "LeanProject",
    "LeanProver",
    "LeanSession",
    "LeanSettings",
    "LeanVerifier",
    "find_repl",
    "registry_path",
]

#: axioms every Lean proof may use
STANDARD_AXIOMS = frozenset({"propext", "Classical.choice", "Quot.sound"})

_AXIOMS_LINE = re.compile(r"'(?P<name>.+?)' depends on axioms: \[(?P<axioms>.*?)\]", re.S)
_NO_AXIOMS = re.compile(r"'(?P<name>.+?)' does not depend on any axioms")


class LeanGoalError(ProverError):
    """The REPL does not report a goal at the hole (or reports several)."""


@dataclass(frozen=True, slots=True)
class LeanSettings:
    """Knobs of the Lean backend."""

    #: the REPL command line; None: ``ORCH_LEAN_REPL``, the ``orch lean setup`` record, ``repl``
    repl: tuple[str, ...] | None = None
    #: seconds for loading the header and the text before a declaration (Mathlib imports are slow)
    load_timeout: float = 900.0
    #: a tactic gets at least this many wall seconds before the REPL is declared hung
    tactic_floor: float = 10.0
    #: seconds for one whole-file check
    verify_timeout: float = 1800.0
    #: a REPL serves at most this many requests, then is replaced
    max_requests: int = 2000
    #: a REPL above this resident size is retired after its session
    rss_cap: int = 12 * 1024**3
    #: idle REPLs kept per import header
    max_idle: int = 2
    #: address-space cap of one REPL, MiB (None: three quarters of the machine's memory)
    memory_mb: int | None = None


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
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return cache / "orch" / "lean-repl" / "registry.json"


def find_repl(project: LeanProject, settings: LeanSettings) -> list[str]:
    """The command line that starts a REPL for ``project``.

    Order: the setting, ``ORCH_LEAN_REPL`` (a command line), the build that
    ``orch lean setup`` recorded for the project's toolchain, ``repl`` on
    ``PATH``. In a Lake project the REPL runs under ``lake env`` so that the
    project's imports resolve.
    """
    argv: list[str] | None = list(settings.repl) if settings.repl else None
    if argv is None and os.environ.get("ORCH_LEAN_REPL"):
        argv = shlex.split(os.environ["ORCH_LEAN_REPL"])
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


@dataclass(frozen=True, slots=True)
class _Check:
    ok: bool
    output: str
    errors: tuple[tuple[int, str], ...]
    #: declaration name -> axioms it depends on
    axioms: dict[str, frozenset[str]]
    #: lines of ``declaration uses 'sorry'`` warnings
    sorry_lines: frozenset[int]
    cpu_seconds: float


def parse_lean_json(output: str) -> list[dict[str, object]]:
    """The messages of ``lean --json`` (one JSON object per line; other lines are ignored)."""
    messages = []
    for line in output.splitlines():
        line = line.strip()
        if line.startswith("{"):
            with contextlib.suppress(json.JSONDecodeError):
                value = json.loads(line)
                if isinstance(value, dict):
                    messages.append(value)
    return messages


def _axioms_in(data: str) -> tuple[str, frozenset[str]] | None:
    if m := _AXIOMS_LINE.search(data):
        names = frozenset(a.strip() for a in m.group("axioms").split(",") if a.strip())
        return m.group("name"), names
    if m := _NO_AXIOMS.search(data):
        return m.group("name"), frozenset()
    return None


class LeanVerifier:
    """Checks whole ``.lean`` files with ``lake env lean --json`` (or ``lean --json``)."""

    def __init__(self, project: LeanProject, settings: LeanSettings | None = None) -> None:
        self.project = project
        self.settings = settings or LeanSettings()
        self.cpu_seconds = 0.0
        self._cache: dict[str, _Check] = {}

    def argv(self, file: Path) -> list[str]:
        if self.project.lake:
            if shutil.which("lake") is None:
                raise ProverNotFound("`lake` is not on PATH; install elan or add the toolchain")
            return ["lake", "env", "lean", "--json", str(file)]
        if shutil.which("lean") is None:
            raise ProverNotFound("`lean` is not on PATH; install elan (it provides lean and lake)")
        return ["lean", "--json", str(file)]

    async def _check(self, text: str, audit: Sequence[str]) -> _Check:
        """Compile ``text`` with ``#print axioms`` for ``audit`` appended."""
        probe = text.rstrip("\n") + "\n\n" + "".join(f"#print axioms {n}\n" for n in audit)
        key = hashlib.sha256(probe.encode()).hexdigest()
        if key in self._cache:
            return self._cache[key]
        with scratch_dir(self.project.root) as folder:
            file = Path(folder) / "OrchCheck.lean"
            file.write_text(probe, encoding="utf-8")
            run = await run_command(
                self.argv(file), cwd=str(self.project.root), timeout=self.settings.verify_timeout
            )
        self.cpu_seconds += run.cpu_seconds
        errors: list[tuple[int, str]] = []
        axioms: dict[str, frozenset[str]] = {}
        sorry_lines: set[int] = set()
        for message in parse_lean_json(run.output):
            data = str(message.get("data", ""))
            pos = message.get("pos")
            line = int(pos.get("line", 0)) if isinstance(pos, dict) else 0
            severity = message.get("severity")
            if severity == "error":
                errors.append((line, data))
            elif found := _axioms_in(data):
                axioms[found[0]] = found[1]
            elif "declaration uses 'sorry'" in data or "declaration uses `sorry`" in data:
                sorry_lines.add(line)
        ok = run.returncode == 0 and not errors
        check = _Check(
            ok, run.output, tuple(errors), axioms, frozenset(sorry_lines), run.cpu_seconds
        )
        self._cache[key] = check
        return check

    async def compiles(self, path: Path, text: str) -> tuple[bool, str]:
        names = sorted({h.decl_name for h in scan_lean_text(path, text) if h.decl_name})
        check = await self._check(text, names)
        return check.ok, "\n".join(f"line {n}: {d}" for n, d in check.errors) or check.output

    async def verify(
        self,
        path: Path,
        original: str,
        patched: str,
        goals: Sequence[Goal],
        declared_axioms: frozenset[str] = frozenset(),
    ) -> VerificationResult:
        holes = {h.goal.fingerprint: h for h in scan_lean_text(path, original)}
        chosen = [holes[g.fingerprint] for g in goals if g.fingerprint in holes]
        names = sorted({h.decl_name for h in chosen if h.decl_name})
        before = await self._check(original, names)
        after = await self._check(patched, names)
        if not after.ok:
            line, _ = after.errors[0] if after.errors else (None, "")
            detail = "\n".join(f"line {n}: {d}" for n, d in after.errors) or after.output
            return VerificationResult(
                Verdict.DOES_NOT_COMPILE,
                detail[-3000:],
                cpu_seconds=after.cpu_seconds,
                error_line=line,
            )
        allowed = set(STANDARD_AXIOMS) | declared_axioms | lean_declared_axioms(original)
        filled: dict[int, int] = {}
        for hole in chosen:
            filled[hole.decl_start] = filled.get(hole.decl_start, 0) + 1
        offending: list[str] = []
        new: set[str] = set()
        spans_before = [a for a, _ in command_spans(original)]
        lines_after = _declaration_lines(patched)
        for hole in chosen:
            finished = filled[hole.decl_start] >= hole.sorries_in_decl
            first, last = lines_after[spans_before.index(hole.decl_start)]
            if finished and any(first <= n <= last for n in after.sorry_lines):
                offending.append(hole.goal.qualified_name)
                new.add("sorryAx")
            if not hole.decl_name:
                continue
            old = before.axioms.get(hole.decl_name, frozenset()) - {"sorryAx"}
            now = after.axioms.get(hole.decl_name)
            if now is None:
                offending.append(hole.goal.qualified_name)
                new.add(f"(no `#print axioms` answer for {hole.decl_name})")
                continue
            extra = {a for a in now - old - allowed if not (a == "sorryAx" and not finished)}
            if extra:
                offending.append(hole.goal.qualified_name)
                new |= extra
        if offending:
            return VerificationResult(
                Verdict.NEW_ASSUMPTIONS,
                "new assumptions: " + ", ".join(sorted(new)),
                tuple(sorted(new)),
                cpu_seconds=after.cpu_seconds,
                offending=tuple(dict.fromkeys(offending)),
            )
        return VerificationResult(Verdict.ACCEPTED, cpu_seconds=after.cpu_seconds)

    async def aclose(self) -> None:
        self._cache.clear()


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _declaration_lines(text: str) -> list[tuple[int, int]]:
    """(first line, last line) of every command of ``text``, in order."""
    return [(_line(text, a), _line(text, b)) for a, b in command_spans(text)]
