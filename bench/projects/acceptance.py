"""Issue 32 acceptance on one Debian Coq library: unbuilt vs built fill, git status, rebuild.

usage: python bench/projects/acceptance.py LIB WORK [--budget 10] [--out FILE]

1. ``make_copies.py LIB WORK/unbuilt`` (3 files, 3 holes each, seed 0); the copy
   is cloned to ``WORK/built`` and built as its authors do
   (``coq_makefile -f _CoqProject -o CoqMakefile && make -j2``).
2. ``orch fill . --json`` in each, each with its own ledger (``--db``), under
   ``/usr/bin/time -v`` (user+sys of the whole process tree).
3. The proved goal sets, ``git status --porcelain`` after the unbuilt fill, and
   a rebuild from scratch of the unbuilt copy (``git clean -xfd``; the written
   proofs are tracked changes and stay) with the project's own build.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ORCH = str(ROOT / ".venv/bin/orch")

sys.path.insert(0, str(ROOT / "bench"))
from reaping import run_counting_orphans  # noqa: E402


def niced_cpu_seconds() -> float | None:
    """User CPU seconds the machine has spent in niced processes since boot
    (``/proc/stat``'s ``nice`` column; their system time is counted with everyone's).

    The command runs under ``nice``, and so does everything it starts, also the
    processes nobody reaps (CoqHammer's ATPs, killed at their time limit): on an
    otherwise quiet machine the difference over a run is the whole tree's user
    CPU, where ``/usr/bin/time`` (``getrusage``) sees only the reaped descendants.
    """
    try:
        fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()
    except OSError:
        return None
    return int(fields[2]) / os.sysconf("SC_CLK_TCK")


def timed(cmd: list[str], cwd: Path) -> dict:
    """Run ``cmd`` under ``/usr/bin/time -v`` and ``nice``: its exit code, output and CPU.

    ``cpu_s`` is what ``/usr/bin/time`` reports (the command and what its own
    processes reaped); ``cpu_s_tree`` adds the orphans its provers left
    (CoqHammer's ATPs), reaped here (:mod:`reaping`); where this process cannot
    take orphans, the niced CPU of the machine stands in (quiet machine assumed).
    """
    niced = niced_cpu_seconds()
    run = run_counting_orphans(["/usr/bin/time", "-v", "nice", "-n", "10", *cmd], cwd)
    niced_after = niced_cpu_seconds()
    user = float(re.search(r"User time \(seconds\): ([\d.]+)", run.stderr).group(1))
    sys_ = float(re.search(r"System time \(seconds\): ([\d.]+)", run.stderr).group(1))
    by_niced = (
        round(niced_after - niced + sys_, 2)
        if niced is not None and niced_after is not None
        else None
    )
    return {
        "cmd": cmd,
        "rc": run.returncode,
        "cpu_s": round(user + sys_, 2),
        "cpu_s_tree": round(run.tree_cpu_seconds, 2) if run.subreaper else by_niced,
        "cpu_s_tree_by": "reaped" if run.subreaper else "niced",
        "cpu_s_niced": by_niced,
        "orphan_cpu_s": {name: round(cpu, 2) for name, cpu in run.orphans.items()},
        "wall_s": round(run.wall_seconds, 2),
        "stdout": run.stdout,
        "stderr": run.stderr[-4000:],
    }


def make_build(cwd: Path) -> dict:
    subprocess.run(["coq_makefile", "-f", "_CoqProject", "-o", "CoqMakefile"], cwd=cwd, check=True)
    return timed(["make", "-f", "CoqMakefile", "-j2"], cwd)


def proved(report_text: str) -> tuple[list[str], dict]:
    """The goals ``orch fill --json`` proved (``file:lemma``), and the report."""
    try:
        report = json.loads(report_text)
    except json.JSONDecodeError:
        return [], {}
    return proved_in(report), report


def proved_in(report: dict) -> list[str]:
    return sorted(
        f"{Path(f['path']).name}:{g['name']}"
        for f in report.get("files", [])
        for g in f["goals"]
        if g["outcome"] == "proved"
    )


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("lib")
    ap.add_argument("work", type=Path)
    ap.add_argument("--budget", type=float, default=10.0)
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    work: Path = a.work
    work.mkdir(parents=True, exist_ok=False)
    unbuilt, built = work / "unbuilt", work / "built"
    subprocess.run(
        [sys.executable, str(ROOT / "bench/projects/make_copies.py"), a.lib, str(unbuilt)],
        check=True,
    )
    subprocess.run(["git", "clone", "-q", str(unbuilt), str(built)], check=True)
    result: dict = {
        "lib": a.lib,
        "budget": a.budget,
        "holes": json.loads((unbuilt / "holes.json").read_text()),
    }
    result["authors_build"] = make_build(built)
    result["authors_build"].pop("stdout")
    fill = [ORCH, "fill", ".", "--json", "--budget", str(a.budget)]
    runs = {}
    for name, cwd in (("built", built), ("unbuilt", unbuilt)):
        r = timed([*fill, "--db", str(work / f"{name}.sqlite")], cwd)
        r["proved"], r["report"] = proved(r.pop("stdout"))
        runs[name] = r
        print(name, r["rc"], r["cpu_s"], r["proved"], flush=True)
    result["fill"] = runs
    result["same_goals"] = runs["built"]["proved"] == runs["unbuilt"]["proved"]
    result["git_status_unbuilt"] = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=unbuilt,
        capture_output=True,
        text=True,
    ).stdout.splitlines()
    subprocess.run(["git", "clean", "-xfdq"], cwd=unbuilt, check=True)
    rebuild = make_build(unbuilt)
    rebuild.pop("stdout")
    result["rebuild_from_scratch"] = rebuild
    out = a.out or work / "acceptance.json"
    out.write_text(json.dumps(result, indent=1, default=str))
    print(
        json.dumps({k: v for k, v in result.items() if k not in ("fill", "holes")}, default=str)[
            :2000
        ]
    )
    print(
        "cpu built fill",
        runs["built"]["cpu_s"],
        "unbuilt fill",
        runs["unbuilt"]["cpu_s"],
        "authors build",
        result["authors_build"]["cpu_s"],
        "same",
        result["same_goals"],
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
