"""The lock between rebuilds (writers) and the sessions and checks that load compiled files."""

from __future__ import annotations

import asyncio

from proof_orchestrator.provers.build import ReadersWriter


async def test_a_rebuild_waits_for_the_checks_under_way_and_holds_new_ones_back() -> None:
    lock = ReadersWriter()
    events: list[str] = []
    check_started = asyncio.Event()
    finish_check = asyncio.Event()

    async def check(name: str, started: asyncio.Event | None = None) -> None:
        async with lock.reading():
            events.append(f"{name} start")
            if started is not None:
                started.set()
                await finish_check.wait()
            events.append(f"{name} end")

    async def rebuild() -> None:
        async with lock.writing():
            events.append("rebuild start")
            await asyncio.sleep(0)
            events.append("rebuild end")

    first = asyncio.create_task(check("first", check_started))
    await check_started.wait()
    writer = asyncio.create_task(rebuild())
    await asyncio.sleep(0.01)
    later = asyncio.create_task(check("later"))
    await asyncio.sleep(0.01)
    assert events == ["first start"]  # the rebuild waits; the later check waits behind it
    finish_check.set()
    await asyncio.gather(first, writer, later)
    assert events == [
        "first start",
        "first end",
        "rebuild start",
        "rebuild end",
        "later start",
        "later end",
    ]


async def test_what_a_check_rebuilt_stays_until_the_check_ends() -> None:
    lock = ReadersWriter()
    events: list[str] = []

    async def checking(name: str) -> None:
        async def rebuild() -> None:
            events.append(f"{name} rebuild")
            await asyncio.sleep(0.01)

        async with lock.writing_then_reading(rebuild):
            events.append(f"{name} check start")
            await asyncio.sleep(0.02)
            events.append(f"{name} check end")

    await asyncio.gather(checking("a"), checking("b"))
    # b's rebuild comes after a's whole check, never between a's rebuild and a's check
    assert events == [
        "a rebuild",
        "a check start",
        "a check end",
        "b rebuild",
        "b check start",
        "b check end",
    ]


async def test_checks_run_side_by_side() -> None:
    lock = ReadersWriter()
    inside = 0
    most = 0

    async def check() -> None:
        nonlocal inside, most
        async with lock.reading():
            inside += 1
            most = max(most, inside)
            await asyncio.sleep(0.01)
            inside -= 1

    await asyncio.gather(*(check() for _ in range(3)))
    assert most == 3
