"""Writers race on one file: fill's commit step, an MCP submission and an editor's save.

Three processes write the same Coq file at once, 200 times on fresh files:

- this process: ``orch fill``'s commit step (:func:`~proof_orchestrator.run.
  writing.commit`) writing a proof of ``fill_goal`` into the text it scanned;
- a second process, as ``orch mcp`` does: under the file's lock it reads the
  file as it is now, finds ``mcp_goal`` and commits its proof into that text;
- a third process saves the file as an editor does, from the user's buffer
  (the text before any proof, plus the user's own line), either in place
  (truncate and write) or through a temporary file and a rename.

The editor saves exactly once per round, so:

- the user's line is in the final file, always (no user edit is lost);
- every proof is in the ledger;
- unless the final file is exactly the user's save (it came last and replaced
  what was there, as a save does), every proof the ledger marks written is in
  the file: no proof is lost, and a proof that could not be written stays in
  the ledger, not written.

The proofs were checked once by the real whole-file check (coqc and the axiom
audit) before the rounds; the last test races a real ``AgentService.
submit_proof`` (verified by coqc each time) in its own process.
"""

from __future__ import annotations

import asyncio
import glob
import json
import random
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from sqlalchemy import select

from proof_orchestrator.coq.holes import scan_coq_text
from proof_orchestrator.coq.verify import CoqVerifier
from proof_orchestrator.goals import Outcome
from proof_orchestrator.ledger import Ledger
from proof_orchestrator.ledger.models import GoalRow, Proof
from proof_orchestrator.project.patch import Patch, apply_patches
from proof_orchestrator.run.checking import verify_candidates
from proof_orchestrator.run.reports import Candidate, FileReport, FileStatus, GoalReport
from proof_orchestrator.run.writing import commit

from .conftest import coqc_ok

ROUNDS = 200
#: seconds over which the three writers start (each its own random delay)
SPREAD = 0.008
TEXT = """\
Lemma fill_goal : True.
Proof.
Admitted.

Lemma mcp_goal : 1 = 1.
Proof.
Admitted.
"""
FILL_PROOF = ("exact I.",)
MCP_PROOF = ("reflexivity.",)

#: the editor: per line ``<path> <round> <delay> <mode>``, saves the user's text once
#: (in place, or a temporary file renamed over it; ``none``: it does not save)
EDITOR = r"""
import os, sys, time
base = open(sys.argv[1], encoding="utf-8").read()
for line in sys.stdin:
    path, n, delay, mode = line.split()
    text = base + f"(* the user's edit {n} *)\n"
    time.sleep(float(delay))
    if mode == "none":
        pass  # the user did not save this time
    elif mode == "inplace":
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
    else:
        tmp = path + ".editor-swp"
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    print("saved", flush=True)
"""

#: the MCP side: per line ``<path> <delay>``, under the lock, reads the file as it is now
#: and commits its proof into it
MCP = r"""
import asyncio, sys
from pathlib import Path
from proof_orchestrator.backends import scan_text
from proof_orchestrator.goals import Outcome
from proof_orchestrator.ledger import Ledger
from proof_orchestrator.project.locks import file_lock
from proof_orchestrator.project.source import read_source
from proof_orchestrator.run.reports import Candidate, FileReport, FileStatus, GoalReport
from proof_orchestrator.run.writing import commit, render

async def main() -> None:
    ledger = Ledger(sys.argv[1])
    run_id = ledger.start_run("mcp", {}, "")
    while line := await asyncio.to_thread(sys.stdin.readline):
        name, delay = line.split()
        path = Path(name)
        await asyncio.sleep(float(delay))
        async with file_lock(path):
            # what AgentService does: work on what the file holds now
            text = read_source(path)
            hole = next((h for h in scan_text(path, text) if h.goal.name == "mcp_goal"), None)
            if hole is None:
                print("gone", flush=True)
                continue
            proof = ("reflexivity.",)  # MCP_PROOF
            report = GoalReport(hole.goal, Outcome.PROVED, "mcp:race", proof)
            item = Candidate.of(hole, report, ledger.upsert_goal(hole.goal))
            done = await commit(
                path, text, render(path, text, [item.patch]), [item], ledger, run_id,
                FileReport(path, FileStatus.INTERRUPTED),
            )
        print("written" if done.written else "refused", flush=True)

asyncio.run(main())
"""


#: the MCP server's side, for real: ``AgentService`` (the tools of ``orch mcp``);
#: ``locate <file>`` answers the hole's id, ``submit <id> <delay>`` submits its proof
#: (checked by coqc and the axiom audit) and answers ``<status> <written file or ->``
SERVICE = r"""
import asyncio, sys
from pathlib import Path
from proof_orchestrator.agents.service import AgentService
from proof_orchestrator.errors import AgentError
from proof_orchestrator.ledger import Ledger

async def main() -> None:
    async with AgentService(Path(sys.argv[2]), Ledger(sys.argv[1])) as service:
        while line := await asyncio.to_thread(sys.stdin.readline):
            verb, arg, *rest = line.split()
            if verb == "locate":
                found = [h.id for h in service.list_holes(arg) if h.name == "mcp_goal"]
                print(f"id {found[0]}", flush=True)
                continue
            await asyncio.sleep(float(rest[0]))
            try:
                result = await service.submit_proof(int(arg), "reflexivity.", "race")
            except AgentError:  # read while the editor was saving it in place: no hole
                print("gone -", flush=True)
                continue
            print(result.status, result.written or "-", flush=True)

asyncio.run(main())
"""


@dataclass
class Tally:
    fill_written: int = 0
    mcp_written: int = 0
    mcp_gone: int = 0
    user_last: int = 0
    modes: dict[str, int] = field(default_factory=dict)


def _spawn(script: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", script, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def _ask(proc: subprocess.Popen[str], line: str) -> None:
    assert proc.stdin is not None
    proc.stdin.write(line + "\n")
    proc.stdin.flush()


def _answer(proc: subprocess.Popen[str]) -> str:
    assert proc.stdout is not None
    answer = proc.stdout.readline().strip()
    if not answer:
        _, err = proc.communicate(timeout=30)
        pytest.fail(f"a racing process died: {err[-3000:]}")
    return answer


def _stop(proc: subprocess.Popen[str]) -> None:
    """End of input: the process ends; its pipes are drained and closed."""
    try:
        proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate(timeout=30)
    assert proc.returncode is not None


@pytest.fixture
def racers(tmp_path: Path, ledger_url: str) -> Iterator[tuple[subprocess.Popen[str], ...]]:
    base = tmp_path / "user-buffer.v"
    base.write_text(TEXT, encoding="utf-8")
    editor = _spawn(EDITOR, str(base))
    mcp = _spawn(MCP, ledger_url)
    try:
        yield editor, mcp
    finally:
        _stop(editor)
        _stop(mcp)


@pytest.fixture
def ledger_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'ledger.sqlite'}"


async def _fill_candidate(path: Path, ledger: Ledger, run_id: int) -> tuple[Candidate, str]:
    """``fill_goal``'s proof in ``TEXT``, checked for real (coqc, axiom audit): the
    candidate and the text the check accepted."""
    hole = next(h for h in scan_coq_text(path, TEXT) if h.goal.name == "fill_goal")
    report = GoalReport(hole.goal, Outcome.CANDIDATE, "race", FILL_PROOF, hole=hole)
    item = Candidate.of(hole, report, ledger.upsert_goal(hole.goal))
    verifier = CoqVerifier()
    try:
        file_report = FileReport(path, FileStatus.INTERRUPTED)
        verified = await verify_candidates(
            path, TEXT, [item], verifier, set(), ledger, run_id, "", file_report
        )
    finally:
        await verifier.aclose()
    assert verified.accepted == [item]
    return item, verified.text


def _with_mcp(path: Path, text: str) -> str:
    """``text`` with the MCP side's proof in it, as it writes it."""
    hole = next(h for h in scan_coq_text(path, text) if h.goal.name == "mcp_goal")
    return apply_patches(text, [Patch(hole, MCP_PROOF)])


def _proofs(ledger: Ledger, path: Path) -> dict[str, list[bool]]:
    """Per lemma of ``path``, the ``written`` flag of each proof the ledger holds."""
    found: dict[str, list[bool]] = {}
    with ledger.engine.connect() as connection:
        rows = connection.execute(
            select(GoalRow.name, Proof.written)
            .join(Proof, Proof.goal_id == GoalRow.id)
            .where(GoalRow.file == str(path))
        ).all()
    for name, written in rows:
        found.setdefault(name, []).append(bool(written))
    return found


async def test_fill_mcp_and_an_editor_racing_lose_no_proof_and_no_edit(
    tmp_path: Path, ledger_url: str, racers: tuple[subprocess.Popen[str], ...]
) -> None:
    editor, mcp = racers
    ledger = Ledger(ledger_url)
    rng = random.Random(52)
    tally = Tally()
    started = time.monotonic()
    try:
        run_id = ledger.start_run("fill", {}, "")
        first = tmp_path / "R0.v"
        first.write_text(TEXT, encoding="utf-8")
        _, fill_text = await _fill_candidate(first, ledger, run_id)
        checked = tmp_path / "Checked.v"
        checked.write_text(fill_text, encoding="utf-8")
        assert coqc_ok(checked)
        for n in range(ROUNDS):
            path = tmp_path / f"R{n}.v"
            path.write_text(TEXT, encoding="utf-8")
            hole = next(h for h in scan_coq_text(path, TEXT) if h.goal.name == "fill_goal")
            report = GoalReport(hole.goal, Outcome.PROVED, "race", FILL_PROOF, hole=hole)
            item = Candidate.of(hole, report, ledger.upsert_goal(hole.goal))
            mode = ("inplace", "rename", "none")[n % 3]
            tally.modes[mode] = tally.modes.get(mode, 0) + 1
            user = TEXT + f"(* the user's edit {n} *)\n"
            # the three writers start together, each a little later than told, in any order
            _ask(editor, f"{path} {n} {rng.uniform(0.0, SPREAD):.6f} {mode}")
            _ask(mcp, f"{path} {rng.uniform(0.0, SPREAD):.6f}")
            await asyncio.sleep(rng.uniform(0.0, SPREAD))
            file_report = FileReport(path, FileStatus.INTERRUPTED)
            done = await commit(path, TEXT, fill_text, [item], ledger, run_id, file_report)
            assert _answer(editor) == "saved"
            answer = _answer(mcp)
            final = path.read_text(encoding="utf-8")
            proofs = _proofs(ledger, path)
            where = f"round {n} ({mode}): {final!r}, ledger {proofs}"
            # every proof is in the ledger, written or not
            assert proofs.get("fill_goal") == [done.written], where
            if answer == "gone":
                # it read the file while the editor was saving it in place (truncated):
                # no hole, nothing checked or recorded (the service refuses the same way)
                assert mode == "inplace", where
                assert "mcp_goal" not in proofs, where
            else:
                assert proofs.get("mcp_goal") == [answer == "written"], where
            if not done.written:
                assert file_report.status is FileStatus.CHANGED, where
            if mode == "none":
                # no user: each proof marked written is in the file (one of the two may
                # have found the file changed by the other: not written, in the ledger)
                assert not done.written or "exact I." in final, f"fill's proof lost, {where}"
                assert answer != "written" or "reflexivity." in final, f"MCP's proof lost, {where}"
                assert done.written or answer == "written", where
            else:
                # the user's save came once: whatever we wrote after it kept it, and
                # whatever we wrote before it, the save replaced (as a save does)
                assert final in (user, _with_mcp(path, user)), f"the user's edit was lost, {where}"
                assert final == user or answer == "written", where
                tally.user_last += final == user
            tally.fill_written += done.written
            tally.mcp_written += answer == "written"
            tally.mcp_gone += answer == "gone"
    finally:
        ledger.close()
    wall = time.monotonic() - started
    print(f"{ROUNDS} rounds in {wall:.1f} s: {tally}")
    assert wall < 120


SERVICE_ROUNDS = 12


async def test_fill_races_a_real_mcp_submission_and_an_editor(tmp_path: Path) -> None:
    """The same race with the MCP side as ``orch mcp`` runs it: ``AgentService.submit_proof``
    in its own process, checking each proof with coqc under the file's lock."""
    root = tmp_path / "proj"
    root.mkdir()
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    base = tmp_path / "user-buffer.v"
    base.write_text(TEXT, encoding="utf-8")
    ledger = Ledger(url)
    editor = _spawn(EDITOR, str(base))
    service = _spawn(SERVICE, url, str(root))
    rng = random.Random(7)
    tally = Tally()
    started = time.monotonic()
    try:
        run_id = ledger.start_run("fill", {}, "")
        first = root / "S0.v"
        first.write_text(TEXT, encoding="utf-8")
        _, fill_text = await _fill_candidate(first, ledger, run_id)
        spread = 0.0
        for n in range(SERVICE_ROUNDS):
            path = root / f"S{n}.v"
            path.write_text(TEXT, encoding="utf-8")
            hole = next(h for h in scan_coq_text(path, TEXT) if h.goal.name == "fill_goal")
            report = GoalReport(hole.goal, Outcome.PROVED, "race", FILL_PROOF, hole=hole)
            item = Candidate.of(hole, report, ledger.upsert_goal(hole.goal))
            _ask(service, f"locate {path.name}")
            hole_id = int(_answer(service).split()[1])
            mode = ("inplace", "rename", "none")[n % 3]
            user = TEXT + f"(* the user's edit {n} *)\n"
            submitted = time.monotonic()
            # the first round measures a submission; the others spread the writers over it
            _ask(service, f"submit {hole_id} {rng.uniform(0.0, spread):.6f}")
            _ask(editor, f"{path} {n} {rng.uniform(0.0, spread):.6f} {mode}")
            await asyncio.sleep(rng.uniform(0.0, spread / 2))
            file_report = FileReport(path, FileStatus.INTERRUPTED)
            done = await commit(path, TEXT, fill_text, [item], ledger, run_id, file_report)
            status, written = _answer(service).split()
            spread = spread or 1.5 * (time.monotonic() - submitted)
            assert _answer(editor) == "saved"
            final = path.read_text(encoding="utf-8")
            proofs = _proofs(ledger, path)
            where = f"round {n} ({mode}): {status} {written}, {final!r}, ledger {proofs}"
            assert proofs.get("fill_goal") == [done.written], where
            mcp_written = written != "-"
            assert status == "verified" or not mcp_written, where
            if status == "verified":
                assert proofs.get("mcp_goal") == [mcp_written], where
            else:
                # not written: checked and kept in the ledger (the file changed), or the
                # hole was not found (read during an in-place save), nothing recorded
                assert proofs.get("mcp_goal") in (None, [False]), where
            if mode == "none":
                assert not done.written or "exact I." in final, f"fill's proof lost, {where}"
                assert not mcp_written or "reflexivity." in final, f"MCP's proof lost, {where}"
            else:
                assert final in (user, _with_mcp(path, user)), f"the user's edit was lost, {where}"
                assert final == user or mcp_written, where
                tally.user_last += final == user
            tally.fill_written += done.written
            tally.mcp_written += mcp_written
    finally:
        _stop(editor)
        _stop(service)
        ledger.close()
    print(
        f"{SERVICE_ROUNDS} rounds with AgentService in {time.monotonic() - started:.1f} s: {tally}"
    )


HOLES = """\
Lemma one : 1 + 1 = 2.
Proof.
Admitted.

Lemma two : forall b : bool, b = b.
Proof.
Admitted.
"""


FILL_FLAGS = ("--json", "--db")


def _orch_fill(path: Path, db: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "proof_orchestrator.cli", "fill", str(path), *FILL_FLAGS, str(db)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def test_orch_fill_keeps_a_save_made_while_it_checks_and_writes_its_proofs_next_run(
    tmp_path: Path,
) -> None:
    """``orch fill`` end to end: the user saves the file in place while fill checks its
    proofs (its verification folder appeared). The save stays; the proofs stay in the
    ledger, not written, the report says the file changed; the next run writes them."""
    path = tmp_path / "Holes.v"
    path.write_text(HOLES, encoding="utf-8")
    db = tmp_path / "ledger.sqlite"
    user = HOLES + "(* the user's edit *)\n"
    run = _orch_fill(path, db)
    scratch = [f"{tempfile.gettempdir()}/orch-verify-{run.pid}-*", f"{tmp_path}/.orch/tmp/verify-*"]
    saved = False
    deadline = time.monotonic() + 240
    while run.poll() is None and time.monotonic() < deadline and not saved:
        if any(glob.glob(pattern) for pattern in scratch):
            with open(path, "w", encoding="utf-8") as handle:  # in place, as an editor saves
                handle.write(user)
            saved = True
        time.sleep(0.002)
    out, err = run.communicate(timeout=300)
    assert saved, (out[-2000:], err[-2000:])
    assert path.read_text(encoding="utf-8") == user
    (report,) = json.loads(out)["files"]
    assert (report["status"], report["written"]) == ("changed", False), report
    assert "not overwritten" in report["message"]
    with sqlite3.connect(db) as connection:
        assert connection.execute("SELECT written FROM proofs").fetchall() == [(0,), (0,)]
    again = _orch_fill(path, db)
    out, err = again.communicate(timeout=300)
    assert again.returncode == 0, err[-2000:]
    (report,) = json.loads(out)["files"]
    assert {g["strategy"] for g in report["goals"]} == {"ledger-replay"}
    final = path.read_text(encoding="utf-8")
    assert "(* the user's edit *)" in final
    assert final.count("Qed.") == 2
    assert coqc_ok(path)
