"""One Lean REPL process (leanprover-community/repl) driven over pipes.

Protocol facts this client relies on (from the REPL's own recorded test
traffic, ``shared/lean-repl-transcripts``):

* a request is one JSON object followed by a blank line; the REPL answers each
  request with one JSON object followed by a blank line, in order;
* ``{"cmd": TEXT}`` elaborates commands in a fresh environment (``import``
  lines are only allowed there); ``{"cmd": TEXT, "env": N}`` continues from
  environment ``N``. Both answer with a new ``env`` number, ``messages`` and,
  for each ``sorry``, a ``sorries`` entry with its goal and a ``proofState``;
* ``{"tactic": TAC, "proofState": N}`` runs a tactic on a proof state and
  answers with a new ``proofState``, the remaining ``goals`` (``[]`` when none
  remain), ``messages`` and a ``proofStatus``;
* environments and proof states are integers that stay valid for the life of
  the process, so branching is simply reusing an older number;
* ``{"message": TEXT}`` is the REPL refusing a request: ``Unknown
  environment.``, ``Unknown proof state.``, JSON it could not parse, or
  ``Lean error: ...`` when a tactic threw before producing a state.

Anything else (EOF, a reply that is not JSON, a reply over the byte cap, no
reply within the timeout) kills the process group: the process is *poisoned*
and the caller starts a fresh one. :class:`LeanRepl` is that one process;
:mod:`proof_orchestrator.lean.session` keeps pools of them and replays the
commands a session needs into a fresh one.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import psutil

from ..errors import (
    ProverCrashed,
    ProverHung,
    ProverProtocolError,
    ProverReplyTooLarge,
    ProverRequestError,
    SessionClosed,
)
from ..provers.process import TRAFFIC, process_cpu_seconds, spawn, stop_process
from ..provers.tasks import cancel_and_wait

__all__ = [
    "DEFAULT_REPLY_CAP",
    "CommandReply",
    "LeanMessage",
    "LeanRepl",
    "Position",
    "SorryInfo",
    "TacticReply",
    "parse_command_reply",
    "parse_tactic_reply",
]

#: largest reply accepted from the REPL, in bytes
DEFAULT_REPLY_CAP = 64 * 1024**2

#: the prefix of a ``message`` reply that reports a failed tactic rather than a bad request
_LEAN_ERROR = "Lean error:"


@dataclass(frozen=True, slots=True)
class Position:
    """A position as the REPL reports it: 1-based line, 0-based column in code points."""

    line: int
    column: int


@dataclass(frozen=True, slots=True)
class LeanMessage:
    severity: str
    data: str
    pos: Position | None = None
    end_pos: Position | None = None

    @property
    def is_error(self) -> bool:
        return self.severity == "error"


@dataclass(frozen=True, slots=True)
class SorryInfo:
    """One ``sorry`` the REPL found, with the proof state that stands for it."""

    proof_state: int
    goal: str
    pos: Position | None = None
    end_pos: Position | None = None


@dataclass(frozen=True, slots=True)
class CommandReply:
    env: int
    messages: tuple[LeanMessage, ...] = ()
    sorries: tuple[SorryInfo, ...] = ()
    #: ``tactics`` entries (``allTactics`` mode), as the REPL sent them
    tactics: tuple[Mapping[str, Any], ...] = ()
    raw: Mapping[str, Any] = field(default_factory=dict)

    @property
    def errors(self) -> tuple[LeanMessage, ...]:
        return tuple(m for m in self.messages if m.is_error)


@dataclass(frozen=True, slots=True)
class TacticReply:
    """The reply to one tactic.

    ``error`` is set when the REPL refused the tactic outright
    (``{"message": "Lean error: ..."}``); then there is no new proof state.
    """

    proof_state: int | None
    goals: tuple[str, ...] = ()
    messages: tuple[LeanMessage, ...] = ()
    sorries: tuple[SorryInfo, ...] = ()
    proof_status: str = ""
    traces: tuple[str, ...] = ()
    error: str = ""
    raw: Mapping[str, Any] = field(default_factory=dict)

    @property
    def errors(self) -> tuple[str, ...]:
        found = tuple(m.data for m in self.messages if m.is_error)
        return (self.error, *found) if self.error else found

    @property
    def failed(self) -> bool:
        """The tactic did not work: refused, an error, or a ``sorry``/metavariable left behind.

        ``proofStatus`` says ``Incomplete: contains sorry`` (an error the REPL
        papered over) or ``Incomplete: contains metavariable(s)``; only
        ``Incomplete: open goals remain`` is real progress. REPL versions
        without ``proofStatus`` are judged by the messages and sorries alone.
        """
        status = self.proof_status
        return (
            bool(self.errors)
            or self.proof_state is None
            or bool(self.sorries)
            or (bool(status) and status != "Completed" and "open goals" not in status)
        )

    @property
    def complete(self) -> bool:
        """No goal remains and nothing was papered over."""
        return not self.failed and not self.goals


def _position(raw: Any) -> Position | None:
    if isinstance(raw, dict) and isinstance(raw.get("line"), int):
        return Position(raw["line"], int(raw.get("column", 0)))
    return None


def _messages(raw: Mapping[str, Any]) -> tuple[LeanMessage, ...]:
    return tuple(
        LeanMessage(
            severity=str(m.get("severity", "")),
            data=str(m.get("data", "")),
            pos=_position(m.get("pos")),
            end_pos=_position(m.get("endPos")),
        )
        for m in raw.get("messages", ())
        if isinstance(m, dict)
    )


def _sorries(raw: Mapping[str, Any]) -> tuple[SorryInfo, ...]:
    return tuple(
        SorryInfo(
            proof_state=int(s["proofState"]),
            goal=str(s.get("goal", "")),
            pos=_position(s.get("pos")),
            end_pos=_position(s.get("endPos")),
        )
        for s in raw.get("sorries", ())
        if isinstance(s, dict) and isinstance(s.get("proofState"), int)
    )


def _refusal(raw: Mapping[str, Any]) -> str | None:
    """The text of a ``{"message": ...}`` reply, or None for an ordinary reply."""
    if "message" in raw and "env" not in raw and "proofState" not in raw:
        return str(raw["message"])
    return None


def parse_command_reply(raw: Mapping[str, Any]) -> CommandReply:
    """Type a reply to ``cmd`` / ``path`` / ``unpickleEnvFrom``. Refusals raise."""
    refusal = _refusal(raw)
    if refusal is not None:
        raise ProverRequestError(refusal)
    env = raw.get("env")
    if not isinstance(env, int):
        raise ProverProtocolError(f"a command reply without an environment: {raw!r:.300}")
    return CommandReply(
        env=env,
        messages=_messages(raw),
        sorries=_sorries(raw),
        tactics=tuple(t for t in raw.get("tactics", ()) if isinstance(t, dict)),
        raw=raw,
    )


def parse_tactic_reply(raw: Mapping[str, Any]) -> TacticReply:
    """Type a reply to ``tactic``. A ``Lean error:`` refusal is a failed tactic;
    other refusals (an unknown proof state) raise."""
    refusal = _refusal(raw)
    if refusal is not None:
        if refusal.startswith(_LEAN_ERROR):
            return TacticReply(None, error=refusal[len(_LEAN_ERROR) :].strip(), raw=raw)
        raise ProverRequestError(refusal)
    state = raw.get("proofState")
    goals = raw.get("goals")
    if not isinstance(state, int) or not isinstance(goals, list):
        raise ProverProtocolError(f"a tactic reply without proofState/goals: {raw!r:.300}")
    return TacticReply(
        proof_state=state,
        goals=tuple(str(g) for g in goals),
        messages=_messages(raw),
        sorries=_sorries(raw),
        proof_status=str(raw.get("proofStatus", "")),
        traces=tuple(str(t) for t in raw.get("traces", ())),
        raw=raw,
    )


class LeanRepl:
    """Owner of one REPL process. Use as ``async with LeanRepl(argv) as repl``.

    Every request has a wall-clock timeout; past it, or on EOF, malformed JSON
    or an oversized reply, the process group is killed and the object is
    closed (``poisoned`` tells which). Requests are serialised by a lock: the
    REPL answers strictly in order.
    """

    def __init__(
        self,
        argv: Sequence[str],
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        reply_cap: int = DEFAULT_REPLY_CAP,
        memory_bytes: int | None = None,
    ) -> None:
        if not argv:
            raise ValueError("an empty REPL command line")
        self.argv = tuple(argv)
        self.cwd = cwd
        self.env = env
        self.reply_cap = reply_cap
        self.memory_bytes = memory_bytes
        self.requests = 0
        self.poisoned = ""
        self._proc: asyncio.subprocess.Process | None = None
        self._ps: psutil.Process | None = None
        self._lock = asyncio.Lock()
        self._stderr: collections.deque[str] = collections.deque(maxlen=40)
        self._stderr_task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> LeanRepl:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.returncode is None and not self.poisoned

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    async def start(self) -> None:
        if self._proc is not None:
            raise RuntimeError("this REPL was already started")
        self._proc = await spawn(
            self.argv,
            cwd=self.cwd,
            env=self.env,
            merge_stderr=False,
            memory_bytes=self.memory_bytes,
        )
        with contextlib.suppress(psutil.NoSuchProcess):
            self._ps = psutil.Process(self._proc.pid)
        self._stderr_task = asyncio.create_task(self._drain_stderr(), name="lean-repl-stderr")

    async def _drain_stderr(self) -> None:
        assert self._proc is not None
        assert self._proc.stderr is not None
        while line := await self._proc.stderr.readline():
            self._stderr.append(line.decode(errors="replace").rstrip())

    def stderr_tail(self) -> str:
        return "\n".join(self._stderr)

    def cpu_seconds(self) -> float:
        return process_cpu_seconds(self._ps) if self._ps is not None else 0.0

    def rss_bytes(self) -> int:
        """Resident size of the REPL and its children (``lake env`` starts the REPL as a child)."""
        if self._ps is None:
            return 0
        try:
            procs = [self._ps, *self._ps.children(recursive=True)]
            return sum(p.memory_info().rss for p in procs)
        except psutil.NoSuchProcess:
            return 0

    async def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            await stop_process(proc)
        await cancel_and_wait(self._stderr_task)
        self._stderr_task = None

    async def _poison(self, why: str) -> None:
        self.poisoned = why
        proc = self._proc
        if proc is not None:
            await stop_process(proc)

    # -- requests ----------------------------------------------------------------

    async def request(self, payload: Mapping[str, Any], *, timeout: float) -> dict[str, Any]:
        """Send one JSON request and return the JSON reply (a refusal is returned, not raised)."""
        return await self.request_text(json.dumps(payload, ensure_ascii=False), timeout=timeout)

    async def request_text(self, text: str, *, timeout: float) -> dict[str, Any]:
        """Send one already-serialised request. It must not contain a blank line."""
        body = text.strip()
        if not body or "\n\n" in body.replace("\r", ""):
            raise ValueError("a REPL request must be non-empty and contain no blank line")
        async with self._lock:
            proc = self._proc
            if proc is None or self.poisoned:
                why = f" ({self.poisoned})" if self.poisoned else ""
                raise SessionClosed(f"the Lean REPL is closed{why}")
            assert proc.stdin is not None
            self.requests += 1
            TRAFFIC.count(1)
            try:
                proc.stdin.write(body.encode() + b"\n\n")
                await asyncio.wait_for(proc.stdin.drain(), timeout)
                raw = await asyncio.wait_for(self._read_reply(), timeout)
            except TimeoutError as exc:
                await self._poison("no reply in time")
                raise ProverHung(
                    f"the Lean REPL did not answer within {timeout:.1f}s and was killed"
                ) from exc
            except (BrokenPipeError, ConnectionResetError) as exc:
                await self._poison("its input pipe broke")
                raise ProverCrashed(self._exit_text("the Lean REPL closed its input")) from exc
            except asyncio.CancelledError:
                # an abandoned request leaves a reply in flight: the stream is out of step
                await self._poison("a request was cancelled")
                raise
        try:
            reply = json.loads(raw)
        except json.JSONDecodeError as exc:
            await self._poison("malformed reply")
            raise ProverProtocolError(
                f"the Lean REPL sent a reply that is not JSON ({exc.msg}): {raw[:200]!r}"
            ) from exc
        if not isinstance(reply, dict):
            await self._poison("malformed reply")
            raise ProverProtocolError(f"the Lean REPL sent a non-object reply: {raw[:200]!r}")
        return reply

    async def _read_reply(self) -> str:
        """Read lines up to the blank line that ends a reply (leading blank lines are skipped)."""
        assert self._proc is not None
        assert self._proc.stdout is not None
        stdout = self._proc.stdout
        lines: list[bytes] = []
        size = 0
        while True:
            line = await stdout.readline()
            if not line:
                await self._poison("EOF")
                what = "in the middle of a reply" if lines else "instead of a reply"
                raise ProverCrashed(self._exit_text(f"the Lean REPL exited {what}"))
            if not line.strip():
                if lines:
                    return b"".join(lines).decode(errors="replace")
                continue
            size += len(line)
            if size > self.reply_cap:
                await self._poison("oversized reply")
                raise ProverReplyTooLarge(
                    f"a Lean REPL reply exceeded {self.reply_cap} bytes; the process was killed"
                )
            lines.append(line)

    def _exit_text(self, head: str) -> str:
        tail = self.stderr_tail()
        return f"{head}{'; its stderr ends with: ' + tail[-500:] if tail else ''}"

    async def command(
        self, cmd: str, env: int | None = None, *, timeout: float, **options: Any
    ) -> CommandReply:
        """Elaborate ``cmd`` (in a fresh environment when ``env`` is None)."""
        payload: dict[str, Any] = {"cmd": cmd}
        if env is not None:
            payload["env"] = env
        payload.update(options)
        return parse_command_reply(await self.request(payload, timeout=timeout))

    async def file(
        self, path: str, env: int | None = None, *, all_tactics: bool = False, timeout: float
    ) -> CommandReply:
        """Elaborate a whole file (REPL file mode); ``all_tactics`` also lists every tactic."""
        payload: dict[str, Any] = {"path": path}
        if env is not None:
            payload["env"] = env
        if all_tactics:
            payload["allTactics"] = True
        return parse_command_reply(await self.request(payload, timeout=timeout))

    async def tactic(self, tactic: str, proof_state: int, *, timeout: float) -> TacticReply:
        raw = await self.request({"tactic": tactic, "proofState": proof_state}, timeout=timeout)
        return parse_tactic_reply(raw)
