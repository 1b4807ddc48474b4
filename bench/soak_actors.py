"""The soak test's actors (``bench/soak.py``; ``bench/SOAK.md``): the ``orch`` children,
the memory sampler, the user who edits, the agent who submits over MCP, the full disk."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import psutil
from soak_checks import Edit, declarations, project_files

from proof_orchestrator.coq.syntax import split_sentences

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
    url: str,
    number: int,
    record: dict[str, Any],
    rng: random.Random,
    submit_at: float | None = None,
) -> list[dict]:
    """One agent session: list the holes, submit a false proof and a true one (at
    ``submit_at``, a time, when given)."""
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
        if listed.is_error:
            return [
                {
                    "round": number,
                    "status": "tool error",
                    "tool": "list_holes",
                    "reason": str(listed.content)[:500],
                }
            ]
        holes = listed.structured_content or {}
        holes = holes.get("result", holes) if isinstance(holes, dict) else holes
        open_ = [h for h in holes if h["status"] != "proved"]
        true_ones = [h for h in open_ if h["name"] in originals or h["name"] in known]
        if not true_ones:
            return [
                {"round": number, "note": f"no open hole with a known proof ({len(holes)} listed)"}
            ]
        hole = rng.choice(sorted(true_ones, key=lambda h: h["id"]))
        if submit_at is not None:
            await asyncio.sleep(max(0.0, submit_at - time.time()))
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
