"""Going back to an earlier coqtop state (``BackTo N``), and checking where it landed.

coqtop answers a ``BackTo`` to a state it no longer holds (one a later
``BackTo`` dropped, or one of another process) with an error and stays where
it was, so the prompt's state is the only proof that it went back. Every
``BackTo`` is checked here; one that landed elsewhere means that the caller's
record of the process is wrong, so the process is killed
(:class:`~proof_orchestrator.errors.ProverDesync`) rather than handed on with
a history nobody knows.
"""

from __future__ import annotations

from ..errors import ProverDesync
from .coqtop import CoqTop, Reply

__all__ = ["back_to", "back_to_sentence", "check_landed"]


def back_to_sentence(state: int) -> str:
    """The sentence that brings coqtop back to ``state`` (one line, already checked)."""
    return f"BackTo {state}."


async def check_landed(top: CoqTop, reply: Reply, state: int) -> None:
    """Raise (and kill ``top``) unless ``reply``, the answer to ``BackTo state``, is on it."""
    if reply.state == state:
        return
    error = ProverDesync(
        f"BackTo {state} landed on state {reply.state}: coqtop no longer holds state "
        f"{state}, so the record of what it holds was wrong; the process was killed "
        "(a session starts a fresh one)"
    )
    await top.interrupt_and_kill(error)
    raise error


async def back_to(top: CoqTop, state: int, timeout: float, *, measure: bool = False) -> Reply:
    """Send ``BackTo state`` and check that coqtop is there.

    ``measure=False`` by default: going back is bookkeeping, the next measured
    reply counts its CPU.
    """
    reply = await top.send(back_to_sentence(state), timeout, checked=True, measure=measure)
    await check_landed(top, reply, state)
    return reply
