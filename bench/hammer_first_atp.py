"""Hammer inside fill: time to its first ATP call per goal, from a warm process pool and cold.

usage: python bench/hammer_first_atp.py FILE.v [--goals 8] [--budget 10] [--out FILE]

For the first ``--goals`` ``Qed`` proofs of FILE, in file order, the strategy
``orch fill`` runs (``HammerStrategy.prove``, in a side session that loads
CoqHammer) is given the goal's session with ``--budget`` CPU seconds. A watcher
polls this process's tree every 20 ms for the first ATP process (``eprover``,
``cvc4``, ``z3``, ``vampire``) and records the seconds from the attempt's start.
The machine should be quiet: one attempt runs at a time, so wall time is
close to the side coqtop's CPU time until the ATPs start.

* ``cold``: ``max_idle=0``, every coqtop is closed when its session ends, so
  each goal's side session loads CoqHammer and reads its ATP library afresh
  (what ``orch fill`` did before the process pool);
* ``warm``: the default pool, as ``orch fill`` runs now: the side session
  reuses an idle coqtop that has CoqHammer loaded and its library read.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

import psutil

from proof_orchestrator.coq.holes import qed_proofs
from proof_orchestrator.coq.project import project_for
from proof_orchestrator.coq.session import CoqProver
from proof_orchestrator.coq.strategies.hammer import HammerStrategy, hammer_environment
from proof_orchestrator.goals import Budget, Outcome
from proof_orchestrator.provers.settings import CoqSettings

ATPS = {"eprover", "cvc4", "z3", "z3_tptp", "vampire"}


async def _first_atp(started: float) -> float:
    me = psutil.Process(os.getpid())
    while True:
        for child in me.children(recursive=True):
            try:
                # an ATP below a live coqtop (CoqHammer starts it through a shell)
                if child.name() in ATPS and any(
                    parent.name() == "coqtop" for parent in child.parents()
                ):
                    return time.monotonic() - started
            except psutil.Error:
                continue
        await asyncio.sleep(0.02)


async def run(path: Path, goals: int, budget: float, max_idle: int) -> list[dict[str, Any]]:
    text = path.read_text(encoding="utf-8")
    project = project_for(path)
    prover = CoqProver(
        project.flags, cwd=str(project.root), settings=CoqSettings(max_idle=max_idle)
    )
    rows = []
    try:
        for hole, _ in qed_proofs(path, text)[:goals]:
            at = prover.session(hole.goal, text, hole.prefix_end, hole.statement_start)
            async with at as session:
                started = time.monotonic()
                watcher = asyncio.create_task(_first_atp(started))
                result = await HammerStrategy().prove(session, hole.goal, Budget(budget, 1.0, 5.0))
                first = round(watcher.result(), 2) if watcher.done() else None
                watcher.cancel()
            rows.append(
                {
                    "goal": hole.goal.name,
                    "seconds_to_first_atp": first,
                    "outcome": result.outcome.value,
                    "candidate": result.outcome is Outcome.CANDIDATE,
                    "cpu_seconds": round(result.cpu_seconds, 2),
                    "wall_seconds": round(result.wall_seconds, 2),
                }
            )
            print(json.dumps(rows[-1]), flush=True)
    finally:
        await prover.aclose()
    return rows


def _summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    firsts = sorted(r["seconds_to_first_atp"] for r in rows if r["seconds_to_first_atp"])
    return {
        "goals": len(rows),
        "candidates": sum(r["candidate"] for r in rows),
        "atp_reached": len(firsts),
        "median_seconds_to_first_atp": firsts[len(firsts) // 2] if firsts else None,
        "cpu_seconds": round(sum(r["cpu_seconds"] for r in rows), 1),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file", type=Path)
    ap.add_argument("--goals", type=int, default=8)
    ap.add_argument("--budget", type=float, default=10.0)
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    hammer_environment()
    result: dict[str, Any] = {"file": str(a.file), "budget": a.budget}
    for mode, idle in (("cold", 0), ("warm", 2)):
        rows = asyncio.run(run(a.file.resolve(), a.goals, a.budget, idle))
        result[mode] = {"summary": _summary(rows), "rows": rows}
    print(json.dumps({m: result[m]["summary"] for m in ("cold", "warm")}, indent=1))
    if a.out:
        a.out.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
