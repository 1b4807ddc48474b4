"""Open a session at every ``Qed`` proof of every ``.v`` file under a tree (issue 14).

For each file (default tree: Coq's ``theories/``), each finished proof is
reopened the way ``orch fill`` opens a hole: :class:`CoqProver.session` loads
the file's sentences up to the statement (and a kept ``Proof ...`` opener) in
a pooled coqtop, reusing what the previous session loaded. Every session ends
as ``ok`` (the goal is open and a ``Show.`` probe is answered in step),
``desync`` (:class:`ProverDesync`: coqtop sent a reply nobody asked for), or
an error of some kind (the exception's class: ``PrefixError`` when a sentence
before the proof fails, ``ProverHung``, ``SourceSyntaxError``...). ``--replay``
also runs the original script and ``Qed`` in the session.

Resumable and parallel-safe: each finished file is one line of a JSON-lines
journal (appended under an ``flock``); a file is claimed with an exclusive
claim file before work starts, so several sweeps can share one journal, and a
claim whose process is gone is taken over. The summary JSON is rebuilt from
the journal at the end (or with ``--summary-only``).

    nice -n 19 .venv/bin/python bench/sweep_sessions.py [ROOT] --file-seconds 600
"""

from __future__ import annotations

import argparse
import asyncio
import fcntl
import hashlib
import json
import os
import resource
import sys
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from proof_orchestrator.coq.holes import qed_proofs
from proof_orchestrator.coq.session import CoqProver, CoqSettings
from proof_orchestrator.errors import OrchError, ProverDesync

HERE = Path(__file__).resolve().parent
DEFAULT_ROOT = Path("/usr/lib/ocaml/coq/theories")


def _cpu() -> float:
    """CPU seconds of this process and of its reaped children (the coqtops)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _flags(root: Path, path: Path, topfile: bool) -> list[str]:
    """The prelude is not loaded for Init/ files, as when the stdlib is built.

    ``topfile``: name the toplevel module as coqc names the file
    (``Coq.Classes.Morphisms``), not ``Top`` as ``orch fill``'s sessions do.
    A few stdlib files need that (tactics that look for their own module).
    """
    rel = path.relative_to(root)
    flags = ["-noinit"] if rel.parts[0] == "Init" and root.name == "theories" else []
    return [*flags, "-topfile", str(path)] if topfile else flags


async def sweep_file(
    root: Path,
    path: Path,
    *,
    file_seconds: float,
    load_timeout: float,
    replay: bool,
    topfile: bool = False,
) -> dict[str, Any]:
    """Open a session at each Qed proof of ``path``; one journal record."""
    started = time.monotonic()
    cpu0 = _cpu()
    record: dict[str, Any] = {"file": str(path.relative_to(root)), "proofs": 0, "sessions": 0}
    counts: Counter[str] = Counter()
    problems: list[dict[str, Any]] = []
    try:
        text = path.read_text(encoding="utf-8")
        holes = qed_proofs(path, text)
    except (OrchError, UnicodeDecodeError) as exc:
        counts[f"error:{type(exc).__name__}"] += 1
        problems.append({"proof": None, "status": type(exc).__name__, "message": str(exc)[:400]})
        holes = []
    record["proofs"] = len(holes)
    settings = CoqSettings(load_timeout=load_timeout, max_idle=1)
    prover = CoqProver(_flags(root, path, topfile), cwd=str(path.parent), settings=settings)
    try:
        for index, (hole, script) in enumerate(holes):
            if time.monotonic() - started > file_seconds:
                counts["skipped"] += len(holes) - index
                break
            t0 = time.monotonic()
            status, message = await _one_session(prover, text, hole, script, replay)
            counts[status] += 1
            record["sessions"] += 1
            if status != "ok":
                problems.append(
                    {
                        "proof": hole.goal.name,
                        "line": hole.goal.line,
                        "status": status,
                        "message": message[:400],
                        "seconds": round(time.monotonic() - t0, 3),
                    }
                )
            if status.startswith("error:PrefixError") or status == "desync":
                # everything after a prefix that does not load fails the same way
                counts["skipped"] += len(holes) - index - 1
                break
    finally:
        await prover.aclose()
    record["counts"] = dict(counts)
    record["problems"] = problems
    record["wall_seconds"] = round(time.monotonic() - started, 3)
    record["cpu_seconds"] = round(_cpu() - cpu0, 3)
    return record


async def _one_session(
    prover: CoqProver, text: str, hole: Any, script: tuple[str, ...], replay: bool
) -> tuple[str, str]:
    try:
        async with prover.session(hole.goal, text, hole.prefix_end) as session:
            shown = await session.query("Show.")
            if not shown.strip():
                return "error:NoGoalShown", "Show. printed nothing at the opened goal"
            if replay and script:
                ok, output = await session.qed_check(
                    script, hole.goal.name, prover.settings.load_timeout
                )
                if not ok:
                    return "error:ReplayFailed", output
    except ProverDesync as exc:
        return "desync", str(exc)
    except OrchError as exc:
        return f"error:{type(exc).__name__}", str(exc)
    return "ok", ""


# -- journal and claims --------------------------------------------------------


def _journal_done(journal: Path) -> dict[str, dict[str, Any]]:
    done: dict[str, dict[str, Any]] = {}
    if journal.exists():
        for line in journal.read_text(encoding="utf-8").splitlines():
            if line.strip():
                entry = json.loads(line)
                done[entry["file"]] = entry
    return done


def _append(journal: Path, record: dict[str, Any]) -> None:
    with journal.open("a", encoding="utf-8") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        handle.write(json.dumps(record, sort_keys=True) + "\n")
        handle.flush()
        os.fsync(handle.fileno())
        fcntl.flock(handle, fcntl.LOCK_UN)


def _claim(claims: Path, rel: str) -> bool:
    """Claim a file for this process; take over a claim whose owner has exited."""
    claim = claims / (hashlib.sha1(rel.encode()).hexdigest() + ".claim")
    for _ in range(2):
        try:
            fd = os.open(claim, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            try:
                owner = int(claim.read_text() or "0")
            except (OSError, ValueError):
                return False
            if owner and _alive(owner):
                return False
            claim.unlink(missing_ok=True)
            continue
        with os.fdopen(fd, "w") as handle:
            handle.write(str(os.getpid()))
        return True
    return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def summarize(root: Path, journal: Path, files: list[Path]) -> dict[str, Any]:
    done = _journal_done(journal)
    wanted = {str(p.relative_to(root)) for p in files}
    entries = [e for f, e in sorted(done.items()) if f in wanted]
    counts: Counter[str] = Counter()
    for entry in entries:
        counts.update(entry["counts"])
    return {
        "root": str(root),
        "generated": datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ"),
        "files_total": len(wanted),
        "files_done": len(entries),
        "proofs": sum(e["proofs"] for e in entries),
        "sessions_opened": sum(e["sessions"] for e in entries),
        "ok": counts.get("ok", 0),
        "desyncs": counts.get("desync", 0),
        "skipped": counts.get("skipped", 0),
        "errors_by_kind": {k: v for k, v in sorted(counts.items()) if k.startswith("error:")},
        "cpu_seconds": round(sum(e["cpu_seconds"] for e in entries), 1),
        "wall_seconds": round(sum(e["wall_seconds"] for e in entries), 1),
        "problems": [dict(p, file=e["file"]) for e in entries for p in e["problems"]],
        "files": [
            {k: e[k] for k in ("file", "proofs", "sessions", "counts", "cpu_seconds")}
            for e in entries
        ],
    }


async def main_async(args: argparse.Namespace) -> int:
    root = args.root.resolve()
    files = sorted(root.rglob("*.v"))
    if args.only:
        files = [p for p in files if any(s in str(p.relative_to(root)) for s in args.only)]
    journal: Path = args.journal
    journal.parent.mkdir(parents=True, exist_ok=True)
    claims = journal.with_suffix(".claims")
    claims.mkdir(exist_ok=True)
    if not args.summary_only:
        done = _journal_done(journal)
        for path in files:
            rel = str(path.relative_to(root))
            if rel in done or not _claim(claims, rel):
                continue
            record = await sweep_file(
                root,
                path,
                file_seconds=args.file_seconds,
                load_timeout=args.load_timeout,
                replay=args.replay,
                topfile=args.topfile,
            )
            _append(journal, record)
            print(
                f"{rel}: {record['proofs']} proofs, {record['counts']}, "
                f"{record['cpu_seconds']:.1f} CPU s",
                flush=True,
            )
    summary = summarize(root, journal, files)
    out: Path = args.out or HERE / "results" / f"{summary['generated']}-sweep.json"
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, out)
    brief = {k: v for k, v in summary.items() if k not in ("problems", "files")}
    print(json.dumps(brief, indent=2))
    return 1 if summary["desyncs"] else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("root", nargs="?", type=Path, default=DEFAULT_ROOT)
    parser.add_argument(
        "--journal", type=Path, default=HERE / "results" / "sweep" / "journal.jsonl"
    )
    parser.add_argument("--out", type=Path, default=None, help="summary JSON path")
    parser.add_argument("--file-seconds", type=float, default=600.0, help="wall budget per file")
    parser.add_argument("--load-timeout", type=float, default=300.0, help="guard per sentence")
    parser.add_argument("--only", nargs="*", default=[], help="substrings of relative paths")
    parser.add_argument("--replay", action="store_true", help="also run each script and Qed")
    parser.add_argument("--summary-only", action="store_true")
    parser.add_argument(
        "--topfile", action="store_true", help="name the toplevel module as coqc names the file"
    )
    return asyncio.run(main_async(parser.parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
