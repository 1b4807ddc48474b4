"""The body of ``bench/stdlib_fill.sh``: hide the Qed proofs, run ``orch fill``, measure.

usage: python bench/stdlib_fill.py WORKDIR FILE.v... -- [orch fill options]
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psutil

from proof_orchestrator.coq.holes import admit_proofs
from proof_orchestrator.coq.project import load_coqproject

RESULTS = Path(__file__).resolve().parent / "results"

sys.path.insert(0, str(Path(__file__).resolve().parent))
from reaping import ORPHAN_CPU, become_subreaper, reap_orphans  # noqa: E402


def _machine_busy() -> tuple[float, float]:
    """(busy, total) jiffies of the whole machine so far, from /proc/stat."""
    fields = [float(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0.0)
    return sum(fields) - idle, sum(fields)


class MachineSampler(threading.Thread):
    """The whole machine's busy fraction each second (independent of orch's own figures)."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.samples: list[float] = []
        self.stop = threading.Event()

    def run(self) -> None:
        last = _machine_busy()
        while not self.stop.wait(1.0):
            now = _machine_busy()
            total = now[1] - last[1]
            if total > 0:
                self.samples.append((now[0] - last[0]) / total)
            last = now


def _tally(fill: dict[str, Any]) -> tuple[dict[str, int], dict[str, int], dict[str, int]]:
    """Outcomes and winning strategies of the scored holes, and the unscored holes per copy.

    A copy that does not compile has its holes reported as ``error`` by ``orch
    fill`` ("file does not compile"): they are counted apart, not as prover errors.
    """
    outcomes: dict[str, int] = {}
    strategies: dict[str, int] = {}
    unscored: dict[str, int] = {}
    for file in fill.get("files", []):
        if file.get("status") == "does_not_compile":
            unscored[Path(file["path"]).name] = len(file["goals"])
            continue
        for goal in file["goals"]:
            outcomes[goal["outcome"]] = outcomes.get(goal["outcome"], 0) + 1
            if goal["outcome"] == "proved":
                strategies[goal["strategy"]] = strategies.get(goal["strategy"], 0) + 1
    return outcomes, strategies, unscored


def main(argv: list[str]) -> int:
    work = Path(argv[0])
    split = argv.index("--") if "--" in argv else len(argv)
    sources = [Path(a) for a in argv[1:split]]
    options = argv[split + 1 :]
    work.mkdir(parents=True, exist_ok=True)
    copies: list[Path] = []
    hidden = 0
    for source in sources:
        text, proofs = admit_proofs(source.read_text(encoding="utf-8"))
        copy = work / source.name
        if copy.exists():
            copy = work / f"{source.parent.name}_{source.name}"
        copy.write_text(text, encoding="utf-8")
        copies.append(copy)
        hidden += len(proofs)
        print(f"{len(proofs)} Qed proofs hidden in {copy}")
    ledger = work / "ledger.sqlite"
    report = work / "report.json"
    orch = Path(sys.executable).with_name("orch")
    command = [str(orch), "fill", *map(str, copies), "--db", str(ledger), "--json", *options]
    print("running:", " ".join(command), flush=True)
    sampler = MachineSampler()
    # orphans (CoqHammer's ATPs that coqtop never reaps) come to this process, which
    # reaps them: their CPU is then in RUSAGE_CHILDREN like the rest of the tree
    subreaper = become_subreaper()
    busy0 = _machine_busy()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    sampler.start()
    own = 0.0  # the orch process's own CPU (not its children's), read until it exits
    with report.open("w", encoding="utf-8") as out:
        process = subprocess.Popen(command, stdout=out)
        watched = psutil.Process(process.pid)
        while process.poll() is None:
            reap_orphans(process.pid)
            with contextlib.suppress(psutil.Error):
                times = watched.cpu_times()
                own = times.user + times.system
            time.sleep(0.5)
    finished = process
    deadline = time.monotonic() + 30
    while reap_orphans(None) and time.monotonic() < deadline:
        time.sleep(0.2)
    wall = time.monotonic() - started
    sampler.stop.set()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    busy1 = _machine_busy()
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    fill = json.loads(report.read_text(encoding="utf-8") or "{}")
    remaining = sum(c.read_text(encoding="utf-8").count("Admitted.") for c in copies)
    # the copies' folder may be a project (a _CoqProject mapping a library): its flags
    project = work / "_CoqProject"
    flags = list(load_coqproject(project).flags) if project.is_file() else []
    compiles: dict[str, bool] = {}
    compile_cpu: dict[str, float] = {}
    for c in copies:
        ran_before = resource.getrusage(resource.RUSAGE_CHILDREN)
        compiles[c.name] = (
            subprocess.run(
                ["coqc", *flags, c.name], cwd=work, capture_output=True, check=False
            ).returncode
            == 0
        )
        ran = resource.getrusage(resource.RUSAGE_CHILDREN)
        compile_cpu[c.name] = (ran.ru_utime - ran_before.ru_utime) + (
            ran.ru_stime - ran_before.ru_stime
        )
    outcomes, strategies, unscored = _tally(fill)
    files = fill.get("files", [])
    attempts = sum(g.get("cpu_seconds", 0.0) for f in files for g in f.get("goals", []))
    checks = sum(f.get("verify_cpu_seconds", 0.0) for f in files)
    build = (fill.get("build") or {}).get("cpu_seconds", 0.0)
    learning = (fill.get("learning") or {}).get("cpu_seconds", 0.0)
    processes = fill.get("prover_processes") or {}
    starts = processes.get("start_cpu_seconds", 0.0)
    loads = processes.get("load_cpu_seconds", 0.0)
    # what the prover processes used besides their starts, loads and attempts: queries
    # between attempts, the end of a cancelled request, ATPs a timeout left running
    sessions_rest = max(
        processes.get("closed_lifetime_cpu_seconds", 0.0) - starts - loads - attempts, 0.0
    )
    # where the process tree's CPU went; "other" is what none of these saw: rebuilds
    # after writes, CoqHammer's ATPs that outlived their coqtop, what the clock missed
    cpu_split = {
        "attempts": round(attempts, 1),
        "checks": round(checks, 1),
        "build": round(build, 1),
        "learning": round(learning, 1),
        "orchestrator_own": round(own, 1),
        "session_starts": round(starts, 1),
        "session_loads": round(loads, 1),
        "sessions_rest": round(sessions_rest, 1),
        "other": round(
            cpu - attempts - checks - build - learning - own - starts - loads - sessions_rest, 1
        ),
    }
    # each file's checks in the fill (their CPU and how many) against one compile of the
    # filled file (issue 54: at most twice one compile)
    checks_per_file = {
        Path(f["path"]).name: {
            "check_cpu_seconds": round(f.get("verify_cpu_seconds", 0.0), 2),
            "compiles": f.get("verify_compiles"),
            "one_compile_cpu_seconds": round(compile_cpu.get(Path(f["path"]).name, 0.0), 2),
            "ratio": round(
                f.get("verify_cpu_seconds", 0.0)
                / max(compile_cpu.get(Path(f["path"]).name, 0.0), 1e-9),
                2,
            ),
        }
        for f in files
    }
    samples = sorted(sampler.samples)
    result = {
        "kind": "stdlib-fill",
        "timestamp": datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ"),
        "files": [str(s) for s in sources],
        "options": options,
        "exit_code": finished.returncode,
        "holes": hidden,
        "proved": hidden - remaining,
        "outcomes": outcomes,
        "proved_by": strategies,
        # holes of a copy that does not compile once its proofs are `Admitted.` (an
        # `Admitted` lemma in a section is generalized differently; a module
        # type's check can fail): no strategy ran on them, and no prover erred
        "copies_that_do_not_compile": unscored,
        "prover_errors": outcomes.get("error", 0),
        "wall_seconds": round(wall, 1),
        "process_tree_cpu_seconds": round(cpu, 1),
        "process_tree_cpu_split": cpu_split,
        "process_tree_cpu_per_goal": round(cpu / max(hidden, 1), 2),
        "machine_busy_fraction": round((busy1[0] - busy0[0]) / max(busy1[1] - busy0[1], 1e-9), 3),
        "machine_busy_p10_p50_p90": [
            round(samples[int(q * (len(samples) - 1))], 3) for q in (0.1, 0.5, 0.9)
        ]
        if samples
        else [],
        "cores": os.cpu_count(),
        "orphans_reaped_here": subreaper,
        "orphan_cpu_by_command": {k: round(v, 1) for k, v in sorted(ORPHAN_CPU.items())},
        "compiles": compiles,
        "checks_per_file": checks_per_file,
        "work": str(work),
    }
    RESULTS.mkdir(exist_ok=True)
    out_path = RESULTS / f"{result['timestamp']}-stdlib-fill.json"
    out_path.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in result.items() if k != "options"}, indent=2))
    print(f"written: {out_path}")
    return 0 if finished.returncode == 0 and all(compiles.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
