"""Finding the proofs of a Lean file that no longer check (``orch repair``).

The file goes through the REPL one command at a time, as Lean elaborates it:
the ``import`` header first, in a fresh environment, then each command in the
environment the one before it left. Each reply's error messages carry
positions (line and column in the command). An error in a ``theorem``,
``lemma`` or ``example`` whose proof is a ``by`` block makes that proof
*broken*:

* an error inside the ``by`` block names the tactic where Lean stopped (an
  error on ``by`` itself, such as ``unsolved goals``, means the tactics ran
  out before the goals did: the proof broke at its end);
* an error elsewhere in the declaration (the kernel's, or a termination
  check, which Lean puts on the keyword or the name) is the proof's only if
  the declaration checks once its proof is ``sorry``: the proof broke at its
  end.

The broken proof's body (``by`` to the end of the declaration) is replaced by
``sorry`` in a *stand-in*, which is sent in its place: the REPL gives a proof
state for it, and the commands after it are checked in the environment it
leaves. An error anywhere else (a ``def``, a command, a statement that no
longer checks, the stand-in itself) leaves the file *stuck* there, as in
:mod:`proof_orchestrator.coq.broken`: the commands after it are not looked at.

The kind of a broken proof is read from Lean's message (:func:`classify`).
The REPL is the source of positions and proof states; the whole-file
``lean --json`` check and the axiom audit still judge every repair
(:class:`~.verify.LeanVerifier`).
"""

from __future__ import annotations

import dataclasses
import itertools
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..goals import BreakKind, HoleKind
from ..strategies.repairing import classify_error
from .holes import Command, LeanHole, Token, commands, scan_lean_text
from .repl import CommandReply, LeanMessage, Position

__all__ = [
    "AT_END",
    "BrokenProof",
    "Detection",
    "Elaborate",
    "RepairHole",
    "classify",
    "find_broken",
    "offset_of",
    "proof_block",
    "relative_sentence",
]

#: elaborate one command, in a fresh environment when the second argument is None
Elaborate = Callable[[str, int | None], Awaitable[CommandReply]]

#: the declarations whose ``by`` proofs ``orch repair`` repairs (a ``def``'s body is data)
_PROOF_KEYWORDS = frozenset({"theorem", "lemma", "example"})
_HEADER_KEYWORDS = frozenset({"import", "prelude", "module"})
#: how the failing tactic of a proof that broke at its end is shown
AT_END = "(end of the proof)"

_KINDS: tuple[tuple[BreakKind, re.Pattern[str]], ...] = (
    (
        BreakKind.UNKNOWN_REFERENCE,
        re.compile(
            r"[Uu]nknown (?:identifier|constant|declaration|namespace)|unknown free variable"
        ),
    ),
    (BreakKind.TIMEOUT, re.compile(r"heartbeats|timeout|maximum recursion depth", re.I)),
    (BreakKind.REMAINING_GOALS, re.compile(r"\bunsolved goals\b|\b[Nn]o goals\b")),
    (
        BreakKind.TYPE_MISMATCH,
        re.compile(
            r"type mismatch|could not unify|failed to unify|is expected to have type|"
            r"but is expected to have type"
        ),
    ),
)


def classify(error: str) -> BreakKind:
    """The kind of a broken proof's error (``TACTIC_FAILURE`` when no other fits)."""
    return classify_error(error, _KINDS)


def offset_of(text: str, start: int, pos: Position | None) -> int:
    """The offset in ``text`` of ``pos`` (1-based line, 0-based column in code points) in
    the command that starts at ``start`` (in column 0). No position: the command's start."""
    if pos is None or pos.line < 1:
        return start
    at = start
    for _ in range(pos.line - 1):
        newline = text.find("\n", at)
        if newline < 0:
            return len(text)
        at = newline + 1
    end = text.find("\n", at)
    return min(at + pos.column, len(text) if end < 0 else end)


def _line_column(text: str, offset: int) -> tuple[int, int]:
    begin = text.rfind("\n", 0, offset) + 1
    return text.count("\n", 0, offset) + 1, offset - begin


def _one_line(message: str) -> str:
    return " ".join(message.split())


def relative_sentence(sentence: str, column: int) -> str:
    """``sentence`` (its continuation lines as they stood in the file) with those lines
    moved left by ``column``: the form every strategy's scripts have."""
    first, *rest = sentence.split("\n")
    moved = [line[min(column, len(line) - len(line.lstrip(" "))) :] for line in rest]
    return "\n".join([first, *moved])


def proof_block(sentences: Sequence[str], column: int, inline: bool) -> str:
    """A ``by`` block of ``sentences`` (continuation lines relative to their first line):
    ``by tac`` when ``inline`` and one line, else one tactic a line in ``column``."""
    lines: list[str] = []
    for sentence in sentences:
        first, *rest = sentence.strip("\n").split("\n")
        if first.strip():
            lines.append(first.strip())
        lines.extend(line.rstrip() for line in rest if line.strip())
    if not lines:
        raise ValueError("an empty proof script")
    if inline and len(lines) == 1:
        return f"by {lines[0]}"
    pad = " " * column
    return "by\n" + "\n".join(pad + line for line in lines)


@dataclass(frozen=True, slots=True)
class RepairHole(LeanHole):
    """A broken proof's ``sorry`` in the stand-in (``theorem t : P := sorry``).

    A script fills it as a ``by`` block laid out like the old proof, so that
    the whole-file check sees the proof exactly as it is then written into
    the file.
    """

    #: the column of the old proof's tactics (where a new one's lines go)
    block_column: int = 2
    #: the old proof's first tactic stood on the ``by`` line (``by simp``)
    inline: bool = False

    def replacement(self, sentences: Sequence[str]) -> str:
        return proof_block(sentences, self.block_column, self.inline)


@dataclass(frozen=True, slots=True)
class BrokenProof:
    """A proof that no longer checks, as the repair sees it."""

    #: the goal as a hole of the stand-in text (where its proof is ``sorry``)
    hole: RepairHole
    #: the old proof's span in the file as it is (``by`` to the end of the declaration)
    original_start: int
    original_end: int
    #: the old proof's tactics, as the file has them (comments left out)
    script: tuple[str, ...]
    #: index in ``script`` of the tactic where Lean stopped (``len(script)``: at the end)
    failing_index: int
    error: str
    kind: BreakKind
    #: where Lean put the error in the file as it is (1-based line, 0-based column)
    line: int
    column: int
    #: the goal the REPL gave for the stand-in's ``sorry``
    goal_text: str = ""

    @property
    def failing(self) -> str:
        """The tactic where Lean stopped."""
        if self.failing_index < len(self.script):
            return self.script[self.failing_index]
        return AT_END


@dataclass(slots=True)
class Detection:
    """The broken proofs of one file, in file order, and the file with them ``sorry``."""

    broken: list[BrokenProof] = field(default_factory=list)
    standin: str = ""
    #: why the file does not check outside any proof ("" when the stand-in checks)
    stuck: str = ""
    #: REPL commands it took
    compilations: int = 0


@dataclass(frozen=True, slots=True)
class _Proof:
    """The ``by`` block of a declaration."""

    by_start: int
    end: int
    #: the tactics' token runs
    sentences: tuple[tuple[Token, ...], ...]
    column: int
    inline: bool


def _column(text: str, offset: int) -> int:
    return offset - (text.rfind("\n", 0, offset) + 1)


def _proof(text: str, command: Command) -> _Proof | None:
    """The ``by`` block of a ``theorem``/``lemma``/``example`` (None for anything else)."""
    if command.keyword not in _PROOF_KEYWORDS:
        return None
    tokens = command.tokens
    assign = next(
        (i for i in range(command.keyword_index + 1, len(tokens)) if tokens[i].text == ":="),
        None,
    )
    if assign is None or assign + 1 >= len(tokens) or tokens[assign + 1].text != "by":
        return None
    tactics = tokens[assign + 2 :]
    # a command starts in column 0: a new block's tactics go in column 2
    if not tactics:
        return _Proof(tokens[assign + 1].start, command.end, (), 2, False)
    column = _column(text, tactics[0].start)
    starts = [
        i
        for i, token in enumerate(tactics)
        if i == 0 or (token.line_start and _column(text, token.start) <= column)
    ]
    sentences = tuple(
        tactics[a:b] for a, b in zip(starts, [*starts[1:], len(tactics)], strict=True)
    )
    inline = not tactics[0].line_start
    return _Proof(
        tokens[assign + 1].start,
        command.end,
        sentences,
        2 if inline else column,
        inline,
    )


def _sentence_text(text: str, tokens: Sequence[Token]) -> str:
    """A tactic as the file has it, its comments left out (a comment's line goes too)."""
    parts = [tokens[0].text]
    for before, token in itertools.pairwise(tokens):
        gap = text[before.end : token.start]
        if "--" in gap or "/-" in gap:
            gap = gap[gap.rfind("\n") :] if "\n" in gap else " "
        parts += [gap, token.text]
    return "".join(parts)


def _failing_index(proof: _Proof, offset: int) -> int:
    """The tactic at ``offset`` (before the first tactic, on ``by``: the end)."""
    at = len(proof.sentences)
    for index, sentence in enumerate(proof.sentences):
        if sentence[0].start <= offset:
            at = index
    return at


def _stuck(text: str, offset: int, message: LeanMessage, what: str) -> str:
    line, _ = _line_column(text, offset)
    return f"line {line}, {what}: {_one_line(message.data)}"[:400]


@dataclass(frozen=True, slots=True)
class _Found:
    command: Command
    proof: _Proof
    failing: int
    message: str
    offset: int
    goal: str


def _first_error(
    text: str, command: Command, proof: _Proof, reply: CommandReply
) -> tuple[int, LeanMessage, bool]:
    """The error that names where the proof broke: the first inside the ``by`` block, else
    the first (with whether it is inside)."""
    located = [(offset_of(text, command.start, m.pos), m) for m in reply.errors]
    inside = [(o, m) for o, m in located if proof.by_start <= o < proof.end]
    offset, message = (inside or located)[0]
    return offset, message, bool(inside)


async def find_broken(path: Path, text: str, elaborate: Elaborate) -> Detection:
    """The broken proofs of ``text`` (the content of ``path``); see the module's docstring."""
    every = commands(text)
    first = 0
    while first < len(every) and every[first].keyword in _HEADER_KEYWORDS:
        first += 1
    header = text[: every[first - 1].end].strip() if first else ""
    detection = Detection(standin=text)
    env: int | None = None
    if header:
        reply = await elaborate(header, None)
        detection.compilations += 1
        if reply.errors:
            detection.stuck = _stuck(text, 0, reply.errors[0], "the imports do not load")
            return detection
        env = reply.env
    found: list[_Found] = []
    for command in every[first:]:
        source = text[command.start : command.end]
        reply = await elaborate(source, env)
        detection.compilations += 1
        if not reply.errors:
            env = reply.env
            continue
        proof = _proof(text, command)
        if proof is None:
            offset = offset_of(text, command.start, reply.errors[0].pos)
            detection.stuck = _stuck(
                text, offset, reply.errors[0], "outside any proof it can repair"
            )
            break
        offset, message, inside = _first_error(text, command, proof, reply)
        standin = await elaborate(text[command.start : proof.by_start] + "sorry", env)
        detection.compilations += 1
        if standin.errors:
            at = offset_of(text, command.start, standin.errors[0].pos)
            detection.stuck = _stuck(
                text, at, standin.errors[0], "the declaration does not check without its proof"
            )
            break
        env = standin.env
        failing = _failing_index(proof, offset) if inside else len(proof.sentences)
        goal = standin.sorries[0].goal if standin.sorries else ""
        found.append(_Found(command, proof, failing, _one_line(message.data), offset, goal))
    current = text
    for item in reversed(found):
        current = current[: item.proof.by_start] + "sorry" + current[item.proof.end :]
    detection.standin = current
    holes = {h.proof_start: h for h in scan_lean_text(path, current)}
    shift = 0
    for item in found:
        proof = item.proof
        hole = holes[proof.by_start - shift]
        shift += proof.end - proof.by_start - len("sorry")
        fields = {f.name: getattr(hole, f.name) for f in dataclasses.fields(hole)}
        fields["goal"] = dataclasses.replace(hole.goal, kind=HoleKind.BROKEN)
        line, column = _line_column(text, item.offset)
        detection.broken.append(
            BrokenProof(
                RepairHole(**fields, block_column=proof.column, inline=proof.inline),
                proof.by_start,
                proof.end,
                tuple(_sentence_text(text, s) for s in proof.sentences),
                item.failing,
                item.message,
                classify(item.message),
                line,
                column,
                item.goal,
            )
        )
    return detection
