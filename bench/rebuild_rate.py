"""Hammer's rebuild rate: of the proofs fill's hammer found and could not rebuild, how many
the current plain-Coq stand-ins rebuild.

usage: python bench/rebuild_rate.py FILL.json [FILL.json ...] [--budget 10] [--out FILE]

Each FILL.json is a ``bench/stdlib_fill.py`` result (``bench/results/dominance-*/fill.json``).
Its goals that ended "found with Hammer.Tactics: T" are the ones fill's hammer
proved with CoqHammer's own tactic ``T`` and could not rebuild with tactics
every Coq has. For each, at the goal's position in the original file, the
rebuild that ``orch fill`` runs after a ``hammer`` success
(``standard_reconstructions`` from the printed tactic, tried by the same
``_Scripts`` strategy, without CoqHammer loaded) is given ``--budget`` CPU
seconds; a script that closes the goal is then checked by the kernel
(``Qed`` and ``Print Assumptions`` in the session: nothing beyond what the
original proof uses is allowed).

The ATPs' qualified dependency list is not in the result (only the printed
tactic is), so the scripts that name lemmas by their qualified names are not
tried here: the rate is a lower bound of what fill's own rebuild does.

Where no stand-in rebuilds it, the proof term is tried as ``orch fill`` now
does: the printed tactic runs in a side session that loads CoqHammer's
tactics (what ``hammer`` itself runs to build its proof), its term is printed
there (:func:`printed_terms`) and read back in the goal's own session
(``exact``/``apply``, :func:`term_scripts`), then checked by the kernel the same
way. Each row says which way it was rebuilt (``how``: ``stand-in`` or ``term``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import time
from collections import defaultdict
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from proof_orchestrator.coq.holes import qed_proofs
from proof_orchestrator.coq.project import project_for
from proof_orchestrator.coq.session import NO_MICROMEGA_CACHE, CoqProver, CoqSession
from proof_orchestrator.coq.strategies.hammer import (
    TACTICS_IMPORT,
    _Scripts,
    standard_reconstructions,
)
from proof_orchestrator.coq.strategies.micro import lia_tactic
from proof_orchestrator.coq.strategies.proof_terms import printed_terms, term_scripts
from proof_orchestrator.goals import Budget, Outcome
from proof_orchestrator.provers.base import TacticStatus

RESULTS = Path(__file__).resolve().parent / "results"
FOUND = re.compile(r"found with Hammer\.Tactics: (?P<tactic>.+?\.)(?: \(no standard|$)")


def found_not_rebuilt(results: list[Path]) -> dict[str, dict[str, str]]:
    """{original file: {lemma name: printed tactic}} from fill results."""
    wanted: dict[str, dict[str, str]] = defaultdict(dict)
    for path in results:
        for goal in json.loads(path.read_text())["goals"]:
            match = FOUND.search(goal.get("message", ""))
            if match and goal["outcome"] != "proved":
                file, name, _ = goal["key"].split("::")
                wanted[file][name] = match.group("tactic")
    return wanted


async def rebuild_file(path: Path, tactics: dict[str, str], budget: float) -> list[dict[str, Any]]:
    text = path.read_text(encoding="utf-8")
    project = project_for(path)
    prover = CoqProver(project.flags, cwd=str(project.root))
    rows = []
    try:
        for hole, _ in qed_proofs(path, text):
            tactic = tactics.get(hole.goal.name)
            if tactic is None:
                continue
            at = prover.session(hole.goal, text, hole.prefix_end, hole.statement_start)
            async with at as session:
                scripts = standard_reconstructions(
                    f"Replace the hammer tactic with: {tactic}", await lia_tactic(session)
                )
                started = time.monotonic()
                found = await _Scripts("hammer", scripts).prove(
                    session, hole.goal, Budget(budget, 3.0, 5.0)
                )
                kernel = False
                how = ""
                if found.outcome is Outcome.CANDIDATE:
                    kernel, _ = await session.qed_check(found.sentences, hole.goal.name, 30.0)
                    how = "stand-in" if kernel else ""
                term_chars = 0
                if not kernel:
                    term = await _term(session, tactic)
                    if term is not None:
                        kernel, _ = await session.qed_check(term, hole.goal.name, 30.0)
                        how = "term" if kernel else ""
                        term_chars = len(term[0])
                        found = found if not kernel else replace(found, sentences=term)
            rows.append(
                {
                    "file": str(path),
                    "goal": hole.goal.name,
                    "printed": tactic,
                    "rebuilt": kernel,
                    "how": how,
                    "term_chars": term_chars,
                    "script": " ".join(found.sentences) if kernel else "",
                    "cpu_seconds": round(found.cpu_seconds, 2),
                    "wall_seconds": round(time.monotonic() - started, 2),
                    "scripts": len(scripts),
                }
            )
            print(json.dumps(rows[-1]), flush=True)
    finally:
        await prover.aclose()
    return rows


async def _term(session: CoqSession, tactic: str) -> tuple[str, ...] | None:
    """The proof term ``tactic`` builds with CoqHammer's tactics, read back in ``session``."""
    async with session.side_session((TACTICS_IMPORT, *NO_MICROMEGA_CACHE)) as side:
        built = await side.run_tactic(tactic, side.root, timeout=20)
        if built.status is not TacticStatus.COMPLETE:
            return None
        terms = await printed_terms(side)
    for script in term_scripts(terms):
        read_back = await session.run_tactic(script, session.root, timeout=10)
        if read_back.status is TacticStatus.COMPLETE:
            return (script,)
    return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", type=Path, nargs="+")
    ap.add_argument("--budget", type=float, default=10.0)
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    wanted = found_not_rebuilt(a.results)
    rows: list[dict[str, Any]] = []
    for file, tactics in sorted(wanted.items()):
        rows += asyncio.run(rebuild_file(Path(file), tactics, a.budget))
    rebuilt = [r for r in rows if r["rebuilt"]]
    summary = {
        "kind": "rebuild-rate",
        "timestamp": datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ"),
        "results": [str(p) for p in a.results],
        "budget_cpu_seconds": a.budget,
        "found_not_rebuilt": len(rows),
        "rebuilt_now": len(rebuilt),
        "rate": round(len(rebuilt) / max(len(rows), 1), 3),
        "cpu_seconds": round(sum(r["cpu_seconds"] for r in rows), 1),
        "rebuilt_within_1s": sum(1 for r in rebuilt if r["cpu_seconds"] <= 1.0),
        "rebuilt_by_stand_in": sum(1 for r in rebuilt if r["how"] == "stand-in"),
        "rebuilt_by_term": sum(1 for r in rebuilt if r["how"] == "term"),
    }
    print(json.dumps(summary, indent=1))
    out = a.out or RESULTS / f"{summary['timestamp']}-rebuild-rate.json"
    out.write_text(json.dumps({**summary, "rows": rows}, indent=1) + "\n")
    print(f"written: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
