"""Finding the proofs of a Coq file that no longer check (``orch repair``).

A proof breaks when something it relies on changes: a lemma renamed or given
another hypothesis, a hint removed, a definition made opaque, a new Coq. The
file is compiled with the project's flags (``compile(text)``, the files it
imports built); at the first error, the proof that contains it is recorded as
broken (its old script, the sentence where Coq stopped, the error and its
kind) and replaced by ``Admitted.``, its ``Proof ...`` opener kept so that a
section's variables are generalized as before. The file is compiled again,
and so on, until it compiles or the error is outside any proof: a statement or
a definition that no longer checks is not a proof's to repair, and the file is
*stuck* there (the proofs after it are not looked at).

The result's ``standin`` is the file with every broken proof admitted:
sessions on a broken goal open on it (what precedes the goal loads),
repaired proofs are verified in it, and the files that import this one are
built from it, so that detection goes on in them.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..goals import BreakKind, HoleKind
from ..strategies.repairing import classify_error
from .build_output import messages
from .holes import CoqHole, DeclaredProof, iter_proofs, proof_hole
from .syntax import sentence_keyword, split_sentences

__all__ = ["BrokenProof", "Detection", "classify", "error_offset", "find_broken"]

#: the proof endings whose proofs ``orch repair`` repairs
_REPAIRED_ENDINGS = frozenset({"Qed", "Defined"})

_KINDS: tuple[tuple[BreakKind, re.Pattern[str]], ...] = (
    (
        BreakKind.UNKNOWN_REFERENCE,
        re.compile(
            r"was not found in the current environment|Unknown constant|"
            r"Unknown inductive|No such hint|Unbound (?:value|reference)|"
            r"is not a (?:defined object|reference)|Cannot find (?:the )?(?:library|a physical)"
        ),
    ),
    (BreakKind.TIMEOUT, re.compile(r"\bTimeout\b|timeout", re.I)),
    (
        BreakKind.REMAINING_GOALS,
        re.compile(
            r"incomplete proof|unfocused goals|Wrong bullet|No such goal|"
            r"Expected a single focused goal|[Nn]o more (?:sub)?goals?|"
            r"[Aa]ttempt to save|not fully (?:solved|proved)"
        ),
    ),
    (
        BreakKind.TYPE_MISMATCH,
        re.compile(
            r"while it is expected to have type|Unable to unify|Illegal application|"
            r"cannot be applied|Impossible to unify|has type .* which should be|"
            r"not convertible|The term .* has type"
        ),
    ),
)


def classify(error: str) -> BreakKind:
    """The kind of a broken proof's error (``TACTIC_FAILURE`` when no other fits)."""
    return classify_error(error, _KINDS)


def error_offset(text: str, output: str) -> tuple[int, str] | None:
    """Where in ``text`` the first error of ``coqc``'s ``output`` is, and its message.

    Coq gives a line and a byte column; warnings, which have locations too,
    are skipped. None when the output locates no error.
    """
    error = next((m for m in messages(output) if m.is_error), None)
    if error is None:
        return None
    # the whole message (first_error caps it): the repair classifies it by its words
    message = " ".join(error.body.removeprefix("Error:").split())
    lines = text.split("\n")
    number = error.line - 1
    if number >= len(lines):
        return len(text), message
    column = len(lines[number].encode()[: error.start].decode(errors="ignore"))
    return sum(len(line) + 1 for line in lines[:number]) + column, message


@dataclass(frozen=True, slots=True)
class BrokenProof:
    """A proof that no longer checks, as the repair sees it."""

    #: the goal as a hole of the stand-in text (where its proof is ``Admitted.``)
    hole: CoqHole
    #: the same proof in the file as it is (the span a repair replaces)
    original: CoqHole
    #: the old proof's sentences (the ``Proof ...`` opener and ``Qed.`` left out)
    script: tuple[str, ...]
    #: index in ``script`` of the sentence where Coq stopped (``len(script)``: at ``Qed``)
    failing_index: int
    error: str
    kind: BreakKind

    @property
    def failing(self) -> str:
        """The sentence where Coq stopped."""
        if self.failing_index < len(self.script):
            return self.script[self.failing_index]
        return "Qed."


@dataclass(slots=True)
class Detection:
    """The broken proofs of one file, in file order, and the file with them admitted."""

    broken: list[BrokenProof] = field(default_factory=list)
    standin: str = ""
    #: why the file does not compile outside any proof ("" when the stand-in compiles)
    stuck: str = ""
    #: compilations it took
    compilations: int = 0


def _admitted(text: str, proof: DeclaredProof) -> str:
    """``text`` with ``proof``'s script and ending replaced by ``Admitted.``"""
    first = proof.proof[0]
    if sentence_keyword(first.code) == "Proof":
        return f"{text[: first.end]} Admitted.{text[proof.proof[-1].end :]}"
    return f"{text[: first.start]}Admitted.{text[proof.proof[-1].end :]}"


def _failing_index(proof: DeclaredProof, offset: int) -> int:
    """The index, in the script without opener and ending, of the sentence at ``offset``."""
    sentences = list(proof.proof)
    body_start = 1 if sentence_keyword(sentences[0].code) == "Proof" else 0
    at = next(
        (i for i, s in enumerate(sentences) if s.start <= offset < s.end),
        next((i for i in range(len(sentences) - 1, -1, -1) if sentences[i].start <= offset), 0),
    )
    return min(max(at - body_start, 0), len(sentences) - 1 - body_start)


async def find_broken(
    path: Path,
    text: str,
    compile_text: Callable[[str], Awaitable[tuple[bool, str]]],
) -> Detection:
    """The broken proofs of ``text`` (the content of ``path``); see the module's docstring."""
    originals = list(iter_proofs(split_sentences(text)))
    found: dict[int, tuple[int, str, BreakKind]] = {}
    detection = Detection(standin=text)
    current = text
    for _ in range(len(originals) + 1):
        ok, output = await compile_text(current)
        detection.compilations += 1
        if ok:
            break
        located = error_offset(current, output)
        if located is None:
            detection.stuck = " ".join(output.split())[-400:] or "the file does not compile"
            break
        offset, message = located
        proofs = list(iter_proofs(split_sentences(current)))
        ordinal = next(
            (i for i, p in enumerate(proofs) if p.proof[0].start <= offset < p.proof[-1].end),
            None,
        )
        if ordinal is None or ordinal in found or proofs[ordinal].ending not in _REPAIRED_ENDINGS:
            line = current.count("\n", 0, offset) + 1
            detection.stuck = f"line {line}, outside any proof it can repair: {message}"[:400]
            break
        proof = proofs[ordinal]
        found[ordinal] = (_failing_index(proof, offset), message, classify(message))
        current = _admitted(current, proof)
    detection.standin = current
    standins = list(iter_proofs(split_sentences(current)))
    for ordinal in sorted(found):
        failing, message, kind = found[ordinal]
        hole, _ = proof_hole(path, current, standins[ordinal], HoleKind.BROKEN)
        original, script = proof_hole(path, text, originals[ordinal], HoleKind.BROKEN)
        # the strategies on the stand-in's hole see the old script as evidence
        hole = replace(hole, goal=replace(hole.goal, old_script=script))
        detection.broken.append(BrokenProof(hole, original, script, failing, message, kind))
    return detection
