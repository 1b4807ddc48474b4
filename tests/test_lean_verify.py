"""The Lean verifier's reading of compiler output and its axiom audit.

Lean is not installed here, so the compiler's answers are given to the audit
directly (`_check` is replaced); what is tested is the decision, which can only
reject. The same code against a real `lean` is in tests/test_lean_live.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from proof_orchestrator.lean import verify as lean
from proof_orchestrator.lean.holes import scan_lean_text, splice
from proof_orchestrator.lean.session import LeanProject
from proof_orchestrator.lean.verify import LeanVerifier, parse_lean_json
from proof_orchestrator.provers.base import Verdict

TEXT = """\
axiom my_choice : ∀ n : Nat, n = n

theorem one (n : Nat) : n + 0 = n := by sorry

theorem two (p q : Prop) (hp : p) (hq : q) : p ∧ q := by
  constructor
  · sorry
  · sorry
"""


def _message(line: int, severity: str, data: str) -> str:
    return json.dumps(
        {
            "severity": severity,
            "pos": {"line": line, "column": 0},
            "endPos": {"line": line, "column": 1},
            "fileName": "OrchCheck.lean",
            "data": data,
        }
    )


def test_parse_lean_json_reads_one_message_per_line() -> None:
    output = "\n".join(
        [
            _message(3, "warning", "declaration uses 'sorry'"),
            "some banner that is not JSON",
            _message(9, "information", "'one' depends on axioms: [propext, sorryAx]"),
        ]
    )
    messages = parse_lean_json(output)
    assert [m["severity"] for m in messages] == ["warning", "information"]


def _stub(monkeypatch: pytest.MonkeyPatch, answers: dict[str, list[str]]) -> LeanVerifier:
    """A verifier whose compiler answers are the given message lines, keyed by file text."""

    async def check(self: LeanVerifier, text: str, audit: object) -> lean._Check:
        del audit
        lines = answers[text]
        errors, axioms, sorry_lines = [], {}, set()
        for message in parse_lean_json("\n".join(lines)):
            data = str(message["data"])
            line = int(message["pos"]["line"])  # type: ignore[index]
            if message["severity"] == "error":
                errors.append((line, data))
            elif found := lean._axioms_in(data):
                axioms[found[0]] = found[1]
            elif "declaration uses" in data:
                sorry_lines.add(line)
        return lean._Check(not errors, "", tuple(errors), axioms, frozenset(sorry_lines), 0.0)

    monkeypatch.setattr(LeanVerifier, "_check", check)
    return LeanVerifier(LeanProject(Path("."), False, ""))


ORIGINAL = [
    _message(3, "warning", "declaration uses 'sorry'"),
    _message(5, "warning", "declaration uses 'sorry'"),
    _message(10, "information", "'one' depends on axioms: [sorryAx]"),
    _message(11, "information", "'two' depends on axioms: [sorryAx]"),
]


async def test_audit_accepts_standard_and_declared_axioms(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / "T.lean"
    one = scan_lean_text(path, TEXT)[0]
    patched = splice(TEXT, one, ["simp"])
    verifier = _stub(
        monkeypatch,
        {
            TEXT: ORIGINAL,
            patched: [
                _message(5, "warning", "declaration uses 'sorry'"),
                _message(10, "information", "'one' depends on axioms: [propext, my_choice]"),
                _message(11, "information", "'two' depends on axioms: [sorryAx]"),
            ],
        },
    )
    result = await verifier.verify(path, TEXT, patched, [one.goal])
    assert result.verdict is Verdict.ACCEPTED


async def test_audit_rejects_a_new_axiom_and_a_leftover_sorry(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / "T.lean"
    one = scan_lean_text(path, TEXT)[0]
    native = splice(TEXT, one, ["native_decide"])
    sneaky = splice(TEXT, one, ["exact foo"])
    verifier = _stub(
        monkeypatch,
        {
            TEXT: ORIGINAL,
            native: [
                _message(10, "information", "'one' depends on axioms: [Lean.ofReduceBool]"),
                _message(11, "information", "'two' depends on axioms: [sorryAx]"),
            ],
            sneaky: [
                _message(3, "warning", "declaration uses 'sorry'"),
                _message(10, "information", "'one' depends on axioms: [sorryAx]"),
                _message(11, "information", "'two' depends on axioms: [sorryAx]"),
            ],
        },
    )
    rejected = await verifier.verify(path, TEXT, native, [one.goal])
    assert rejected.verdict is Verdict.NEW_ASSUMPTIONS
    assert rejected.new_assumptions == ("Lean.ofReduceBool",)
    assert rejected.offending == ("one",)
    leftover = await verifier.verify(path, TEXT, sneaky, [one.goal])
    assert leftover.verdict is Verdict.NEW_ASSUMPTIONS
    assert "sorryAx" in leftover.new_assumptions


async def test_one_of_two_sorries_may_leave_sorryax_but_both_may_not(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / "T.lean"
    _, first, second = scan_lean_text(path, TEXT)
    half = splice(TEXT, first, ["exact hp"])
    both = splice(half, scan_lean_text(path, half)[1], ["exact hq"])
    still = [
        _message(3, "warning", "declaration uses 'sorry'"),
        _message(5, "warning", "declaration uses 'sorry'"),
        _message(10, "information", "'one' depends on axioms: [sorryAx]"),
        _message(11, "information", "'two' depends on axioms: [sorryAx]"),
    ]
    verifier = _stub(monkeypatch, {TEXT: ORIGINAL, half: still, both: still})
    assert (await verifier.verify(path, TEXT, half, [first.goal])).accepted
    # both holes filled, yet the compiler still reports a sorry in `two`: rejected
    result = await verifier.verify(path, TEXT, both, [first.goal, second.goal])
    assert result.verdict is Verdict.NEW_ASSUMPTIONS


async def test_a_compile_error_names_its_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / "T.lean"
    one = scan_lean_text(path, TEXT)[0]
    patched = splice(TEXT, one, ["rfl"])
    verifier = _stub(
        monkeypatch, {TEXT: ORIGINAL, patched: [_message(3, "error", "The rfl tactic failed")]}
    )
    result = await verifier.verify(path, TEXT, patched, [one.goal])
    assert result.verdict is Verdict.DOES_NOT_COMPILE
    assert result.error_line == 3


HOLES = """\
theorem b (n : Nat) : n + 0 = n := by sorry

def d : Nat := sorry

theorem c (n : Nat) : (n + 0) + 0 = n := by sorry
"""


def test_holes_are_restated_as_axioms_and_definitions_keep_their_sorry(tmp_path: Path) -> None:
    path = tmp_path / "H.lean"
    probe, stated = lean.holes_as_axioms(path, HOLES)
    assert probe.splitlines()[0] == "axiom b (n : Nat) : n + 0 = n"
    assert "def d : Nat := sorry" in probe
    assert set(stated) == {"b", "c"}


async def test_sorryax_through_a_hole_alone_is_accepted_modulo_that_hole(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``#print axioms c`` says sorryAx; on the copy with the holes as axioms it says ``b``."""
    path = tmp_path / "H.lean"
    c = scan_lean_text(path, HOLES)[2]
    patched = splice(HOLES, c, ["simp only [b]"])
    probe, _ = lean.holes_as_axioms(path, patched)
    original = [
        _message(1, "warning", "declaration uses 'sorry'"),
        _message(3, "warning", "declaration uses 'sorry'"),
        _message(5, "warning", "declaration uses 'sorry'"),
        _message(7, "information", "'c' depends on axioms: [sorryAx]"),
    ]
    after = [
        _message(1, "warning", "declaration uses 'sorry'"),
        _message(3, "warning", "declaration uses 'sorry'"),
        _message(7, "information", "'c' depends on axioms: [propext, sorryAx]"),
    ]
    through_b = [
        _message(3, "warning", "declaration uses 'sorry'"),
        _message(7, "information", "'c' depends on axioms: [propext, b]"),
    ]
    verifier = _stub(monkeypatch, {HOLES: original, patched: after, probe: through_b})
    result = await verifier.verify(path, HOLES, patched, [c.goal])
    assert result.verdict is Verdict.ACCEPTED
    assert [(u.label, u.name) for u in result.holes_used["c"]] == [("b", "b")]


async def test_sorryax_that_is_not_through_a_hole_is_refused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Through ``d`` (a definition with a ``sorry``, no theorem) sorryAx stays: refused."""
    path = tmp_path / "H.lean"
    c = scan_lean_text(path, HOLES)[2]
    patched = splice(HOLES, c, ["cases d <;> simp"])
    probe, _ = lean.holes_as_axioms(path, patched)
    original = [_message(7, "information", "'c' depends on axioms: [sorryAx]")]
    after = [_message(7, "information", "'c' depends on axioms: [propext, sorryAx]")]
    via_d = [_message(7, "information", "'c' depends on axioms: [propext, sorryAx]")]
    verifier = _stub(monkeypatch, {HOLES: original, patched: after, probe: via_d})
    result = await verifier.verify(path, HOLES, patched, [c.goal])
    assert result.verdict is Verdict.NEW_ASSUMPTIONS
    assert result.new_assumptions == ("sorryAx",)
    assert result.offending == ("c",)
