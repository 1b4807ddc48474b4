"""Soak test: ``orch bg`` on a real project copy while a user edits, agents submit over
MCP, the process is SIGKILLed twice and the disk fills up once (issue 52, Acceptance).

usage: python bench/soak.py [--minutes 60] [--edit-every 120] [--kills-at 18,39]
                            [--disk-fill-at 30.2] [--disk-fill-seconds 30] [--seed 0]
                            [--work DIR] [--out FILE] [--keep]

What it does (the whole procedure is in ``bench/SOAK.md``):

1. **The copy.** Eight files of Coq's standard library ``theories/Sets`` (as Debian
   installs them under ``$(coqc -where)``) that ``Require`` each other, their
   ``Require``s renamed to the logical name ``SoakSets`` (not the installed ``Coq.Sets``),
   made into a git repository with a ``_CoqProject`` and seeded holes by
   ``bench/projects/make_copies.py --seed S --check-types``; unbuilt. The copy and the
   ledger live on a tmpfs mounted for the run (so that the disk can be filled).
2. **The run.** ``orch bg COPY --db sqlite:///LEDGER --duration <left> --json`` at the
   default CPU target, and ``orch mcp COPY --http`` on the same ledger, both ``nice -n 10``.
3. **Meanwhile** (one seeded schedule, printed and saved): every ``--edit-every``
   seconds a user edit, cycling *break* (a proved lemma's statement ``S`` becomes
   ``(S) /\\ True``: its proof no longer checks), *hole* (a new lemma with ``Admitted.``),
   *fix* (the broken lemma back as published), written as editors do (temporary file
   and rename, or truncate and write), each recorded; MCP rounds (list_holes, one false
   and one true proof per round); SIGKILL to ``orch bg``'s process group at
   ``--kills-at`` and a restart; the tmpfs filled with one big file for
   ``--disk-fill-seconds``. The process trees are sampled with psutil.
4. **Checks** (exit status 1 when one fails), written with the figures to ``--out``
   (default ``.orch/results/soak-<UTC time>.json``): every verified proof of the ledger
   is in its file or has a reason it is not; no user edit is lost; every file compiles or
   orch reported it; no attempt ended with an unexplained error; the process trees' peak
   RSS is under ``memory_budget_mb``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import psutil
from soak_actors import Child, Editor, Sampler, fill_disk, free_port, mcp_round, wait_listening
from soak_checks import (
    LIB,
    check_attempts,
    check_compiles,
    check_edits,
    check_proofs,
    leftover_processes,
    utc,
)

HERE = Path(__file__).resolve().parent
ORCH = str(Path(sys.executable).parent / "orch")
#: the files of theories/Sets copied (they Require only each other)
SETS = (
    "Ensembles",
    "Relations_1",
    "Relations_1_facts",
    "Partial_Order",
    "Cpo",
    "Powerset",
    "Constructive_sets",
    "Powerset_facts",
)
#: the holes a *hole* edit adds (statement, a true proof), in files that load Ensembles

# -- the copy ---------------------------------------------------------------------------


def make_copy(work: Path, dest: Path, seed: int) -> dict[str, Any]:
    """The Sets files renamed to ``LIB``, made a project by ``make_copies.py``."""
    where = Path(subprocess.run(["coqc", "-where"], capture_output=True, text=True).stdout.strip())
    source = work / "source"
    source.mkdir(parents=True)
    ours = re.compile(r"\b(Require\s+(?:Import\s+|Export\s+)?)(" + "|".join(SETS) + r")\.")
    for name in SETS:
        text = (where / "theories" / "Sets" / f"{name}.v").read_text(encoding="utf-8")
        (source / f"{name}.v").write_text(ours.sub(rf"\1{LIB}.\2.", text), encoding="utf-8")
    command = [
        *(sys.executable, str(HERE / "projects" / "make_copies.py"), LIB, str(dest)),
        *("--source", str(source), "--seed", str(seed), "--files", "4", "--holes", "3"),
        *("--max-sentences", "6", "--check-types"),
    ]
    run = subprocess.run(command, capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"make_copies.py failed:\n{run.stdout}\n{run.stderr}")
    record = json.loads((dest / "holes-record.json").read_text(encoding="utf-8"))
    return {"command": command[1:], "stdout": run.stdout.strip().splitlines(), "record": record}


# -- the run ----------------------------------------------------------------------------


@dataclass
class Schedule:
    seconds: float
    edits: list[tuple[float, str]]
    kills: list[float]
    disk: float | None
    disk_seconds: float
    mcp: list[float]
    notes: list[str] = field(default_factory=list)


def schedule(args: argparse.Namespace) -> Schedule:
    total = args.minutes * 60
    kinds = ("break", "hole", "fix")
    times = [args.edit_every * k for k in range(1, int(total // args.edit_every) + 1)]
    times = [t for t in times if t <= total - min(60.0, args.edit_every / 2)]
    edits = [(t, kinds[i % 3]) for i, t in enumerate(times)]
    while edits and edits[-1][1] == "break":  # the run ends on a fixed project
        edits.pop()
    kills = [m * 60 for m in args.kills_at] if args.kills_at else [0.3 * total, 0.65 * total]
    if args.disk_fill_at is not None:
        disk = args.disk_fill_at * 60
    else:
        disk = (0.5 * total // args.edit_every) * args.edit_every + min(10.0, args.edit_every / 6)
    mcp = [round((i + 0.5) / args.mcp_rounds * total, 1) for i in range(args.mcp_rounds)]
    if disk is not None and args.disk_fill_seconds > 15:
        # holes listed just before the disk fills, proofs submitted 10 s into it
        mcp.append(disk - 3)
        mcp.sort()
    return Schedule(total, edits, kills, disk, args.disk_fill_seconds, mcp)


def mount_tmpfs(folder: Path, megabytes: int) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    run = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={megabytes}m", "soak-tmpfs", str(folder)],
        capture_output=True,
        text=True,
    )
    return "" if run.returncode == 0 else (run.stderr.strip() or f"mount exited {run.returncode}")


def read_logs(logs: Path, prefix: str) -> str:
    return "\n".join(
        p.read_text(encoding="utf-8", errors="replace") for p in sorted(logs.glob(f"{prefix}-*"))
    )


def last_json(text: str) -> dict[str, Any]:
    start = text.rfind("\n{")
    start = 0 if start < 0 and text.startswith("{") else start
    try:
        return json.loads(text[start:]) if start >= 0 else {}
    except json.JSONDecodeError:
        return {}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--edit-every", type=float, default=120.0, help="seconds")
    parser.add_argument(
        "--kills-at",
        type=lambda v: [float(x) for x in v.split(",")],
        default=None,
        help="minutes, comma-separated (default: 30%% and 65%% of the run)",
    )
    parser.add_argument("--disk-fill-at", type=float, default=None, help="minute")
    parser.add_argument("--disk-fill-seconds", type=float, default=30.0)
    parser.add_argument("--tmpfs-mb", type=int, default=256)
    parser.add_argument("--mcp-rounds", type=int, default=4)
    parser.add_argument("--sample-every", type=float, default=3.0, help="psutil, seconds")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--work", type=Path, default=None, help="default /tmp/soak-<time>")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--keep", action="store_true", help="leave the tmpfs mounted")
    args = parser.parse_args()
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    work = (args.work or Path(f"/tmp/soak-{stamp}")).resolve()
    out = args.out or Path(".orch/results") / f"soak-{stamp}.json"
    if work.exists():
        sys.exit(f"{work} exists: give a new folder")
    plan = schedule(args)
    disk = work / "disk"
    mount_error = mount_tmpfs(disk, args.tmpfs_mb)
    if mount_error:
        plan.notes.append(f"no tmpfs ({mount_error}): the disk is not filled")
        plan.disk = None
    dest = disk / "copy"
    db = disk / "ledger.sqlite"
    logs = work / "logs"
    logs.mkdir(parents=True)
    print(f"soak: work {work}; copy {dest}; ledger {db}", flush=True)
    copy = make_copy(work, dest, args.seed)
    record = copy["record"]
    seeded = {r["name"] for records in record["by_file"].values() for r in records}
    print(f"soak: {record['holes']} holes seeded in {len(record['by_file'])} files", flush=True)
    from proof_orchestrator.config import load_settings

    settings, _ = load_settings(dest)
    port = free_port()
    url = f"sqlite:///{db}"
    bg = Child("bg", [ORCH, "bg", str(dest), "--db", url, "--json"], logs)
    mcp = Child("mcp", [ORCH, "mcp", str(dest), "--http", "--port", str(port), "--db", url], logs)
    sampler = Sampler([bg, mcp], args.sample_every)
    editor = Editor(dest, random.Random(f"{args.seed}:edits"), set(seeded))
    started = time.time()
    deadline = started + plan.seconds
    bg.start(["--duration", f"{plan.seconds:.0f}"])
    mcp.start()
    sampler.start()
    if not wait_listening(port, 120):
        print("soak: orch mcp --http is not listening after 120 s", flush=True)
    events: list[tuple[float, str, Any]] = sorted(
        [(t, "edit", kind) for t, kind in plan.edits]
        + [(t, "kill", None) for t in plan.kills]
        + ([(plan.disk, "fill", None)] if plan.disk is not None else [])
        + [(t, "mcp", i + 1) for i, t in enumerate(plan.mcp)],
        key=lambda e: e[0],
    )
    events_at = {i + 1: t for i, t in enumerate(plan.mcp)}
    kills: list[dict[str, Any]] = []
    exits: list[dict[str, Any]] = []
    submissions: list[dict[str, Any]] = []
    faults: list[tuple[float, float, str]] = []
    fill_info: dict[str, Any] = {"done": False}
    filler: threading.Thread | None = None
    agent: threading.Thread | None = None

    def agent_round(number: int, submit_at: float | None) -> None:
        url = f"http://127.0.0.1:{port}/mcp"
        try:
            submissions.extend(
                asyncio.run(mcp_round(url, number, record, random.Random(number), submit_at))
            )
        except Exception as exc:  # the harness reports it; the run goes on
            submissions.append(
                {"round": number, "status": "client error", "reason": repr(exc)[:500]}
            )

    def fill() -> None:
        fill_info.update(fill_disk(disk, plan.disk_seconds), done=True)
        faults.append((fill_info["start"], fill_info["end"], "disk full"))

    while time.time() < deadline:
        now = time.time() - started
        while events and events[0][0] <= now:
            _, what, arg = events.pop(0)
            if what == "edit":
                made = editor.edit(arg, time.time())
                print(f"soak {now:6.0f}s: edit {arg}: {made and asdict(made)}", flush=True)
            elif what == "kill":
                pid = bg.pid
                orphans = bg.kill_group()
                kills.append({"t": round(now, 1), "pid": pid, "orphans": orphans})
                faults.append((time.time() - 5, time.time() + 5, "SIGKILL"))
                print(f"soak {now:6.0f}s: SIGKILL bg {pid}; orphans {orphans}", flush=True)
                bg.start(["--duration", f"{max(deadline - time.time(), 10):.0f}"])
            elif what == "fill":
                print(f"soak {now:6.0f}s: filling the disk", flush=True)
                filler = threading.Thread(target=fill, name="filler")
                filler.start()
            elif what == "mcp":
                if agent is not None and agent.is_alive():
                    print(f"soak {now:6.0f}s: MCP round {arg} skipped (one still running)")
                    continue
                submit_at = None
                if plan.disk is not None and abs(plan.disk - 3 - events_at[arg]) < 0.01:
                    submit_at = started + plan.disk + 10
                agent = threading.Thread(target=agent_round, args=(arg, submit_at), name="agent")
                agent.start()
        if bg.process is not None and bg.process.poll() is not None and deadline - time.time() > 20:
            err = (logs / f"bg-{bg.starts}.err").read_text(errors="replace")
            exits.append({"t": round(now, 1), "code": bg.process.returncode, "stderr": err[-800:]})
            print(f"soak {now:6.0f}s: bg exited {bg.process.returncode}; restarting", flush=True)
            time.sleep(2)
            bg.start(["--duration", f"{max(deadline - time.time(), 10):.0f}"])
        time.sleep(0.5)
    print("soak: time is up; waiting for orch bg to finish", flush=True)
    assert bg.process is not None
    try:
        bg.process.wait(240)
    except subprocess.TimeoutExpired:
        exits.append({"t": round(time.time() - started, 1), "code": None, "stderr": "did not stop"})
    bg_code = bg.stop()
    for thread in (agent, filler):
        if thread is not None:
            thread.join(600)
    mcp_code = mcp.stop()
    sampler.halt.set()
    sampler.join()
    wall = time.time() - started
    leftovers = leftover_processes(disk)
    checks_extra = {"ok": not leftovers, "processes": leftovers}
    bg_logs, mcp_logs = read_logs(logs, "bg"), read_logs(logs, "mcp")
    final = last_json((logs / f"bg-{bg.starts}.out").read_text(errors="replace"))
    print("soak: checking", flush=True)
    checks = {
        "proofs": check_proofs(db, editor.edits, bg_logs + mcp_logs),
        "edits": check_edits(editor.edits),
        "compiles": check_compiles(dest, work / "compiled", bg_logs),
        "attempts": check_attempts(db, faults),
    }
    cap = settings.memory_budget_mb
    checks["memory"] = {
        "ok": sampler.peak_pss_mb["all"] < cap and sampler.peak_mb["all"] < cap,
        "cap_mb": cap,
        "cap_is": "memory_budget_mb (all prover processes), held against the whole tree",
        "prover_memory_mb": settings.prover_memory_mb,
        "peak_tree_rss_mb": {k: round(v, 1) for k, v in sampler.peak_mb.items()},
        "peak_tree_pss_mb": {k: round(v, 1) for k, v in sampler.peak_pss_mb.items()},
        "note": "RSS sums count the pages that forked coqtops share once per fork; PSS once",
        "peak_process_mb": {k: round(v, 1) for k, v in sampler.peak_process_mb.items()},
        "samples": sampler.samples,
    }
    checks["no_leftover_processes"] = checks_extra
    false_accepted = [
        s for s in submissions if s.get("true") is False and s["status"] == "verified"
    ]
    checks["mcp"] = {"ok": not false_accepted, "false_proofs_accepted": false_accepted}
    repaired = len(re.findall(r"^broken proof .*: repaired$", bg_logs, re.M))
    figures = {
        "wall_seconds": round(wall, 1),
        "cpu_seconds_process_trees": round(sum(sampler.cpu.values()), 1),
        "cpu_seconds_attempts": checks["attempts"]["attempt_cpu_seconds"],
        "cpu_fraction_of_machine": round(sum(sampler.cpu.values()) / wall / psutil.cpu_count(), 3),
        "holes_seeded": record["holes"],
        "proofs_verified": checks["proofs"]["verified"],
        "proofs_written": checks["proofs"]["written"],
        "proofs_in_files": checks["proofs"]["in_file"],
        "broken_proofs_found": len(re.findall(r"^broken proof ", bg_logs, re.M)),
        "repairs": repaired,
        "user_edits": len(editor.edits),
        "user_edits_applied": sum(e.applied for e in editor.edits),
        "restarts_sigkill": len(kills),
        "restarts_after_exit": len(exits),
        "cycles_restarted_by_changes": len(re.findall(r"changed by the user", bg_logs)),
        "bg_cycles": len(re.findall(r"^cycle \d+:", bg_logs, re.M)),
        "bg_cycles_revisiting": len(re.findall(r"^cycle \d+:.*; revisiting$", bg_logs, re.M)),
        "repeated_rejections": checks["attempts"]["repeated_rejections"],
        "orphans_after_sigkill": sum(len(k["orphans"]) for k in kills),
        "mcp_submissions": len([s for s in submissions if "true" in s]),
        "mcp_accepted": sum(s.get("status") == "verified" for s in submissions),
        "mcp_refused": sum(s.get("status") == "rejected" for s in submissions),
        "mcp_client_errors": sum(s.get("status") == "client error" for s in submissions),
        # the tool call itself failed (a full disk: the ledger cannot be written)
        "mcp_tool_errors": sum(s.get("status") in ("error", "tool error") for s in submissions),
        "errors_by_kind": checks["attempts"]["errors_by_kind"],
        "attempt_outcomes": checks["attempts"]["outcomes"],
        "peak_rss_mb": round(sampler.peak_mb["all"], 1),
        "peak_pss_mb": round(sampler.peak_pss_mb["all"], 1),
        "leftover_processes_at_end": len(leftovers),
        "files_compiling": f"{checks['compiles']['compile']}/{checks['compiles']['files']}",
    }
    result = {
        "what": "bench/soak.py (issue 52: soak test on a real project copy)",
        "started": utc(started),
        "arguments": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "commit": subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=HERE, capture_output=True, text=True
        ).stdout.strip(),
        "machine": {"cpus": psutil.cpu_count(), "mem_mb": psutil.virtual_memory().total >> 20},
        "settings": {"cpu_target": settings.cpu_target, "memory_budget_mb": cap},
        "copy": {k: v for k, v in copy.items() if k != "record"}
        | {
            "lib": LIB,
            "files": list(SETS),
            "holes": record["by_file"]
            and {f: [r["name"] for r in rs] for f, rs in record["by_file"].items()},
        },
        "schedule": asdict(plan),
        "ok": all(c["ok"] for c in checks.values()),
        "figures": figures,
        "checks": {k: {x: y for x, y in v.items()} for k, v in checks.items()},
        "edits": [asdict(e) for e in editor.edits],
        "mcp": submissions,
        "kills": kills,
        "unexpected_exits": exits,
        "disk_fill": fill_info,
        "bg_final_summary": final,
        "exit_codes": {"bg_last": bg_code, "mcp": mcp_code},
        "work": str(work),
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1, default=str) + "\n", encoding="utf-8")
    # keep the copy and the ledger off the tmpfs, for a look afterwards
    shutil.copytree(dest, work / "copy-final", ignore=shutil.ignore_patterns(".orch"))
    shutil.copy2(db, work / "ledger.sqlite")
    if not args.keep and not mount_error:
        for _ in range(15):
            if subprocess.run(["umount", str(disk)], capture_output=True).returncode == 0:
                break
            time.sleep(2)
        else:
            print(f"soak: {disk} is still busy; umount it by hand", flush=True)
    print(json.dumps({"ok": result["ok"], "figures": figures}, indent=1))
    print(f"soak: {'passed' if result['ok'] else 'FAILED'}; result in {out}")
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
