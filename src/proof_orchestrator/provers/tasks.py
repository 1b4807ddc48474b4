"""Owning asyncio tasks: a task group whose one failure comes out as itself, and stopping
a task without swallowing a cancellation meant for the caller."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

__all__ = ["cancel_and_wait", "task_group"]


@contextlib.asynccontextmanager
async def task_group() -> AsyncIterator[asyncio.TaskGroup]:
    """An :class:`asyncio.TaskGroup` that owns every task started in the block: none
    outlives it. When one thing failed (the block or one task), that exception is raised
    as itself, not inside an :class:`ExceptionGroup`, so that callers keep catching
    :class:`~..errors.OrchError` and its kin; several failures stay grouped."""
    try:
        async with asyncio.TaskGroup() as group:
            yield group
    except BaseExceptionGroup as failed:
        if len(failed.exceptions) == 1:
            only = failed.exceptions[0]
            raise only from only.__cause__
        raise


async def cancel_and_wait(task: asyncio.Task[object] | None) -> None:
    """Cancel ``task`` and wait until it has finished.

    The usual ``with suppress(CancelledError): await task`` also swallows a
    cancellation of the *caller* that arrives while it waits (Ctrl-C during a
    session's close would then be lost). Here the task's own cancellation is
    absorbed, the caller's is raised again.
    """
    if task is None:
        return
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        current = asyncio.current_task()
        if current is not None and current.cancelling():
            raise
