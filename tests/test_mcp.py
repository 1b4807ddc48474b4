"""`orch mcp` driven by the official MCP client over stdio, against real Coq on a bank file."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
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
async def _client(project: Path, name: str = "test-agent") -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=ORCH,
        args=["mcp", str(project), "--db", str(project / "ledger.sqlite")],
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

    ledger = Ledger(f"sqlite:///{project / 'ledger.sqlite'}")
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
