"""The soak test's records and checks (``bench/soak.py``; ``bench/SOAK.md``): what the
user did, and whether anything was lost."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shutil
import sqlite3
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from proof_orchestrator.coq.holes import iter_proofs
from proof_orchestrator.coq.syntax import split_sentences

#: the copy's logical name (the installed library is ``Coq.Sets``)
LIB = "SoakSets"


def norm(text: str) -> str:
    return " ".join(text.split())


def utc(seconds: float) -> str:
    return dt.datetime.fromtimestamp(seconds, dt.UTC).isoformat(timespec="seconds")


def project_files(dest: Path) -> list[Path]:
    lines = (dest / "_CoqProject").read_text(encoding="utf-8").splitlines()
    return [dest / line.strip() for line in lines if line.strip().endswith(".v")]


def declarations(text: str) -> dict[str, Any]:
    return {p.name: p for p in iter_proofs(split_sentences(text))}


@dataclass
class Edit:
    n: int
    kind: str  #: break / hole / fix
    t: float
    file: str
    lemma: str
    #: the text the edit introduced (must still be in the file unless a later edit on
    #: the same lemma replaced it)
    text: str
    mode: str  #: rename / truncate
    applied: bool = True
    note: str = ""


# -- the checks -------------------------------------------------------------------------


def ledger_time(value: str | None) -> float:
    if not value:
        return 0.0
    moment = dt.datetime.fromisoformat(value)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return moment.timestamp()


def in_order(sentences: list[str], proof_text: str) -> bool:
    """Each sentence, whitespace-normalised, in ``proof_text`` after the one before."""
    at = 0
    for sentence in sentences:
        found = proof_text.find(norm(sentence), at)
        if found < 0:
            return False
        at = found + len(norm(sentence))
    return True


def check_proofs(db: Path, edits: list[Edit], logs: str) -> dict[str, Any]:
    """Every verified proof of the ledger is in its file, or why not."""
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    rows = con.execute(
        "SELECT p.id, p.goal_id, p.fingerprint, p.sentences, p.strategy, p.written, "
        "p.verified_at, p.run_id, g.file, g.name, g.status, g.statement FROM proofs p "
        "JOIN goals g ON g.id = p.goal_id ORDER BY p.id"
    ).fetchall()
    texts: dict[str, str] = {}
    verdicts: list[dict[str, Any]] = []
    for row in rows:
        path = Path(row["file"])
        if row["file"] not in texts:
            texts[row["file"]] = path.read_text(encoding="utf-8") if path.exists() else ""
        decl = declarations(texts[row["file"]]).get(row["name"])
        sentences = json.loads(row["sentences"])
        verified = ledger_time(row["verified_at"])
        entry = {
            "proof_id": row["id"],
            "file": path.name,
            "lemma": row["name"],
            "strategy": row["strategy"],
            "written": bool(row["written"]),
            "verified_at": utc(verified),
        }
        body = norm(" ".join(s.code for s in decl.proof)) if decl is not None else ""
        if decl is not None and decl.ending in ("Qed", "Defined") and in_order(sentences, body):
            entry["verdict"] = "in file"
        else:
            later = [
                e
                for e in edits
                if e.applied
                and e.lemma == row["name"]
                and e.t >= verified  # an edit after the proof was verified (and written)
                and Path(e.file) == path
            ]
            others = [
                o
                for o in rows
                if o["id"] != row["id"] and o["name"] == row["name"] and o["file"] == row["file"]
            ]
            other_in_file = (
                decl is not None
                and decl.ending in ("Qed", "Defined")
                and any(in_order(json.loads(o["sentences"]), body) for o in others)
            )
            reasons = con.execute(
                "SELECT message FROM attempts WHERE goal_id = ? AND outcome = 'rejected' "
                "AND message LIKE '%changed%'",
                (row["goal_id"],),
            ).fetchall()
            if later:
                entry["verdict"] = f"replaced by user edit #{later[0].n} ({later[0].kind})"
            elif decl is None:
                entry["verdict"] = "LOST: its lemma is no longer in the file"
            elif other_in_file:
                entry["verdict"] = "another verified proof of the lemma is in the file"
            elif not row["written"] and reasons:
                entry["verdict"] = f"not written, reported: {reasons[-1]['message'][:200]}"
            elif not row["written"] and f"{path.name}" in logs and "changed on disk" in logs:
                entry["verdict"] = "not written, reported in orch bg's log"
            else:
                entry["verdict"] = "LOST" if row["written"] else "not written, no reason reported"
        verdicts.append(entry)
    con.close()  # the ledger's folder is unmounted afterwards
    bad = [v for v in verdicts if v["verdict"].startswith(("LOST", "not written, no reason"))]
    return {
        "ok": not bad,
        "verified": len(rows),
        "written": sum(v["written"] for v in verdicts),
        "in_file": sum(v["verdict"] == "in file" for v in verdicts),
        "explained": sum(v not in bad and v["verdict"] != "in file" for v in verdicts),
        "failures": bad,
        "proofs": verdicts,
    }


def check_edits(edits: list[Edit]) -> dict[str, Any]:
    """Each applied edit's text is still in its file, unless a later edit on its lemma
    replaced it."""
    results = []
    for edit in edits:
        if not edit.applied:
            results.append({"n": edit.n, "verdict": f"not applied: {edit.note}"})
            continue
        later = [e for e in edits if e.n > edit.n and e.applied and e.lemma == edit.lemma]
        if later:
            results.append({"n": edit.n, "verdict": f"replaced by user edit #{later[0].n}"})
            continue
        text = norm(Path(edit.file).read_text(encoding="utf-8"))
        results.append({"n": edit.n, "verdict": "kept" if norm(edit.text) in text else "LOST"})
    lost = [r for r in results if r["verdict"] == "LOST"]
    return {"ok": not lost, "edits": len(edits), "lost": lost, "results": results}


def check_compiles(dest: Path, scratch: Path, logs: str) -> dict[str, Any]:
    """Each file of ``_CoqProject`` compiled in order in a scratch copy (nothing lands in
    the copy); a file that does not is acceptable only when orch bg's log names it."""
    if scratch.exists():
        shutil.rmtree(scratch)
    shutil.copytree(dest / "theories", scratch / "theories")
    results = []
    for path in project_files(dest):
        relative = path.relative_to(dest)
        run = subprocess.run(
            ["coqc", "-R", "theories", LIB, str(relative)],
            cwd=scratch,
            capture_output=True,
            text=True,
        )
        entry: dict[str, Any] = {"file": str(relative), "compiles": run.returncode == 0}
        if run.returncode != 0:
            entry["error"] = (run.stdout + run.stderr).strip()[-600:]
            entry["reported"] = path.name in logs and (
                "not repaired" in logs or "does not compile" in logs
            )
        results.append(entry)
    bad = [r for r in results if not r["compiles"] and not r.get("reported")]
    return {
        "ok": not bad,
        "files": len(results),
        "compile": sum(r["compiles"] for r in results),
        "results": results,
    }


#: attempt errors the harness caused on purpose, by a pattern of their message
EXPLAINED = (
    ("disk full", re.compile(r"No space left|disk is full|ENOSPC|database or disk", re.I)),
)


def error_kind(message: str) -> str:
    text = re.sub(
        r"/[\w./~-]+", "<path>", message.strip().splitlines()[0] if message.strip() else ""
    )
    return re.sub(r"\d+", "N", text)[:120] or "(no message)"


def check_attempts(db: Path, faults: list[tuple[float, float, str]]) -> dict[str, Any]:
    con = sqlite3.connect(db)
    outcomes = dict(con.execute("SELECT outcome, count(*) FROM attempts GROUP BY outcome"))
    errors = con.execute(
        "SELECT id, strategy, message, created_at FROM attempts WHERE outcome = 'error'"
    ).fetchall()
    kinds: dict[str, int] = {}
    unexplained = []
    for attempt_id, strategy, message, created in errors:
        kind = error_kind(message or "")
        when = ledger_time(created)
        cause = next((name for name, pattern in EXPLAINED if pattern.search(message or "")), None)
        near = [name for start, end, name in faults if start - 5 <= when <= end + 60]
        if cause is None and not near:
            unexplained.append(
                {
                    "id": attempt_id,
                    "strategy": strategy,
                    "message": (message or "")[:400],
                    "at": utc(when),
                }
            )
        else:
            kind = f"{kind} [explained: {cause or near[0]}]"
        kinds[kind] = kinds.get(kind, 0) + 1
    runs = con.execute("SELECT id, command, status, summary FROM runs ORDER BY id").fetchall()
    run_rows = []
    for run_id, command, status, summary in runs:
        data = json.loads(summary or "{}")
        run_rows.append(
            {
                "id": run_id,
                "command": command,
                "status": status,
                "cpu_seconds": data.get("cpu_seconds"),
                "proved": data.get("proved"),
                "error": data.get("error", "")[:300],
            }
        )
    cpu = con.execute("SELECT coalesce(sum(cpu_seconds), 0) FROM attempts").fetchone()[0]
    # a script refused again for a goal that already refused it (the same statement)
    repeated = con.execute(
        "SELECT coalesce(sum(n - 1), 0) FROM (SELECT count(*) AS n FROM attempts "
        "WHERE outcome = 'rejected' GROUP BY fingerprint, tactic)"
    ).fetchone()[0]
    con.close()
    return {
        "ok": not unexplained,
        "attempts": sum(outcomes.values()),
        "outcomes": outcomes,
        "errors_by_kind": kinds,
        "unexplained": unexplained,
        "runs": run_rows,
        "attempt_cpu_seconds": round(cpu, 1),
        "repeated_rejections": repeated,
    }


def leftover_processes(folder: Path) -> list[dict[str, Any]]:
    """Processes (other than this one) whose command line or working folder is in ``folder``,
    once every child was stopped: orphans of the killed runs."""
    found = []
    for p in psutil.process_iter(["pid", "name", "cmdline", "cwd"]):
        if p.pid == os.getpid():
            continue
        cmd = " ".join(p.info["cmdline"] or [])
        if str(folder) in cmd or str(p.info["cwd"] or "").startswith(str(folder)):
            found.append({"pid": p.pid, "name": p.info["name"], "cmd": cmd[:200]})
    return found
