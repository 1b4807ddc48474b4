"""coqtop's output cut into replies, one per prompt, as the event loop receives it.

See :mod:`.coqtop` for the protocol facts the framing relies on.
"""

from __future__ import annotations

import asyncio
import re
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import ProverCrashed, ProverReplyTooLarge

__all__ = ["Alarm", "Fault", "Reply", "ReplyStream"]

_PROMPT = re.compile(rb"<prompt>(.*?) < (\d+) \|(.*?)\| (\d+) < </prompt>")


@dataclass(frozen=True, slots=True)
class Reply:
    """Everything coqtop printed for one sentence, and the prompt that ended it."""

    output: str
    state: int
    proof: str
    wall_seconds: float
    cpu_seconds: float
    #: the request passed its CPU limit and its helpers were killed (a salvaged request)
    cut: bool = False


@dataclass(frozen=True, slots=True)
class Fault:
    error: Exception


class ReplyStream:
    """coqtop's output, cut into replies as the event loop receives it.

    :meth:`feed` and :meth:`eof` are called from the loop's read callback
    (see :func:`~proof_orchestrator.provers.process.spawn`); a reply parsed
    there wakes the request waiting in :meth:`next` directly.
    """

    def __init__(self, reply_cap: int) -> None:
        self.items: deque[Reply | Fault] = deque()
        self._reply_cap = reply_cap
        self._buffer = b""
        self._scanned = 0  # a prompt sits on one line: the lines before this offset hold none
        self._waiter: asyncio.Future[bool] | None = None
        self._closed = False

    def feed(self, data: bytes) -> None:
        if self._closed:
            return
        buffer = self._buffer + data
        # a chunk can hold many replies (a batch): cut them at offsets and drop
        # what was read once at the end, not once per reply
        taken = 0
        while True:
            match = _PROMPT.search(buffer, max(taken, self._scanned))
            if match is None:
                self._scanned = max(taken, buffer.rfind(b"\n") + 1) - taken
                break
            if match.start() - taken > self._reply_cap:
                self._too_large()
                return
            output = buffer[taken : match.start()].decode(errors="replace")
            taken = match.end()
            self.items.append(
                Reply(
                    output=output.strip("\n"),
                    state=int(match.group(2)),
                    proof=match.group(1).decode(errors="replace"),
                    wall_seconds=0.0,
                    cpu_seconds=0.0,
                )
            )
        self._buffer = buffer[taken:] if taken else buffer
        if len(self._buffer) > self._reply_cap:
            self._too_large()
        self._wake()

    def _too_large(self) -> None:
        self.fail(ProverReplyTooLarge(f"a coqtop reply exceeded {self._reply_cap} bytes"))

    def eof(self) -> None:
        tail = self._buffer.decode(errors="replace").strip()
        self.fail(ProverCrashed(f"coqtop exited (EOF); last output: {tail[-500:]!r}"))

    def fail(self, error: Exception) -> None:
        """End the stream: the next :meth:`next` (or the one waiting) gets ``error``."""
        if self._closed:
            return
        self._closed = True
        self._buffer = b""
        self.items.append(Fault(error))
        self._wake()

    def _wake(self) -> None:
        if self.items and self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(False)

    async def next(self, timeout: float, alarm: Alarm | None = None) -> Reply | Fault | None:
        """The next reply (or the fault that ended the stream); None after ``timeout`` seconds.

        ``alarm`` rings once if it comes due while waiting (one timer serves
        both: most replies come before either).
        """
        if self.items:
            return self.items.popleft()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            wake_at = deadline if alarm is None or alarm.rung else min(deadline, alarm.at)
            waiter = self._waiter = loop.create_future()
            timer = loop.call_at(wake_at, _settle, waiter)
            try:
                timed_out = await waiter
            finally:
                timer.cancel()
                self._waiter = None
            if self.items:
                return self.items.popleft()
            if timed_out:
                if wake_at >= deadline:
                    return None
                assert alarm is not None
                alarm.ring()


@dataclass(slots=True)
class Alarm:
    """Something to do once a request has taken until ``at`` (event-loop time)."""

    at: float
    action: Callable[[], None]
    rung: bool = False

    def ring(self) -> None:
        if not self.rung:
            self.rung = True
            self.action()


def _settle(waiter: asyncio.Future[bool]) -> None:
    """The timer's end of a wait: wake the waiter, saying the time is up."""
    if not waiter.done():
        waiter.set_result(True)
