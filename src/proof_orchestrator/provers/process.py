"""Starting and stopping every child process (provers, their tools, git, dune, lake).

This is the one module that starts processes: :func:`spawn` (a prover driven
over pipes), :func:`run_command` (a batch command, awaited) and
:func:`run_sync` (a batch command from synchronous code: ``orch doctor``,
git, reading a project's description). Every child runs in its own process
group (``start_new_session=True``) so that Ctrl-C in the terminal does not
reach it and so that stopping it also stops whatever it started
(CoqHammer's ATPs, for instance). Stopping is
SIGTERM to the group, a grace period, SIGKILL to the group, and always a
``wait()`` so that no zombie is left behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import resource
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Protocol

import psutil

from ..errors import ProverHung, ProverNotFound
from .procfs import CpuReader, Helper, helper

#: the prover processes this process started and has not reaped yet
_LIVE: dict[int, psutil.Process] = {}
#: of those, the ones with a request in flight: an idle prover runs no helper (a
#: request's helpers are killed when it ends), so only these are searched for them
_BUSY: set[int] = set()


@dataclass
class Traffic:
    """What this process has written to its provers: the bank divides its own CPU by it."""

    #: writes (round trips: a batch of sentences is one)
    writes: int = 0
    #: requests in those writes (sentences, REPL commands)
    requests: int = 0

    def count(self, requests: int) -> None:
        self.writes += 1
        self.requests += requests


#: this process's prover traffic since it started
TRAFFIC = Traffic()


def live_processes() -> list[psutil.Process]:
    """Prover processes started by this process that are still running."""
    return list(_LIVE.values())


#: a kept-open reader of each live prover's CPU, for :func:`live_cpu_seconds`
_READERS: dict[int, CpuReader] = {}


def live_cpu_seconds() -> float:
    """CPU of the live prover processes and of the children they reaped (one ``pread`` each)."""
    total = 0.0
    for pid, process in list(_LIVE.items()):
        reader = _READERS.get(pid)
        if reader is None:
            reader = _READERS[pid] = CpuReader(process)
        reading = reader.seconds()
        if reading is not None:
            total += reading[0] + reading[1]
    return total


def _forget(pid: int) -> None:
    """The process ``pid`` has ended: it leaves the live registry."""
    _LIVE.pop(pid, None)
    reader = _READERS.pop(pid, None)
    if reader is not None:
        reader.close()


def busy_processes() -> list[psutil.Process]:
    """The live prover processes with a request in flight (:func:`request_in_flight`)."""
    return [process for pid, process in _LIVE.items() if pid in _BUSY]


@contextlib.contextmanager
def request_in_flight(pid: int | None) -> Iterator[None]:
    """Mark the prover ``pid`` busy for the block (see :func:`busy_processes`)."""
    if pid is None:
        yield
        return
    _BUSY.add(pid)
    try:
        yield
    finally:
        _BUSY.discard(pid)


def process_cpu_seconds(proc: psutil.Process) -> float:
    """User + system CPU of one process and of the children it has reaped (one /proc read)."""
    try:
        t = proc.cpu_times()
    except psutil.NoSuchProcess:
        return 0.0
    return t.user + t.system + t.children_user + t.children_system


def _children_pids(pid: int) -> list[int] | None:
    """Direct children of ``pid`` from ``/proc/PID/task/TID/children`` (None: not available).

    This reads the process's own few files, where psutil's ``children()``
    reads the status of every process on the machine: sampled ten times a
    second while a prover works, that scan was the orchestrator's largest cost.
    """
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:
        return []  # the process is gone
    except OSError:
        return None
    found: list[int] = []
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as handle:
                found += [int(child) for child in handle.read().split()]
        except FileNotFoundError:
            if not os.path.exists(f"/proc/{pid}/task/{tid}"):
                continue  # that thread just ended
            return None  # a kernel without CONFIG_PROC_CHILDREN
        except OSError:
            return None
    return found


def _descendants(root: psutil.Process) -> list[Helper]:
    """Every descendant of ``root`` (children, their children, ...)."""
    pending = _children_pids(root.pid)
    if pending is None:
        found = (helper(child.pid) for child in root.children(recursive=True))
        return [h for h in found if h is not None]
    found_helpers: list[Helper] = []
    seen: set[int] = set()
    while pending:
        pid = pending.pop()
        if pid in seen:
            continue
        seen.add(pid)
        one = helper(pid)
        if one is None:
            continue
        found_helpers.append(one)
        pending += _children_pids(pid) or []
    return found_helpers


def descendants_cpu_seconds(roots: Sequence[psutil.Process]) -> float:
    """CPU of the live processes below ``roots`` (what they started, and so on).

    CoqHammer's ATPs run as coqtop's children: their CPU reaches no counter of
    coqtop's while they run (nor after, when they end unreaped: see
    :class:`DescendantMeter`), so a measure of the tree that stops at the provers
    reads that work as someone else's. A process that has ended drops out: a
    caller that takes differences must not let the total go down.
    """
    total = 0.0
    for root in roots:
        for proc in _descendants(root):
            # with what each reaped: an ATP's CPU moves to its parent when it ends,
            # and the total must neither lose it nor count it twice
            total += proc.cpu_seconds(reaped=True) or 0.0
    return total


class DescendantMeter:
    """CPU of the processes a prover starts, whether or not they are ever reaped.

    A prover's helpers can end without being waited for: CoqHammer's ATPs,
    killed by ``htimeout`` at the time limit, never reach coqtop's children
    counters, so ``getrusage``-style accounting misses them (measured: a
    5-second CVC4 run counted as nothing). While a request runs, the meter
    samples the prover's descendants every ``interval`` seconds and keeps each
    one's last reading of its own CPU. A process that lives less than one
    interval is missed, so this is a lower bound, as the counters are. Each sample
    costs this process about a millisecond of CPU, hence 0.25 s, not less.
    """

    def __init__(self, root: psutil.Process, interval: float = 0.25) -> None:
        self.root = root
        self.interval = interval
        self._seen: dict[Helper, float] = {}
        #: the helpers seen that may still run
        self._live: set[Helper] = set()

    def sample(self) -> None:
        try:
            descendants = _descendants(self.root)
        except psutil.Error:
            return
        for process in descendants:
            self._read(process)

    def _read(self, process: Helper) -> bool:
        """Keep ``process``'s CPU reading; False when it is gone."""
        cpu = process.cpu_seconds()
        if cpu is None:
            return False
        self._seen[process] = max(self._seen.get(process, 0.0), cpu)
        self._live.add(process)
        return True

    def stop_leftovers(self) -> int:
        """Kill the helpers seen so far that still run; how many were signalled.

        A request's helpers can outlive it: CoqHammer's ``htimeout`` starts
        its own session, so when hammer returns (or its forked child is
        killed) the ATP under it runs on as an orphan, outside the prover's
        process group, until its own time limit, charged to nobody (measured:
        115 of a 365 CPU s fill's process tree on one file). Called when a
        request has ended, this reads each one's CPU a last time (so it counts)
        and kills it with its process group. Its start time is checked first,
        so a recycled pid is left alone.
        """
        self.sample()
        killed = 0
        for process in list(self._live):
            self._live.discard(process)
            if not self._read(process):
                continue
            with contextlib.suppress(OSError):
                if os.getpgid(process.pid) == process.pid:
                    os.killpg(process.pid, signal.SIGKILL)  # htimeout and its ATP
            process.kill()
            killed += 1
        return killed

    def stop_helpers(self) -> int:
        """Kill every descendant (the prover itself lives on); how many were signalled.

        Their CPU is sampled first, so what they used still counts.
        """
        self.sample()
        try:
            descendants = _descendants(self.root)
        except psutil.Error:
            return 0
        return sum(process.kill() for process in descendants)

    def total(self) -> float:
        """Own CPU of every descendant seen, summed."""
        return sum(self._seen.values())

    async def run(self) -> None:
        """Sample until cancelled (the first sample after one interval)."""
        while True:
            await asyncio.sleep(self.interval)
            self.sample()


__all__ = [
    "DEFAULT_MEMORY_LIMIT",
    "MEMORY_LIMIT",
    "CompletedRun",
    "CpuReader",
    "DescendantMeter",
    "FinishedRun",
    "busy_processes",
    "live_cpu_seconds",
    "live_processes",
    "process_cpu_seconds",
    "request_in_flight",
    "run_command",
    "run_sync",
    "spawn",
    "stop_process",
]

#: address-space cap for one prover process (bytes) when nothing else is set
DEFAULT_MEMORY_LIMIT = 4 * 1024**3

#: the cap of a child started without one (bytes): a command sets it from its
#: settings (``prover_memory_mb``, which reads ``ORCH_PROVER_MEMORY_MB``) when it starts
MEMORY_LIMIT: ContextVar[int] = ContextVar("memory_limit", default=DEFAULT_MEMORY_LIMIT)


def memory_limit() -> int:
    return MEMORY_LIMIT.get()


def _limit_memory(pid: int, limit: int) -> None:
    """Cap the address space of a started process (Linux ``prlimit``).

    Applied right after the start rather than in a ``preexec_fn``: without a
    ``preexec_fn`` Python can start children with ``vfork``, which costs far
    less than copying this process's page tables at every start.
    """
    with contextlib.suppress(ProcessLookupError, PermissionError):
        resource.prlimit(pid, resource.RLIMIT_AS, (limit, limit))


def resolve(executable: str) -> str:
    path = shutil.which(executable)
    if path is None:
        raise ProverNotFound(
            f"{executable!r} is not on PATH. Install Coq (Debian: apt-get install coq) "
            "or put its bin directory on PATH; `orch doctor` lists what is missing."
        )
    return path


class OutputSink(Protocol):
    """Takes a child's standard output as the event loop receives it."""

    def feed(self, data: bytes) -> None: ...

    def eof(self) -> None: ...


class _SinkProtocol(asyncio.subprocess.SubprocessStreamProtocol):
    """The protocol of :func:`asyncio.create_subprocess_exec`, with stdout handed to a sink.

    The sink is called from the event loop's read callback, so a reply parsed
    there wakes its waiter directly: no reader task, no queue, one event-loop
    turn less per exchange (a benchmark makes tens of thousands). The
    process's ``stdout`` stream stays empty.
    """

    def __init__(self, sink: OutputSink, limit: int, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(limit=limit, loop=loop)
        self._sink = sink

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        if fd == 1:
            self._sink.feed(data if isinstance(data, bytes) else data.encode())
        else:
            super().pipe_data_received(fd, data)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        super().pipe_connection_lost(fd, exc)
        if fd == 1:
            self._sink.eof()


async def spawn(
    argv: Sequence[str],
    *,
    cwd: str | None = None,
    env: Mapping[str, str] | None = None,
    merge_stderr: bool = True,
    memory_bytes: int | None = None,
    stdout_sink: OutputSink | None = None,
) -> asyncio.subprocess.Process:
    """Start ``argv`` in its own session with pipes and a memory cap.

    ``memory_bytes`` defaults to :data:`MEMORY_LIMIT` (the settings' ``prover_memory_mb``). With
    ``stdout_sink``, standard output goes to the sink as it arrives instead
    of to ``proc.stdout``.
    """
    limit = memory_bytes if memory_bytes is not None else memory_limit()
    program = resolve(argv[0])
    stderr = asyncio.subprocess.STDOUT if merge_stderr else asyncio.subprocess.PIPE
    environment = dict(env) if env is not None else None
    # what create_subprocess_exec does, with the sink's protocol when there is a sink
    loop = asyncio.get_running_loop()

    def protocol() -> asyncio.subprocess.SubprocessStreamProtocol:
        if stdout_sink is None:
            return asyncio.subprocess.SubprocessStreamProtocol(2**16, loop)
        return _SinkProtocol(stdout_sink, 2**16, loop)

    transport, made = await loop.subprocess_exec(
        protocol,
        program,
        *argv[1:],
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=stderr,
        cwd=cwd,
        env=environment,
        start_new_session=True,
    )
    proc = asyncio.subprocess.Process(transport, made, loop)
    _limit_memory(proc.pid, limit)
    with contextlib.suppress(psutil.NoSuchProcess):
        _LIVE[proc.pid] = psutil.Process(proc.pid)
    return proc


async def stop_process(proc: asyncio.subprocess.Process, grace: float = 1.0) -> None:
    """SIGTERM the process group, wait ``grace`` seconds, SIGKILL it, then reap.

    Safe to call twice and on a process that already exited. Never raises for
    a process that is already gone. Descendants that left the group (an ATP
    started in a session of its own) are killed too: one of them holding the
    prover's output pipe would keep it open after the prover is gone.
    """
    strays: list[Helper] = []
    if proc.returncode is None:
        with contextlib.suppress(psutil.Error):
            strays = _descendants(psutil.Process(proc.pid))
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            await asyncio.wait_for(asyncio.shield(proc.wait()), grace)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
    # also kill stragglers left in the group after the leader exited, and strays outside it
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    for stray in strays:
        stray.kill()
    if proc.stdin is not None and not proc.stdin.is_closing():
        proc.stdin.close()
    await proc.wait()
    # an ATP that a timeout left running on its own (no longer a descendant) may hold
    # the output pipe open: close our end now rather than when it is collected
    transport = getattr(proc, "_transport", None)
    if transport is not None:
        transport.close()
    _forget(proc.pid)


@dataclass(frozen=True, slots=True)
class CompletedRun:
    returncode: int
    output: str
    cpu_seconds: float
    wall_seconds: float


#: runs ``"$@"`` with its standard error on its standard output, then writes, with the
#: shell's ``times``, the CPU of what it ran (its reaped children: the command, and what
#: the command reaped) on the shell's standard error
_TIMED = '"$@" 2>&1; status=$?; times >&2; exit $status'

#: one line of ``times``: user and system time, ``0m1.240000s 0m0.380000s`` (dash; bash
#: prints three decimals)
_TIMES_LINE = re.compile(r"(\d+)m([\d.]+)s\s+(\d+)m([\d.]+)s")


def _children_cpu(times_output: str) -> float | None:
    """The children's user + system seconds from ``times`` output (its last line)."""
    lines = [line for line in times_output.splitlines() if line.strip()]
    if len(lines) < 2:
        return None
    found = _TIMES_LINE.search(lines[-1])
    if found is None:
        return None
    user = int(found[1]) * 60 + float(found[2])
    system = int(found[3]) * 60 + float(found[4])
    return user + system


async def run_command(
    argv: Sequence[str], *, cwd: str | None = None, timeout: float, input_text: str | None = None
) -> CompletedRun:
    """Run a batch command to completion with a wall-clock limit.

    CPU time is the command's own: a ``sh`` started in front of it reports,
    with ``times``, the user + system time of the children it reaped (the
    command, and what the command reaped). Prover processes of other work that
    end meanwhile are not counted, as they were when the run was charged the
    growth of this process's ``RUSAGE_CHILDREN`` (a check that ran beside
    hammer attempts was charged their ATPs). That growth is still the fallback
    when the shell's report cannot be read.
    """
    program = resolve(argv[0])
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    proc = await spawn(["sh", "-c", _TIMED, "sh", program, *argv[1:]], cwd=cwd, merge_stderr=False)
    try:
        # busy while it runs: the command (``coqc`` under the shell) counts as this
        # run's CPU as it goes, not all at once when the shell reaps it; read as
        # someone else's, a 30 s check made the governor give way to "other work"
        # and then hold every request back to repay it
        with request_in_flight(proc.pid):
            stdout, times = await asyncio.wait_for(
                proc.communicate(input_text.encode() if input_text is not None else None), timeout
            )
        returncode = proc.returncode if proc.returncode is not None else await proc.wait()
    except TimeoutError as exc:
        await stop_process(proc)
        raise ProverHung(f"{argv[0]} did not finish within {timeout:.0f}s and was killed") from exc
    except BaseException:
        await stop_process(proc)
        raise
    finally:
        # only once reaped (the shell's CPU is then in this process's children
        # counters): a shell forgotten before would drop out of the tree's CPU
        # and come back at the reap, counted twice
        _forget(proc.pid)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    own = _children_cpu(times.decode(errors="replace"))
    if own is None:
        own = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return CompletedRun(
        returncode=returncode,
        output=stdout.decode(errors="replace"),
        cpu_seconds=max(own, 0.0),
        wall_seconds=time.monotonic() - started,
    )


@dataclass(frozen=True, slots=True)
class FinishedRun:
    """A batch command run from synchronous code, to its end."""

    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str


def _stop_group_sync(proc: subprocess.Popen[str], grace: float = 1.0) -> None:
    """:func:`stop_process` for a child started by :func:`run_sync`: SIGTERM the group,
    ``grace`` seconds, SIGKILL the group, and always reap it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(grace)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    # also reads and closes the pipes, which a straggler may hold open
    with contextlib.suppress(subprocess.TimeoutExpired, ValueError, OSError):
        proc.communicate(timeout=grace)
    proc.wait()


def run_sync(
    argv: Sequence[str],
    *,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float | None,
    input_text: str | None = None,
    memory_bytes: int | None = None,
) -> FinishedRun:
    """Run a batch command to its end from synchronous code, as :func:`run_command` does:
    its own process group, the memory cap, and past ``timeout`` (None: no limit) the
    group is stopped and :class:`~proof_orchestrator.errors.ProverHung` raised.

    An executable that is not there raises :class:`FileNotFoundError` (an
    :class:`OSError`), as :mod:`subprocess` does; its output is text, undecodable
    bytes replaced.
    """
    limit = memory_bytes if memory_bytes is not None else memory_limit()
    proc = subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=dict(env) if env is not None else None,
        stdin=subprocess.PIPE if input_text is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
        start_new_session=True,
    )
    _limit_memory(proc.pid, limit)
    try:
        stdout, stderr = proc.communicate(input_text, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        _stop_group_sync(proc)
        raise ProverHung(
            f"`{' '.join(argv)}` did not finish within {timeout:.0f}s; its process group was killed"
        ) from exc
    except BaseException:
        _stop_group_sync(proc)
        raise
    # the leader is done: end whatever it left running in its group
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    return FinishedRun(tuple(argv), proc.returncode, stdout, stderr)
