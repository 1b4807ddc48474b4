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
import contextlib
import datetime as dt
import errno
import json
import os
import random
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import psutil

from proof_orchestrator.coq.holes import iter_proofs
from proof_orchestrator.coq.syntax import split_sentences

HERE = Path(__file__).resolve().parent
ORCH = str(Path(sys.executable).parent / "orch")
LIB = "SoakSets"
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
NEW_HOLES = (
    ("forall (U : Type) (A : Ensemble U), Included U A A", "intros U A x H. exact H."),
    (
        "forall (U : Type) (A B : Ensemble U), Included U A (Union U A B)",
        "intros U A B x H. apply Union_introl. exact H.",
    ),
    (
        "forall (U : Type) (A B : Ensemble U), Included U (Intersection U A B) A",
        "intros U A B x H. destruct H as [y HA HB]. exact HA.",
    ),
    ("forall (U : Type) (x : U), In U (Singleton U x) x", "intros U x. apply In_singleton."),
    (
        "forall (U : Type) (A : Ensemble U), Included U (Empty_set U) A",
        "intros U A x H. destruct H.",
    ),
)
#: false scripts an agent submits (each must be refused)
FALSE_SCRIPTS = ("exact I.", "admit.", "reflexivity.", "intros. assumption.")
_DECLARATION = re.compile(
    r"^(Lemma|Theorem|Fact|Remark|Corollary|Proposition)\s+([\w']+)\s*:\s*(.*)\.$", re.S
)


def norm(text: str) -> str:
    return " ".join(text.split())


def utc(seconds: float) -> str:
    return dt.datetime.fromtimestamp(seconds, dt.UTC).isoformat(timespec="seconds")


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


def project_files(dest: Path) -> list[Path]:
    lines = (dest / "_CoqProject").read_text(encoding="utf-8").splitlines()
    return [dest / line.strip() for line in lines if line.strip().endswith(".v")]


def declarations(text: str) -> dict[str, Any]:
    return {p.name: p for p in iter_proofs(split_sentences(text))}


# -- processes --------------------------------------------------------------------------


class Child:
    """One ``nice -n 10`` child in its own process group, its output in ``logs``."""

    def __init__(self, name: str, argv: list[str], logs: Path) -> None:
        self.name, self.argv, self.logs = name, argv, logs
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def start(self, extra: list[str] | None = None) -> None:
        self.starts += 1
        stem = self.logs / f"{self.name}-{self.starts}"
        env = {**os.environ, "COLUMNS": "400", "NO_COLOR": "1"}
        with open(f"{stem}.out", "wb") as out, open(f"{stem}.err", "wb") as err:
            self.process = subprocess.Popen(
                ["nice", "-n", "10", *self.argv, *(extra or [])],
                stdout=out,
                stderr=err,
                env=env,
                start_new_session=True,
            )

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def tree(self) -> list[psutil.Process]:
        if self.process is None or self.process.poll() is not None:
            return []
        try:
            root = psutil.Process(self.process.pid)
            return [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            return []

    def kill_group(self) -> list[dict[str, Any]]:
        """SIGKILL the group; the descendants still alive 3 s later (orphans) are named
        and then killed by pid."""
        if self.process is None:
            return []
        before = [p for p in self.tree() if p.pid != self.process.pid]
        with contextlib.suppress(ProcessLookupError):  # gone already: nothing to kill
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        time.sleep(3)
        orphans = []
        for p in before:
            try:
                if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                    orphans.append({"pid": p.pid, "name": p.name(), "cmd": p.cmdline()[:3]})
                    p.kill()
            except psutil.NoSuchProcess:
                continue
        return orphans

    def stop(self, grace: float = 20.0) -> int | None:
        if self.process is None:
            return None
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(grace)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        return self.process.returncode


class Sampler(threading.Thread):
    """RSS of the process trees (and CPU seconds per process) every ``every`` seconds."""

    def __init__(self, children: list[Child], every: float) -> None:
        super().__init__(daemon=True, name="rss-sampler")
        self.children, self.every = children, every
        self.halt = threading.Event()
        self.peak_mb = {c.name: 0.0 for c in children} | {"all": 0.0}
        #: proportional set size: a page shared by forks (coqtop forks for hammer) once
        self.peak_pss_mb = {c.name: 0.0 for c in children} | {"all": 0.0}
        self.peak_process_mb: dict[str, float] = {}
        self.cpu: dict[tuple[int, float], float] = {}
        self.samples = 0

    def run(self) -> None:
        while not self.halt.wait(self.every):
            self.sample()

    def sample(self) -> None:
        total = total_pss = 0.0
        for child in self.children:
            rss = pss = 0.0
            for p in child.tree():
                try:
                    with p.oneshot():
                        memory = p.memory_full_info()
                        mb = memory.rss / 2**20
                        pss += memory.pss / 2**20
                        times = p.cpu_times()
                        key = (p.pid, p.create_time())
                        name = p.name()
                except psutil.Error:
                    continue
                rss += mb
                self.cpu[key] = max(self.cpu.get(key, 0.0), times.user + times.system)
                self.peak_process_mb[name] = max(self.peak_process_mb.get(name, 0.0), mb)
            self.peak_mb[child.name] = max(self.peak_mb[child.name], rss)
            self.peak_pss_mb[child.name] = max(self.peak_pss_mb[child.name], pss)
            total += rss
            total_pss += pss
        self.peak_mb["all"] = max(self.peak_mb["all"], total)
        self.peak_pss_mb["all"] = max(self.peak_pss_mb["all"], total_pss)
        self.samples += 1


# -- the user ---------------------------------------------------------------------------


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


class Editor:
    def __init__(self, dest: Path, rng: random.Random, refused: set[str]) -> None:
        self.dest, self.rng, self.refused = dest, rng, refused
        self.edits: list[Edit] = []
        self.broken: tuple[str, str, str] | None = None  # file, lemma, original lemma text

    def write(self, path: Path, text: str, mode: str) -> None:
        if mode == "rename":
            temp = path.with_name(f".{path.name}.soak~")
            with open(temp, "w", encoding="utf-8") as handle:
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temp, path)
        else:
            with open(path, "r+", encoding="utf-8") as handle:
                handle.truncate(0)
                handle.write(text)

    def edit(self, kind: str, t: float) -> Edit | None:
        mode = ("rename", "truncate")[len(self.edits) % 2]
        made = getattr(self, f"_{kind}")(t, mode)
        if made is not None:
            self.edits.append(made)
        return made

    def _apply(self, edit: Edit, path: Path, new: str) -> Edit:
        try:
            self.write(path, new, edit.mode)
        except OSError as exc:
            edit.applied, edit.note = False, f"the editor could not save: {exc}"
        return edit

    def _break(self, t: float, mode: str) -> Edit | None:
        files = project_files(self.dest)
        texts = {f: f.read_text(encoding="utf-8") for f in files}
        everything = "\n".join(texts.values())
        candidates = []
        for path, text in texts.items():
            for name, proof in declarations(text).items():
                match = _DECLARATION.match(proof.statement.code)
                if (
                    match
                    and proof.ending == "Qed"
                    and name not in self.refused
                    and len(re.findall(rf"\b{re.escape(name)}\b", everything)) == 1
                ):
                    candidates.append((path, name))
        if not candidates:
            return None
        path, name = self.rng.choice(sorted(candidates))
        text = path.read_text(encoding="utf-8")  # again, just before writing
        proof = declarations(text)[name]
        match = _DECLARATION.match(proof.statement.code)
        assert match is not None
        statement = f"{match.group(1)} {name} : ({match.group(3)}) /\\ True."
        original = text[proof.statement.start : proof.proof[-1].end]
        new = text[: proof.statement.start] + statement + text[proof.statement.end :]
        self.broken = (str(path), name, original)
        self.refused.add(name)
        edit = Edit(len(self.edits) + 1, "break", t, str(path), name, statement, mode)
        return self._apply(edit, path, new)

    def _hole(self, t: float, mode: str) -> Edit | None:
        files = [f for f in project_files(self.dest) if "Ensemble" in f.read_text(encoding="utf-8")]
        path = self.rng.choice(files)
        number = sum(e.kind == "hole" for e in self.edits) + 1
        statement, _ = NEW_HOLES[(number - 1) % len(NEW_HOLES)]
        name = f"soak_hole_{number}"
        lemma = f"Lemma {name} : {statement}."
        text = path.read_text(encoding="utf-8")
        new = text.rstrip("\n") + f"\n\n{lemma}\nAdmitted.\n"
        self.refused.add(name)
        return self._apply(
            Edit(len(self.edits) + 1, "hole", t, str(path), name, lemma, mode), path, new
        )

    def _fix(self, t: float, mode: str) -> Edit | None:
        if self.broken is None:
            return None
        file, name, original = self.broken
        path = Path(file)
        text = path.read_text(encoding="utf-8")
        proof = declarations(text).get(name)
        edit = Edit(len(self.edits) + 1, "fix", t, file, name, original, mode)
        if proof is None:
            edit.applied, edit.note = False, f"{name} is no longer in {path.name}"
            return edit
        self.broken = None
        new = text[: proof.statement.start] + original + text[proof.proof[-1].end :]
        return self._apply(edit, path, new)


# -- the agent --------------------------------------------------------------------------


async def mcp_round(
    url: str, number: int, record: dict[str, Any], rng: random.Random
) -> list[dict]:
    """One agent session: list the holes, submit a false proof and a true one."""
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.types import Implementation

    originals = {r["name"]: r["proof"] for records in record["by_file"].values() for r in records}
    known = {f"soak_hole_{i + 1}": NEW_HOLES[i % len(NEW_HOLES)][1] for i in range(100)}
    done: list[dict] = []
    async with (
        httpx2.AsyncClient(timeout=600) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(
            read, write, client_info=Implementation(name=f"soak-{number}", version="1")
        ) as session,
    ):
        await session.initialize()
        listed = await session.call_tool("list_holes", {})
        holes = listed.structured_content or {}
        holes = holes.get("result", holes) if isinstance(holes, dict) else holes
        open_ = [h for h in holes if h["status"] != "proved"]
        true_ones = [h for h in open_ if h["name"] in originals or h["name"] in known]
        if not true_ones:
            return [
                {"round": number, "note": f"no open hole with a known proof ({len(holes)} listed)"}
            ]
        hole = rng.choice(sorted(true_ones, key=lambda h: h["id"]))
        if hole["name"] in originals:
            body = [s.code for s in split_sentences(originals[hole["name"]])]
            body = body[1:] if body and body[0] == "Proof." else body
            script, source = " ".join(body[:-1]), "the published proof"
        else:
            script, source = known[hole["name"]], "the harness's proof"
        for truth, text in ((False, FALSE_SCRIPTS[number % len(FALSE_SCRIPTS)]), (True, script)):
            started = time.time()
            result = await session.call_tool(
                "submit_proof", {"hole_id": hole["id"], "script": text}
            )
            data = result.structured_content or {}
            data = data.get("result", data) if isinstance(data, dict) else data
            status = "error" if result.is_error else data.get("status", "?")
            reason = data.get("reason", "") if not result.is_error else str(result.content)[:500]
            done.append(
                {
                    "round": number,
                    "t": round(started, 1),
                    "hole": hole["name"],
                    "file": hole["file"],
                    "true": truth,
                    "source": source if truth else "false",
                    "script": text,
                    "status": status,
                    "reason": reason[:500],
                    "seconds": round(time.time() - started, 1),
                }
            )
    return done


def wait_listening(port: int, timeout: float) -> bool:
    end = time.time() + timeout
    while time.time() < end:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return True
        time.sleep(0.5)
    return False


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# -- the disk ---------------------------------------------------------------------------


def fill_disk(folder: Path, seconds: float) -> dict[str, Any]:
    """Fill ``folder``'s filesystem with one file for ``seconds``, then remove it."""
    filler = folder / "soak-filler.bin"
    chunk = b"\0" * 2**20
    written = 0
    started = time.time()
    with open(filler, "wb", buffering=0) as handle:
        try:
            while True:
                written += handle.write(chunk) or 0
        except OSError as exc:
            if exc.errno != errno.ENOSPC:
                raise
    free = shutil.disk_usage(folder).free
    time.sleep(max(0.0, seconds - (time.time() - started)))
    filler.unlink()
    return {
        "start": round(started, 1),
        "end": round(time.time(), 1),
        "bytes": written,
        "free_while_full": free,
    }


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
                and e.t >= verified - 5
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
    return {
        "ok": not unexplained,
        "attempts": sum(outcomes.values()),
        "outcomes": outcomes,
        "errors_by_kind": kinds,
        "unexplained": unexplained,
        "runs": run_rows,
        "attempt_cpu_seconds": round(cpu, 1),
    }


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
    return Schedule(total, edits, kills, disk, args.disk_fill_seconds, mcp)


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
    kills: list[dict[str, Any]] = []
    exits: list[dict[str, Any]] = []
    submissions: list[dict[str, Any]] = []
    faults: list[tuple[float, float, str]] = []
    fill_info: dict[str, Any] = {"done": False}
    filler: threading.Thread | None = None
    agent: threading.Thread | None = None

    def agent_round(number: int) -> None:
        try:
            submissions.extend(
                asyncio.run(
                    mcp_round(f"http://127.0.0.1:{port}/mcp", number, record, random.Random(number))
                )
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
                agent = threading.Thread(target=agent_round, args=(arg,), name="agent")
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
        "cycles_restarted_by_edits": len(re.findall(r"changed by the user", bg_logs)),
        "orphans_after_sigkill": sum(len(k["orphans"]) for k in kills),
        "mcp_submissions": len([s for s in submissions if "true" in s]),
        "mcp_accepted": sum(s.get("status") == "verified" for s in submissions),
        "mcp_refused": sum(s.get("status") in ("rejected", "error") for s in submissions),
        "mcp_client_errors": sum(s.get("status") == "client error" for s in submissions),
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
