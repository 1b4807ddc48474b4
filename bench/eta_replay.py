"""Replay recorded fill runs through the ETA's model (run/pace.py) and score it.

From a run's ledger (``.orch/ledger.sqlite``) this rebuilds the goal passes of its
latest ``fill`` run: a pass is a goal's attempts at one goal budget (a new pass
starts where the goal's attempts at that budget leave a gap of more than
``--gap`` seconds); it starts at its first attempt's start (``created_at`` minus
``wall_seconds``), ends at its last attempt's end, and costs the sum of their
``cpu_seconds``. A goal's later passes are revisits; a pass followed by another
of its goal was requeued.

The passes go through the real :class:`~proof_orchestrator.run.pace.PaceModel`
with a fake clock: ``pass_started`` at each start (with a ``used`` that spreads
the pass's CPU evenly over its wall time, and the pass's budget as ``cap``),
``pass_ended`` at each end, and ``eta_seconds`` every ``--step`` seconds (the live
publisher asks every 2 s). At the first estimate after 20, 50 and 80 % of the
goals are done it prints the ETA over the true time left (to the end of the last
pass; the live figure also adds the last file's check, which this leaves out).

With the run's results file (``--results DIR``, ``<tag>.json`` there), it also
prints the ratios recorded live, and the replay's estimate at the times of the
recorded ones.

    python bench/eta_replay.py /work/scratch/acc/runs/s16-160-ee7f1ea-extructures ...
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from proof_orchestrator.run.pace import PaceModel

FRACTIONS = (0.2, 0.5, 0.8)


@dataclass(slots=True)
class Pass:
    goal: int
    start: float
    end: float
    cpu: float
    budget: float
    revisit: bool = False
    requeued: bool = False


def _seconds(stamp: str) -> float:
    moment = datetime.fromisoformat(stamp)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def load_passes(ledger: Path, gap: float) -> tuple[list[Pass], int, float]:
    """The passes of the latest fill run, the run's goal count and its start time."""
    db = sqlite3.connect(f"file:{ledger}?mode=ro", uri=True)
    run_id, started, summary, status = db.execute(
        "select id, started_at, summary, status from runs where command = 'fill'"
        " order by id desc limit 1"
    ).fetchone()
    if status != "finished":
        db.close()
        return [], 0, 0.0  # an interrupted run has no true end to score against
    rows = db.execute(
        "select goal_id, cpu_seconds, wall_seconds, created_at, goal_budget_seconds"
        " from attempts where run_id = ?",
        (run_id,),
    ).fetchall()
    db.close()
    by_key: dict[tuple[int, float], list[tuple[float, float, float]]] = {}
    for goal, cpu, wall, created, budget in rows:
        end = _seconds(created)
        by_key.setdefault((goal, budget), []).append((end - wall, end, cpu))
    passes: list[Pass] = []
    for (goal, budget), attempts in by_key.items():
        attempts.sort()
        current: Pass | None = None
        for start, end, cpu in attempts:
            if current is None or start > current.end + gap:
                current = Pass(goal, start, end, 0.0, budget)
                passes.append(current)
            current.end = max(current.end, end)
            current.cpu += cpu
    by_goal: dict[int, list[Pass]] = {}
    for p in sorted(passes, key=lambda p: p.start):
        by_goal.setdefault(p.goal, []).append(p)
    for goal_passes in by_goal.values():
        for index, p in enumerate(goal_passes):
            p.revisit = index > 0
            p.requeued = index < len(goal_passes) - 1
    goals = json.loads(summary).get("goals") or len(by_goal)
    return sorted(passes, key=lambda p: p.start), int(goals), _seconds(started)


def replay(
    passes: list[Pass], goals: int, step: float = 2.0
) -> list[tuple[float, int, float | None]]:
    """``(time, goals done, ETA)`` every ``step`` seconds from the first pass's start."""
    now = [passes[0].start]
    pace = PaceModel(clock=lambda: now[0])
    events: list[tuple[float, int, int]] = []  # (time, 0 end / 1 start, pass index)
    for index, p in enumerate(passes):
        events.append((p.start, 1, index))
        events.append((p.end, 0, index))
    events.sort()
    tokens: dict[int, int] = {}
    done = 0
    samples: list[tuple[float, int, float | None]] = []
    t = passes[0].start
    finish = max(p.end for p in passes)
    position = 0
    while t <= finish + step:
        while position < len(events) and events[position][0] <= t:
            when, kind, index = events[position]
            now[0] = when
            p = passes[index]
            if kind == 1:

                def used(p: Pass = p) -> float:
                    wall = p.end - p.start
                    share = 1.0 if wall <= 0 else min(1.0, max(0.0, (now[0] - p.start) / wall))
                    return p.cpu * share

                tokens[index] = pace.pass_started(revisit=p.revisit, used=used, cap=p.budget)
            else:
                pace.pass_ended(
                    revisit=p.revisit,
                    cpu_seconds=p.cpu,
                    requeued=p.requeued,
                    token=tokens.pop(index),
                )
                if not p.requeued:
                    done += 1
            position += 1
        now[0] = t
        samples.append((t, done, pace.eta_seconds(goals) if done < goals else 0.0))
        t += step
    return samples


def ratios(
    samples: list[tuple[float, int, float | None]], goals: int, finish: float
) -> list[float | None]:
    found: list[float | None] = []
    for fraction in FRACTIONS:
        point = next((s for s in samples if s[1] >= fraction * goals), None)
        if point is None or point[2] is None or finish <= point[0]:
            found.append(None)
        else:
            found.append(point[2] / (finish - point[0]))
    return found


def _show(values: list[float | None]) -> str:
    return " ".join(f"{v:6.3f}" if v is not None else "     -" for v in values)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="run directories (with .orch/)")
    parser.add_argument("--results", type=Path, help="the directory of <tag>.json results")
    parser.add_argument("--gap", type=float, default=float("inf"))
    parser.add_argument("--step", type=float, default=2.0)
    parser.add_argument("--trace", action="store_true", help="print every estimate")
    args = parser.parse_args(argv)
    print(f"{'run':34} {'goals':>5} {'replay 20/50/80 %':>20}   {'recorded 20/50/80 %':>20}")
    scored: list[float] = []
    for run in args.runs:
        ledger = run / ".orch" / "ledger.sqlite"
        if not ledger.exists():
            continue
        passes, goals, _ = load_passes(ledger, args.gap)
        if not passes:
            continue
        finish = max(p.end for p in passes)
        samples = replay(passes, goals, args.step)
        found = ratios(samples, goals, finish)
        scored += [abs(__import__("math").log(v)) for v in found if v]
        recorded = ""
        results = args.results / f"{run.name}.json" if args.results else None
        if results is not None and results.exists():
            data = json.loads(results.read_text())
            eta = data.get("eta") or {}
            recorded = _show(
                [(eta.get(f"{round(f * 100)}%") or {}).get("ratio") for f in FRACTIONS]
            )
        print(f"{run.name:34} {goals:5d} {_show(found):>20}   {recorded:>20}")
        if args.trace:
            base = passes[0].start
            for t, done, eta_ in samples[:: max(1, round(10 / args.step))]:
                print(f"  t={t - base:7.1f} done={done:3d} eta={eta_} true={finish - t:7.1f}")
    if scored:
        print(f"mean |log ratio| {statistics.mean(scored):.3f}, worst {max(scored):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
