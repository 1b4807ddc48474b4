"""A proof session at one hole, on a warm ``coqtop``.

:class:`~.prover.CoqProver` keeps idle :class:`~.coqtop.CoqTop` processes for
one project (one set of ``-Q``/``-R`` flags) in a :class:`~.pool.ProcessPool`
and opens sessions. A session positions a process at a hole by sending the file's sentences up to
the statement; the process remembers what it loaded, so the next hole of the
same file (or any file with the same opening) only sends what differs, after
a ``BackTo``.

Every tactic runs under Coq's ``Timeout``; on top of that, a hard wall-clock
guard (timeout + grace) kills a process that stops answering. The session
then starts a fresh process, reloads the hole, and reports ``TIMEOUT`` for
the tactic, so a strategy never sees a dead prover. A process is retired
after ``max_uses`` sessions or once its resident memory passes ``rss_cap``.
"""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Protocol

from ..errors import (
    PrefixError,
    ProverCrashed,
    ProverError,
    ProverHung,
    SessionClosed,
    SourceSyntaxError,
)
from ..goals import Goal
from ..provers.base import ProofState, TacticResult, TacticStatus
from ..provers.settings import CoqSettings
from .backto import back_to, back_to_sentence, check_landed
from .coqtop import CoqTop, Reply
from .pool import ProcessPool
from .syntax import one_sentence

__all__ = ["NO_MICROMEGA_CACHE", "NO_NOTATIONS", "CoqSession", "PrefixError", "SessionOwner"]

_NO_MORE_GOALS = re.compile(r"^No more goals\.$", re.M)
_GOAL_COUNT = re.compile(r"^(\d+) goals?\b", re.M)
#: how coqtop reports an error in the sentence it was sent (location, then ``Error:``)
_SENTENCE_ERROR = re.compile(r"^Toplevel input, characters \d+-\d+:\n(?:>.*\n)*Error:", re.M)


#: a failing ``lia``/``nia``/``nra`` writes ``.lia.cache`` (and kin) into the prover's
#: working directory, the user's project: sessions turn the caches off before the goal
#: (a warning, harmless, where Lia is not loaded)
NO_MICROMEGA_CACHE = ("Unset Lia Cache.", "Unset Nia Cache.", "Unset Nra Cache.")
#: CPU seconds a tactic may run past its ``Timeout`` before its process is killed (a
#: tactic ``Timeout`` does not interrupt; the process is replaced, the session goes on)
OVERRUN_CPU_SECONDS = 1.5
#: a query's option that prints terms without notations
NO_NOTATIONS = ("Unset Printing Notations.",)


class SessionOwner(Protocol):
    """What a session needs of the :class:`~.prover.CoqProver` that opened it."""

    #: the project's ``-Q``/``-R`` flags, and where its files are
    flags: tuple[str, ...]
    cwd: str | None
    settings: CoqSettings
    pool: ProcessPool

    def session_at(
        self, goal: Goal, prefix: Sequence[str], *, statement_index: int | None = None
    ) -> AbstractAsyncContextManager[CoqSession]: ...


class CoqSession:
    """A proof of one goal in one coqtop. Made by :meth:`~.prover.CoqProver.session`."""

    def __init__(
        self,
        prover: SessionOwner,
        goal: Goal,
        prefix: Sequence[str],
        statement_index: int | None = None,
    ) -> None:
        self._prover = prover
        self.goal = goal
        self._prefix = list(prefix)
        #: index in the prefix of the goal's statement sentence (None: not known)
        self.statement_index = statement_index
        self._top: CoqTop | None = None
        self._generation = 0
        self._root: ProofState | None = None
        self._current: ProofState | None = None
        #: coqtop may not be at ``_current`` (a cancelled request was salvaged): the
        #: next request goes back by ``BackTo`` first, whatever it runs from
        self._lost = False
        #: the states coqtop holds now, from the root to the current one, each one
        #: sentence after the one before (coqtop keeps one line: going back to a
        #: state drops those after it, so only these can be reached with ``BackTo``)
        self._line: list[ProofState] = []
        self._cpu_spent = 0.0
        self._cpu_base = 0.0
        self._closed = False
        #: number of times the process was replaced during this session
        self.replacements = 0

    @property
    def prefix(self) -> tuple[str, ...]:
        """The sentences loaded before the goal (the last ones are the statement and opener)."""
        return tuple(self._prefix)

    @property
    def prover(self) -> SessionOwner:
        return self._prover

    def side_session(
        self, before_statement: Sequence[str]
    ) -> AbstractAsyncContextManager[CoqSession]:
        """Another session at the same goal, with ``before_statement`` run just before it.

        Everything above the statement runs as in the file, so the place stays
        faithful: only the extra sentences (say, loading CoqHammer) are added,
        inside whatever sections and modules are open there. The caller checks
        anything found there again in this session, which has none of them.
        """
        if self.statement_index is None:
            raise ValueError(
                f"the session on {self.goal.name} does not know where its statement is"
            )
        at = self.statement_index
        prefix = [*self._prefix[:at], *before_statement, *self._prefix[at:]]
        return self._prover.session_at(
            self.goal, prefix, statement_index=at + len(before_statement)
        )

    # -- opening and closing ----------------------------------------------

    def mark_warm(self, wanted_by: str | None = None) -> None:
        """This session's process now holds a costly cache (CoqHammer's ATP library):
        the pool keeps it for sessions whose prefix loads ``wanted_by`` (None: any)."""
        if self._top is not None:
            self._prover.pool.mark_warm(self._top, wanted_by)

    async def _open(self) -> None:
        # nothing of a process this session had before holds in the next one: until the
        # new one is loaded the session has no position (a failed reload leaves it closed,
        # not pointing the new process at the old one's states)
        self._root = self._current = None
        self._line = []
        self._top = await self._prover.pool.acquire(self._prefix, self.goal.file)
        self._cpu_base = self._top.cpu_seconds()  # a reused process has spent CPU before
        self._generation += 1
        root_token = await self._prover.pool.load(self._top, self._prefix)
        # the load is not measured reply by reply: read the CPU now, so that it is the
        # session's (counted from ``_cpu_base``), not the first tactic's after it
        self._top.refresh_cpu()
        self._root = ProofState((), root_token, self._generation)
        self._current = self._root
        self._line = [self._root]
        self._lost = False

    async def _replace_process(self) -> None:
        if self._top is not None:
            self._cpu_spent += self._top.cpu_seconds() - self._cpu_base
            await self._top.aclose()
        self._top = None
        self.replacements += 1
        await self._open()

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        top, self._top = self._top, None
        if top is not None:
            self._cpu_spent += top.cpu_seconds() - self._cpu_base
            await self._prover.pool.release(top)

    # -- the ProofSession protocol ----------------------------------------

    @property
    def root(self) -> ProofState:
        if self._root is None:
            raise SessionClosed("the session is not open")
        return self._root

    @property
    def current(self) -> ProofState:
        if self._current is None:
            raise SessionClosed("the session is not open")
        return self._current

    @property
    def pid(self) -> int | None:
        """The coqtop process serving the session (None when it has none)."""
        return self._top.pid if self._top is not None else None

    def cpu_seconds(self) -> float:
        live = self._top.cpu_seconds() - self._cpu_base if self._top is not None else 0.0
        return self._cpu_spent + live

    def _require_top(self) -> CoqTop:
        if self._closed or self._top is None:
            raise SessionClosed(f"session on {self.goal.name} is closed")
        return self._top

    def _moved_to(self, state: ProofState) -> None:
        """coqtop is now at ``state``: one sentence after the line's last state, or on it."""
        line = self._line
        for index in range(len(line) - 1, -1, -1):
            if line[index] == state:
                del line[index + 1 :]
                break
        else:
            if line and state.script[:-1] == line[-1].script:
                line.append(state)
            else:  # not seen arrive: only it and the root are known to be held
                self._line = [self.root] if state == self.root else [self.root, state]
        self._current = state
        self._lost = False

    def _on_line(self, state: ProofState) -> bool:
        return state == self._root or (state.generation == self._generation and state in self._line)

    async def back_to(self, state: ProofState) -> None:
        """Bring coqtop to ``state``: ``BackTo`` if it still holds it, else replay its script.

        A state off the line (dropped by a later ``BackTo``, or made by a process
        that was replaced) is rebuilt from the deepest state of the line its
        script starts with.
        """
        top = self._require_top()
        if self._current == state and not self._lost:
            return
        if self._on_line(state):
            async with self._position_kept_on_cancel():
                await back_to(top, state.token, self._prover.settings.load_timeout)
            self._moved_to(state)
            return
        reached = await self.reach(state.script, timeout=self._prover.settings.load_timeout)
        if reached is None:
            raise ProverError(f"could not rebuild a proof state: {' '.join(state.script)[:200]}")
        await self.back_to(reached)

    async def reach(self, script: Sequence[str], *, timeout: float) -> ProofState | None:
        """A state with open goals after ``script`` from the root (None if it has none).

        Only the sentences past the deepest state of the line that ``script``
        starts with are run: after expanding a node, its siblings and children
        are one sentence away, not a whole replay from the root.
        """
        script = tuple(script)
        base = self.root
        for state in reversed(self._line):
            if script[: len(state.script)] == state.script:
                base = state
                break
        if len(base.script) == len(script):
            return base
        result = await self.run_script(script[len(base.script) :], base, timeout=timeout)
        return result.state if result.status is TacticStatus.GOALS else None

    async def _go_back(self, origin: ProofState) -> tuple[list[str], ProofState]:
        """Get ready to run a sentence at ``origin``: the ``BackTo`` to send in the same
        write (one round trip instead of two) when coqtop holds ``origin``, else none
        after going back or rebuilding it now; and the state the sentence will run from
        (``origin``, or the state rebuilt for it)."""
        if (self._lost or self._current != origin) and self._on_line(origin):
            return [back_to_sentence(origin.token)], origin
        await self.back_to(origin)
        return [], self.current

    async def _landed(self, replies: Sequence[Reply], origin: ProofState) -> Reply:
        """The sentence's reply, once a ``BackTo`` sent before it is checked."""
        if len(replies) == 2:
            await check_landed(self._require_top(), replies[0], origin.token)
            self._moved_to(origin)
        return replies[-1]

    def _lose_position(self) -> None:
        """After a cancelled request: a salvaged process lives on at a state not known
        here, so the next request goes back by ``BackTo`` (the root always holds)."""
        if self._root is None:
            return  # cancelled while opening: nothing is held yet
        self._line = [self._root]
        self._current = self._root
        self._lost = True

    @asynccontextmanager
    async def _position_kept_on_cancel(self) -> AsyncIterator[None]:
        """For the block (requests to coqtop): if it is cancelled, the position is lost.

        A warm process survives a cancelled request (its reply is salvaged), so
        coqtop may have moved although this session saw no reply: every request,
        a ``BackTo`` or a query too, not only a tactic, forgets where coqtop is.
        """
        try:
            yield
        except asyncio.CancelledError:
            self._lose_position()
            raise

    async def run_tactic(
        self,
        tactic: str,
        state: ProofState | None = None,
        *,
        timeout: float,
        cpu_limit: float | None = None,
        salvage: float = 0.0,
    ) -> TacticResult:
        """Run one sentence from ``state``; ``cpu_limit`` guards CPU seconds as ``timeout``
        guards the wall clock (past either, the process is replaced: TIMEOUT).

        ``salvage``: seconds to keep the process when the tactic is cancelled or
        passes ``cpu_limit``, by killing its helpers instead
        (:meth:`~proof_orchestrator.coq.coqtop.CoqTop.send_many`); worth it where
        the process holds something costly, as CoqHammer's ATP library.
        """
        return await self._run(tactic, state, timeout=timeout, cpu_limit=cpu_limit, salvage=salvage)

    async def _run(
        self,
        tactic: str,
        state: ProofState | None,
        *,
        timeout: float,
        cpu_limit: float | None = None,
        goals: bool = True,
        salvage: float = 0.0,
    ) -> TacticResult:
        """:meth:`run_tactic`; ``goals=False`` leaves the goals of a GOALS result
        empty when coqtop did not print them (a step in the middle of a script)."""
        top = self._require_top()
        origin = state if state is not None else self.current
        try:
            sentence = one_sentence(tactic)
        except SourceSyntaxError as exc:
            raise ValueError(f"run_tactic takes one sentence: {exc}") from exc
        code = sentence.code
        seconds = max(1, math.ceil(timeout))
        line = code if sentence.is_bullet_or_brace else f"Timeout {seconds} {code}"
        if cpu_limit is None:
            # a tactic ``Timeout`` does not stop (``simpl in *`` on a large goal) is
            # stopped past this: the wall-clock guard's grace cost 5 CPU s more
            cpu_limit = seconds + OVERRUN_CPU_SECONDS
        back, base = await self._go_back(origin)
        try:
            replies = await top.send_many(
                [*back, line],
                seconds + self._prover.settings.grace,
                cpu_limit=cpu_limit,
                salvage=salvage,
            )
        except asyncio.CancelledError:
            self._lose_position()
            raise
        except ProverHung as exc:
            await self._replace_process()
            return TacticResult(TacticStatus.TIMEOUT, self._rebased(origin), message=str(exc))
        except ProverCrashed as exc:
            # some tactics kill coqtop (a stack overflow): that tactic failed, the session goes on
            await self._replace_process()
            return TacticResult(TacticStatus.FAILED, self._rebased(origin), message=str(exc))
        reply = await self._landed(replies, origin)
        if reply.state == base.token:
            status = (
                TacticStatus.TIMEOUT
                if reply.cut or reply.wall_seconds >= seconds * 0.95
                else TacticStatus.FAILED
            )
            return TacticResult(status, origin, message=reply.output, cpu_seconds=reply.cpu_seconds)
        if _SENTENCE_ERROR.search(reply.output):
            # an error that still advanced the state (CoqHammer reports a Timeout
            # reached inside it this way): the tactic failed, go back
            self._moved_to(ProofState((*base.script, code), reply.state, self._generation))
            await self.back_to(base)
            return TacticResult(
                TacticStatus.TIMEOUT if reply.cut else TacticStatus.FAILED,
                origin,
                message=reply.output,
                cpu_seconds=reply.cpu_seconds,
            )
        new_state = ProofState((*base.script, code), reply.state, self._generation)
        self._moved_to(new_state)
        display = reply.output
        if not display.strip() and not goals:
            return TacticResult(TacticStatus.GOALS, new_state, cpu_seconds=reply.cpu_seconds)
        if not display.strip():
            # coqtop sometimes prints no goals for the first command after a
            # BackTo; ask for them (Show changes nothing in the proof)
            async with self._position_kept_on_cancel():
                shown = await top.send("Show.", self._prover.settings.load_timeout, checked=True)
            display = shown.output
        if _NO_MORE_GOALS.search(display):
            # the output can carry information (e.g. hammer's reconstruction tactic)
            return TacticResult(
                TacticStatus.COMPLETE, new_state, message=display, cpu_seconds=reply.cpu_seconds
            )
        return TacticResult(
            TacticStatus.GOALS,
            new_state,
            goals=_split_goals(display),
            cpu_seconds=reply.cpu_seconds,
        )

    async def run_probe(
        self, code: str, state: ProofState, *, timeout: float
    ) -> tuple[bool, str] | None:
        """Run a probe sentence (:mod:`.probe`) at ``state``: (it ran, its output), or None
        if the process had to be replaced. The proof is as it was; the next request goes
        back to ``state`` in the same write as its own sentence."""
        top = self._require_top()
        back, base = await self._go_back(state)
        try:
            replies = await top.send_many([*back, code], timeout + self._prover.settings.grace)
        except asyncio.CancelledError:
            self._lose_position()
            raise
        except (ProverHung, ProverCrashed):
            await self._replace_process()
            return None
        reply = await self._landed(replies, state)
        if reply.state == base.token:
            return False, reply.output
        self._moved_to(ProofState((*base.script, code), reply.state, self._generation))
        return True, reply.output

    async def run_script(
        self, sentences: Sequence[str], state: ProofState | None = None, *, timeout: float
    ) -> TacticResult:
        current = state if state is not None else self.current
        result: TacticResult | None = None
        cpu = 0.0
        last = len(sentences) - 1
        for index, sentence in enumerate(sentences):
            # the goals in the middle of a script are not needed: no ``Show`` for them
            result = await self._run(sentence, current, timeout=timeout, goals=index == last)
            cpu += result.cpu_seconds
            if not result.ok:
                break
            current = result.state
        if result is None:
            raise ValueError("run_script needs at least one sentence")
        return TacticResult(result.status, result.state, result.goals, result.message, cpu)

    async def qed_check(
        self, sentences: Sequence[str], name: str, timeout: float, *, assumptions: bool = True
    ) -> tuple[bool, str]:
        """Run ``sentences`` from the root, close with ``Qed.`` and print the assumptions
        (unless ``assumptions`` is False: the output is then ``Qed``'s).

        Returns (the kernel accepted the proof, the ``Print Assumptions`` output).
        The session is back at its root afterwards.
        """
        result = await self.run_script(sentences, self.root, timeout=timeout)
        if result.status is not TacticStatus.COMPLETE:
            return False, result.message
        top = self._require_top()
        before = top.current
        wait = self._prover.settings.load_timeout
        async with self._position_kept_on_cancel():
            closed = await top.send("Qed.", wait, checked=True)
            if closed.state == before:
                await self.back_to(self.root)
                return False, closed.output
            printed = await top.send(f"Print Assumptions {name}.", wait) if assumptions else closed
            await back_to(top, self.root.token, wait, measure=True)
        self._moved_to(self.root)
        return True, printed.output

    async def kernel_accepts(self, sentences: Sequence[str], timeout: float) -> tuple[bool, str]:
        """:class:`~..provers.base.KernelChecked`: ``sentences`` closed with ``Qed``."""
        return await self.qed_check(sentences, self.goal.name, timeout, assumptions=False)

    async def query(
        self, command: str, *, options: Sequence[str] = (), timeout: float | None = None
    ) -> str:
        """Run a read-only vernacular query (``Print Libraries.``) and return its output.

        ``options`` are settings sent just for the query (:data:`NO_NOTATIONS` prints
        ``Qeq (Qplus 0 x) x`` rather than ``0 + x == x``). The proof state, and with
        it the printing options, are restored afterwards.
        """
        top = self._require_top()
        origin = self.current
        wait = timeout if timeout is not None else self._prover.settings.load_timeout
        async with self._position_kept_on_cancel():
            for setting in options:
                await top.send(setting, wait, checked=True, measure=False)
            reply = await top.send(command, wait)
            await self._return_after_query(top, origin)
        return reply.output

    async def locate_ltac(self, qualified: str) -> str | None:
        """The name under which Ltac ``qualified`` is usable here, or None if it is not loaded.

        ``Locate Ltac lia`` lists ``Ltac Coq.micromega.Lia.lia`` and, when the
        short name does not reach it, the shorter name that does.
        """
        top = self._require_top()
        origin = self.current
        basename = qualified.rsplit(".", 1)[-1]
        async with self._position_kept_on_cancel():
            reply = await top.send(f"Locate Ltac {basename}.", self._prover.settings.load_timeout)
            await self._return_after_query(top, origin)
        lines = reply.output.splitlines()
        for index, line in enumerate(lines):
            if line.strip() == f"Ltac {qualified}":
                nxt = lines[index + 1].strip() if index + 1 < len(lines) else ""
                shorter = re.match(
                    r"\(shorter name to refer to it in current context is (\S+)\)", nxt
                )
                if shorter:
                    return shorter.group(1)
                return basename if index == 0 else qualified
        return None

    async def _return_after_query(self, top: CoqTop, origin: ProofState) -> None:
        """A query advanced coqtop's state number; go back to ``origin``."""
        await back_to(top, origin.token, self._prover.settings.load_timeout)
        self._moved_to(origin)

    def _rebased(self, state: ProofState) -> ProofState:
        """After a restart: the same script, marked as belonging to no live process.

        :meth:`back_to` rebuilds such a state from the new root when it is used.
        """
        if not state.script:
            return self.root
        return ProofState(state.script, token=-1, generation=-1)


def _split_goals(output: str) -> tuple[str, ...]:
    """Goals from coqtop's display: the first with hypotheses, the others as conclusions."""
    text = output.strip()
    if not text:
        return ()
    blocks = re.split(r"\n\s*goal \d+ \(ID \d+\) is:\n", text)
    first = re.sub(r"^\d+ goals? \(ID \d+\)\s*\n", "", blocks[0]).strip("\n")
    return tuple(b.strip("\n").rstrip() for b in [first, *blocks[1:]] if b.strip())
