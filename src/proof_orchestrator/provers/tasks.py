"""Stopping an asyncio task without swallowing a cancellation meant for the caller."""

from __future__ import annotations

import asyncio

__all__ = ["cancel_and_wait"]


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
