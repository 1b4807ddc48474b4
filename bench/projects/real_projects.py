"""Issue 51: ``orch fill . --json`` (default settings) on fresh clones of the pristine copies.

usage: python bench/projects/real_projects.py [--orch PATH] [--pristine DIR] [--runs DIR]
                                              [--results DIR] [--tag baseline]
                                              [--dune-built] [LIB ...]

The pristine copies are made once by ``make_copies.py`` (see
``README-real-projects.md``) and never touched: for each LIB (default: every copy
in ``--pristine``) the copy is ``git clone``d into ``--runs/<tag>-<LIB>`` (a new
folder), and ``ORCH fill . --json`` runs there with no other option (the ledger is
the clone's own, ``.orch/``; ``ORCH_*`` variables are removed from the
environment), under ``/usr/bin/time -v`` (user+sys CPU of the whole process tree,
``nice -n 10``), one library after the other. With ``--dune-built`` (dune
projects only) the clone is built first with ``dune build`` (timed too).

Written to ``--results/<tag>-<LIB>.json`` (``<tag>-<LIB>-dunebuilt.json`` with
``--dune-built``): the orch binary and its checkout's commit, exit status, CPU and
wall seconds, the goals proved (``file:lemma``), how many of the one-sentence
holes (from ``<pristine>/<LIB>.record.json``) were proved and which, wins by
strategy, outcomes, hole-using proofs, ``git status`` after the fill, and the
whole JSON report.

To measure another checkout's code on the same draws:
``python bench/projects/real_projects.py --orch /work/main/.venv/bin/orch --tag new``,
then ``python bench/projects/real_projects.py --summary --tag new --against baseline``
(a markdown table: proved, one-sentence proved, exit status, CPU, the peers, the ratio).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from acceptance import proved, timed

ROOT = Path(__file__).resolve().parents[2]
ACC = Path("/work/scratch/acc")


def checkout_of(orch: Path) -> dict:
    """The commit of the checkout an orch binary runs (its package's source folder)."""
    python = orch.parent / "python"
    where = subprocess.run(
        [str(python), "-c", "import proof_orchestrator; print(proof_orchestrator.__file__)"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    info: dict = {"orch": str(orch), "package": where}
    if where:
        git = subprocess.run(
            ["git", "-C", str(Path(where).parent), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
        )
        dirty = subprocess.run(
            ["git", "-C", str(Path(where).parent), "status", "--porcelain", "--", "."],
            capture_output=True,
            text=True,
        )
        src = subprocess.run(
            ["git", "-C", str(Path(where).parent), "log", "-1", "--format=%H", "--", "."],
            capture_output=True,
            text=True,
        )
        info["commit"] = git.stdout.strip()
        # the last commit that changed the package's source (HEAD may add bench/ files only)
        info["src_commit"] = src.stdout.strip()
        info["src_dirty"] = bool(dirty.stdout.strip())
    return info


class LiveSampler(threading.Thread):
    """Reads the run's live row (goals done, total, the ETA) from the clone's ledger."""

    def __init__(self, ledger: Path, every: float = 5.0) -> None:
        super().__init__(daemon=True)
        self.ledger, self.every = ledger, every
        self.samples: list[dict] = []
        self.stop = threading.Event()
        self.started = time.monotonic()

    def run(self) -> None:
        while not self.stop.wait(self.every):
            if not self.ledger.exists():
                continue
            try:
                with sqlite3.connect(f"file:{self.ledger}?mode=ro", uri=True, timeout=2) as db:
                    row = db.execute("SELECT state FROM live_runs ORDER BY run_id DESC").fetchone()
            except sqlite3.Error:
                continue
            if row is None:
                continue
            state = json.loads(row[0])
            goals = state.get("goals", {})
            self.samples.append(
                {
                    "t": round(time.monotonic() - self.started, 1),
                    "done": goals.get("done"),
                    "total": goals.get("total"),
                    "eta_seconds": state.get("eta_seconds"),
                    "cpu_share": (state.get("cpu") or {}).get("measured"),
                }
            )


def eta_errors(samples: list[dict], wall: float) -> dict:
    """At 20, 50 and 80 % of the goals done: the ETA shown against the time really left."""
    out = {}
    for fraction in (0.2, 0.5, 0.8):
        at = next(
            (
                s
                for s in samples
                if s["total"] and s["done"] is not None and s["done"] >= fraction * s["total"]
            ),
            None,
        )
        if at is None or at["eta_seconds"] is None:
            out[f"{round(fraction * 100)}%"] = None
            continue
        left = max(wall - at["t"], 1e-9)
        out[f"{round(fraction * 100)}%"] = {
            "t": at["t"],
            "eta_seconds": at["eta_seconds"],
            "true_seconds_left": round(left, 1),
            "ratio": round(at["eta_seconds"] / left, 3),
        }
    return out


def strategy_shares(ledger: Path, after: int = 20) -> dict:
    """Per strategy, from the ledger's attempts: attempts, CPU, its share of the
    attempts' CPU, wins (candidates), and, for one with no win in its first ``after``
    attempts, its share of the attempts' CPU from its ``after``-th attempt on."""
    with sqlite3.connect(f"file:{ledger}?mode=ro", uri=True) as db:
        rows = db.execute(
            "SELECT id, strategy, outcome, cpu_seconds FROM attempts ORDER BY id"
        ).fetchall()
    total = sum(r[3] for r in rows) or 1e-9
    out: dict = {}
    for name in sorted({r[1] for r in rows}):
        mine = [r for r in rows if r[1] == name]
        entry = {
            "attempts": len(mine),
            "cpu_seconds": round(sum(r[3] for r in mine), 1),
            "cpu_share": round(sum(r[3] for r in mine) / total, 3),
            "wins": sum(1 for r in mine if r[2] in ("candidate", "proved")),
        }
        if len(mine) >= after and not any(r[2] in ("candidate", "proved") for r in mine[:after]):
            since = mine[after - 1][0]
            later = [r for r in rows if r[0] > since]
            own = sum(r[3] for r in later if r[1] == name)
            entry[f"cpu_share_after_{after}_attempts_without_a_win"] = round(
                own / (sum(r[3] for r in later) or 1e-9), 3
            )
        out[name] = entry
    return out


def one_lib(lib: str, a: argparse.Namespace, env: dict) -> dict:
    pristine = a.pristine / lib
    record = json.loads((a.pristine / f"{lib}.record.json").read_text())
    holes = {
        f"{Path(file).name}:{r['name']}": r for file, rs in record["by_file"].items() for r in rs
    }
    one_sentence = sorted(k for k, r in holes.items() if r["one_sentence"])
    suffix = "-dunebuilt" if a.dune_built else ""
    clone = a.runs / f"{a.tag}-{lib}{suffix}"
    if clone.exists():
        sys.exit(f"{clone} exists: give another --tag or remove it")
    clone.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "clone", "-q", str(pristine), str(clone)], check=True)
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=clone, capture_output=True, text=True
    ).stdout.strip()
    result: dict = {
        "lib": lib,
        "layout": record["layout"],
        "pristine": str(pristine),
        "pristine_head": head,
        "clone": str(clone),
        "rule": record["rule"],
        "files": record["files"],
        "holes": len(holes),
        "one_sentence_holes": one_sentence,
        **checkout_of(a.orch),
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    if a.dune_built:
        build = timed_env(["dune", "build"], clone, env)
        build.pop("stdout")
        result["dune_build"] = build
        print(lib, "dune build", build["rc"], build["cpu_s"], flush=True)
    sampler = LiveSampler(clone / ".orch" / "ledger.sqlite")
    sampler.start()
    run = timed_env([str(a.orch), "fill", ".", "--json", *a.fill_arg], clone, env)
    sampler.stop.set()
    goals, report = proved(run.pop("stdout"))
    cores = os.cpu_count() or 1
    target = float(a.cpu_target)
    result["cpu_over_wall_of_target"] = round(run["cpu_s"] / run["wall_s"] / cores / target, 3)
    if run.get("cpu_s_tree") is not None:
        # with the orphans (CoqHammer's ATPs) reaped by this harness (acceptance.timed)
        result["cpu_tree_by"] = run.get("cpu_s_tree_by")
        result["orphan_cpu_s"] = run.get("orphan_cpu_s")
        result["cpu_tree_over_wall_of_target"] = round(
            run["cpu_s_tree"] / run["wall_s"] / cores / target, 3
        )
    result["eta"] = eta_errors(sampler.samples, run["wall_s"])
    result["live_samples"] = sampler.samples
    ledger = clone / ".orch" / "ledger.sqlite"
    result["strategies"] = strategy_shares(ledger) if ledger.exists() else {}
    result["fill"] = {k: v for k, v in run.items() if k != "cmd"}
    result["fill"]["cmd"] = run["cmd"]
    result["rc"] = run["rc"]
    result["cpu_s"] = run["cpu_s"]
    result["wall_s"] = run["wall_s"]
    result["proved"] = goals
    result["proved_count"] = len(goals)
    result["proved_not_holes"] = [g for g in goals if g not in holes]
    result["one_sentence_proved"] = [g for g in goals if g in one_sentence]
    all_goals = [g for f in report.get("files", []) for g in f["goals"]]
    result["wins"] = dict(
        collections.Counter(g["strategy"] for g in all_goals if g["outcome"] == "proved")
    )
    result["outcomes"] = dict(collections.Counter(g["outcome"] for g in all_goals))
    result["uses_holes"] = [
        f"{Path(f['path']).name}:{g['name']}"
        for f in report.get("files", [])
        for g in f["goals"]
        if g["outcome"] == "proved" and g["uses_holes"]
    ]
    result["file_status"] = {Path(f["path"]).name: f["status"] for f in report.get("files", [])}
    result["git_status"] = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=clone,
        capture_output=True,
        text=True,
    ).stdout.splitlines()
    result["report"] = report
    return result


def timed_env(cmd: list[str], cwd: Path, env: dict) -> dict:
    """``acceptance.timed`` with an environment of its own."""
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        return timed(cmd, cwd)
    finally:
        os.environ.clear()
        os.environ.update(saved)


def summary(results: Path, tag: str, against: str | None) -> str:
    """A markdown table of ``<tag>-<LIB>.json`` (and the peers' files, and ``against``'s)."""
    rows = [
        "| library | holes | one-sentence | proved | one-sentence proved | rc | CPU s | "
        "hammer | tactics |" + (f" {against} proved | ratio |" if against else ""),
        "|---|---|---|---|---|---|---|---|---|" + ("---|---|" if against else ""),
    ]
    for path in sorted(results.glob(f"{tag}-*.json")):
        r = json.loads(path.read_text())
        lib = path.stem[len(tag) + 1 :]
        peers = results / f"peers-{r['lib']}.json"
        arms = json.loads(peers.read_text())["summary"] if peers.exists() else {}
        cells = [
            lib,
            r["holes"],
            len(r["one_sentence_holes"]),
            r["proved_count"],
            len(r["one_sentence_proved"]),
            r["rc"],
            r["cpu_s"],
            arms.get("hammer", {}).get("solved", "-"),
            arms.get("tactics", {}).get("solved", "-"),
        ]
        if against:
            other = results / f"{against}-{lib}.json"
            base = json.loads(other.read_text())["proved_count"] if other.exists() else None
            cells += [
                "-" if base is None else base,
                "-" if not base else f"{r['proved_count'] / base:.2f}",
            ]
        rows.append("| " + " | ".join(map(str, cells)) + " |")
    return "\n".join(rows)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("libs", nargs="*")
    ap.add_argument("--orch", type=Path, default=ROOT / ".venv/bin/orch")
    ap.add_argument("--pristine", type=Path, default=ACC / "pristine")
    ap.add_argument("--runs", type=Path, default=ACC / "runs")
    ap.add_argument("--results", type=Path, default=ACC / "results")
    ap.add_argument("--tag", default="baseline")
    ap.add_argument("--dune-built", action="store_true", help="dune build the clone first")
    ap.add_argument(
        "--fill-arg",
        action="append",
        default=[],
        help="an option passed to orch fill (repeat it: --fill-arg=--budget --fill-arg=160)",
    )
    ap.add_argument(
        "--cpu-target",
        default="0.5",
        help="the CPU target the fill runs at (pass it with --fill-arg too when not 0.5), "
        "for the CPU-over-wall figure",
    )
    ap.add_argument("--summary", action="store_true", help="print the tag's table, run nothing")
    ap.add_argument("--against", help="with --summary: the tag to compare with (baseline)")
    a = ap.parse_args()
    if a.summary:
        print(summary(a.results, a.tag, a.against))
        return 0
    a.orch = a.orch.absolute()
    libs = a.libs or sorted(p.name for p in a.pristine.iterdir() if (p / ".git").is_dir())
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORCH_")}
    a.results.mkdir(parents=True, exist_ok=True)
    for lib in libs:
        if a.dune_built and not (a.pristine / lib / "dune-project").exists():
            print(lib, "is not a dune project: skipped", flush=True)
            continue
        result = one_lib(lib, a, env)
        suffix = "-dunebuilt" if a.dune_built else ""
        out = a.results / f"{a.tag}-{lib}{suffix}.json"
        out.write_text(json.dumps(result, indent=1, default=str))
        print(
            f"{lib}: rc {result['rc']}, proved {result['proved_count']}/{result['holes']}, "
            f"one-sentence {len(result['one_sentence_proved'])}/"
            f"{len(result['one_sentence_holes'])}, CPU {result['cpu_s']} s, "
            f"wall {result['wall_s']} s, wins {result['wins']}, CPU/wall of target "
            f"{result['cpu_over_wall_of_target']} "
            f"(process tree with orphans: {result.get('cpu_tree_over_wall_of_target')}), "
            f"ETA {result['eta']} -> {out}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
