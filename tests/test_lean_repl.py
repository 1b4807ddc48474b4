"""The Lean REPL client against recorded real REPL traffic (tests/lean_replay.py)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from proof_orchestrator.errors import (
    ProverCrashed,
    ProverHung,
    ProverProtocolError,
    ProverReplyTooLarge,
    ProverRequestError,
    SessionClosed,
)
from proof_orchestrator.lean.repl import (
    LeanRepl,
    parse_command_reply,
    parse_tactic_reply,
)

from .lean_replay import parse_request, split_blocks
from .transcripts import transcripts, with_replies

REPLAY = Path(__file__).with_name("lean_replay.py")


def replay_argv(*names: str, extra: tuple[str, ...] = ()) -> list[str]:
    """A replay REPL answering from the named transcripts (skips the test without them)."""
    paths = [str(transcripts() / name) for name in names]
    return [sys.executable, str(REPLAY), *paths, *extra]


def recorded_pairs(path: Path) -> list[tuple[str, str]]:
    answers = path.with_name(path.name.removesuffix(".in") + ".expected.out")
    return list(
        zip(
            split_blocks(path.read_text(encoding="utf-8")),
            split_blocks(answers.read_text(encoding="utf-8")),
            strict=True,
        )
    )


def test_the_corpus_is_whole() -> None:
    """A found corpus holds every transcript, so no parametrization can silently shrink."""
    core = transcripts() / "core"
    replied = [p for p in core.glob("*.in") if p.with_name(p.stem + ".expected.out").exists()]
    assert len(replied) >= 55, f"expected at least 55 core transcripts with replies in {core}"
    assert len(with_replies("mathlib")) >= 16
    without = sorted(p.name for p in core.glob("*.in") if p not in replied)
    # recorded without replies upstream: nothing to replay
    assert without == ["pickle_scoped_notation.in", "pickle_scoped_notation_2.in"]
    assert len(with_replies("core")) == len(replied)


def _check_typed(request: dict[str, Any], raw: dict[str, Any]) -> None:
    """The client's typed view of ``raw`` says what the JSON says."""
    if {"tactic", "proofState", "unpickleProofStateFrom"} & request.keys():
        message = raw.get("message")
        if isinstance(message, str) and not message.startswith("Lean error:"):
            with pytest.raises(ProverRequestError):
                parse_tactic_reply(raw)
            return
        reply = parse_tactic_reply(raw)
        if isinstance(message, str):
            assert reply.failed
            assert reply.proof_state is None
            assert reply.error == message.removeprefix("Lean error:").strip()
            return
        assert reply.proof_state == raw["proofState"]
        assert list(reply.goals) == raw["goals"]
        has_error = any(m["severity"] == "error" for m in raw.get("messages", []))
        assert reply.complete == (
            raw["goals"] == [] and not has_error and raw.get("proofStatus") == "Completed"
        )
        assert [s.proof_state for s in reply.sorries] == [
            s["proofState"] for s in raw.get("sorries", [])
        ]
        return
    if "message" in raw:
        with pytest.raises(ProverRequestError) as caught:
            parse_command_reply(raw)
        assert caught.value.message == raw["message"]
        return
    command_reply = parse_command_reply(raw)
    assert command_reply.env == raw["env"]
    assert [(s.proof_state, s.goal) for s in command_reply.sorries] == [
        (s["proofState"], s["goal"]) for s in raw.get("sorries", [])
    ]
    for sorry, recorded in zip(command_reply.sorries, raw.get("sorries", []), strict=True):
        if "pos" in recorded:
            assert sorry.pos is not None
            assert (sorry.pos.line, sorry.pos.column) == (
                recorded["pos"]["line"],
                recorded["pos"]["column"],
            )
    assert [m.data for m in command_reply.errors] == [
        m["data"] for m in raw.get("messages", []) if m["severity"] == "error"
    ]
    assert len(command_reply.tactics) == len(raw.get("tactics", []))


@pytest.mark.parametrize("transcript", with_replies("core") + with_replies("mathlib"))
async def test_client_reads_every_recorded_reply(transcript: Path) -> None:
    """Each recorded request, sent through the client, comes back framed and typed right."""
    async with LeanRepl([sys.executable, str(REPLAY), str(transcript)]) as repl:
        for request_text, reply_text in recorded_pairs(transcript):
            raw = await repl.request_text(request_text, timeout=30)
            assert raw == json.loads(reply_text)
            _check_typed(parse_request(request_text), raw)
        assert repl.alive


async def test_tactic_mode_walks_a_proof_to_no_goals() -> None:
    async with LeanRepl(replay_argv("core/proof_branching.in")) as repl:
        reply = await repl.command(
            "theorem complex_and (p q r : Prop) (h1 : p ∧ q) (h2 : q → r) : p ∧ r := by sorry",
            timeout=10,
        )
        assert reply.env == 0
        assert not reply.errors
        (sorry,) = reply.sorries
        assert sorry.goal.endswith("⊢ p ∧ r")
        assert sorry.pos is not None
        assert (sorry.pos.line, sorry.pos.column) == (1, 75)
        step = await repl.tactic("apply And.intro", sorry.proof_state, timeout=10)
        assert len(step.goals) == 2
        assert not step.complete
        assert not step.failed
        assert step.goals[0].startswith("case left")
        states = [step.proof_state]
        for tactic in ("exact h1.left", "apply h2", "exact h1.right"):
            assert states[-1] is not None
            step = await repl.tactic(tactic, states[-1], timeout=10)
            states.append(step.proof_state)
        assert step.complete
        assert step.goals == ()
        assert step.proof_status == "Completed"


async def test_branching_reuses_an_environment() -> None:
    """Two commands continue from one environment; the REPL hands out fresh numbers."""
    async with LeanRepl(replay_argv("core/file_env.in", "core/dup_sorries.in")) as repl:
        base = await repl.command("def f : Nat := 1", timeout=10)
        after = await repl.command(
            "theorem demo (a b: Nat): a + b = b + a := by rw [Nat.add_comm]",
            base.env,
            timeout=10,
        )
        assert (base.env, after.env) == (0, 1)
        assert not after.errors
        first = await repl.command("theorem thm1 : 1 = 1 := sorry", timeout=10)
        second = await repl.command("theorem thm2 : 2 = 2 := sorry", first.env, timeout=10)
        assert [s.goal for s in first.sorries + second.sorries] == ["⊢ 1 = 1", "⊢ 2 = 2"]
        assert second.sorries[0].proof_state == 1


async def test_error_messages_and_failed_tactics() -> None:
    async with LeanRepl(
        replay_argv("core/invalid_tactic.in", "core/unknown_tactic.in", "core/incomplete.in")
    ) as repl:
        opened = await repl.command("theorem my_theorem (x : Nat) : x = x := by sorry", timeout=10)
        bad = await repl.tactic("exact my_fake_premise", opened.sorries[0].proof_state, timeout=10)
        # the REPL papers over the error with a sorry and reports no goals: not a proof
        assert bad.goals == ()
        assert bad.failed
        assert not bad.complete
        assert bad.errors == ("Unknown identifier `my_fake_premise`",)
        unknown = await repl.tactic("exat 42", 0, timeout=10)
        assert unknown.failed
        assert "unknown tactic" in unknown.error
        incomplete = await repl.command("def f : Nat := by apply Nat.succ", timeout=10)
        assert [m.data for m in incomplete.errors] == ["unsolved goals\n⊢ Nat"]


async def test_a_refused_request_raises_and_the_repl_stays_usable() -> None:
    async with LeanRepl(
        replay_argv("core/unknown_environment.in", "core/unknown_proof_state.in")
    ) as repl:
        with pytest.raises(ProverRequestError, match="Unknown environment"):
            await repl.command("def f : Nat := by sorry", 5, timeout=10)
        assert repl.alive
        opened = await repl.command("def f : Nat := by sorry", timeout=10)
        assert opened.sorries[0].goal == "⊢ Nat"
        with pytest.raises(ProverRequestError, match="Unknown proof state"):
            await repl.tactic("exact 42", 1, timeout=10)
        assert repl.alive


async def test_malformed_json_poisons_the_repl() -> None:
    async with LeanRepl(
        replay_argv("core/proof_branching.in", extra=("--garbage-at", "1"))
    ) as repl:
        pid = repl.pid
        with pytest.raises(ProverProtocolError, match="not JSON"):
            await repl.command(
                "theorem complex_and (p q r : Prop) (h1 : p ∧ q) (h2 : q → r) : p ∧ r := by sorry",
                timeout=10,
            )
        assert not repl.alive
        assert repl.poisoned
        assert pid is not None
        assert not psutil.pid_exists(pid)
        with pytest.raises(SessionClosed):
            await repl.tactic("apply And.intro", 0, timeout=10)


@pytest.mark.parametrize(
    ("fault", "expected"), [("--cut-at", "middle of a reply"), ("--exit-at", "instead of a reply")]
)
async def test_eof_is_a_crash(fault: str, expected: str) -> None:
    async with LeanRepl(replay_argv("core/proof_branching.in", extra=(fault, "2"))) as repl:
        opened = await repl.command(
            "theorem complex_and (p q r : Prop) (h1 : p ∧ q) (h2 : q → r) : p ∧ r := by sorry",
            timeout=10,
        )
        with pytest.raises(ProverCrashed, match=expected):
            await repl.tactic("apply And.intro", opened.sorries[0].proof_state, timeout=10)
        assert not repl.alive


async def test_a_hung_repl_is_killed_at_the_timeout() -> None:
    argv = replay_argv("core/proof_branching.in", extra=("--hang-at", "1", "--ignore-term"))
    async with LeanRepl(argv) as repl:
        pid = repl.pid
        started = time.monotonic()
        with pytest.raises(ProverHung):
            await repl.command("theorem x : True := by sorry", timeout=1.0)
        # SIGTERM is ignored by this stand-in: the group is SIGKILLed after the grace period
        assert time.monotonic() - started < 10
        assert pid is not None
        assert not psutil.pid_exists(pid)
        assert repl.poisoned == "no reply in time"


async def test_reply_cap() -> None:
    async with LeanRepl(replay_argv("core/proof_branching.in"), reply_cap=100) as repl:
        with pytest.raises(ProverReplyTooLarge):
            await repl.command(
                "theorem complex_and (p q r : Prop) (h1 : p ∧ q) (h2 : q → r) : p ∧ r := by sorry",
                timeout=10,
            )
        assert not repl.alive


async def test_requests_with_a_blank_line_are_refused_before_sending() -> None:
    async with LeanRepl(replay_argv("core/proof_branching.in")) as repl:
        with pytest.raises(ValueError, match="blank line"):
            await repl.request_text('{"cmd": "a"}\n\n{"cmd": "b"}', timeout=5)
        # json.dumps escapes line breaks, so a command with blank lines is safe
        reply = await repl.request({"cmd": "def a := 1\n\ndef b := 2"}, timeout=5)
        assert reply["message"].startswith("replay: no recorded reply")
        assert repl.alive


async def test_file_mode_lists_tactics() -> None:
    async with LeanRepl(replay_argv("core/file.in", "core/file_env.in")) as repl:
        reply = await repl.file("test/file.lean", all_tactics=True, timeout=10)
        assert [t["tactic"] for t in reply.tactics] == ["exact rfl"]
        assert reply.tactics[0]["goals"] == "⊢ f + g = 39"
        base = await repl.command("def f : Nat := 1", timeout=10)
        after = await repl.command(
            "theorem demo (a b: Nat): a + b = b + a := by rw [Nat.add_comm]", base.env, timeout=10
        )
        continued = await repl.file("test/file_env.lean", after.env, timeout=10)
        assert [m.data for m in continued.messages] == [
            "demo (a b : Nat) : a + b = b + a",
            "f : Nat",
        ]
