"""The coqtop driver: framing, desync, hangs, crashes, no zombies."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time

import psutil
import pytest

from proof_orchestrator.coq.coqtop import CoqTop, CoqTopState
from proof_orchestrator.errors import (
    ProverCrashed,
    ProverDesync,
    ProverHung,
    ProverReplyTooLarge,
    SessionClosed,
)
from proof_orchestrator.provers.process import MEMORY_LIMIT, DescendantMeter
from proof_orchestrator.provers.tasks import cancel_and_wait


async def test_reply_carries_output_and_new_state() -> None:
    async with CoqTop() as top:
        before = top.current
        reply = await top.send("Check (1 + 1).", 10)
        assert reply.state > before
        assert "1 + 1" in reply.output
        assert ": nat" in reply.output


async def test_failed_sentence_keeps_the_state_number() -> None:
    async with CoqTop() as top:
        before = top.current
        reply = await top.send("Check no_such_thing.", 10)
        assert reply.state == before
        assert "no_such_thing" in reply.output


async def test_a_batch_is_answered_sentence_by_sentence_past_a_failure() -> None:
    async with CoqTop() as top:
        before = top.current
        ok, bad, after = await top.send_many(
            ["Definition a := 1.", "Check no_such_thing.", "Definition b := a."], 10
        )
        # each sentence has its own prompt: the failure keeps its state number,
        # and the sentence after it still ran
        assert ok.state == before + 1
        assert bad.state == ok.state
        assert "no_such_thing" in bad.output
        assert after.state > ok.state
        assert top.current == after.state
        # the stream is still in step: the next request gets its own reply
        reply = await top.send("Check b.", 10)
        assert reply.output.startswith("b")
        assert ": nat" in reply.output


async def test_more_than_one_sentence_per_send_is_refused() -> None:
    async with CoqTop() as top:
        with pytest.raises(ValueError, match="exactly one"):
            await top.send("Check 1. Check 2.", 10)


async def test_an_unrequested_reply_is_detected_as_desync_and_kills_coqtop() -> None:
    async with CoqTop() as top:
        # two sentences on one raw line produce two prompts for one request
        await top.write_raw("Check 1. Check 2.\n")
        await top._next_reply(10)
        await asyncio.sleep(0.5)  # let the second prompt arrive
        with pytest.raises(ProverDesync):
            await top.send("Check 3.", 10)
        assert top.state is CoqTopState.CLOSED
        assert top.returncode is not None


async def test_a_hung_coqtop_is_killed_with_its_group_and_reaped() -> None:
    async with CoqTop() as top:
        pid = top.pid
        assert pid is not None
        os.kill(pid, signal.SIGSTOP)  # it will never answer
        with pytest.raises(ProverHung):
            await top.send("Check 1.", 1.0)
        assert top.returncode is not None  # reaped: no zombie
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
        with pytest.raises(SessionClosed):
            await top.send("Check 1.", 1.0)


async def test_a_coqtop_killed_from_outside_is_reported_as_crashed() -> None:
    async with CoqTop() as top:
        assert top.pid is not None
        os.kill(top.pid, signal.SIGKILL)
        with pytest.raises(ProverCrashed):
            await top.send("Check 1.", 10)
        assert top.returncode is not None


async def test_aclose_is_idempotent_and_cannot_reopen() -> None:
    top = CoqTop()
    await top.start()
    await top.aclose()
    await top.aclose()
    assert top.returncode is not None
    with pytest.raises(SessionClosed, match="make a new one"):
        await top.start()


async def test_cancelling_a_request_leaves_no_orphan() -> None:
    top = CoqTop()
    await top.start()
    await top.send("Goal True.", 10)
    pid = top.pid
    task = asyncio.create_task(top.send("Timeout 30 (do 1000000000 idtac).", 60))
    await asyncio.sleep(0.3)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await top.aclose()
    assert top.returncode is not None
    assert pid is not None
    assert not psutil.pid_exists(pid)


async def test_prover_runs_under_the_memory_cap() -> None:
    # what a command does with ORCH_PROVER_MEMORY_MB=3000 (cli/common.load_command_settings)
    token = MEMORY_LIMIT.set(3000 * 1024**2)
    try:
        async with CoqTop() as top:
            assert top.pid is not None
            soft, hard = psutil.Process(top.pid).rlimit(psutil.RLIMIT_AS)
            assert soft == hard == 3000 * 1024**2
    finally:
        MEMORY_LIMIT.reset(token)


async def test_a_reply_past_the_byte_cap_kills_the_process() -> None:
    async with CoqTop(reply_cap=2000) as top:
        small = await top.send("Check 0.", 10.0)
        assert "nat" in small.output
        with pytest.raises(ProverReplyTooLarge, match="2000 bytes"):
            await top.send("Search nat.", 30.0)  # about 6 kB
        assert not top.alive
        assert top.returncode is not None


async def test_many_replies_in_one_read_are_cut_apart_in_order() -> None:
    # forty quick sentences in one write: coqtop's answers arrive in a few
    # chunks, some holding many prompts, some ending inside one
    async with CoqTop() as top:
        lines = [f"Check {n}." for n in range(40)]
        replies = await top.send_many(lines, 10.0)
        assert [r.output.split(":")[0].strip() for r in replies] == [str(n) for n in range(40)]
        states = [r.state for r in replies]
        assert states == sorted(states)
        assert len(set(states)) == 40
        assert (await top.send("Check true.", 10.0)).output.startswith("true")


async def test_a_request_past_its_cpu_limit_is_killed() -> None:
    async with CoqTop() as top:
        await top.send("Goal True.", 10.0)
        started = time.monotonic()
        with pytest.raises(ProverHung, match="CPU seconds"):
            await top.send("do 1000000000 idtac.", 60.0, cpu_limit=1.0)
        assert time.monotonic() - started < 10
        assert 1.0 <= top.cpu_seconds() < 5
        assert top.returncode is not None


async def test_helpers_that_are_never_reaped_are_still_counted() -> None:
    """A child that burns CPU and is not waited for by its parent before the parent is
    measured: the children counters miss it, the descendant meter does not."""
    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 1.0: pass"
    parent = f"import subprocess, time\nsubprocess.Popen([{sys.executable!r}, '-c', {burn!r}])\n"
    parent += "time.sleep(30)"  # never waits: the child stays a zombie, its CPU uncounted
    proc = await asyncio.create_subprocess_exec(sys.executable, "-c", parent)
    try:
        meter = DescendantMeter(psutil.Process(proc.pid), interval=0.05)
        sampling = asyncio.create_task(meter.run())
        # until the child has burnt its second (a busy machine gives it less than a core)
        for _ in range(200):
            if meter.total() >= 0.95:
                break
            await asyncio.sleep(0.1)
        await cancel_and_wait(sampling)
        counters = psutil.Process(proc.pid).cpu_times()
        assert counters.children_user + counters.children_system < 0.2
        assert meter.total() >= 0.8
    finally:
        proc.kill()
        await proc.wait()


async def test_the_process_accounts_count_starts_closes_and_why() -> None:
    """``orch fill --json``'s ``prover_processes``: a cancelled request is interrupted
    and its process lives on, a process out of step ends (``ProverDesync``), a
    released one is counted as such."""
    from proof_orchestrator.provers.accounting import PROVER_PROCESSES

    started, closed = PROVER_PROCESSES.started, PROVER_PROCESSES.closed
    interrupted = PROVER_PROCESSES.interrupted
    because = dict(PROVER_PROCESSES.closed_because)
    async with CoqTop():
        pass
    top = CoqTop()
    await top.start()
    await top.send("Goal True.", 10)
    request = asyncio.create_task(top.send("Timeout 30 (do 1000000000 idtac).", 60))
    await asyncio.sleep(0.5)
    await cancel_and_wait(request)
    assert top.alive
    assert PROVER_PROCESSES.interrupted == interrupted + 1
    await top.write_raw("Check I.\n")  # a reply nobody asked for: out of step
    await asyncio.sleep(0.3)
    with pytest.raises(ProverDesync):
        await top.send("Check I.", 10)
    await top.aclose()  # the desync closed it already (counted once)
    assert PROVER_PROCESSES.started == started + 2
    assert PROVER_PROCESSES.closed == closed + 2
    assert PROVER_PROCESSES.closed_because.get("released", 0) == because.get("released", 0) + 1
    assert PROVER_PROCESSES.closed_because.get("ProverDesync", 0) == (
        because.get("ProverDesync", 0) + 1
    )
    assert PROVER_PROCESSES.start_cpu_seconds > 0


async def test_a_cancelled_request_is_interrupted_and_the_process_stays_in_step() -> None:
    """A portfolio's loser is cancelled mid-tactic: coqtop is interrupted, not killed,
    so the next session does not load the file again into a new process."""
    async with CoqTop() as top:
        await top.send("Goal True.", 10)
        at_goal = top.current
        pid = top.pid
        request = asyncio.create_task(top.send("Timeout 30 (do 1000000000 idtac).", 60))
        await asyncio.sleep(0.5)
        await cancel_and_wait(request)
        assert top.alive
        assert top.pid == pid
        assert top.current == at_goal  # the interrupted tactic left the state as it was
        reply = await top.send("exact I.", 10)
        assert reply.state > at_goal
        assert "No more goals" in reply.output


async def test_a_cancelled_batch_ends_every_sentence_and_stays_in_step() -> None:
    async with CoqTop() as top:
        before = top.current
        slow = "Timeout 30 (do 1000000000 idtac)."
        lines = ["Goal True.", slow, slow, "Check I."]
        request = asyncio.create_task(top.send_many(lines, 60))
        await asyncio.sleep(0.5)
        await cancel_and_wait(request)
        assert top.alive
        assert top.current > before  # ``Goal`` took; the slow ones were interrupted
        reply = await top.send("Check (2 + 2).", 10)
        assert ": nat" in reply.output
        assert reply.state > before


@pytest.mark.parametrize("delay_ms", [0, 2, 5, 10, 20])
async def test_a_cancel_as_the_request_ends_leaves_the_replies_in_step(delay_ms: int) -> None:
    """The interrupt can land after the reply (coqtop is reading its input again): it
    then answers with a prompt of its own and eats a character of the next line.

    Seldom, on a loaded machine, an interrupt as the request ends makes coqtop
    8.16 itself exit (``Fatal error: exception Stdlib.Sys.Break``): the process
    is then gone with that crash as its fault. Either way it is never alive and
    out of step."""
    async with CoqTop() as top:
        await top.send("Goal True.", 10)
        for _ in range(4):
            request = asyncio.create_task(top.send("Timeout 5 (do 20000 idtac).", 60))
            await asyncio.sleep(delay_ms / 1000)
            await cancel_and_wait(request)
            if not top.alive:
                assert isinstance(top.fault, ProverCrashed), top.fault
                assert "Sys.Break" in str(top.fault)
                with pytest.raises(SessionClosed):
                    await top.send("Check I.", 10)
                return
            reply = await top.send("Check I.", 10)
            assert ": True" in reply.output
            await asyncio.sleep(0.2)
            assert not top._replies.items  # nothing came that nobody asked for
