"""cancel_and_wait: the task's cancellation is absorbed, the caller's is not."""

from __future__ import annotations

import asyncio

import pytest

from proof_orchestrator.provers.tasks import cancel_and_wait


async def _slow_to_stop(stopped: asyncio.Event) -> None:
    try:
        await asyncio.sleep(60)
    except asyncio.CancelledError:
        await asyncio.sleep(0.2)  # cleanup that takes a while, as closing a prover does
        stopped.set()
        raise


async def test_the_task_is_cancelled_and_the_caller_goes_on() -> None:
    stopped = asyncio.Event()
    child = asyncio.create_task(_slow_to_stop(stopped))
    await asyncio.sleep(0)
    await cancel_and_wait(child)
    assert child.cancelled()
    assert stopped.is_set()
    await cancel_and_wait(None)
    await cancel_and_wait(child)  # already finished: nothing to do


async def test_a_cancellation_of_the_caller_while_it_waits_is_not_swallowed() -> None:
    stopped = asyncio.Event()
    child = asyncio.create_task(_slow_to_stop(stopped))
    await asyncio.sleep(0)
    after: list[str] = []

    async def closing() -> None:
        await cancel_and_wait(child)
        after.append("went on as if nothing happened")

    caller = asyncio.create_task(closing())
    await asyncio.sleep(0.05)  # the caller now waits for the child's cleanup
    caller.cancel()  # as Ctrl-C does to the main task
    with pytest.raises(asyncio.CancelledError):
        await caller
    assert after == []
