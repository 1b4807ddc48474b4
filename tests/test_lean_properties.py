"""Property tests of the Lean lexer and sorry scanner (issue 18).

Against the recorded REPL (the oracle): every recorded command with sorries,
with comments that say ``sorry`` appended at line ends, still scans to the
positions the real REPL reported. On generated sources: the scanner finds
exactly the holes put there, with the right position kind, and splicing one
leaves the rest of the text alone.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from proof_orchestrator.lean.holes import lex, scan_lean_text, splice

from .lean_generated import (
    GeneratedLean,
    append_at_line_ends,
    lean_sources,
    line_end_comments,
    transcripts_folder,
)
from .lean_replay import parse_request, split_blocks
from .transcripts import MISSING, TRANSCRIPTS

FEW = settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def recorded_commands() -> list[tuple[str, frozenset[tuple[int, int]], bool]]:
    """(command, written sorry positions the real REPL reported, the reply had errors)."""
    folder = transcripts_folder()
    if folder is None:
        return []
    found = []
    for transcript in sorted(folder.glob("*/*.in")):
        answers = transcript.with_name(transcript.stem + ".expected.out")
        if not answers.exists():
            continue
        pairs = zip(
            split_blocks(transcript.read_text(encoding="utf-8")),
            split_blocks(answers.read_text(encoding="utf-8")),
            strict=True,
        )
        for request, reply in pairs:
            command = parse_request(request)
            answer = json.loads(reply)
            if "cmd" not in command or "sorries" not in answer:
                continue
            positions = frozenset(
                (s["pos"]["line"], s["pos"]["column"])
                for s in answer["sorries"]
                if "pos" in s and s["pos"] != s.get("endPos")  # written, not synthesised
            )
            errors = any(m["severity"] == "error" for m in answer.get("messages", []))
            found.append((command["cmd"], positions, errors))
    return found


RECORDED = recorded_commands()
needs_transcripts = pytest.mark.skipif(TRANSCRIPTS is None, reason=MISSING)


def scanned_positions(text: str) -> set[tuple[int, int]]:
    return {
        (text.count("\n", 0, h.proof_start) + 1, len(text[: h.proof_start].rsplit("\n", 1)[-1]))
        for h in scan_lean_text(Path("Cmd.lean"), text)
    }


@needs_transcripts
@FEW
@given(st.data())
def test_comments_at_line_ends_keep_the_repl_sorry_positions(data: st.DataObject) -> None:
    command, positions, errors = data.draw(st.sampled_from(RECORDED), label="command")
    additions = data.draw(line_end_comments(command.count("\n") + 1), label="comments")
    text = append_at_line_ends(command, additions)
    mine = scanned_positions(text)
    assert positions <= mine
    if not errors:  # (``all_goals sorry`` is one written sorry for several goals)
        assert mine == positions


@needs_transcripts
def test_every_recorded_command_lexes_into_ordered_tokens() -> None:
    for command, _, _ in RECORDED:
        tokens = lex(command)
        assert all(a.end <= b.start for a, b in itertools.pairwise(tokens))
        assert all(command[t.start : t.end] == t.text for t in tokens)


@FEW
@given(lean_sources())
def test_generated_holes_are_found_exactly(source: GeneratedLean) -> None:
    holes = scan_lean_text(Path("Gen.lean"), source.text)
    assert tuple(h.proof_start for h in holes) == source.holes
    assert tuple(h.tactic_mode for h in holes) == source.tactic
    assert all(source.text[h.proof_start : h.proof_end] == "sorry" for h in holes)
    tokens = lex(source.text)
    assert all(a.end <= b.start for a, b in itertools.pairwise(tokens))
    assert all(source.text[t.start : t.end] == t.text for t in tokens)


@FEW
@given(lean_sources(), st.data())
def test_splicing_one_hole_changes_only_its_sorry(
    source: GeneratedLean, data: st.DataObject
) -> None:
    holes = scan_lean_text(Path("Gen.lean"), source.text)
    if not holes:
        return
    hole = data.draw(st.sampled_from(holes), label="hole")
    patched = splice(source.text, hole, ["simp"])
    assert patched[: hole.proof_start] == source.text[: hole.proof_start]
    tail = len(source.text) - hole.proof_end
    assert patched[len(patched) - tail :] == source.text[hole.proof_end :]
    rest = [h.proof_start for h in scan_lean_text(Path("Gen.lean"), patched)]
    shift = len(patched) - len(source.text)
    expected = [h.proof_start + (shift if h.proof_start > hole.proof_start else 0) for h in holes]
    expected.remove(hole.proof_start)
    assert rest == expected
