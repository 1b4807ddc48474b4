"""The llm strategies against a stand-in model server on 127.0.0.1; the real coqtop checks all."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from typer.testing import CliRunner

from proof_orchestrator.cli import app
from proof_orchestrator.config import Settings, load_settings
from proof_orchestrator.coq.holes import scan_coq_text
from proof_orchestrator.coq.prover import CoqProver
from proof_orchestrator.coq.script import GateRefusal, check_script
from proof_orchestrator.coq.strategies.llm import LLMSearchStrategy, LLMStrategy, llm_strategies
from proof_orchestrator.coq.strategies.llm_prompt import parse_script, parse_tactics
from proof_orchestrator.errors import ScriptRejected
from proof_orchestrator.goals import Budget, Outcome
from proof_orchestrator.ledger import Ledger
from proof_orchestrator.ledger.models import Attempt
from proof_orchestrator.llm import (
    LLMClient,
    LLMSettings,
    llm_off_reason,
    load_llm_settings,
)
from proof_orchestrator.llm.providers import make_provider
from proof_orchestrator.run.pipeline import FillOptions, fill

from .conftest import coqc_ok
from .model_server import ModelServer, Reply

PLUS_ZERO = """\
Lemma plus_zero : forall n : nat, n + 0 = n.
Proof.
Admitted.
"""
TWO_HOLES = (
    PLUS_ZERO
    + """
Lemma zero_plus : forall n : nat, 0 + n = n.
Proof.
Admitted.
"""
)
OWN_ADD = """\
Inductive num : Set := zero : num | succ : num -> num.
Fixpoint add (n m : num) : num := match n with zero => m | succ p => succ (add p m) end.
Lemma add_succ : forall n m : num, add n (succ m) = succ (add n m).
Proof.
Admitted.
"""
RIGHT = (
    "```coq\nintros n. induction n as [|n IH].\n"
    "- reflexivity.\n- simpl. rewrite IH. reflexivity.\n```"
)
WRONG = "```coq\nintros n. reflexivity.\n```"
ADMIT = "```coq\nintros n. admit.\n```"
BUDGET = Budget(cpu_seconds=20.0, tactic_seconds=2.0)


@pytest.fixture
def model() -> Iterator[ModelServer]:
    server = ModelServer([Reply((RIGHT,))]).start()
    yield server
    server.stop()


def _settings(server: ModelServer, provider: str = "openai", **changes: Any) -> LLMSettings:
    base = server.base_url + ("/v1" if provider == "openai" else "")
    settings = LLMSettings(
        provider=provider,
        model="stand-in",
        base_url=base,
        api_key="test-key",
        samples=2,
        price_in=3.0,
        price_out=15.0,
        timeout=5.0,
        max_retries=2,
    )
    return replace(settings, **changes)


@contextlib.asynccontextmanager
async def _sessions(directory: Path, text: str) -> AsyncIterator[list[tuple[Any, Any]]]:
    """Sessions at every hole of ``text`` (written to ``directory/T.v``)."""
    path = directory / "T.v"
    path.write_text(text, encoding="utf-8")
    prover = CoqProver(cwd=str(directory))
    try:
        async with contextlib.AsyncExitStack() as stack:
            opened = []
            for hole in scan_coq_text(path, text):
                session = await stack.enter_async_context(
                    prover.session(hole.goal, text, hole.prefix_end)
                )
                opened.append((session, hole))
            yield opened
    finally:
        await prover.aclose()


def _client(settings: LLMSettings, ledger: Ledger) -> LLMClient:
    return LLMClient(settings, make_provider(settings), ledger)


async def test_a_right_proof_from_the_model_is_verified_written_and_costed(
    model: ModelServer, tmp_path: Path, ledger: Ledger
) -> None:
    path = tmp_path / "T.v"
    path.write_text(PLUS_ZERO, encoding="utf-8")
    strategy = LLMStrategy(_client(_settings(model), ledger), ledger)
    report = await fill(
        [path],
        ledger,
        FillOptions(orch=Settings(budget=20.0, tactic_timeout=2.0)),
        strategies=[strategy],
    )
    assert [g.outcome for g in report.goals] == [Outcome.PROVED]
    assert "induction n" in path.read_text(encoding="utf-8")
    assert coqc_ok(path)
    # the prompt carried the statement and the goal as coqtop shows it
    ((_, body),) = model.requests
    prompt = body["messages"][1]["content"]
    assert "forall n : nat, n + 0 = n" in prompt
    assert "============================" in prompt
    assert body["n"] == 2
    with ledger.engine.connect() as connection:
        (row,) = connection.execute(select(Attempt).where(Attempt.strategy == "llm")).all()
    assert (row.tokens_in, row.tokens_out) == (1000, 200)
    assert row.cost_usd == pytest.approx((1000 * 3.0 + 200 * 15.0) / 1e6)
    assert row.llm_seconds > 0
    assert ledger.stats()["llm"]["cost_usd"] == pytest.approx(0.006)
    shown = CliRunner().invoke(app, ["stats", str(tmp_path), "--db", ledger.url])
    assert "Model spend: $0.0060 on 1 attempts, 1000 tokens in, 200 out" in shown.output
    said = " ".join(shown.output.split())
    assert "Model replies: 2 from 1 requests; 1 held a script" in said
    assert "refused by the gate: none; 1 checked by the prover, 1 closed their goal" in said


async def test_wrong_and_admit_proofs_are_rejected(
    model: ModelServer, tmp_path: Path, ledger: Ledger
) -> None:
    model.replies = [Reply((WRONG,)), Reply((ADMIT,))]
    strategy = LLMStrategy(_client(_settings(model, "anthropic"), ledger), ledger)
    async with _sessions(tmp_path, PLUS_ZERO) as [(session, hole)]:
        result = await strategy.prove(session, hole.goal, BUDGET)
    assert result.outcome is Outcome.FAILED
    assert "gate: 'admit' is never allowed" in result.message
    assert "intros n reflexivity" in result.message.replace(".", "")
    assert [path for path, _ in model.requests] == ["/v1/messages", "/v1/messages"]
    assert result.tokens_in == 2000


async def test_a_second_run_is_served_from_the_cache_with_no_request(
    model: ModelServer, tmp_path: Path, ledger: Ledger
) -> None:
    settings = _settings(model)
    async with _sessions(tmp_path, PLUS_ZERO) as [(session, hole)]:
        first = await LLMStrategy(_client(settings, ledger), ledger).prove(
            session, hole.goal, BUDGET
        )
        again = await LLMStrategy(_client(settings, ledger), ledger).prove(
            session, hole.goal, BUDGET
        )
    assert first.outcome is again.outcome is Outcome.CANDIDATE
    assert len(model.requests) == 1
    assert first.cost_usd > 0
    assert (again.tokens_in, again.tokens_out, again.cost_usd) == (0, 0, 0.0)


async def test_429_with_retry_after_then_success(
    model: ModelServer, tmp_path: Path, ledger: Ledger
) -> None:
    model.replies = [Reply(status=429, headers=(("retry-after", "0.2"),)), Reply((RIGHT,))]
    async with _sessions(tmp_path, PLUS_ZERO) as [(session, hole)]:
        result = await LLMStrategy(_client(_settings(model), ledger), ledger).prove(
            session, hole.goal, BUDGET
        )
    assert result.outcome is Outcome.CANDIDATE
    assert len(model.requests) == 2


async def test_a_model_that_times_out_is_a_failed_attempt_with_the_reason(
    model: ModelServer, tmp_path: Path, ledger: Ledger
) -> None:
    model.replies = [Reply((RIGHT,), delay=2.0)]
    settings = _settings(model, timeout=0.5, max_retries=1)
    async with _sessions(tmp_path, PLUS_ZERO) as [(session, hole)]:
        result = await LLMStrategy(_client(settings, ledger), ledger).prove(
            session, hole.goal, BUDGET
        )
    assert result.outcome is Outcome.FAILED
    assert result.message.startswith("model timeout:")
    # the client made two requests (one retry); the server may record the second a moment
    # after the client gave up on it when the machine is loaded
    assert "after 2 tries" in result.message
    for _ in range(100):  # up to 5 s
        if len(model.requests) >= 2:
            break
        await asyncio.sleep(0.05)
    assert len(model.requests) == 2


async def test_server_errors_then_malformed_replies_end_as_malformed(
    model: ModelServer, tmp_path: Path, ledger: Ledger
) -> None:
    model.replies = [Reply(status=503), Reply(("",))]
    async with _sessions(tmp_path, PLUS_ZERO) as [(session, hole)]:
        result = await LLMStrategy(_client(_settings(model), ledger), ledger).prove(
            session, hole.goal, BUDGET
        )
    assert result.outcome is Outcome.FAILED
    assert result.message.startswith("model malformed:")
    assert len(model.requests) == 3


async def test_the_budget_cap_stops_requests(
    model: ModelServer, tmp_path: Path, ledger: Ledger
) -> None:
    # one request costs $0.006: a $0.001 cap allows the first and refuses the next
    client = _client(_settings(model, budget_usd=0.001), ledger)
    strategy = LLMStrategy(client, ledger)
    async with _sessions(tmp_path, TWO_HOLES) as [(first, one), (second, two)]:
        done = await strategy.prove(first, one.goal, BUDGET)
        refused = await strategy.prove(second, two.goal, BUDGET)
    assert done.outcome is Outcome.CANDIDATE
    assert refused.outcome is Outcome.FAILED
    assert refused.message.startswith("model budget:")
    assert len(model.requests) == 1
    assert client.spent_usd == pytest.approx(0.006)


async def test_next_tactics_from_the_model_guide_the_search(
    model: ModelServer, tmp_path: Path, ledger: Ledger
) -> None:
    # the search's own tactics do not prove this (alone it gives up after some 34,000
    # tactics; it proves ``add n zero = n`` through ``num_rec``)
    model.replies = [Reply(("1. intros n m.\n2. induction n as [|n IH]; simpl.\n3. rewrite IH.",))]
    strategy = LLMSearchStrategy(_client(_settings(model), ledger), ledger)
    async with _sessions(tmp_path, OWN_ADD) as [(session, hole)]:
        result = await strategy.prove(session, hole.goal, BUDGET)
    assert result.outcome is Outcome.CANDIDATE, result.message
    assert "induction n as [|n IH]; simpl." in result.sentences
    assert model.requests
    assert result.tokens_in > 0


def test_without_a_key_the_strategy_is_off_and_says_why(tmp_path: Path) -> None:
    settings = load_llm_settings(tmp_path, environ={"ORCH_LLM_MODEL": "m"})
    assert llm_off_reason(settings) is not None
    assert "API key" in str(llm_off_reason(settings))


def test_settings_come_from_orch_toml_and_the_environment(tmp_path: Path) -> None:
    (tmp_path / "orch.toml").write_text(
        'profile = 2\n[llm]\nprovider = "anthropic"\nmodel = "claude-x"\nsamples = 3\n'
        "[llm.prices.claude-x]\ninput = 3.0\noutput = 15.0\n",
        encoding="utf-8",
    )
    settings = load_llm_settings(
        tmp_path, environ={"ORCH_LLM_SAMPLES": "5", "ANTHROPIC_API_KEY": "k"}
    )
    assert (settings.provider, settings.model, settings.samples) == ("anthropic", "claude-x", 5)
    assert settings.cost(1_000_000, 1_000_000) == pytest.approx(18.0)
    assert llm_off_reason(settings) is None
    orch, _ = load_settings(tmp_path, environ={})
    assert orch.profile == 2


def test_llm_strategies_follow_the_settings(
    model: ModelServer, tmp_path: Path, ledger: Ledger, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("OPENAI_API_KEY", "ORCH_LLM_API_KEY", "ORCH_LLM_MODEL", "ORCH_LLM_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "orch.toml").write_text(
        f'[llm]\nmodel = "stand-in"\nbase_url = "{model.base_url}/v1"\napi_key = "k"\n',
        encoding="utf-8",
    )
    names = [s.name for s in llm_strategies(ledger, tmp_path, budget_usd=0.5)]
    assert names == ["llm", "llm-search"]
    (tmp_path / "orch.toml").write_text('[llm]\nmodel = "stand-in"\n', encoding="utf-8")
    assert llm_strategies(ledger, tmp_path) == []  # no key: off


def test_replies_are_read_into_sentences() -> None:
    reply = "Here it is:\n```coq\nProof.\nintros n.\n- simpl. reflexivity.\nQed.\n```\nDone."
    assert parse_script(reply) == ("intros n.", "-", "simpl.", "reflexivity.")
    assert parse_script("no proof (* here") == ()
    # cut off by max_tokens: the fence never closes, the last sentence never ends
    cut = "Sure! Here:\n```coq fenced\nintros n.\ninduction n as [|n IH].\n- simpl. rewr"
    assert parse_script(cut) == ("intros n.", "induction n as [|n IH].", "-", "simpl.")
    assert parse_script("```coq\nintros n. (* and then") == ("intros n.",)
    listed = "1. intros n.\n2) induction n.\n- intros n.\nnot a tactic\n* lia."
    assert parse_tactics(listed, 3) == ["intros n.", "induction n.", "lia."]


async def test_a_server_that_returns_one_choice_is_asked_again_for_the_rest(
    model: ModelServer, tmp_path: Path, ledger: Ledger
) -> None:
    # llama.cpp's and Ollama's servers ignore n: three samples take three requests
    model.replies = [Reply((WRONG,), choices=1, tokens_in=100, tokens_out=10)]
    client = _client(_settings(model, samples=3), ledger)
    async with _sessions(tmp_path, PLUS_ZERO) as [(session, hole)]:
        result = await LLMStrategy(client, ledger).prove(session, hole.goal, BUDGET)
    assert [body["n"] for _, body in model.requests] == [3, 2, 1]
    assert result.llm_checks is not None
    assert result.llm_checks["replies"] == 3
    assert result.llm_checks["checked"] == 3
    assert len(result.llm_checks["request_seconds"]) == 3
    assert (result.tokens_in, result.tokens_out) == (300, 30)


async def test_a_stream_cut_off_before_its_end_is_not_taken_as_a_reply(
    model: ModelServer, tmp_path: Path, ledger: Ledger
) -> None:
    # a server that drops a reply halfway sends no finish_reason: the text is not whole
    model.replies = [Reply((RIGHT,), cut=True)]
    async with _sessions(tmp_path, PLUS_ZERO) as [(session, hole)]:
        result = await LLMStrategy(_client(_settings(model), ledger), ledger).prove(
            session, hole.goal, BUDGET
        )
    assert result.outcome is Outcome.FAILED
    assert result.message.startswith("model malformed:")
    assert "before the reply was finished" in result.message
    assert len(model.requests) == 3  # retried twice


async def test_a_server_that_stops_answering_is_off_for_the_rest_of_the_run(
    model: ModelServer, tmp_path: Path, ledger: Ledger, caplog: pytest.LogCaptureFixture
) -> None:
    client = _client(_settings(model, max_retries=1), ledger)
    strategy = LLMStrategy(client, ledger)
    model.stop()  # nothing listens on its port any more
    async with _sessions(tmp_path, TWO_HOLES) as [(first, one), (second, two)]:
        failed = await strategy.prove(first, one.goal, BUDGET)
        skipped = await strategy.prove(second, two.goal, BUDGET)
    assert failed.outcome is Outcome.FAILED
    assert failed.message.startswith("model connection:")
    assert failed.llm_checks is not None
    assert failed.llm_checks["requests"] == 2
    assert skipped.outcome is Outcome.SKIPPED
    assert "stopped answering" in skipped.message
    assert strategy.off_reason() == skipped.message
    warnings = [r for r in caplog.records if "stopped answering" in r.getMessage()]
    assert len(warnings) == 1


def test_the_gate_says_why_it_refused_a_script() -> None:
    kinds = {}
    for script in (["intros n.", "admit."], ["Qed."], ["intros (* a *) n."], ["Abort All."]):
        with pytest.raises(ScriptRejected) as refused:
            check_script(script)
        kinds[script[-1]] = refused.value.kind
    assert kinds == {
        "admit.": GateRefusal.FORBIDDEN,
        "Qed.": GateRefusal.FORBIDDEN,
        "intros (* a *) n.": GateRefusal.COMMENT,
        "Abort All.": GateRefusal.FORBIDDEN,
    }
    with pytest.raises(ScriptRejected) as refused:
        check_script(["Print nat."])
    assert refused.value.kind == GateRefusal.VERNACULAR
    with pytest.raises(ScriptRejected) as refused:
        check_script(["intros n"])  # a script cut off mid-sentence
    assert refused.value.kind == GateRefusal.SYNTAX
    with pytest.raises(ScriptRejected) as refused:
        check_script([])
    assert refused.value.kind == GateRefusal.EMPTY


async def test_a_server_that_refuses_n_above_one_is_asked_one_choice_at_a_time(
    model: ModelServer, tmp_path: Path, ledger: Ledger
) -> None:
    # llama.cpp's llama-server answers n > 1 with HTTP 400
    model.replies = [Reply((WRONG,), max_n=1)]
    client = _client(_settings(model, samples=2), ledger)
    async with _sessions(tmp_path, TWO_HOLES) as [(first, one), (second, two)]:
        result = await LLMStrategy(client, ledger).prove(first, one.goal, BUDGET)
        again = await LLMStrategy(client, ledger).prove(second, two.goal, BUDGET)
    assert [body["n"] for _, body in model.requests] == [2, 1, 1, 1, 1]
    assert result.llm_checks is not None
    assert result.llm_checks["requests"] == 3
    assert result.llm_checks["replies"] == 2
    assert again.llm_checks is not None
    assert again.llm_checks["requests"] == 2


def test_the_llm_flag_says_where_the_model_comes_from() -> None:
    shown = CliRunner().invoke(app, ["fill", "--help"], env={"COLUMNS": "300"})
    line = next(li for li in shown.output.splitlines() if "--llm " in li)
    assert "the [llm] table of orch.toml or ORCH_LLM_BASE_URL and ORCH_LLM_MODEL" in line
