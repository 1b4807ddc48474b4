"""`orch mcp` driven by the official MCP client over stdio, against real Coq on a bank file."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import Implementation
from sqlalchemy import select

from proof_orchestrator.ledger import Ledger
from proof_orchestrator.ledger.models import Attempt

from .conftest import BANK, coqc_ok

ORCH = str(Path(sys.executable).parent / "orch")
NEGB = "bool_negb_involutive"
RIGHT = "intros b. destruct b; reflexivity."


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    shutil.copyfile(BANK / "coq" / "BankBool.v", root / "BankBool.v")
    return root


@contextlib.asynccontextmanager
async def _client(
    project: Path, name: str = "test-agent", *flags: str
) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=ORCH,
        args=["mcp", str(project), "--db", str(project.parent / "ledger.sqlite"), *flags],
        cwd=str(project),
    )
    with open(project.parent / f"{name}.log", "w") as errlog:  # noqa: ASYNC230
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write, client_info=Implementation(name=name, version="1")) as s,
        ):
            await s.initialize()
            yield s


async def _call(session: ClientSession, tool: str, **arguments: Any) -> Any:
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, result.content
    data = result.structured_content
    return data["result"] if isinstance(data, dict) and set(data) == {"result"} else data


async def test_an_agent_reads_tries_and_submits_proofs(project: Path) -> None:
    path = project / "BankBool.v"
    async with _client(project) as session:
        holes = await _call(session, "list_holes")
        assert len(holes) == path.read_text(encoding="utf-8").count("Admitted.")
        hole = next(h for h in holes if h["name"] == NEGB)
        assert hole["file"] == "BankBool.v"
        assert hole["status"] == "open"

        goal = await _call(session, "goal", hole_id=hole["id"])
        assert "negb (negb b) = b" in goal["goal"]
        assert "============================" in goal["goal"]

        wrong = await _call(session, "try_tactics", hole_id=hole["id"], script="intros b. lia.")
        assert wrong["status"] == "error"
        assert wrong["failing_sentence"] == "lia."
        assert wrong["error"]

        partial = await _call(session, "try_tactics", hole_id=hole["id"], script="intros b.")
        assert partial["status"] == "goals"
        assert "negb (negb b) = b" in partial["goals"][0]

        right = await _call(session, "try_tactics", hole_id=hole["id"], script=RIGHT)
        assert right["status"] == "complete"
        assert right["goals"] == []
        assert "Admitted" in path.read_text(encoding="utf-8")  # try_tactics writes nothing

        admit = await _call(session, "submit_proof", hole_id=hole["id"], script="intros b. admit.")
        assert admit["status"] == "rejected"
        assert "admit" in admit["reason"]

        done = await _call(session, "submit_proof", hole_id=hole["id"], script=RIGHT)
        assert done["status"] == "verified"
        assert done["written"] == "BankBool.v"
        assert "destruct b; reflexivity." in path.read_text(encoding="utf-8")
        assert coqc_ok(path)

        outside = await session.call_tool("list_holes", {"path": "../"})
        assert outside.is_error
        assert "outside the project" in str(outside.content)

        holes = await _call(session, "list_holes")
        assert NEGB not in [h["name"] for h in holes]
        stats = await _call(session, "stats")
        assert stats["proofs"] == 1

    ledger = Ledger(f"sqlite:///{project.parent / 'ledger.sqlite'}")
    try:
        with ledger.engine.connect() as connection:
            rows = connection.execute(
                select(Attempt.strategy, Attempt.outcome).order_by(Attempt.id)
            ).all()
    finally:
        ledger.close()
    assert [tuple(r) for r in rows] == [
        ("mcp:test-agent", "inspected"),
        ("mcp:test-agent", "failed"),
        ("mcp:test-agent", "failed"),
        ("mcp:test-agent", "candidate"),
        ("mcp:test-agent", "rejected"),
        ("mcp:test-agent", "proved"),
    ]


async def test_two_agents_submitting_at_once_write_the_file_once(project: Path) -> None:
    path = project / "BankBool.v"
    async with _client(project, "alice") as alice, _client(project, "bob") as bob:
        holes = await _call(alice, "list_holes")
        hole_id = next(h["id"] for h in holes if h["name"] == NEGB)
        await _call(bob, "list_holes")
        first, second = await asyncio.gather(
            _call(alice, "submit_proof", hole_id=hole_id, script=RIGHT),
            _call(bob, "submit_proof", hole_id=hole_id, script="destruct b; reflexivity."),
        )
    outcomes = sorted([first["status"], second["status"]])
    assert outcomes == ["rejected", "verified"]
    loser = first if first["status"] == "rejected" else second
    assert "no longer open" in loser["reason"]
    text = path.read_text(encoding="utf-8")
    assert text.count("reflexivity.") == 1
    assert coqc_ok(path)


async def test_an_agent_runs_the_portfolio_and_completes_a_ticket(project: Path) -> None:
    path = project / "BankBool.v"
    async with _client(project) as session:
        holes = {h["name"]: h["id"] for h in await _call(session, "list_holes")}
        found = await _call(
            session, "run_strategies", hole_id=holes["bool_andb_true_l"], cpu_s=10.0
        )
        assert found["status"] == "verified", found
        assert found["strategy"]
        assert "Lemma bool_andb_true_l" in path.read_text(encoding="utf-8")
        assert "bool_andb_true_l" not in [h["name"] for h in await _call(session, "list_holes")]
        assert coqc_ok(path)

        ledger = Ledger(f"sqlite:///{project.parent / 'ledger.sqlite'}")
        try:
            ticket_id, _ = ledger.publish_ticket(
                fingerprint="helper-fp",
                statement="forall b : bool, orb b false = b",
                name="orb_false_r_helper",
                parent_goal_id=holes["bool_orb_comm"],
            )
        finally:
            ledger.close()
        assert [t["id"] for t in await _call(session, "tickets")] == [ticket_id]
        claimed = await _call(session, "claim_ticket", ticket_id=ticket_id)
        assert claimed["claimed_by"] == "mcp:test-agent"
        wrong = await _call(
            session, "complete_ticket", ticket_id=ticket_id, script="intros b. reflexivity."
        )
        assert wrong["status"] == "rejected"
        right = await _call(
            session, "complete_ticket", ticket_id=ticket_id, script="destruct b; reflexivity."
        )
        assert right["status"] == "verified", right
        assert await _call(session, "tickets") == []


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_http_needs_the_token_when_one_is_set(project: Path) -> None:
    port = _free_port()
    env = {**os.environ, "ORCH_MCP_TOKEN": "s3cret"}
    server = await asyncio.create_subprocess_exec(
        *[ORCH, "mcp", str(project), "--http", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        async with httpx2.AsyncClient() as plain:
            refused: httpx2.Response | None = None
            for _ in range(300):
                try:
                    refused = await plain.post(url, json={})
                    break
                except httpx2.ConnectError:
                    await asyncio.sleep(0.1)
            assert refused is not None, "orch mcp --http did not start listening in 30 s"
            assert refused.status_code == 401
        headers = {"Authorization": "Bearer s3cret"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=60) as authorised,
            streamable_http_client(url, http_client=authorised) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            holes = await _call(session, "list_holes")
            assert NEGB in [h["name"] for h in holes]
    finally:
        server.terminate()
        await asyncio.wait_for(server.wait(), 30)


def test_http_off_loopback_without_a_token_is_refused(project: Path) -> None:
    from typer.testing import CliRunner

    from proof_orchestrator.cli import app

    result = CliRunner().invoke(
        app, ["mcp", str(project), "--http", "--host", "0.0.0.0"], env={"ORCH_MCP_TOKEN": ""}
    )
    assert result.exit_code == 2
    assert "ORCH_MCP_TOKEN" in result.output


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True)
    return done.stdout


async def test_with_git_a_verified_proof_goes_to_a_branch(project: Path) -> None:
    _git(project, "init", "--quiet", "-b", "main")
    _git(project, "config", "user.name", "Someone")
    _git(project, "config", "user.email", "someone@example.org")
    _git(project, "add", ".")
    _git(project, "commit", "--quiet", "-m", "start")
    before = (project / "BankBool.v").read_text(encoding="utf-8")
    async with _client(project, "test-agent", "--git") as session:
        holes = await _call(session, "list_holes")
        hole_id = next(h["id"] for h in holes if h["name"] == NEGB)
        done = await _call(session, "submit_proof", hole_id=hole_id, script=RIGHT)
    assert done["status"] == "verified"
    assert done["written"] == ""
    assert done["branch"].startswith("auto/lem/")
    assert (project / "BankBool.v").read_text(encoding="utf-8") == before
    on_branch = _git(project, "show", f"{done['branch']}:BankBool.v")
    assert "destruct b; reflexivity." in on_branch


#: ``plus_zero_r`` was renamed ``plus_n_zero``; ``twice`` still uses the old name
BROKEN = """\
Inductive num : Type := zero : num | succ : num -> num.
Fixpoint plus (a b : num) : num := match a with zero => b | succ p => succ (plus p b) end.
Lemma plus_n_zero : forall n, plus n zero = n.
Proof. induction n; simpl; congruence. Qed.
Lemma twice : forall k, plus (plus k zero) zero = k.
Proof. intros k. rewrite plus_zero_r. rewrite plus_zero_r. reflexivity. Qed.
"""


async def test_an_agent_lists_broken_proofs_and_repairs_one(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    path = root / "Broken.v"
    path.write_text(BROKEN, encoding="utf-8")
    async with _client(root) as session:
        (broken,) = await _call(session, "broken_proofs")
        assert broken["name"] == "twice"
        assert broken["kind"] == "unknown_reference"
        assert broken["failing"] == "rewrite plus_zero_r."
        assert "plus_zero_r" in broken["error"]
        wrong = await _call(session, "submit_proof", hole_id=broken["id"], script="reflexivity.")
        assert wrong["status"] == "rejected"
        assert path.read_text(encoding="utf-8") == BROKEN
        fixed = "intros k. rewrite plus_n_zero. rewrite plus_n_zero. reflexivity."
        done = await _call(session, "submit_proof", hole_id=broken["id"], script=fixed)
        assert done["status"] == "verified", done
        assert done["written"] == "Broken.v"
        assert "plus_zero_r" not in path.read_text(encoding="utf-8")
        assert coqc_ok(path)
        assert await _call(session, "broken_proofs") == []
