"""``BackTo N landed on state 1``: a pooled process whose load was cancelled mid-``BackTo``.

Seen once on a held-out set (HexadecimalNat's ``of_iff``, on a pooled hammer
process). A warm process (one that read CoqHammer's library) survives a
cancelled request: its helpers are killed and it gets a moment to answer
(:meth:`~proof_orchestrator.coq.coqtop.CoqTop.send_many`'s salvage). When the
cancel came while the pool was taking that process back for another file
(``BackTo 1``, the state before any file), coqtop did go back, but the pool's
record of what the process holds still listed the old file's states. The next
session on the old file asked for ``BackTo`` the state after its prefix, which
coqtop had dropped, and coqtop stayed where it was: on state 1.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from proof_orchestrator.coq.backto import back_to
from proof_orchestrator.coq.coqtop import CoqTop
from proof_orchestrator.coq.prover import CoqProver
from proof_orchestrator.coq.session import NO_NOTATIONS
from proof_orchestrator.errors import ProverDesync
from proof_orchestrator.goals import Goal, HoleKind

FILE_A = [
    "Definition a0 := 0.",
    "Definition a1 := 1.",
    "Definition a2 := 2.",
    "Lemma a_lemma : a0 + 0 = a0.",
    "Proof.",
]
FILE_B = [
    "Definition b0 := 0.",
    "Lemma b_lemma : b0 = 0.",
    "Proof.",
]


def _goal(name: str) -> Goal:
    return Goal(
        file=Path("x.v"), line=1, name=name, statement="", kind=HoleKind.ADMITTED, fingerprint=name
    )


async def _cancel_after_first_write(prover: CoqProver, top: CoqTop, prefix: list[str]) -> None:
    """Open a session on ``prefix`` and cancel it once its first sentence is written
    (while coqtop works on it), as a portfolio cancels a strategy that lost."""

    async def open_session() -> None:
        async with prover.session_at(_goal("b_lemma"), prefix):
            raise AssertionError("the session should have been cancelled while loading")

    before = top.requests
    task = asyncio.create_task(open_session())
    while top.requests == before:
        assert not task.done(), task
        await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_a_cancelled_back_to_in_the_pool_leaves_a_true_record() -> None:
    prover = CoqProver()
    try:
        async with prover.session_at(_goal("a_lemma"), FILE_A) as session:
            done = await session.run_tactic("reflexivity.", timeout=5)
            assert done.ok
            session.mark_warm()  # as hammer does: the process survives a cancel
        ((top, _),) = prover.pool._idle
        # the next session is on another file: the pool sends ``BackTo 1`` first
        await _cancel_after_first_write(prover, top, FILE_B)
        assert top.alive, "the warm process was salvaged, not killed"
        # the cancelled session's load went on, and the pool recorded what it loaded
        ((_, record),) = prover.pool._idle
        assert record.codes == FILE_B
        assert top.current == record.states[-1]
        # the first file again: the pool must know the process no longer holds it
        async with prover.session_at(_goal("a_lemma"), FILE_A) as again:
            assert again.pid == top.pid
            done = await again.run_tactic("reflexivity.", timeout=5)
            assert done.ok
    finally:
        await prover.aclose()


async def test_a_cancelled_query_on_a_warm_process_loses_the_position() -> None:
    """The session's side of the same salvage: a query cancelled after its first
    sentence (``Unset Printing Notations.``) ran must not leave the next tactic on the
    query's state (with notations off), as if nothing had run."""
    prover = CoqProver()
    try:
        async with prover.session_at(_goal("a_lemma"), FILE_A) as session:
            session.mark_warm()
            top = session._top
            assert top is not None
            before = top.requests
            task = asyncio.create_task(session.query("Print nat.", options=NO_NOTATIONS))
            while top.requests == before:
                assert not task.done(), task
                await asyncio.sleep(0)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert top.alive
            shown = await session.run_tactic("idtac.", timeout=5)
            assert shown.ok
            assert "a0 + 0 = a0" in shown.goals[0], shown.goals
    finally:
        await prover.aclose()


async def test_a_back_to_that_lands_elsewhere_kills_the_process() -> None:
    """A ``BackTo`` to a state coqtop does not hold is a record gone wrong: the process
    is killed (it goes back to no pool) and the error is a ProverDesync."""
    async with CoqTop() as top:
        await top.send("Definition x := 0.", 10)
        with pytest.raises(ProverDesync, match="BackTo 99 landed on state 2"):
            await back_to(top, 99, 10)
        assert not top.alive
        assert top.returncode is not None
