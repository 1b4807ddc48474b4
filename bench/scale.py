"""How cost grows with the number of holes (issue 18, item 4).

    .venv/bin/python bench/scale.py                  # 1k, 5k and 20k holes
    .venv/bin/python bench/scale.py --sizes 200,1000 --sample 60

For each size, a synthetic Coq project is generated (files of 10-50
declarations, every one a hole, a mix of easy and unprovable statements, and
a fifth of the holes whose admitted bodies mention an earlier lemma, so the
queue's dependents count has work to do). Each size then runs in a fresh
process (so that its peak memory is its own) and measures, on the full size:

* the scan (``collect_files`` + ``pipeline.scan``: read and find every hole);
* queueing: every hole through the same calls ``orch fill`` makes before the
  first attempt (``upsert_goal``, ``history``, ``budgets_for``,
  ``GoalRun.enqueue``), then popping the whole queue;
* the ledger filled through its own API (``start_run``, ``record_attempt``,
  ``record_proof``, ``finish_run``, the calls ``orch fill`` makes), and its size;
* the orchestrator's memory: the process's peak RSS after scanning and queueing
  every hole (its RSS after imports alone is given beside it);
* the response times of the real dashboard (``orch dashboard`` on a free
  loopback port): ``/api/goals`` (one page of 100, at the start and in the
  middle), ``/api/stats``, the overview page, and of ``orch stats``.

Goals per second with ``--profile 0`` need real coqtop on real goals; a full
fill of 20k holes would take hours on two shared cores, so they are measured
by ``orch fill --profile 0 --dry-run`` on a fixed sample of ``--sample`` holes
(with ``--budget`` CPU seconds per goal and strategy, 1 by default, and no revisit)
generated the same way (the same mix), against a copy of each size's ledger
(so a ledger that grows with the project is part of the measure).

The results go to ``bench/results/<timestamp>-scale.json`` and a table is printed.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ORCH = Path(sys.executable).with_name("orch")

#: (template, provable): ``{k}`` makes every statement (and fingerprint) distinct
EASY = (
    "forall n : nat, S n + {k} = S (n + {k})",
    "{k} + 0 = {k}",
    "forall b : bool, negb (negb b) = b /\\ {k} = {k}",
    "forall (A : Type) (l : list A), length (l ++ nil) = length l + 0 * {k}",
    "forall n : nat, n + {k} = n + {k}",
)
HARD = (
    "forall n : nat, n + {k} = S n",
    "forall b : bool, b = negb b /\\ {k} = {k}",
    "forall (l : list nat), length l = {k}",
)


def generate(
    root: Path,
    holes: int,
    *,
    seed: int = 0,
    start: int = 0,
    per_file: tuple[int, int] = (10, 50),
) -> list[Path]:
    """Write a project of exactly ``holes`` holes under ``root``; the files written.

    Files hold 10-50 declarations (``per_file``); 60 % are easy (closed by the quick
    tactics), 40 % false. One hole in five admits a body that uses an earlier
    lemma of its file (a dependent). ``start`` offsets the statements so that
    two projects share no fingerprint.
    """
    rng = random.Random(seed)
    theories = root / "theories"
    theories.mkdir(parents=True, exist_ok=True)
    (root / "_CoqProject").write_text("-R theories Scale\n", encoding="utf-8")
    files: list[Path] = []
    k = start
    while k - start < holes:
        count = min(rng.randint(*per_file), holes - (k - start))
        names: list[str] = []
        lines = [f"(* synthetic file {len(files)}: {count} holes *)", ""]
        for _ in range(count):
            easy = rng.random() < 0.6
            template = rng.choice(EASY if easy else HARD)
            name = f"{'e' if easy else 'u'}{k}"
            body = "Proof.\nAdmitted."
            if names and rng.random() < 0.2:
                used = rng.choice(names)
                body = f"Proof.\n  pose proof {used} as H.\n  admit.\nAdmitted."
            lines += [f"Lemma {name} : {template.format(k=k)}.", body, ""]
            names.append(name)
            k += 1
        path = theories / f"F{len(files):05d}.v"
        path.write_text("\n".join(lines), encoding="utf-8")
        files.append(path)
    return files


def _rss_mb() -> float:
    with open("/proc/self/status", encoding="utf-8") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


#: CPU seconds of the last :func:`_timed` call (this process only: steady under load)
_LAST_CPU = [0.0]


def _timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    """``fn()`` and its wall seconds; its CPU seconds are left in ``_LAST_CPU``."""
    started, cpu = time.perf_counter(), time.process_time()
    value = fn()
    _LAST_CPU[0] = time.process_time() - cpu
    return value, time.perf_counter() - started


# -- one size, in its own process ----------------------------------------------------


def measure_size(root: Path, db: Path) -> dict[str, Any]:
    """Scan, queue, fill the ledger and measure it (runs in a fresh process)."""
    import_rss = _rss_mb()
    from proof_orchestrator.coq.project import project_for
    from proof_orchestrator.goals import Outcome
    from proof_orchestrator.ledger import Ledger
    from proof_orchestrator.run.pipeline import FillOptions, FillReport, collect_files, scan
    from proof_orchestrator.run.reports import FileReport, FileStatus, GoalReport
    from proof_orchestrator.run.worker import (
        FileState,
        GoalItem,
        GoalRun,
        ProjectTools,
        default_strategies,
    )
    from proof_orchestrator.scheduler.governor import CpuGovernor

    import_rss = max(import_rss, _rss_mb())
    result: dict[str, Any] = {"rss_after_imports_mb": round(import_rss, 1)}

    scanned, seconds = _timed(lambda: scan(collect_files([root])))
    holes = sum(len(h) for _, _, h, _ in scanned)
    result.update(files=len(scanned), holes=holes, scan_seconds=round(seconds, 3))
    result["scan_cpu_seconds"] = round(_LAST_CPU[0], 3)

    ledger = Ledger(f"sqlite:///{db}")
    options = FillOptions()
    governor = CpuGovernor(0.5, 3)
    report = FillReport()
    report.run_id = ledger.start_run("fill", {"bench": "scale"}, "synthetic")
    run = GoalRun(ledger, options, default_strategies(ledger, 0), report, governor, None)
    tools = ProjectTools(project_for(scanned[0][0]), options, governor)
    items: list[GoalItem] = []

    def plan() -> None:
        for path, text, file_holes, _ in scanned:
            assert text is not None
            file_report = FileReport(path, FileStatus.INTERRUPTED, original_text=text)
            state = FileState(path, text, tools, file_report, pending=len(file_holes))
            for hole in file_holes:
                goal_id = ledger.upsert_goal(hole.goal)
                failures, first_seen, failed = ledger.history(hole.goal.fingerprint)
                budgets = run.budgets_for(failed, hole.goal.language)
                item = GoalItem(
                    hole, state, goal_id, GoalReport(hole.goal, Outcome.FAILED), budgets
                )
                items.append(item)
                run.enqueue(item, failures, first_seen)

    _, seconds = _timed(plan)
    result["plan_seconds"] = round(seconds, 3)
    result["plan_holes_per_second"] = round(holes / seconds, 1)
    result["plan_cpu_seconds"] = round(_LAST_CPU[0], 3)
    # the queue alone: every item pushed again (priority with its dependents count), all popped
    while len(run.queue):
        run.queue.pop()

    def queue_ops() -> None:
        for item in items:
            run.enqueue(item)
        while len(run.queue):
            run.queue.pop()

    _, seconds = _timed(queue_ops)
    result["queue_ops_per_second"] = round(2 * len(items) / seconds, 1)
    result["queue_ops_per_cpu_second"] = round(2 * len(items) / max(_LAST_CPU[0], 1e-9), 1)

    # one file of holes/10 declarations: the dependents count must stay linear in its size
    big = root.parent / f"{root.name}-one-file"
    big_holes = max(10, holes // 10)
    (big_file,) = generate(big, big_holes, seed=7, start=50_000_000, per_file=(big_holes,) * 2)
    ((_, big_text, big_scan, _),) = scan([big_file])
    assert big_text is not None
    big_state = FileState(
        big_file, big_text, tools, FileReport(big_file, FileStatus.INTERRUPTED), len(big_scan)
    )
    big_items = [
        GoalItem(hole, big_state, 0, GoalReport(hole.goal, Outcome.FAILED), {}) for hole in big_scan
    ]

    def one_file() -> None:
        for item in big_items:
            run.enqueue(item)
        while len(run.queue):
            run.queue.pop()

    _, seconds = _timed(one_file)
    result["one_file_holes"] = len(big_items)
    result["one_file_queue_seconds"] = round(seconds, 4)
    result["one_file_queue_cpu_seconds"] = round(_LAST_CPU[0], 4)
    shutil.rmtree(big)
    result["rss_after_scan_and_queue_mb"] = round(_rss_mb(), 1)
    result["peak_rss_after_scan_and_queue_mb"] = round(_peak_mb(), 1)

    def record() -> int:
        writes = 0
        assert report.run_id is not None
        for item in items:
            goal = item.hole.goal
            easy = goal.name.startswith("e")
            run_id, goal_id, fingerprint = report.run_id, item.goal_id, goal.fingerprint
            if easy:
                ledger.record_attempt(
                    strategy="micro",
                    outcome=Outcome.CANDIDATE,
                    tactic="intros; simpl; auto.",
                    tactics_tried=7,
                    cpu_seconds=0.05,
                    wall_seconds=0.06,
                    run_id=run_id,
                    goal_id=goal_id,
                    fingerprint=fingerprint,
                    budget_seconds=10.0,
                    prover_version="synthetic",
                )
                ledger.record_proof(
                    run_id=report.run_id,
                    goal_id=item.goal_id,
                    fingerprint=goal.fingerprint,
                    sentences=("intros; simpl; auto.",),
                    strategy="micro",
                    prover_version="synthetic",
                    diff=f"-Admitted.\n+  intros; simpl; auto.\n+Qed.\n{goal.name}",
                    written=True,
                )
                writes += 2
            else:
                for strategy in ("micro", "induction", "cached"):
                    ledger.record_attempt(
                        strategy=strategy,
                        outcome=Outcome.FAILED,
                        tactic="intros; congruence.",
                        tactics_tried=20,
                        cpu_seconds=0.4,
                        wall_seconds=0.5,
                        message="no script closed the goal",
                        run_id=run_id,
                        goal_id=goal_id,
                        fingerprint=fingerprint,
                        budget_seconds=10.0,
                        prover_version="synthetic",
                    )
                ledger.set_goal_status(item.goal_id, "failed")
                writes += 4
        ledger.finish_run(report.run_id, "finished", {"bench": "scale", "holes": holes})
        return writes

    writes, seconds = _timed(record)
    result["ledger_writes"] = writes
    result["ledger_writes_per_second"] = round(writes / seconds, 1)
    result["ledger_writes_cpu_seconds"] = round(_LAST_CPU[0], 3)
    _, seconds = _timed(ledger.stats)
    result["ledger_stats_in_process_seconds"] = round(seconds, 4)
    ledger.close()  # checkpoints the WAL into the file
    size = sum(p.stat().st_size for p in db.parent.glob(db.name + "*") if p.is_file())
    result["ledger_bytes"] = size
    result["peak_rss_mb"] = round(_peak_mb(), 1)
    return result


# -- the dashboard and orch stats, from outside ---------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(url: str) -> tuple[int, float, int]:
    started = time.perf_counter()
    with urllib.request.urlopen(url, timeout=60.0) as response:
        body = response.read()
        return int(response.status), time.perf_counter() - started, len(body)


def measure_server(root: Path, db: Path, holes: int, repeats: int) -> dict[str, Any]:
    """Response times of the real dashboard and of ``orch stats`` on the ledger ``db``."""
    port = _free_port()
    server = subprocess.Popen(
        [str(ORCH), "dashboard", str(root), "--db", str(db), "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    timings: dict[str, Any] = {}
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if _get(base + "/api/health")[0] == 200:
                    break
            except OSError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the dashboard did not start: {server.stderr}")
            time.sleep(0.2)
        middle = max(0, holes // 2)
        routes = {
            "api_goals_page": "/api/goals?limit=100",
            "api_goals_middle_page": f"/api/goals?limit=100&offset={middle}",
            "api_stats": "/api/stats",
            "overview": "/",
        }
        for key, route in routes.items():
            _get(base + route)  # warm
            samples = []
            for _ in range(repeats):
                status, seconds, size = _get(base + route)
                if status != 200:
                    raise RuntimeError(f"{route} answered {status}")
                samples.append(seconds)
            timings[key + "_seconds"] = round(statistics.median(samples), 4)
            timings[key + "_max_seconds"] = round(max(samples), 4)
            timings[key + "_bytes"] = size
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        subprocess.run(
            [str(ORCH), "stats", str(root), "--db", str(db)],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        samples.append(time.perf_counter() - started)
    timings["orch_stats_seconds"] = round(statistics.median(samples), 4)
    return timings


def measure_fill(sample: Path, db: Path, budget: float | None) -> dict[str, Any]:
    """``orch fill --profile 0 --dry-run`` on the sample, against the ledger ``db``.

    With ``budget``, it is both the first CPU budget and the cap (no revisit
    with a doubled budget): the unprovable goals then cost ``budget`` per
    strategy instead of 10 s, then 20 s.
    """
    command = [str(ORCH), "fill", str(sample), "--profile", "0", "--dry-run", "--json"]
    if budget is not None:
        command += ["--budget", str(budget), "--budget-cap", str(budget)]
    started = time.perf_counter()
    done = subprocess.run(
        [*command, "--db", str(db)],
        check=False,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"orch fill failed ({done.returncode}): {done.stderr[-2000:]}")
    report = json.loads(done.stdout)
    goals = int(report["goals"])
    return {
        "fill_sample_goals": goals,
        "fill_sample_proved": int(report["proved"]),
        "fill_sample_wall_seconds": round(wall, 2),
        "fill_sample_cpu_seconds": report["cpu_seconds"],
        "goals_per_second": round(goals / wall, 3),
    }


# -- the whole bench --------------------------------------------------------------------


COLUMNS = (
    ("holes", "holes", "{:d}"),
    ("files", "files", "{:d}"),
    ("scan_seconds", "scan s", "{:.2f}"),
    ("scan_cpu_seconds", "scan CPU s", "{:.2f}"),
    ("plan_holes_per_second", "plan holes/s", "{:.0f}"),
    ("queue_ops_per_second", "queue ops/s", "{:.0f}"),
    ("one_file_queue_seconds", "1-file queue s", "{:.3f}"),
    ("one_file_queue_cpu_seconds", "1-file queue CPU s", "{:.3f}"),
    ("queue_ops_per_cpu_second", "queue ops/CPU s", "{:.0f}"),
    ("peak_rss_after_scan_and_queue_mb", "RSS MiB", "{:.0f}"),
    ("ledger_bytes", "ledger MB", "{}"),
    ("ledger_writes_per_second", "ledger writes/s", "{:.0f}"),
    ("goals_per_second", "goals/s (p0)", "{:.2f}"),
    ("api_goals_middle_page_seconds", "/api/goals s", "{:.3f}"),
    ("api_stats_seconds", "/api/stats s", "{:.3f}"),
    ("overview_seconds", "overview s", "{:.3f}"),
    ("orch_stats_seconds", "orch stats s", "{:.2f}"),
)


def _cell(row: dict[str, Any], key: str, fmt: str) -> str:
    value = row.get(key)
    if value is None:
        return "-"
    if key == "ledger_bytes":
        return f"{value / 1e6:.1f}"
    return fmt.format(value)


def table(rows: list[dict[str, Any]]) -> str:
    """A Markdown table of the rows, then the growth factors from the first size to each."""
    lines = [
        "| " + " | ".join(title for _, title, _ in COLUMNS) + " |",
        "|" + "---|" * len(COLUMNS),
    ]
    for row in rows:
        lines.append("| " + " | ".join(_cell(row, k, f) for k, _, f in COLUMNS) + " |")
    return "\n".join(lines)


def growth(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """For each measure, its ratio between consecutive sizes (holes grow by the ratio shown)."""
    factors: dict[str, dict[str, float]] = {}
    for before, after in itertools.pairwise(rows):
        label = f"{before['holes']}->{after['holes']}"
        entry: dict[str, float] = {}
        for key, value in after.items():
            old = before.get(key)
            if isinstance(value, int | float) and isinstance(old, int | float) and old:
                entry[key] = round(value / old, 2)
        factors[label] = entry
    return factors


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,5000,20000")
    parser.add_argument("--sample", type=int, default=60, help="holes of the goals/s sample")
    parser.add_argument(
        "--budget",
        type=float,
        default=1.0,
        help="CPU budget (and cap) per goal and strategy of the sample fill; 0: orch's default",
    )
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-fill", action="store_true", help="skip the goals/s sample")
    parser.add_argument("--out", type=Path, default=HERE / "results")
    parser.add_argument("--child", nargs=2, metavar=("ROOT", "DB"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(measure_size(Path(args.child[0]), Path(args.child[1]))))
        return 0
    sizes = [int(s) for s in args.sizes.split(",")]
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="orch-scale-") as tmp:
        work = Path(tmp)
        sample = work / "sample"
        if not args.no_fill:
            generate(sample, args.sample, seed=1, start=10_000_000)
        for size in sizes:
            root = work / f"p{size}"
            started = time.perf_counter()
            generate(root, size, seed=size)
            seconds = time.perf_counter() - started
            db = work / f"ledger-{size}.sqlite"
            child = subprocess.run(
                [sys.executable, __file__, "--child", str(root), str(db)],
                check=True,
                capture_output=True,
                text=True,
            )
            row: dict[str, Any] = {"generate_seconds": round(seconds, 2)}
            row.update(json.loads(child.stdout.strip().splitlines()[-1]))
            row.update(measure_server(root, db, size, args.repeats))
            if not args.no_fill:
                copy = work / f"fill-{size}.sqlite"
                shutil.copyfile(db, copy)
                row.update(measure_fill(sample, copy, args.budget or None))
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
            shutil.rmtree(root)
    result: dict[str, Any] = {
        "bench": "scale",
        "started": stamp,
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
        "sample_holes": None if args.no_fill else args.sample,
        "sample_budget": args.budget or "default",
        "load_average_at_end": os.getloadavg(),
        "sizes": rows,
        "growth": growth(rows),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"{stamp}-scale.json"
    path.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(table(rows))
    for label, factors in result["growth"].items():
        keys = [k for k, _, _ in COLUMNS if k in factors and k not in ("holes", "files")]
        print(
            f"growth {label} (holes x{factors.get('holes')}): "
            + ", ".join(f"{k} x{factors[k]}" for k in keys)
        )
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
