"""A ``hammer`` call that is cancelled or runs past its CPU budget keeps its process.

CoqHammer reads its ATP library once per coqtop (about 10 CPU s on the
stdlib). When another strategy wins the goal, or the call passes its CPU
guard, killing coqtop threw that read away: inside a fill run 107 of 237
hammer attempts read the library again. Killing only the ATPs ends the call
with an error within a fraction of a second, and the process stays in step.
These tests run the real prover and CoqHammer's real ATPs.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from proof_orchestrator.coq.holes import scan_coq_file
from proof_orchestrator.coq.prover import CoqProver
from proof_orchestrator.coq.session import CoqSession
from proof_orchestrator.coq.strategies.hammer import (
    HAMMER_LIBEXEC,
    HAMMER_PREAMBLE,
    SALVAGE_SECONDS,
    hammer_environment,
    read_atp_library,
)
from proof_orchestrator.provers.base import TacticStatus

pytestmark = pytest.mark.skipif(
    not os.path.isdir(HAMMER_LIBEXEC), reason="CoqHammer's ATPs are missing"
)

#: true, but out of reach of the ATPs in a few seconds (they run until stopped)
HARD = """\
Require Import Arith List.
Lemma hard : forall (l : list nat) (a b : nat),
  length (l ++ a :: b :: nil) * (a + b) = (a + b) * S (S (length l)) /\\ a * b = b * a.
Proof.
Admitted.
"""


async def _atps_running(session: CoqSession) -> None:
    """Wait until an ATP runs (not only CoqHammer's fork: before its ATPs start,
    killing the fork leaves CoqHammer more in-process work to do)."""
    import psutil

    assert session.pid is not None
    process = psutil.Process(session.pid)
    for _ in range(600):
        names = set()
        for child in process.children(recursive=True):
            with contextlib.suppress(psutil.Error):
                names.add(child.name())
        if names & _ATP_NAMES:
            return
        await asyncio.sleep(0.05)
    raise AssertionError("hammer started no ATP within 30 s")


#: the programs CoqHammer runs as ATPs here
_ATP_NAMES = {"eprover", "cvc4", "z3_tptp", "vampire"}


@contextlib.asynccontextmanager
async def _warm_hammer_session(
    write_v: Callable[[str, str], Path],
) -> AsyncIterator[tuple[CoqProver, CoqSession]]:
    """A hammer side session on :data:`HARD` whose process has read the ATP library."""
    hammer_environment()
    path = write_v("Hard.v", HARD)
    (hole,) = scan_coq_file(path)
    prover = CoqProver()
    try:
        opening = prover.session(hole.goal, HARD, hole.prefix_end, hole.statement_start)
        async with opening as main, main.side_session(HAMMER_PREAMBLE) as side:
            assert await read_atp_library(side) > 2.0  # the read happened, in this process
            await side.run_script(["Set Hammer ATPLimit 30."], side.root, timeout=5)
            yield prover, side
    finally:
        await prover.aclose()


async def _cancel_hammer(side: CoqSession, salvage: float) -> None:
    """Start ``hammer.``, and cancel it once its ATPs are at work."""
    call = asyncio.create_task(side.run_tactic("hammer.", side.root, timeout=30, salvage=salvage))
    await _atps_running(side)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call


async def test_a_cancelled_hammer_call_keeps_its_process_and_its_atp_library(
    write_v: Callable[[str, str], Path],
) -> None:
    async with _warm_hammer_session(write_v) as (_, side):
        pid = side.pid
        await _cancel_hammer(side, SALVAGE_SECONDS)
        assert side.pid == pid
        assert side.replacements == 0
        # the same process answers, from the root, and its ATP library is still read
        assert await read_atp_library(side) == 0.0
        after = await side.run_tactic("intros; split; [lia | lia].", side.root, timeout=10)
        assert after.status is not TacticStatus.TIMEOUT
        assert side.pid == pid


async def test_any_cancelled_request_on_a_warm_process_keeps_it(
    write_v: Callable[[str, str], Path],
) -> None:
    """The process read CoqHammer's library (the pool marked it warm), so even a request
    that asks for no salvage (settings, ``BackTo``, a replayed script) keeps it when
    cancelled; a cold process is still killed (``test_coqtop``)."""
    async with _warm_hammer_session(write_v) as (_, side):
        pid = side.pid
        await _cancel_hammer(side, 0.0)
        assert side.pid == pid
        assert side.replacements == 0
        after = await side.run_tactic("intros; split; [lia | lia].", side.root, timeout=10)
        assert after.status is not TacticStatus.TIMEOUT


async def test_a_hammer_call_past_its_cpu_limit_times_out_and_keeps_its_process(
    write_v: Callable[[str, str], Path],
) -> None:
    async with _warm_hammer_session(write_v) as (_, side):
        pid = side.pid
        for _ in range(3):
            cut = await side.run_tactic(
                "hammer.", side.root, timeout=30, cpu_limit=3.0, salvage=SALVAGE_SECONDS
            )
            # once in a while (seen under the suite's two workers) every ATP gives up on
            # its own just before the limit: the call then fails and was not cut
            if not (cut.status is TacticStatus.FAILED and cut.cpu_seconds < 3.0):
                break
        assert cut.status is TacticStatus.TIMEOUT
        assert side.pid == pid
        assert side.replacements == 0
        assert await read_atp_library(side) == 0.0
