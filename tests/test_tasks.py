"""Owning tasks: task_group() and orch bg's race own what they start; cancel_and_wait
absorbs the task's cancellation, not the caller's."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from proof_orchestrator.provers.tasks import cancel_and_wait, task_group
from proof_orchestrator.workflows.background import _cycle_or_change


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


class _Broken(Exception):
    pass


async def test_a_task_group_s_lone_failure_comes_out_as_itself() -> None:
    """task_group(): one failing task is raised as itself (callers catch OrchError and its
    kin), and the group's other tasks are cancelled and waited for."""
    stopped = asyncio.Event()

    async def fails() -> None:
        await asyncio.sleep(0.05)
        raise _Broken("the prover broke")

    async def run() -> None:
        async with task_group() as group:
            group.create_task(_slow_to_stop(stopped))
            group.create_task(fails())

    with pytest.raises(_Broken, match="the prover broke"):
        await run()
    assert stopped.is_set()


async def test_a_task_group_s_several_failures_stay_grouped() -> None:
    async def fails(n: int) -> None:
        raise _Broken(str(n))

    async def run() -> None:
        async with task_group() as group:
            group.create_task(fails(1))
            group.create_task(fails(2))

    with pytest.raises(ExceptionGroup):
        await run()


async def test_a_cycle_is_cancelled_by_a_change_and_no_task_outlives_the_race() -> None:
    """orch bg's race: a change that arrives first stops the cycle; nothing is left running."""
    stopped = asyncio.Event()
    changes: asyncio.Queue[set[Path]] = asyncio.Queue()

    async def cycle() -> Any:
        await _slow_to_stop(stopped)

    before = asyncio.all_tasks()
    changes.put_nowait({Path("A.v")})
    report, changed = await _cycle_or_change(cycle, changes, 5.0, 1)
    assert report is None
    assert changed == {Path("A.v")}
    assert stopped.is_set()
    assert asyncio.all_tasks() == before


async def test_a_cycle_that_ends_first_leaves_the_queue_as_it_was() -> None:
    changes: asyncio.Queue[set[Path]] = asyncio.Queue()

    async def cycle() -> Any:
        return "report"

    assert await _cycle_or_change(cycle, changes, 5.0, 1) == ("report", None)
    assert changes.empty()
