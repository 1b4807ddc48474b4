"""One ``coqtop -emacs`` process driven over pipes.

Protocol facts this driver relies on (checked against Coq 8.16):

* prompts and error messages go to stderr, goals to stdout; the two are merged
  into one pipe so that their order is preserved;
* every sentence read produces exactly one prompt,
  ``<prompt>NAME < STATE |PROOFS| DEPTH < </prompt>``;
* a sentence that fails leaves ``STATE`` unchanged, one that succeeds raises
  it (``BackTo N`` sets it to ``N``);
* after an error coqtop discards the rest of the input line.

So the driver sends exactly one sentence per line and frames replies by
prompt. The process's output goes straight from the event loop's read callback
to a :class:`ReplyStream`, which cuts it into replies as it arrives and wakes
the request waiting for one; a reply that nobody asked for (the stream is out
of step with the requests) is found there before the next request is written,
and the process is killed: :class:`~proof_orchestrator.errors.ProverDesync`.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import functools
import logging
import os
import signal
import time
from collections.abc import Awaitable, Callable, Sequence

import psutil

from ..errors import (
    ProverCrashed,
    ProverDesync,
    ProverHung,
    ProverStartError,
    SessionClosed,
    SourceSyntaxError,
)
from ..provers.accounting import PROVER_PROCESSES
from ..provers.process import (
    TRAFFIC,
    CpuReader,
    DescendantMeter,
    request_in_flight,
    spawn,
    stop_process,
)
from ..provers.procfs import rss_bytes
from .replies import Alarm, Fault, Reply, ReplyStream
from .syntax import one_sentence

__all__ = ["CoqTop", "CoqTopState", "Reply"]

log = logging.getLogger(__name__)


#: seconds a cancelled request gets to end after coqtop is interrupted, before the kill
INTERRUPT_SECONDS = 2.0

#: largest reply accepted from coqtop, in bytes
DEFAULT_REPLY_CAP = 16 * 1024**2


class CoqTopState(enum.StrEnum):
    #: created, not started
    UNOPENED = "unopened"
    #: started and answering
    OPEN = "open"
    #: stopped (normally, or killed after a fault)
    CLOSED = "closed"


class CoqTop:
    """Owner of one coqtop process. Use as ``async with CoqTop(...) as top``."""

    def __init__(
        self,
        flags: Sequence[str] = (),
        *,
        cwd: str | None = None,
        temp_dir: str | None = None,
        executable: str = "coqtop",
        start_timeout: float = 60.0,
        reply_cap: int = DEFAULT_REPLY_CAP,
        throttle: Callable[[], Awaitable[None]] | None = None,
        memory_bytes: int | None = None,
    ) -> None:
        self._argv = [executable, "-q", "-emacs", *flags]
        self._cwd = cwd
        #: the process's ``TMPDIR`` (None: ours): where plugins put their temporary files
        self._temp_dir = temp_dir
        self._start_timeout = start_timeout
        self._proc: asyncio.subprocess.Process | None = None
        self._replies = ReplyStream(reply_cap)
        self._lock = asyncio.Lock()
        self.state = CoqTopState.UNOPENED
        #: state number of the last prompt
        self.current = 0
        #: number of sentences sent
        self.requests = 0
        #: why the process was killed, if it was
        self.fault: Exception | None = None
        self._last_cpu = 0.0
        self._ps: psutil.Process | None = None
        self._cpu: CpuReader | None = None
        self._meter: DescendantMeter | None = None
        #: the current request passed its CPU limit and its helpers were killed
        self._cut = False
        #: the ``salvage`` every request gets (see :meth:`send_many`): set on a process
        #: that holds a costly cache, so that a cancelled request does not lose it
        self.salvage_seconds = 0.0
        #: marker queries sent to bring the replies back in step (see :meth:`_recover`)
        self._syncs = 0
        self._throttle = throttle
        self._memory_bytes = memory_bytes

    # -- lifecycle ---------------------------------------------------------

    async def __aenter__(self) -> CoqTop:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def start(self) -> None:
        if self.state is not CoqTopState.UNOPENED:
            raise SessionClosed(
                f"cannot restart a coqtop in state {self.state.value}; make a new one"
            )
        env = None if self._temp_dir is None else {**os.environ, "TMPDIR": self._temp_dir}
        self._proc = await spawn(
            self._argv,
            cwd=self._cwd,
            env=env,
            memory_bytes=self._memory_bytes,
            stdout_sink=self._replies,
        )
        self.state = CoqTopState.OPEN
        try:
            first = await self._next_reply(self._start_timeout)
        except ProverHung as exc:
            raise ProverStartError(
                f"coqtop did not show its first prompt within {self._start_timeout:.0f}s"
            ) from exc
        except ProverCrashed as exc:
            raise ProverStartError(f"coqtop exited at start-up: {exc}") from exc
        self.current = first.state
        PROVER_PROCESSES.started += 1
        PROVER_PROCESSES.start_cpu_seconds += self.refresh_cpu()

    async def aclose(self) -> None:
        """Stop the process. Idempotent."""
        if self.state is CoqTopState.CLOSED:
            return
        self.refresh_cpu()  # last reading before the process goes
        self.state = CoqTopState.CLOSED
        if self._proc is not None:
            await stop_process(self._proc)
            PROVER_PROCESSES.closed += 1
            why = "released" if self.fault is None else type(self.fault).__name__
            PROVER_PROCESSES.closed_because[why] = PROVER_PROCESSES.closed_because.get(why, 0) + 1
            PROVER_PROCESSES.closed_lifetime_cpu_seconds += self._last_cpu
        if self._cpu is not None:
            self._cpu.close()

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def returncode(self) -> int | None:
        return self._proc.returncode if self._proc is not None else None

    @property
    def alive(self) -> bool:
        return self.state is CoqTopState.OPEN and self.fault is None

    def cpu_seconds(self) -> float:
        """CPU of the process (and the children it reaped) as of its last reply.

        It is read once per reply (the process is idle between requests), so
        asking is free; :meth:`refresh_cpu` reads it now.
        """
        return self._last_cpu

    def _descendants(self) -> DescendantMeter | None:
        if self._meter is None and self._process() is not None:
            assert self._ps is not None
            self._meter = DescendantMeter(self._ps)
        return self._meter

    def _process(self) -> psutil.Process | None:
        if self._proc is None or self._proc.returncode is not None:
            return None
        if self._ps is None:
            try:
                self._ps = psutil.Process(self._proc.pid)
            except psutil.NoSuchProcess:
                return None
            self._cpu = CpuReader(self._ps)
        return self._ps

    def refresh_cpu(self) -> float:
        """Read the CPU now: the process's own, plus its helpers'.

        Helpers count as the larger of what the process reaped (its children
        counters) and what the :class:`DescendantMeter` saw them use, since
        helpers killed at a timeout may never be reaped.
        """
        if self._process() is None or self._cpu is None:
            return self._last_cpu
        reading = self._cpu.seconds()
        if reading is None:
            return self._last_cpu
        own, helpers = reading
        if self._meter is not None:
            helpers = max(helpers, self._meter.total())
        self._last_cpu = max(self._last_cpu, own + helpers)
        return self._last_cpu

    def rss_bytes(self) -> int:
        process = self._process()
        return (rss_bytes(process) or 0) if process is not None else 0

    # -- protocol ----------------------------------------------------------

    async def send(
        self,
        sentence: str,
        timeout: float,
        *,
        checked: bool = False,
        measure: bool = True,
        cpu_limit: float | None = None,
    ) -> Reply:
        """Send one sentence and wait for its prompt.

        ``timeout`` is the hard wall-clock guard: if the prompt has not come by
        then, the process group is killed and :class:`ProverHung` is raised.
        ``checked=True`` says that ``sentence`` is already the ``code`` of one
        :class:`~proof_orchestrator.coq.syntax.Sentence` (one sentence, one
        line), so it is not split again. ``measure=False`` skips reading the
        process's CPU for this reply (bulk loading; the next measured reply
        accounts for it). ``cpu_limit`` is a guard on CPU seconds (the process's
        and its helpers'): past it, the process group is killed and
        :class:`ProverHung` is raised, as for the wall-clock guard.
        """
        line = sentence if checked else _one_sentence_line(sentence)
        (reply,) = await self.send_many([line], timeout, measure=measure, cpu_limit=cpu_limit)
        return reply

    async def send_many(
        self,
        lines: Sequence[str],
        timeout: float,
        *,
        measure: bool = True,
        cpu_limit: float | None = None,
        salvage: float = 0.0,
    ) -> list[Reply]:
        """Send sentences in one write and wait for a prompt per sentence.

        Each of ``lines`` must be one sentence on one line (a checked
        :class:`~proof_orchestrator.coq.syntax.Sentence` ``code``). coqtop
        reads them in order and answers each with a prompt whatever the one
        before did (an error discards only the rest of its own line), so a
        batch costs one round trip instead of one per sentence; the caller
        reads each reply's state to see which sentences took. ``timeout``
        guards the wait for each prompt; ``cpu_limit`` the whole batch. The
        CPU measured (``measure``) is reported on the last reply; the wall
        time of each reply counts from the write.

        A request that passes ``cpu_limit`` kills the process, unless
        ``salvage`` seconds are given: then its helper processes (CoqHammer's
        ATPs) are killed instead, which ends the request with an error, and if
        the replies come within ``salvage`` seconds the process stays in step
        and keeps what it has read (CoqHammer's ATP library, about 10 CPU s to
        read again). A reply cut that way has ``cut`` set. A request that is
        cancelled (another strategy won, the goal's time is up) is ended the
        same way and then by interrupting coqtop (:meth:`_recover`): the
        process lives on, at a state the caller no longer knows; it is killed
        only if that fails.
        """
        if not lines:
            return []
        if self._throttle is not None:
            await self._throttle()  # the CPU governor may hold us back here
        async with self._lock:
            with request_in_flight(self.pid):
                return await self._send_locked(lines, timeout, measure, cpu_limit, salvage)

    async def _send_locked(
        self,
        lines: Sequence[str],
        timeout: float,
        measure: bool,
        cpu_limit: float | None,
        salvage: float,
    ) -> list[Reply]:
        """:meth:`send_many`, with the lock held."""
        self._check_usable()
        if self._replies.items:
            await self._poison(ProverDesync("coqtop sent a reply nobody asked for; killed it"))
        proc = self._proc
        if proc is None or proc.stdin is None:
            raise SessionClosed("coqtop has no input pipe")
        cpu_before = self._last_cpu  # idle between requests: the last reading will do
        started = time.monotonic()
        try:
            proc.stdin.write("".join(f"{line}\n" for line in lines).encode())
            await proc.stdin.drain()
        except (BrokenPipeError, ConnectionResetError) as exc:
            await self._poison(ProverCrashed(f"coqtop closed its input: {exc}"))
        self.requests += len(lines)
        TRAFFIC.count(len(lines))
        salvage = max(salvage, self.salvage_seconds)
        meter = self._descendants() if measure else None
        self._cut = False
        # most replies come within milliseconds: the sampler starts only
        # once the request has taken one interval (an alarm is cheaper than a task)
        watch: list[asyncio.Task[None]] = []
        alarm = (
            Alarm(
                asyncio.get_running_loop().time() + meter.interval,
                functools.partial(self._start_watch, watch, meter, cpu_before, cpu_limit, salvage),
            )
            if meter is not None
            else None
        )
        raw: list[tuple[Reply, float]] = []
        try:
            for _ in lines:
                reply = await self._next_reply(timeout, alarm)
                raw.append((reply, time.monotonic() - started))
        except asyncio.CancelledError:
            pending = len(lines) - len(raw)
            if await asyncio.shield(self._recover(pending, salvage)):
                log.debug("coqtop %s kept after a cancelled request", self.pid)
                raise
            if self.fault is None:
                log.debug("coqtop %s killed: a cancelled request did not end", self.pid)
                # its answer would arrive unasked for: the process is out of step now
                self.fault = ProverDesync("a request was cancelled while coqtop was working")
            else:
                log.debug(
                    "coqtop %s ended while a cancelled request was brought back in step: %s",
                    self.pid,
                    self.fault,
                )
            await asyncio.shield(self.aclose())
            raise
        finally:
            for sampler in watch:
                sampler.cancel()
            if meter is not None and time.monotonic() - started > meter.interval:
                # the last reading of helpers still running, which then go: the
                # request is over, and an ATP left to itself runs on unaccounted
                meter.stop_leftovers()
        cpu = max(self.refresh_cpu() - cpu_before, 0.0) if measure else 0.0
        last = len(raw) - 1
        replies = [
            Reply(
                output=r.output,
                state=r.state,
                proof=r.proof,
                wall_seconds=wall,
                cpu_seconds=cpu if i == last else 0.0,
                cut=i == last and self._cut,
            )
            for i, (r, wall) in enumerate(raw)
        ]
        self.current = replies[-1].state
        return replies

    async def write_raw(self, data: str) -> None:
        """Write bytes without framing. Only for tests that provoke a desync."""
        if self._proc is None or self._proc.stdin is None:
            raise SessionClosed("coqtop is not running")
        self._proc.stdin.write(data.encode())
        await self._proc.stdin.drain()

    async def interrupt_and_kill(self, reason: Exception) -> None:
        """Kill the process (used when a caller gives up on it)."""
        self.fault = reason
        await self.aclose()

    # -- internals ---------------------------------------------------------

    def _check_usable(self) -> None:
        if self.state is not CoqTopState.OPEN:
            raise SessionClosed(f"coqtop is {self.state.value}; start a new one")
        if self.fault is not None:
            raise SessionClosed(f"coqtop was killed earlier ({self.fault}); start a new one")

    def _start_watch(
        self,
        into: list[asyncio.Task[None]],
        meter: DescendantMeter,
        cpu_before: float,
        cpu_limit: float | None,
        salvage: float,
    ) -> None:
        into.append(asyncio.create_task(self._watch(meter, cpu_before, cpu_limit, salvage)))

    async def _watch(
        self,
        meter: DescendantMeter,
        cpu_before: float,
        cpu_limit: float | None,
        salvage: float,
    ) -> None:
        """Sample the helpers while a request runs (it has already run one interval);
        past ``cpu_limit``, kill the helpers for ``salvage`` seconds, then the process."""
        cut_at: float | None = None
        while True:
            meter.sample()
            if cpu_limit is not None and self.refresh_cpu() - cpu_before > cpu_limit:
                now = time.monotonic()
                cut_at = now if cut_at is None else cut_at
                if now - cut_at < salvage:
                    self._cut = True
                    meter.stop_helpers()
                    await asyncio.sleep(0.05)
                    continue
                log.debug("coqtop %s killed past its CPU limit", self.pid)
                self._replies.fail(
                    ProverHung(
                        f"the request used more than {cpu_limit:.1f} CPU seconds "
                        "(coqtop and its helpers); its process group was killed"
                    )
                )
                return
            await asyncio.sleep(meter.interval)

    async def _recover(self, pending: int, salvage: float) -> bool:
        """After a cancelled request: bring the process back in step with its replies
        (True), so that it and what it has loaded live on; False: it must go.

        A process that holds a costly cache (``salvage`` seconds) first has its
        helpers killed, which ends CoqHammer's request with an error. If replies
        are still due, a marker query (``Check`` of a fresh name) is written after
        the request and coqtop is interrupted (SIGINT) until the marker's reply
        comes: an interrupted sentence fails with ``User interrupt.`` and leaves
        the state as it was. An interrupt that lands while coqtop reads its input
        answers with a prompt of its own and drops a character of the line, so
        replies are not counted: everything up to the marker's reply is dropped,
        the marker is padded with spaces, and a second marker, sent with no
        interrupt on its way, takes up the prompt of an interrupt that landed
        after the first. (Checked on Coq 8.16: interrupts while busy, between
        the sentences of a batch, and after the request had ended.) Seldom, on a
        loaded machine, the interrupt ends coqtop itself (``Fatal error:
        exception Stdlib.Sys.Break``, seen in a few of hundreds of cancels that
        land as the request ends): the process is then gone, that crash is its
        fault, and its pool starts another. It is never left alive out of step.
        """
        meter = self._descendants()
        proc = self._proc
        if meter is None or proc is None or proc.stdin is None:
            return False
        started = time.monotonic()
        while pending and time.monotonic() - started < salvage:
            meter.stop_helpers()
            item = await self._replies.next(min(0.1, salvage - (time.monotonic() - started)))
            if isinstance(item, Fault):
                self.fault = item.error
                return False
            if item is not None:
                self.current = item.state
                pending -= 1
        if not pending:
            return True
        deadline = time.monotonic() + INTERRUPT_SECONDS
        if not await self._await_marker(proc, deadline, meter):
            return False
        if not await self._await_marker(proc, deadline, None):
            return False
        PROVER_PROCESSES.interrupted += 1
        return True

    async def _await_marker(
        self,
        proc: asyncio.subprocess.Process,
        deadline: float,
        interrupting: DescendantMeter | None,
    ) -> bool:
        """Write a marker query and read replies until its own (True) or ``deadline``;
        with ``interrupting``, kill the helpers and interrupt coqtop whenever no
        reply has come for a tenth of a second."""
        assert proc.stdin is not None
        self._syncs += 1
        marker = f"orch_sync_{self._syncs}"
        try:
            proc.stdin.write(f"    Check {marker}.\n".encode())
            await proc.stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            return False
        quiet = True
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            if interrupting is not None and quiet:
                interrupting.stop_helpers()
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proc.pid, signal.SIGINT)
            item = await self._replies.next(min(0.1, left) if interrupting else left)
            if isinstance(item, Fault):
                self.fault = item.error
                return False
            quiet = item is None
            if item is not None:
                self.current = item.state
                if marker in item.output:
                    return True

    async def _poison(self, error: Exception) -> None:
        self.fault = error
        await self.aclose()
        raise error

    async def _next_reply(self, timeout: float, alarm: Alarm | None = None) -> Reply:
        item = await self._replies.next(timeout, alarm)
        if item is None:
            await self._poison(
                ProverHung(
                    f"coqtop gave no prompt within {timeout:.1f}s; its process group was killed"
                )
            )
            raise AssertionError("unreachable: _poison raises")
        if isinstance(item, Fault):
            await self._poison(item.error)
            raise item.error  # unreachable
        return item


def _one_sentence_line(sentence: str) -> str:
    """Check that ``sentence`` is exactly one sentence and put it on one line."""
    try:
        return one_sentence(sentence).code
    except SourceSyntaxError as exc:
        raise ValueError(f"coqtop takes one sentence per request: {exc}") from exc
