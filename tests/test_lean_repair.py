"""``orch repair`` on Lean files, over recorded REPL traffic (Lean is not installed here).

The REPL is ``tests/lean_replay.py`` answering with the real REPL's recorded
replies (``shared/lean-repl-transcripts``; ``make lean-transcripts`` fetches
them; without them every test here is skipped with that reason). The
transcripts used are the REPL's own tests of a proof that fails, then the
same statement with ``sorry``, then the old tactics replayed one by one on
that ``sorry``'s proof state: exactly what detection and the repair loop
send. A request that was never recorded gets the REPL's refusal (a command)
or a failed tactic, never a success, so no repair can be invented here: the
statements recorded are false, and every test ends with "still broken" and
its cause.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from proof_orchestrator.config import Settings
from proof_orchestrator.errors import ProverRequestError
from proof_orchestrator.goals import BreakKind, HoleKind
from proof_orchestrator.lean.backend import LeanBackend
from proof_orchestrator.lean.broken import (
    AT_END,
    Detection,
    classify,
    proof_block,
    relative_sentence,
)
from proof_orchestrator.lean.repair import LeanRepair
from proof_orchestrator.lean.session import LeanSettings
from proof_orchestrator.ledger import Ledger, LedgerReader
from proof_orchestrator.run.reports import FillOptions
from proof_orchestrator.workflows.repair import RepairReport, repair_files

from .lean_replay import split_blocks
from .test_lean_repl import replay_argv
from .transcripts import transcripts

#: ``app_type_mismatch2.in``'s first command: the kernel refuses the whole declaration
MISMATCH = (
    "example : 1 = 0 := by\n  cases 1\n  rfl\n  have: true := by\n    apply ?succ\n    trivial"
)
#: ``app_type_mismatch.in``'s: the last tactic leaves a metavariable
METAVARIABLE = "example : 1 = 0 := by\n  cases 1\n  rfl\n  apply ?succ"
#: ``self_proof_check.in``'s: the error is on the tactic
EXACT = "theorem ex : False := by exact?"
#: ``self_proof_exact_check.in``'s: a termination error, on the name
SELF = "theorem ex : False := by exact ex"


def _replay(tmp_path: Path, *names: str) -> tuple[list[str], Path]:
    log = tmp_path / "requests.jsonl"
    return replay_argv(*names, extra=("--log", str(log))), log


def _sent(log: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


def _source(tmp_path: Path, text: str, name: str = "Broken.lean") -> Path:
    folder = tmp_path / "project"
    folder.mkdir(exist_ok=True)
    path = folder / name
    path.write_text(text + "\n", encoding="utf-8")
    return path


async def _detect(tmp_path: Path, text: str, *names: str) -> tuple[Detection, Path]:
    argv, log = _replay(tmp_path, *names)
    path = _source(tmp_path, text)
    repair = LeanRepair(LeanSettings(repl=tuple(argv), load_timeout=30))
    return await repair.find_broken(path, path.read_text(encoding="utf-8")), log


def test_the_backend_offers_its_repair_side() -> None:
    assert isinstance(LeanBackend().repair(), LeanRepair)


def test_recorded_error_messages_are_classified() -> None:
    """Each kind from an error message the real REPL sent (the transcript's reply)."""
    replies = {}
    for name in ("incomplete", "dup_msg", "app_type_mismatch2", "self_proof_check"):
        out = transcripts() / "core" / f"{name}.expected.out"
        replies[name] = [json.loads(block) for block in split_blocks(out.read_text("utf-8"))]
    assert classify(replies["incomplete"][0]["messages"][0]["data"]) is BreakKind.REMAINING_GOALS
    assert classify(replies["dup_msg"][2]["messages"][0]["data"]) is BreakKind.UNKNOWN_REFERENCE
    mismatch = replies["app_type_mismatch2"][0]["messages"][0]["data"]
    assert classify(mismatch) is BreakKind.TYPE_MISMATCH
    exact = replies["self_proof_check"][0]["messages"][0]["data"]
    assert classify(exact) is BreakKind.TACTIC_FAILURE


def test_a_heartbeat_message_is_a_timeout() -> None:
    """Lean's wording of a heartbeat timeout (from Lean's sources: no transcript has one)."""
    message = (
        "(deterministic) timeout at `whnf`, maximum number of heartbeats (200000) has been reached"
    )
    assert classify(message) is BreakKind.TIMEOUT


async def test_a_kernel_error_on_the_keyword_breaks_the_proof_at_its_end(tmp_path: Path) -> None:
    detection, log = await _detect(tmp_path, MISMATCH, "core/app_type_mismatch2.in")
    (broken,) = detection.broken
    assert (broken.kind, broken.line, broken.column) == (BreakKind.TYPE_MISMATCH, 1, 0)
    assert broken.error.startswith("(kernel) application type mismatch")
    assert broken.script == ("cases 1", "rfl", "have: true := by\n    apply ?succ\n    trivial")
    assert broken.failing == AT_END
    assert broken.goal_text == "⊢ 1 = 0"
    assert broken.hole.goal.kind is HoleKind.BROKEN
    assert detection.standin == "example : 1 = 0 := sorry\n"
    assert detection.stuck == ""
    assert _sent(log) == [{"cmd": MISMATCH}, {"cmd": "example : 1 = 0 := sorry"}]


async def test_an_error_on_a_tactic_names_that_tactic(tmp_path: Path) -> None:
    detection, _ = await _detect(tmp_path, EXACT, "core/self_proof_check.in")
    (broken,) = detection.broken
    assert (broken.failing, broken.line, broken.column) == ("exact?", 1, 25)
    assert broken.kind is BreakKind.TACTIC_FAILURE


async def test_an_error_outside_any_proof_stops_detection_there(tmp_path: Path) -> None:
    """``dup_msg``: each command in the environment the one before left, as recorded."""
    detection, log = await _detect(tmp_path, "def f := 2\n#check f\n#check g", "core/dup_msg.in")
    assert detection.broken == []
    assert detection.stuck == ("line 3, outside any proof it can repair: Unknown identifier `g`")
    assert _sent(log) == [
        {"cmd": "def f := 2"},
        {"cmd": "#check f", "env": 0},
        {"cmd": "#check g", "env": 1},
    ]


async def test_an_unrecorded_stand_in_is_refused_never_invented(tmp_path: Path) -> None:
    """``have_by_sorry`` recorded the stand-in as ``:= by sorry``; ours is ``:= sorry``, which
    the replay refuses as the REPL refuses a request: detection fails loudly."""
    text = "theorem foo (x : Int) : x = x := by\n  have h : x = 1 := by sorry"
    with pytest.raises(ProverRequestError, match="no recorded reply"):
        await _detect(tmp_path, text, "core/have_by_sorry.in")


def test_the_old_script_is_written_back_byte_for_byte() -> None:
    """What the stand-in's hole writes from the old tactics is the old proof as it stood."""
    script = ("cases 1", "rfl", "have: true := by\n    apply ?succ\n    trivial")
    block = proof_block([relative_sentence(s, 2) for s in script], 2, False)
    assert "example : 1 = 0 := " + block == MISMATCH
    assert proof_block(["exact ex"], 2, True) == "by exact ex"


async def test_a_repair_is_written_in_the_old_proof_s_layout(tmp_path: Path) -> None:
    detection, _ = await _detect(tmp_path, MISMATCH, "core/app_type_mismatch2.in")
    (broken,) = detection.broken
    written = LeanRepair.written_text(MISMATCH + "\n", detection, [(broken, ("cases 1", "simp"))])
    assert written == "example : 1 = 0 := by\n  cases 1\n  simp\n"
    # the whole-file check sees the same declaration in the stand-in
    standin = detection.standin
    hole = broken.hole
    patched = (
        standin[: hole.proof_start]
        + hole.replacement(("cases 1", "simp"))
        + standin[hole.proof_end :]
    )
    assert patched == written


async def _repair(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    text: str,
    transcript: str,
    *,
    admit_broken: bool = False,
) -> tuple[RepairReport, Path, Path, Ledger]:
    argv, log = _replay(tmp_path, transcript)
    monkeypatch.setenv("ORCH_LEAN_REPL", shlex.join(argv))
    path = _source(tmp_path, text)
    ledger = Ledger(f"sqlite:///{tmp_path / 'ledger.sqlite'}")
    options = FillOptions(orch=Settings(budget=5.0, tactic_timeout=1.0))
    report = await repair_files([path], ledger, options, admit_broken=admit_broken)
    return report, path, log, ledger


def _messages(ledger: Ledger) -> dict[str, str]:
    """The newest failed attempt's message per strategy, on the run's one goal."""
    (goal,) = LedgerReader(ledger).goals()
    errors = ledger.attempt_errors(goal["fingerprint"], limit=50)
    return {strategy: message for strategy, _, message in reversed(errors)}


async def test_the_engine_replays_the_old_script_and_leaves_it_broken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Detection, the repair strategy and the fill lineup through ``repair_files``: the old
    tactics are replayed on the stand-in's proof state as recorded, the last one leaves a
    metavariable, nothing closes the goal; the file stays byte for byte as it was."""
    report, path, log, ledger = await _repair(
        tmp_path, monkeypatch, METAVARIABLE, "core/app_type_mismatch.in"
    )
    try:
        (row,) = report.summary()["proofs"]
        assert (row["kind"], row["failing"], row["repaired"]) == (
            "tactic_failure",
            AT_END,
            False,
        )
        assert row["error"] == "(kernel) declaration has metavariables '_example'"
        # the report's message is the last pass's (the fill lineup, whose tactics were
        # never recorded); the repair strategy's cause is in the ledger
        assert row["message"] == "replay: this tactic was not recorded"
        assert path.read_text(encoding="utf-8") == METAVARIABLE + "\n"
        (goal,) = LedgerReader(ledger).goals()
        assert goal["status"] == "broken"
        by_strategy = _messages(ledger)
        assert by_strategy["detect"] == (
            f"broken (tactic_failure) at {AT_END}: "
            "(kernel) declaration has metavariables '_example'"
        )
        assert by_strategy["repair"].startswith(
            "the replay stops at 'apply ?succ': Incomplete: contains metavariable(s); "
            "no variant of the old proof closes it"
        )
        assert "lean-quick" in by_strategy
    finally:
        ledger.close()
    tactics = [r for r in _sent(log) if "tactic" in r]
    assert tactics[:3] == [
        {"tactic": "cases 1", "proofState": 0},
        {"tactic": "rfl", "proofState": 1},
        {"tactic": "apply ?succ", "proofState": 2},
    ]
    # what was tried after the replay started from where it stopped
    assert all(r["proofState"] in (0, 2) for r in tactics[3:])


async def test_a_tactic_the_kernel_refuses_is_the_recorded_cause(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report, _, log, ledger = await _repair(
        tmp_path, monkeypatch, MISMATCH, "core/app_type_mismatch2.in"
    )
    try:
        repair = _messages(ledger)["repair"]
    finally:
        ledger.close()
    (row,) = report.broken
    assert not row.repaired
    # the tactic as sent (its recorded text), quoted with its line breaks escaped
    assert repair.startswith(
        r"the replay stops at 'have: true := by\n    apply ?succ\n    trivial'"
    )
    assert "Error: kernel type check failed: (kernel) application type mismatch" in repair
    assert {"tactic": "rfl", "proofState": 1} in _sent(log)


async def test_admit_broken_writes_the_stand_in_with_the_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report, path, _, ledger = await _repair(
        tmp_path, monkeypatch, SELF, "core/self_proof_exact_check.in", admit_broken=True
    )
    try:
        repair = _messages(ledger)["repair"]
    finally:
        ledger.close()
    (row,) = report.broken
    assert not row.repaired
    assert repair.startswith("the replay stops at 'exact ex': Error: kernel type check failed")
    written = path.read_text(encoding="utf-8")
    assert written.startswith(
        "theorem ex : False :=\n  /- orch repair: not repaired (tactic_failure): "
        "fail to show termination for ex with errors"
    )
    assert written.endswith(" -/\n  sorry\n")
