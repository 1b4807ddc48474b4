"""The benchmark bank: run the pipeline on copies of ``bench/bank/coq`` and report.

The bank is run on fresh copies with a fresh ledger, so a result never owes
anything to an earlier run. After the run, every patched copy is compiled
again from scratch with ``coqc`` and scanned for holes: the solved count in
the result is the number of holes that disappeared from files that compile.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import os
import platform
import resource
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..backends import backend_for, load_source
from ..errors import PathNotFound
from ..goals import Outcome
from ..learn import MINING
from ..ledger import Ledger
from ..provers.accounting import PROVER_PROCESSES
from ..provers.process import TRAFFIC
from ..run.pipeline import FillOptions, FillReport, GoalReport, fill
from ..scheduler.governor import CpuGovernor, trace_summary
from ..search.memory import MEMORY_COUNTS

__all__ = ["BankEntry", "load_index", "run_bank"]


@dataclass(frozen=True, slots=True)
class BankEntry:
    id: str
    domain: str
    level: str
    file: str


def load_index(bank: Path) -> dict[str, BankEntry]:
    index = bank / "index.tsv"
    if not index.is_file():
        raise PathNotFound(f"{index} is missing: is {bank} a benchmark bank (bench/bank)?")
    entries: dict[str, BankEntry] = {}
    with index.open(encoding="utf-8") as handle:
        rows = (line for line in handle if line.strip() and not line.startswith("#"))
        for row in csv.reader(rows, delimiter="\t"):
            entry = BankEntry(*row)
            entries[entry.id] = entry
    return entries


def _group(rows: list[dict[str, Any]], key: str) -> dict[str, dict[str, float]]:
    groups: dict[str, dict[str, float]] = {}
    for row in rows:
        g = groups.setdefault(row[key], {"total": 0, "solved": 0, "cpu_seconds": 0.0})
        g["total"] += 1
        g["solved"] += int(row["solved"])
        g["cpu_seconds"] = round(g["cpu_seconds"] + row["cpu_seconds"], 3)
    for g in groups.values():
        g["rate"] = round(g["solved"] / g["total"], 4) if g["total"] else 0.0
    return groups


async def _recheck(files: list[Path]) -> dict[str, Any]:
    """Compile every patched copy from scratch (as its project says) and count the holes left."""
    compiled = 0
    remaining: dict[str, list[str]] = {}
    cpu = 0.0
    for path in files:
        run = await backend_for(path).compile_alone(path, timeout=900)
        cpu += run.cpu_seconds
        if run.ok:
            compiled += 1
        remaining[path.stem] = [hole.goal.name for hole in load_source(path)[1]]
    return {
        "files": len(files),
        "compiled": compiled,
        "cpu_seconds": round(cpu, 3),
        "remaining_holes": remaining,
    }


async def run_bank(
    bank: Path,
    out_dir: Path,
    options: FillOptions,
    *,
    rounds: int = 1,
    on_goal: Callable[[GoalReport], None] | None = None,
    on_files: Callable[[list[tuple[Path, int]]], None] | None = None,
    keep_workdir: bool = False,
) -> tuple[dict[str, Any], Path]:
    """Run the Coq bank ``rounds`` times; returns the result and the path of the JSON written.

    Each round works on fresh copies with a fresh ledger, so rounds are
    independent repetitions (useful to keep the machine busy long enough to
    measure the CPU governor). Solved counts come from the first round.
    """
    if rounds < 1:
        raise ValueError("rounds must be at least 1")
    index = load_index(bank)
    sources = sorted((bank / "coq").glob("*.v"))
    if not sources:
        raise PathNotFound(f"no .v files in {bank / 'coq'}")
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    out_dir.mkdir(parents=True, exist_ok=True)
    sessions = options.orch.max_light + options.orch.max_heavy
    governor = CpuGovernor.for_settings(options.orch, sessions)
    self_before = resource.getrusage(resource.RUSAGE_SELF)
    children_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    traffic_before = dataclasses.replace(TRAFFIC)
    started = time.monotonic()
    first: tuple[FillReport, dict[str, Any], Path, dict[str, Any]] | None = None
    round_summaries: list[dict[str, Any]] = []
    for number in range(1, rounds + 1):
        workdir = Path(tempfile.mkdtemp(prefix=f"orch-bank-{stamp}-"))
        try:
            copies = []
            for source in sources:
                target = workdir / source.name
                shutil.copyfile(source, target)
                copies.append(target)
            (workdir / "_CoqProject").write_text(
                "-Q . Bank\n" + "\n".join(c.name for c in copies) + "\n"
            )
            suffix = "" if number == 1 else f"-round{number}"
            ledger_path = out_dir / f"{stamp}{suffix}.sqlite"
            ledger = Ledger(f"sqlite:///{ledger_path}")
            try:
                report: FillReport = await fill(
                    [workdir],
                    ledger,
                    FillOptions(
                        dry_run=False,
                        reuse=False,
                        coq=options.coq,
                        orch=options.orch,
                        command="bank",
                    ),
                    on_goal=on_goal,
                    on_files=on_files,
                    governor=governor,
                )
                llm = ledger.llm_report()
            finally:
                ledger.close()
            recheck = await _recheck(copies)
            round_summaries.append(
                {
                    "round": number,
                    "proved": report.proved,
                    "wall_seconds": round(report.wall_seconds, 3),
                    "live_publisher": report.live_publisher,
                    "strategy_plan": report.strategy_plan,
                }
            )
            if first is None:
                first = (report, recheck, ledger_path, llm)
        finally:
            if not keep_workdir:
                shutil.rmtree(workdir, ignore_errors=True)
    wall = time.monotonic() - started
    self_after = resource.getrusage(resource.RUSAGE_SELF)
    children_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    writes = TRAFFIC.writes - traffic_before.writes
    requests = TRAFFIC.requests - traffic_before.requests
    own = (self_after.ru_utime - self_before.ru_utime) + (
        self_after.ru_stime - self_before.ru_stime
    )
    provers = (children_after.ru_utime - children_before.ru_utime) + (
        children_after.ru_stime - children_before.ru_stime
    )
    if first is None:
        raise ValueError("no round ran")
    report, recheck, ledger_path, llm = first
    result = _result(report, index, recheck, wall, stamp, options, ledger_path)
    if llm["attempts"]:
        # the model strategies ran (--llm / ORCH_USE_LLM): what they asked and got
        result["llm"] = llm
    result["rounds"] = round_summaries
    result["executor"] = options.orch.executor
    result["workers"] = report.worker_stats
    result["nodes"] = report.nodes
    result["totals"]["worker_cpu_seconds"] = round(
        sum(float(w.get("cpu_seconds", 0.0)) for w in report.worker_stats), 3
    )
    result["settings"] = {f: getattr(options.orch, f) for f in options.orch.__slots__}
    result["cpu_trace"] = [
        {
            "t": s.t,
            "fraction": s.fraction,
            "smoothed": s.smoothed,
            "others": s.others,
            "limit": s.limit,
            "active": s.active,
            "rss_mb": s.rss_mb,
        }
        for s in governor.trace
    ]
    result["cpu_trace_summary"] = {
        "all": trace_summary(governor.trace),
        "after_10s": trace_summary(governor.trace, skip_first=10.0),
    }
    result["overhead"] = {
        "orchestrator_cpu_seconds": round(own, 3),
        "prover_cpu_seconds": round(provers, 3),
        "ratio": round(own / provers, 4) if provers else None,
        # the prover traffic of this process (the in-process executor's; a worker
        # process's is its own): the share moves with the provers' CPU, the CPU
        # per round trip does not
        "prover_writes": writes,
        "prover_requests": requests,
        "orchestrator_ms_per_write": round(1000 * own / writes, 3) if writes else None,
        # part of the orchestrator's own CPU: building and writing the live state
        "live_publisher_cpu_seconds": round(
            sum(float(r["live_publisher"].get("cpu_seconds", 0.0)) for r in round_summaries), 4
        ),
        "live_publishes": sum(
            int(r["live_publisher"].get("publishes", 0)) for r in round_summaries
        ),
    }
    result["learning"] = MINING.as_dict()
    # what the searches reused of earlier ones (refuted tactics skipped, closings rerun)
    result["search_memory"] = MEMORY_COUNTS.as_dict()
    result["prover_processes"] = PROVER_PROCESSES.as_dict()
    out = out_dir / f"{stamp}.json"
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return result, out


def _result(
    report: FillReport,
    index: dict[str, BankEntry],
    recheck: dict[str, Any],
    wall: float,
    stamp: str,
    options: FillOptions,
    ledger_path: Path,
) -> dict[str, Any]:
    remaining = {name for names in recheck["remaining_holes"].values() for name in names}
    rows: list[dict[str, Any]] = []
    for goal_report in report.goals:
        entry = index.get(goal_report.goal.name)
        proved = goal_report.outcome is Outcome.PROVED
        rows.append(
            {
                "id": goal_report.goal.name,
                "domain": entry.domain if entry else "unlabelled",
                "level": entry.level if entry else "unlabelled",
                # solved: proved by the pipeline AND no hole left for it in the recompiled file
                "solved": proved and goal_report.goal.name not in remaining,
                "outcome": goal_report.outcome.value,
                "strategy": goal_report.strategy if proved else "",
                "script": (
                    backend_for(goal_report.goal.file).join_script(goal_report.sentences)
                    if proved
                    else ""
                ),
                "tactics_tried": goal_report.tactics_tried,
                "cpu_seconds": round(goal_report.cpu_seconds, 4),
                "wall_seconds": round(goal_report.wall_seconds, 4),
            }
        )
    solved = sum(1 for r in rows if r["solved"])
    per_strategy: dict[str, dict[str, float]] = {}
    for r in rows:
        if r["solved"]:
            s = per_strategy.setdefault(r["strategy"], {"solved": 0, "cpu_seconds": 0.0})
            s["solved"] += 1
            s["cpu_seconds"] = round(s["cpu_seconds"] + r["cpu_seconds"], 3)
    verify_cpu = sum(f.verify_cpu_seconds for f in report.files)
    return {
        "kind": "orch-bank",
        "timestamp": stamp,
        "prover": "coq",
        "prover_version": report.prover_version,
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
        },
        "budget": {
            "cpu_seconds_per_goal": options.budget.cpu_seconds,
            "tactic_seconds": options.budget.tactic_seconds,
        },
        "totals": {
            "lemmas": len(rows),
            "solved": solved,
            "rate": round(solved / len(rows), 4) if rows else 0.0,
            "search_cpu_seconds": round(sum(r["cpu_seconds"] for r in rows), 3),
            "verify_cpu_seconds": round(verify_cpu, 3),
            "recheck_cpu_seconds": recheck["cpu_seconds"],
            "wall_seconds": round(wall, 3),
        },
        "by_domain": _group(rows, "domain"),
        "by_level": _group(rows, "level"),
        "per_strategy": per_strategy,
        "recheck": recheck,
        "ledger": str(ledger_path),
        "lemmas": rows,
    }


async def compare_executors(
    bank: Path,
    out_dir: Path,
    options: FillOptions,
    *,
    on_goal: Callable[[GoalReport], None] | None = None,
    on_files: Callable[[list[tuple[Path, int]]], None] | None = None,
) -> tuple[dict[str, Any], Path]:
    """Run the bank with the local executor, then with the Ray executor; compare them."""
    sides: dict[str, dict[str, Any]] = {}
    for executor in ("local", "ray"):
        orch = dataclasses.replace(options.orch, executor=executor)
        result, path = await run_bank(
            bank,
            out_dir,
            dataclasses.replace(options, orch=orch),
            on_goal=on_goal,
            on_files=on_files,
        )
        totals = result["totals"]
        overhead = result["overhead"]
        driver_cpu = overhead["orchestrator_cpu_seconds"] + overhead["prover_cpu_seconds"]
        sides[executor] = {
            "result": str(path),
            "solved": totals["solved"],
            "lemmas": totals["lemmas"],
            "wall_seconds": totals["wall_seconds"],
            "search_cpu_seconds": totals["search_cpu_seconds"],
            "driver_cpu_seconds": round(driver_cpu, 3),
            "worker_cpu_seconds": totals["worker_cpu_seconds"],
            "total_cpu_seconds": round(driver_cpu + totals["worker_cpu_seconds"], 3),
            "solved_ids": sorted(r["id"] for r in result["lemmas"] if r["solved"]),
        }
    comparison = {
        "kind": "orch-bank-executors",
        "timestamp": datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ"),
        "cpu_target": options.orch.cpu_target,
        "same_solved": sides["local"]["solved_ids"] == sides["ray"]["solved_ids"],
        **sides,
    }
    out = out_dir / f"{comparison['timestamp']}-executors.json"
    out.write_text(json.dumps(comparison, indent=2) + "\n", encoding="utf-8")
    return comparison, out
