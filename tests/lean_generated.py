"""Generated Lean sources for the property tests of the lexer and the sorry scanner.

Two kinds:

* :func:`line_end_comments`: comments to append at the ends of lines of a
  recorded REPL command. A comment is whitespace to Lean and nothing moves
  before a line's end, so the REPL's recorded ``sorries`` positions stay the
  truth for the changed text (the recording is the oracle).
* :func:`lean_sources`: whole sources built from pieces whose holes are known
  by construction (``sorry`` in tactic and term position, and ``sorry`` hidden
  in comments, strings and character literals), for invariants.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hypothesis import strategies as st

from .transcripts import TRANSCRIPTS


def transcripts_folder() -> Path | None:
    """Recorded REPL traffic, looked up as :mod:`tests.transcripts` says (None: absent)."""
    return TRANSCRIPTS


_COMMENT_WORDS = st.sampled_from(
    ["sorry", '"sorry"', "'s'", "by sorry", ":= sorry", "--", "«x»", "λ", "·", "theorem t"]
)


@st.composite
def block_comments(draw: st.DrawFn, depth: int = 0) -> str:
    """``/- ... -/`` on one line, possibly nested, saying sorry."""
    parts = draw(st.lists(_COMMENT_WORDS, max_size=3))
    if depth < 2 and draw(st.booleans()):
        parts.append(draw(block_comments(depth + 1)))
    return "/- " + " ".join(parts) + " -/"


@st.composite
def line_end_comments(draw: st.DrawFn, lines: int) -> dict[int, str]:
    """{line index: text to append at its end} for a text of ``lines`` lines."""
    chosen = draw(st.sets(st.integers(0, max(lines - 1, 0)), max_size=4))
    out: dict[int, str] = {}
    for index in sorted(chosen):
        kind = draw(st.sampled_from(["block", "line", "both"]))
        block = draw(block_comments())
        words = " ".join(draw(st.lists(_COMMENT_WORDS, min_size=1, max_size=3)))
        if kind == "block":
            out[index] = " " + block
        elif kind == "line":
            out[index] = " -- " + words
        else:
            out[index] = f" {block} -- {words}"
    return out


def append_at_line_ends(text: str, additions: dict[int, str]) -> str:
    lines = text.split("\n")
    for index, extra in additions.items():
        if index < len(lines):
            lines[index] += extra
    return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class GeneratedLean:
    text: str
    #: offsets of the ``sorry`` tokens that are holes, in order
    holes: tuple[int, ...]
    #: True for tactic position, per hole
    tactic: tuple[bool, ...]


_DECOYS = [
    '#eval "sorry, no"',
    "def c{i} : Char := 's'",
    "-- sorry in a line comment",
    "/- sorry /- nested sorry -/ still sorry -/",
    'def s{i} : String := "a \\"sorry\\" b"',
    "/-- doc comment: sorry -/\ndef d{i} : Nat := 1",
    'def r{i} : String := r"sorry\\"',
    "def q{i} : Char := '\\''",
]


@st.composite
def lean_sources(draw: st.DrawFn) -> GeneratedLean:
    """Declarations with holes and decoys, inside optional namespaces."""
    pieces: list[str] = ["import Std", ""]
    marks: list[tuple[str, bool]] = []  # (marker, tactic position)
    namespace = draw(st.booleans())
    if namespace:
        pieces.append("namespace Gen")
    for i in range(draw(st.integers(1, 5))):
        kind = draw(st.sampled_from(["tactic", "term", "two", "decoy", "exact", "focus"]))
        if kind == "tactic":
            pieces.append(f"theorem t{i} (n : Nat) : n + 0 = n := by\n  @@T@@")
            marks.append(("T", True))
        elif kind == "term":
            pieces.append(f"theorem u{i} : 1 = 1 := @@M@@")
            marks.append(("M", False))
        elif kind == "two":
            pieces.append(f"theorem v{i} (p q : Prop) (hp : p) (hq : q) : p ∧ q := by\n")
            pieces[-1] += "  constructor\n  · @@T@@\n  · @@T@@"
            marks += [("T", True), ("T", True)]
        elif kind == "exact":
            pieces.append(f"lemma w{i} : True := by\n  exact @@M@@")
            marks.append(("M", False))
        elif kind == "focus":
            pieces.append("example : 2 = 2 ∧ True := ⟨@@M@@, by @@T@@⟩")
            marks += [("M", False), ("T", True)]
        else:
            pieces.append(draw(st.sampled_from(_DECOYS)).replace("{i}", str(i)))
        if draw(st.booleans()):
            pieces.append(draw(st.sampled_from(_DECOYS)).replace("{i}", f"x{i}"))
        pieces.append("")
    if namespace:
        pieces.append("end Gen")
    text = "\n".join(pieces) + "\n"
    holes: list[int] = []
    tactic: list[bool] = []
    out = []
    cursor = 0
    index = 0
    while True:
        found = text.find("@@", cursor)
        if found < 0:
            out.append(text[cursor:])
            break
        out.append(text[cursor:found])
        position = sum(len(p) for p in out)
        holes.append(position)
        tactic.append(marks[index][1])
        index += 1
        out.append("sorry")
        cursor = found + 5
    return GeneratedLean("".join(out), tuple(holes), tuple(tactic))
