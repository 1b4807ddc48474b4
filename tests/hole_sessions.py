"""Run a coroutine in a real coqtop session at one hole of a file (tests' helper)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from proof_orchestrator.coq.holes import scan_coq_text
from proof_orchestrator.coq.prover import CoqProver
from proof_orchestrator.goals import Goal


def run_at_hole(
    coroutine_factory: Callable[[Any, Goal], Awaitable[Any]], path: Path, name: str, root: Path
) -> Any:
    """``coroutine_factory(session, goal)`` at the hole ``name`` of ``path``, with
    ``root/lib`` mapped to ``Lib`` and ``root`` as the working folder."""
    text = path.read_text(encoding="utf-8")
    hole = next(h for h in scan_coq_text(path, text) if h.goal.name == name)

    async def go() -> Any:
        prover = CoqProver(flags=("-Q", str(root / "lib"), "Lib"), cwd=str(root))
        try:
            async with prover.session(
                hole.goal, text, hole.prefix_end, hole.statement_start
            ) as session:
                return await coroutine_factory(session, hole.goal)
        finally:
            await prover.aclose()

    return asyncio.run(go())
