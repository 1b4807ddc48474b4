"""The Lean sorry scanner and splicer, on realistic source and on recorded REPL replies."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from proof_orchestrator.errors import SourceSyntaxError
from proof_orchestrator.lean.holes import declared_axioms, lex, scan_lean_text, splice

from .lean_replay import parse_request
from .test_lean_repl import recorded_pairs
from .transcripts import transcripts

SOURCE = """\
import Std
/-! # Sample file

A module doc comment that says sorry, with a nested /- comment sorry -/ inside.
-/

namespace Demo

/-- `double n` is `n + n`; the docstring mentions sorry. -/
def double (n : ℕ) : ℕ := n + n

-- a line comment: sorry
theorem double_add (a b : Nat) : double (a + b) = double a + double b := by
  unfold double
  sorry

def message : String := "this string says sorry and \\"sorry\\""

section Lists
variable {α : Type} (xs : List α)

theorem length_append_nil : (xs ++ []).length = xs.length := by
  induction xs with
  | nil => sorry
  | cons x xs ih => simp

@[simp] lemma two_holes (p q : Prop) (hp : p) (hq : q) : p ∧ q := by
  constructor
  · sorry
  · exact sorry

end Lists

theorem by_calc (a b c : Nat) (h₁ : a = b) (h₂ : b = c) : a = c :=
  calc a = b := h₁
    _ = c := sorry

example : ∀ n : Nat, n + 0 = n := fun n => sorry

theorem nested (n : Nat) : n = n := by
  have h : n + 0 = n := by sorry
  cases n <;> rfl

private def chars : List Char := ['s', '\\'', 'y']

end Demo

theorem Demo.outside : True := sorry
"""


def test_scanner_finds_every_real_sorry_and_nothing_else(tmp_path: Path) -> None:
    holes = scan_lean_text(tmp_path / "Demo.lean", SOURCE)
    found = [(h.goal.name, h.tactic_mode, h.decl_name) for h in holes]
    assert found == [
        ("double_add", True, "Demo.double_add"),
        ("length_append_nil", True, "Demo.length_append_nil"),
        ("two_holes#1", True, "Demo.two_holes"),
        ("two_holes#2", False, "Demo.two_holes"),
        ("by_calc", False, "Demo.by_calc"),
        (f"example@{SOURCE[: SOURCE.index('example')].count(chr(10)) + 1}", False, ""),
        ("nested", True, "Demo.nested"),
        ("Demo.outside", False, "Demo.outside"),
    ]
    for hole in holes:
        assert SOURCE[hole.proof_start : hole.proof_end] == "sorry"
        decl = SOURCE[hole.decl_start : hole.decl_end]
        line = decl.splitlines()[hole.line_in_decl - 1]
        assert line[hole.column_in_decl :].startswith("sorry")
        assert hole.header_end == len("import Std")
    two = [h for h in holes if h.decl_name == "Demo.two_holes"]
    assert {h.sorries_in_decl for h in two} == {2}
    assert len({h.goal.fingerprint for h in two}) == 2
    assert holes[0].goal.language == "lean"
    assert holes[0].goal.statement.startswith("theorem double_add (a b : Nat)")


def test_splice_tactic_and_term_positions(tmp_path: Path) -> None:
    holes = {h.goal.name: h for h in scan_lean_text(tmp_path / "Demo.lean", SOURCE)}
    tactic = splice(SOURCE, holes["double_add"], ["simp only [Nat.add_assoc]", "omega"])
    assert "  unfold double\n  simp only [Nat.add_assoc]\n  omega\n" in tactic
    bullet = splice(SOURCE, holes["two_holes#1"], ["exact hp"])
    assert "  · exact hp\n  · exact sorry" in bullet
    term = splice(SOURCE, holes["two_holes#2"], ["exact hq"])
    assert "  · exact (by exact hq)\n" in term
    multi = splice(SOURCE, holes["by_calc"], ["subst h₁", "exact h₂"])
    assert "_ = c := (by\n        subst h₁\n        exact h₂)\n" in multi
    alternative = splice(SOURCE, holes["length_append_nil"], ["rfl"])
    assert "  | nil => rfl\n" in alternative
    fun = splice(SOURCE, holes[next(n for n in holes if n.startswith("example"))], ["simp"])
    assert "fun n => (by simp)" in fun
    # everything outside the sorry is byte-for-byte the same
    for text in (tactic, bullet, term, multi, alternative, fun):
        assert text.count('"this string says sorry and \\"sorry\\""') == 1
        assert "nested /- comment sorry -/ inside" in text


def test_splice_keeps_relative_indentation_of_a_multiline_tactic(tmp_path: Path) -> None:
    (hole,) = [h for h in scan_lean_text(tmp_path / "D.lean", SOURCE) if h.goal.name == "nested"]
    text = splice(SOURCE, hole, ["constructor\n· simp\n· intro h\n  exact h"])
    assert "  have h : n + 0 = n := by constructor\n" in text
    assert "\n                           · intro h\n                             exact h\n" in text


def test_axioms_declared_in_a_file() -> None:
    text = "axiom choice' : True\nnamespace A\naxiom b : False\nend A\n-- axiom c : False\n"
    assert declared_axioms(text) == {"choice'", "A.b"}


@pytest.mark.parametrize("bad", ["theorem t : True := by /- open comment", 'def s := "open string'])
def test_unterminated_comment_or_string(bad: str) -> None:
    with pytest.raises(SourceSyntaxError, match="unterminated"):
        lex(bad)


def _recorded_commands() -> list[tuple[str, list[tuple[int, int]], bool]]:
    """(command text, written sorry positions the real REPL reported, had errors)."""
    found = []
    for transcript in sorted(transcripts().glob("*/*.in")):
        if not transcript.with_name(transcript.stem + ".expected.out").exists():
            continue
        for request, reply in recorded_pairs(transcript):
            command = parse_request(request)
            answer = json.loads(reply)
            if "cmd" not in command or "sorries" not in answer:
                continue
            positions = [
                (s["pos"]["line"], s["pos"]["column"])
                for s in answer["sorries"]
                if "pos" in s and s["pos"] != s.get("endPos")  # written, not synthesised
            ]
            errors = any(m["severity"] == "error" for m in answer.get("messages", []))
            found.append((command["cmd"], positions, errors))
    return found


def test_scanner_positions_match_the_real_repl() -> None:
    """On every recorded command with sorries, the scanner finds the REPL's positions.

    The scanner may see more: a ``sorry`` after the proof is already finished
    is an error, not a goal, and the REPL does not report it. The REPL is the
    source of truth when a session opens.
    """
    commands = _recorded_commands()
    assert len(commands) >= 20
    for command, positions, errors in commands:
        holes = scan_lean_text(Path("Cmd.lean"), command)
        # a command's positions are relative to the command; the declaration starts there
        mine = sorted(
            (
                command.count("\n", 0, h.proof_start) + 1,
                len(command[: h.proof_start].rsplit("\n", 1)[-1]),
            )
            for h in holes
        )
        assert set(positions) <= set(mine), command
        if not errors:  # (``all_goals sorry`` is one written sorry for several goals)
            assert set(mine) == set(positions), command


def test_the_lean_bank_scans_like_its_index() -> None:
    """Every id of the bank's index is a hole of the Lean bank, with the same name."""
    from .conftest import BANK

    ids = {
        line.split("\t")[0]
        for line in (BANK / "index.tsv").read_text(encoding="utf-8").splitlines()[1:]
        if line.strip()
    }
    names = {
        hole.goal.name
        for path in sorted((BANK / "lean").glob("*.lean"))
        for hole in scan_lean_text(path, path.read_text(encoding="utf-8"))
    }
    assert names == ids
    assert len(names) == 135
