"""Issue 28 acceptance: ``orch fill`` on held-out library files against its peers and its members.

usage: python bench/dominance.py WORK [--seed 20261126] [--goals 250] [--lib Coquelicot]
                                 [--functor-lib Bignums]
                                 [--solo-sample 30] [--draw-only | --peers-only | --fill-only]

1. **Draw** (a rule fixed before any run): Coq stdlib files outside what
   CoqHammer loads (evaluating those after its load is not position-faithful),
   outside every file an earlier ``orch eval`` result or ``bench/tuning-files.txt``
   names, with 10 to 80 ``Qed`` proofs, shuffled with ``--seed``; the first 3
   that declare a functor (``Module X (P : T)`` or ``Module Type``) and then
   the first others until, with 2 files of the Debian library ``--lib`` (its
   files with 10 to 80 ``Qed`` proofs, shuffled with the same seed), there are
   at least 8 files and ``--goals`` goals. When fewer than 3 functor files with
   10 to 80 proofs are left (earlier draws took them), functor files with up to
   160 are drawn instead (same seed, same order), and when fewer than 3 of those
   are left, functor files with 5 to 160 proofs; when fewer than 3 of those are
   left, the functor files of the Debian library ``--functor-lib`` (default
   Bignums) with 10 to 80 proofs (same seed). A drawn file whose copy with every
   ``Qed`` proof ``Admitted`` does not compile is left out (and listed). A file of
   a Debian library is compiled, filled and given to the peers with its library's
   folder mapped as a project maps it (``-R <folder> <Lib>`` in a ``_CoqProject``
   beside the copies): such libraries load their own files by short names.
2. **fill**: ``bench/stdlib_fill.py`` on those copies with the product's command,
   ``orch fill --budget 10 --budget-cap 10 --cpu-target 1.0`` (process-tree CPU).
3. **peers**: ``orch eval`` on the original files, ``--no-portfolio --baseline
   hammer --baseline tactics --tactic-seconds 5``: ``Timeout 10 hammer.`` as its
   users run it, and the standard tactic list, 5 s each, at the same positions
   (what precedes a goal is in scope in both: proved there, admitted in the copy).
4. **solo**: ``orch eval`` with ``--baseline solo:NAME`` for each strategy of
   the lineup that can prove alone (micro, induction, search, hammer), on
   ``--solo-sample`` goals drawn (seeded) among those fill did not prove: a
   member's win there is a goal the portfolio lost.

Each stage leaves its output in WORK and is skipped when it is there already,
so an interrupted run goes on where it stopped (an ``orch eval`` stage from its
journal, ``--resume``). ``--peers-only`` runs the draw
and the peers alone (they do not depend on orch's code), so that a later run in
the same WORK measures only fill and the solo stage; ``--fill-only`` the other way
round (the solo stage runs right after fill, on the same code). The combined result goes to
``bench/results/<time>-dominance.json``.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import subprocess
import sys
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
RESULTS = BENCH / "results"
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(ROOT / "src"))

from draw_eval_files import (  # noqa: E402
    THEORIES,
    earlier_files,
    hammer_modules,
    logical_name,
    qed_count,
)

from proof_orchestrator.coq.holes import admit_proofs  # noqa: E402

ORCH = str(ROOT / ".venv/bin/orch")
PYTHON = str(ROOT / ".venv/bin/python")
USER_CONTRIB = THEORIES.parent / "user-contrib"
#: the most ``Qed`` proofs a drawn functor file may have once those with at most 80 are used
MAX_FUNCTOR_QED = 160
#: the fewest ``Qed`` proofs a drawn functor file may have once those with 10 to 160 are used
MIN_FUNCTOR_QED = 5
FUNCTOR = re.compile(r"(?m)^\s*(Module\s+Type\b|(Declare\s+)?Module\s+[\w']+\s*\(\s*[\w']+\s*:)")
SOLOS = ("micro", "induction", "search", "hammer")
#: the Debian library whose functor files are drawn once the stdlib's are all used
FUNCTOR_LIB = "Bignums"
FILL_OPTIONS = ["--budget", "10", "--budget-cap", "10", "--cpu-target", "1.0"]


def library_root(path: Path) -> Path | None:
    """The folder of the Debian library ``path`` belongs to (``user-contrib/<Lib>``), or None."""
    try:
        parts = path.resolve().relative_to(USER_CONTRIB).parts
    except ValueError:
        return None
    return USER_CONTRIB / parts[0] if len(parts) > 1 else None


def load_path(files: list[str]) -> list[list[str]]:
    """``[folder, Lib]`` for each Debian library among ``files``: what ``-R`` maps."""
    roots = sorted({str(r) for f in files if (r := library_root(Path(f))) is not None})
    return [[root, Path(root).name] for root in roots]


def coqproject(folder: Path, mapping: list[list[str]]) -> list[str]:
    """Write ``folder/_CoqProject`` mapping each library (when any); the ``coqc`` flags."""
    flags = [word for root, name in mapping for word in ("-R", root, name)]
    if mapping:
        folder.mkdir(parents=True, exist_ok=True)
        lines = [f"-R {root} {name}" for root, name in mapping]
        (folder / "_CoqProject").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return flags


def _copy_compiles(source: Path, scratch: Path) -> bool:
    text, _ = admit_proofs(source.read_text(encoding="utf-8"))
    scratch.mkdir(parents=True, exist_ok=True)
    copy = scratch / source.name
    copy.write_text(text, encoding="utf-8")
    flags = coqproject(scratch, load_path([str(source)]))
    run = subprocess.run(["coqc", *flags, copy.name], cwd=scratch, capture_output=True, timeout=600)
    return run.returncode == 0


def draw(seed: int, goals: int, lib: str, work: Path, functor_lib: str) -> dict[str, Any]:
    loaded = hammer_modules()
    if not loaded:
        raise SystemExit("could not list CoqHammer's modules (is coq-hammer installed?)")
    excluded = earlier_files() | {
        ln.strip() for ln in (BENCH / "tuning-files.txt").read_text().splitlines() if ln.strip()
    }
    candidates = sorted(
        p
        for p in THEORIES.rglob("*.v")
        if logical_name(p) not in loaded and str(p) not in excluded and qed_count(p) >= 10
    )
    stdlib = [p for p in candidates if qed_count(p) <= 80]
    large = [p for p in candidates if qed_count(p) <= MAX_FUNCTOR_QED]
    small = sorted(
        p
        for p in THEORIES.rglob("*.v")
        if logical_name(p) not in loaded
        and str(p) not in excluded
        and MIN_FUNCTOR_QED <= qed_count(p) <= MAX_FUNCTOR_QED
    )
    library_root = USER_CONTRIB / lib
    library = sorted(
        p for p in library_root.rglob("*.v") if str(p) not in excluded and 10 <= qed_count(p) <= 80
    )
    if len(library) < 2:
        raise SystemExit(f"{library_root}: fewer than 2 files with 10-80 Qed proofs (installed?)")
    random.Random(seed).shuffle(stdlib)
    random.Random(seed).shuffle(large)
    random.Random(seed).shuffle(small)
    random.Random(seed).shuffle(library)
    lib_functors = sorted(
        p
        for p in (USER_CONTRIB / functor_lib).rglob("*.v")
        if str(p) not in excluded and p not in library and 10 <= qed_count(p) <= 80
    )
    random.Random(seed).shuffle(lib_functors)
    scratch = work / "compile-check"
    left_out: list[str] = []

    def take(pool: list[Path], count: int, want: Any) -> list[Path]:
        chosen: list[Path] = []
        for path in pool:
            if len(chosen) == count:
                break
            if not want(path):
                continue
            if _copy_compiles(path, scratch / str(len(left_out) + len(chosen))):
                chosen.append(path)
            else:
                left_out.append(str(path))
        return chosen

    def is_functor(p: Path) -> bool:
        return bool(FUNCTOR.search(p.read_text(encoding="utf-8", errors="replace")))

    from_lib = take(library, 2, lambda p: True)
    if len(from_lib) < 2:
        raise SystemExit(f"{library_root}: fewer than 2 files whose copy compiles: {left_out}")
    # the first pool with 3 functor files left: 10-80 proofs, then up to 160, then from 5,
    # then the functor library's
    pool = next(
        (p for p in (stdlib, large, small) if sum(1 for f in p if is_functor(f)) >= 3),
        lib_functors,
    )
    functors = take(pool, 3, is_functor)
    chosen = [*functors, *from_lib]
    others = [p for p in stdlib if p not in functors and str(p) not in left_out]
    for path in others:
        if len(chosen) >= 8 and sum(qed_count(p) for p in chosen) >= goals:
            break
        if _copy_compiles(path, scratch / f"o{len(chosen)}"):
            chosen.append(path)
        else:
            left_out.append(str(path))
    return {
        "seed": seed,
        "rule": __doc__.split("1. ", 1)[1].split("2. ", 1)[0].strip(),
        "files": [str(p) for p in chosen],
        "functor_files": [str(p) for p in functors],
        "library_files": [str(p) for p in from_lib],
        "qed_proofs": sum(qed_count(p) for p in chosen),
        "load_path": load_path([str(p) for p in chosen]),
        "left_out_copy_does_not_compile": left_out,
    }


def _stage(path: Path, run: Any) -> Any:
    if path.exists():
        return json.loads(path.read_text())
    value = run()
    path.write_text(json.dumps(value, indent=1))
    return value


def _written(stdout: str) -> Path:
    return Path(re.findall(r"(?m)^(?:written|Result): (\S+)", stdout)[-1])


def run_fill(files: list[str], work: Path, mapping: list[list[str]]) -> dict[str, Any]:
    folder = work / "fill"
    folder.mkdir(parents=True, exist_ok=True)
    coqproject(folder, mapping)
    run = subprocess.run(
        [PYTHON, str(BENCH / "stdlib_fill.py"), str(folder), *files, "--", *FILL_OPTIONS],
        capture_output=True,
        text=True,
    )
    print(run.stdout[-3000:], run.stderr[-3000:], sep="\n", flush=True)
    result = json.loads(_written(run.stdout).read_text())
    report = json.loads((folder / "report.json").read_text() or "{}")
    # copies are named after their source (``parent_name.v`` on a clash): map back
    by_copy: dict[str, str] = {}
    for source in files:
        name = Path(source).name
        by_copy.setdefault(name, source)
        by_copy[f"{Path(source).parent.name}_{name}"] = source
    goals = []
    for file in report.get("files", []):
        source = by_copy[Path(file["path"]).name]
        seen: Counter[str] = Counter()
        for goal in sorted(file["goals"], key=lambda g: g["line"]):
            seen[goal["name"]] += 1
            goals.append(
                {
                    "key": f"{source}::{goal['name']}::{seen[goal['name']]}",
                    "outcome": goal["outcome"],
                    "strategy": goal["strategy"],
                    "cpu_seconds": goal["cpu_seconds"],
                    "message": goal["message"][:300],
                }
            )
    return {"summary": result, "goals": goals, "ledger": str(folder / "ledger.sqlite")}


def _originals(files: list[str], work: Path, mapping: list[list[str]]) -> dict[str, str]:
    """Files to give ``orch eval`` -> the drawn file each stands for.

    A Debian library's file is copied whole (its proofs kept) into ``WORK/originals``
    beside a ``_CoqProject`` that maps its library; a stdlib file is used in place.
    """
    folder = work / "originals"
    coqproject(folder, mapping)
    given: dict[str, str] = {}
    for source in map(Path, files):
        if library_root(source) is None:
            given[str(source)] = str(source)
            continue
        copy = folder / source.name
        if str(copy) in given:
            copy = folder / f"{source.parent.name}_{source.name}"
        copy.write_text(source.read_text(encoding="utf-8"), encoding="utf-8")
        given[str(copy)] = str(source)
    return given


def run_eval(
    files: list[str],
    work: Path,
    name: str,
    arms: list[str],
    extra: list[str],
    mapping: list[list[str]] | None = None,
) -> Any:
    out = work / name
    given = _originals(files, work, mapping or [])
    back = {**given, **{str(Path(k).resolve()): v for k, v in given.items()}}
    command = [ORCH, "eval", *given, "--no-portfolio", "--budget", "10", "--out", str(out)]
    for arm in arms:
        command += ["--baseline", arm]
    stopped = sorted(out.glob("*-eval.partial.jsonl"))
    if stopped:  # an earlier run of this stage stopped: go on from its journal
        command += ["--resume", str(stopped[-1])]
    run = subprocess.run([*command, *extra], capture_output=True, text=True)
    print(run.stdout[-3000:], run.stderr[-2000:], sep="\n", flush=True)
    if run.returncode != 0:
        raise SystemExit(f"orch eval failed ({run.returncode})")
    result = json.loads(sorted(out.glob("*-eval.json"))[-1].read_text())
    seen: Counter[tuple[str, str]] = Counter()
    for row in result["rows"]:
        row["file"] = back.get(row["file"], row["file"])
        seen[(row["file"], row["name"])] += 1
        row["key"] = f"{row['file']}::{row['name']}::{seen[(row['file'], row['name'])]}"
    return result


def hammer_in_fill(ledger: str) -> dict[str, Any]:
    """Hammer's attempts inside fill, from the fill run's ledger."""
    import sqlite3

    db = sqlite3.connect(ledger)
    rows = db.execute(
        "SELECT outcome, COUNT(*), SUM(cpu_seconds) FROM attempts WHERE strategy = 'hammer' "
        "GROUP BY outcome"
    ).fetchall()
    return {o: {"attempts": n, "cpu_seconds": round(c or 0.0, 1)} for o, n, c in rows}


#: how a hammer attempt inside fill that found a proof but could not rebuild it ends
FOUND_NOT_REBUILT = "found with Hammer.Tactics"


def hammer_rebuilds(ledger: str) -> dict[str, Any]:
    """How many of the proofs fill's hammer found were rebuilt without CoqHammer's tactics.

    Found: a candidate (rebuilt, then kept or refused by the whole-file check) or a
    failure that says it was "found with Hammer.Tactics" (no standard tactic rebuilt it).
    """
    import sqlite3

    db = sqlite3.connect(ledger)
    rows = db.execute(
        "SELECT outcome, message FROM attempts WHERE strategy = 'hammer' "
        "AND (outcome IN ('candidate', 'rejected') OR message LIKE ?)",
        (f"%{FOUND_NOT_REBUILT}%",),
    ).fetchall()
    rebuilt = sum(1 for outcome, _ in rows if outcome in ("candidate", "rejected"))
    return {
        "found": len(rows),
        "rebuilt": rebuilt,
        "rebuild_rate": round(rebuilt / max(len(rows), 1), 3),
    }


def why_missed(ledger: str, keys: list[str]) -> dict[str, list[str]]:
    """For each goal (``file::name::n``), how fill's hammer attempts on it ended."""
    import sqlite3

    db = sqlite3.connect(ledger)
    why: dict[str, list[str]] = {}
    for key in keys:
        path, name, _ = key.split("::")
        rows = db.execute(
            "SELECT a.outcome, a.budget_seconds, a.cpu_seconds, a.message FROM attempts a "
            "JOIN goals g ON g.id = a.goal_id WHERE a.strategy = 'hammer' AND g.name = ? "
            "AND g.file LIKE ? ORDER BY a.id",
            (name, f"%/{Path(path).name}"),
        ).fetchall()
        why[key] = [
            f"{o} (grant {b:.1f} s, {c:.1f} CPU s)"
            + (f": {m.split(' (no standard')[0][:160]}" if FOUND_NOT_REBUILT in m else "")
            for o, b, c, m in rows
        ] or ["no hammer attempt"]
    return why


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("work", type=Path)
    ap.add_argument("--seed", type=int, default=20261126)
    ap.add_argument("--goals", type=int, default=250)
    ap.add_argument("--lib", default="Coquelicot")
    ap.add_argument("--functor-lib", default=FUNCTOR_LIB)
    ap.add_argument("--solo-sample", type=int, default=30)
    ap.add_argument(
        "--peer-sample", type=int, help="run the peers on this many goals (seeded), not all"
    )
    ap.add_argument("--draw-only", action="store_true")
    ap.add_argument(
        "--fill-only",
        action="store_true",
        help="draw, fill and the solo stage only (what depends on orch's code); a later "
        "run in the same WORK adds the peers and the report",
    )
    ap.add_argument(
        "--peers-only",
        action="store_true",
        help="draw and run the peers only (they do not depend on orch's code); a later "
        "run in the same WORK reuses them and runs fill and the solo stage",
    )
    a = ap.parse_args()
    work = a.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    drawn = _stage(work / "draw.json", lambda: draw(a.seed, a.goals, a.lib, work, a.functor_lib))
    # draws before the load path was recorded ran every file in place, unmapped
    mapping: list[list[str]] = drawn.get("load_path", [])
    print(json.dumps(drawn, indent=1), flush=True)
    if a.draw_only:
        return 0
    files = drawn["files"]
    if a.peers_only:
        print("peers only: fill and the solo stage are left to a later run", flush=True)
    else:
        fill = _stage(work / "fill.json", lambda: run_fill(files, work, mapping))
        proved = {g["key"] for g in fill["goals"] if g["outcome"] == "proved"}
        unproved = sorted(g["key"] for g in fill["goals"] if g["outcome"] != "proved")
        sample = sorted(random.Random(a.seed).sample(unproved, min(a.solo_sample, len(unproved))))
        names = sorted({k.split("::")[1] for k in sample})
        solo: dict[str, Any] = {"rows": []}
        if names:
            solo = _stage(
                work / "solo.json",
                lambda: run_eval(
                    files,
                    work,
                    "solo",
                    [f"solo:{s}" for s in SOLOS],
                    [arg for n in names for arg in ("--only", n)],
                    mapping,
                ),
            )
        if a.fill_only:
            print("fill only: the peers and the report are left to a later run", flush=True)
            return 0
    peers = _stage(
        work / "peers.json",
        lambda: run_eval(
            files,
            work,
            "peers",
            ["hammer", "tactics"],
            ["--tactic-seconds", "5", "--seed", str(a.seed)]
            + (["--sample", str(a.peer_sample)] if a.peer_sample else []),
            mapping,
        ),
    )
    if a.peers_only:
        return 0
    return report(drawn, fill, peers, solo, proved, set(sample), work)


def report(
    drawn: dict[str, Any],
    fill: dict[str, Any],
    peers: dict[str, Any],
    solo: dict[str, Any],
    proved: set[str],
    sample: set[str],
    work: Path,
) -> int:
    in_fill = {g["key"] for g in fill["goals"]}
    rows = {r["key"]: r for r in peers["rows"] if r["key"] in in_fill}
    scored = set(rows)
    fill_cpu_of = {g["key"]: g["cpu_seconds"] for g in fill["goals"]}
    by_arm = {
        arm: {k for k, r in rows.items() if r["arms"].get(arm, {}).get("solved")}
        for arm in ("hammer", "tactics")
    }
    union = by_arm["hammer"] | by_arm["tactics"]
    fill_cpu = fill["summary"]["process_tree_cpu_seconds"]
    hammer_cpu = peers["arms"]["hammer"]["cpu_seconds"]
    solo_rows = [r for r in solo["rows"] if r["key"] in sample]
    lost = [
        {"goal": r["key"], "by": sorted(a for a, v in r["arms"].items() if v["solved"])}
        for r in solo_rows
        if any(v["solved"] for v in r["arms"].values())
    ]
    result = {
        "kind": "dominance",
        "timestamp": datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ"),
        "draw": drawn,
        "goals": len(scored),
        "goals_scored_by_peers": len(rows),
        "fill": {
            "proved": len(proved & scored),
            "process_tree_cpu_seconds": fill_cpu,
            "wall_seconds": fill["summary"]["wall_seconds"],
            "proved_by": fill["summary"]["proved_by"],
            "outcomes": fill["summary"]["outcomes"],
            "compiles": fill["summary"]["compiles"],
            "hammer_attempts": hammer_in_fill(fill["ledger"]),
            "hammer_rebuilds": hammer_rebuilds(fill["ledger"]),
        },
        "hammer": {"proved": len(by_arm["hammer"]), "cpu_seconds": hammer_cpu},
        "tactics": {
            "proved": len(by_arm["tactics"]),
            "cpu_seconds": peers["arms"]["tactics"]["cpu_seconds"],
        },
        "peers_union": len(union),
        "fill_over_union": round(len(proved & scored) / max(len(union), 1), 3),
        # the peers ran on the scored goals only; fill on every hole of the copies
        "fill_holes": len(in_fill),
        "fill_process_tree_cpu_per_hole": round(fill_cpu / max(len(in_fill), 1), 2),
        "fill_goal_cpu_on_scored": round(sum(fill_cpu_of[k] for k in scored), 1),
        "hammer_cpu_per_goal": round(hammer_cpu / max(len(rows), 1), 2),
        "fill_cpu_over_hammer_per_goal": round(
            (fill_cpu / max(len(in_fill), 1)) / max(hammer_cpu / max(len(rows), 1), 1e-9), 3
        ),
        "fill_of_hammer": round(len(proved & by_arm["hammer"]) / max(len(by_arm["hammer"]), 1), 3),
        "hammer_not_fill": sorted(by_arm["hammer"] - proved),
        "hammer_not_fill_why": why_missed(fill["ledger"], sorted(by_arm["hammer"] - proved)),
        "tactics_not_fill": {
            k: rows[k]["arms"]["tactics"]["script"] for k in sorted(by_arm["tactics"] - proved)
        },
        "fill_not_union": len((proved & set(rows)) - union),
        "unloadable_in_eval": peers["unloadable"],
        "solo": {
            "sample": sorted(sample),
            "goals_run": len(solo_rows),
            "arms": {
                arm: sum(1 for r in solo_rows if r["arms"].get(arm, {}).get("solved"))
                for arm in (f"solo:{s}" for s in SOLOS)
            },
            "portfolio_lost": lost,
        },
        "work": str(work),
    }
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{result['timestamp']}-dominance.json"
    path.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k not in ("draw",)}, indent=1))
    print(f"written: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
