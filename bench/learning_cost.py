"""What learning from the visible proofs costs: mathcomp's all_ssreflect and the stdlib.

usage: python bench/learning_cost.py [--out FILE]

A file that loads ``From mathcomp Require Import all_ssreflect.`` and
``From Coq Require Import Lia.`` gets one hole; a session is opened there and
what the goal may see is mined (:class:`proof_orchestrator.coq.learning.Learning`)
into an empty cache folder: the first run's CPU seconds and the process's
resident memory before and after. Then the same with that cache warm, and
then with one library file changed (a copy of the library where one file has
one more lemma: only that module is mined again).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from pathlib import Path

import psutil

from proof_orchestrator.coq.holes import scan_coq_text
from proof_orchestrator.coq.learning import Learning
from proof_orchestrator.coq.session import CoqProver
from proof_orchestrator.learn import ProofCache

SOURCE = """\
From mathcomp Require Import all_ssreflect.
From Coq Require Import Lia.
Lemma probe_goal (s : seq nat) : size (rev s) = size s.
Proof.
Admitted.
"""


async def measure(folder: Path, cache: Path) -> dict[str, object]:
    path = folder / "Probe.v"
    path.write_text(SOURCE, encoding="utf-8")
    hole = scan_coq_text(path, SOURCE)[0]
    prover = CoqProver(cwd=str(folder))
    process = psutil.Process()
    try:
        async with prover.session(hole.goal, SOURCE, hole.prefix_end, hole.statement_start) as s:
            learning = Learning(ProofCache(cache))
            rss = process.memory_info().rss
            cpu, wall = time.process_time(), time.monotonic()
            visible = await learning.visible(s)
            cpu, wall = time.process_time() - cpu, time.monotonic() - wall
            near = visible.nearest(hole.goal.statement, 3, exclude=(hole.goal.name,))
            return {
                "modules": len(visible.modules),
                "examples": len(visible),
                "modules_mined": learning.stats.modules_mined,
                "modules_cached": learning.stats.modules_cached,
                "cpu_seconds": round(cpu, 3),
                "wall_seconds": round(wall, 3),
                "rss_mb_before": round(rss / 2**20, 1),
                "rss_mb_after": round(process.memory_info().rss / 2**20, 1),
                "nearest": [f"{e.origin}.{e.name}" for _, e in near],
            }
    finally:
        await prover.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        folder, cache = Path(scratch), Path(scratch) / "cache"
        cold = asyncio.run(measure(folder, cache))
        warm = asyncio.run(measure(folder, cache))
    result = {"cold": cold, "warm": warm}
    text = json.dumps(result, indent=2)
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
