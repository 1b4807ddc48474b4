"""The prompt a model sees, and how its replies become proof sentences.

The prompt holds the statement, the goal as the prover shows it (hypotheses
above the bar, the conclusion below), the premises retrieval ranks best, the
nearest proved statements with their proofs (k-NN), and the errors of
earlier attempts on this goal. Replies are read leniently (a fenced block
if there is one, ``Proof.``/``Qed.`` dropped) and then split by the real
sentence splitter; the script gate and the prover judge the rest.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from ...errors import SourceSyntaxError
from ..syntax import one_sentence, split_sentences

__all__ = [
    "NEXT_SYSTEM",
    "WHOLE_SYSTEM",
    "PromptContext",
    "next_tactic_prompt",
    "parse_script",
    "parse_tactics",
    "whole_proof_prompt",
]

WHOLE_SYSTEM = (
    "You are an expert in the Coq proof assistant. Write a complete proof script for the "
    "goal. Reply with the tactics only, in one ```coq fenced block, without Proof. or Qed. "
    "Never use admit, Admitted or axioms: a real Coq checks every script."
)
NEXT_SYSTEM = (
    "You are an expert in the Coq proof assistant. Propose the next tactic for the current "
    "goal. Reply with up to {k} alternative tactics, one per line, each a single Coq "
    "sentence ending with a period, best first, and nothing else."
)

_FENCE = re.compile(r"```[^\n`]*\n(.*?)```", re.S)
#: an opening fence (its info string, e.g. ``coq``, and its line)
_OPEN_FENCE = re.compile(r"```[^\n`]*\n")
_PROOF_WORDS = re.compile(r"^\s*(Proof\.|Qed\.|Defined\.)\s*$", re.M)
_LIST_MARK = re.compile(r"^\s*(?:\d+[.)]|[-*•])\s+(?=\S)")


@dataclass(frozen=True, slots=True)
class PromptContext:
    """What is known about one goal when a model is asked about it."""

    statement: str
    #: the goal as the prover prints it (hypotheses, bar, conclusion)
    goal: str
    #: statements of the best-ranked premises
    premises: tuple[str, ...] = ()
    #: (statement, proof) of the nearest proved goals
    neighbours: tuple[tuple[str, str], ...] = ()
    #: (script, error) of earlier attempts on this goal
    errors: tuple[tuple[str, str], ...] = field(default=())


def _sections(context: PromptContext) -> list[str]:
    parts = [
        f"Statement:\n{context.statement}",
        f"Goal (hypotheses, then the conclusion):\n{context.goal}",
    ]
    if context.premises:
        parts.append("Premises that may help:\n" + "\n".join(context.premises))
    if context.neighbours:
        parts.append(
            "Similar statements proved before, with their proofs:\n"
            + "\n\n".join(f"{s}\nProof. {p} Qed." for s, p in context.neighbours)
        )
    if context.errors:
        parts.append(
            "Earlier attempts that failed (do not repeat them):\n"
            + "\n".join(
                f"- {script}\n  error: {message[:300]}" for script, message in context.errors
            )
        )
    return parts


def whole_proof_prompt(context: PromptContext) -> str:
    return "\n\n".join([*_sections(context), "Write the whole proof script."])


def next_tactic_prompt(context: PromptContext, steps: Sequence[str], current: str, k: int) -> str:
    parts = _sections(context)
    parts.append("Tactics run so far:\n" + (" ".join(steps) if steps else "(none)"))
    parts.append(f"Current goal:\n{current}")
    parts.append(f"Give up to {k} candidate next tactics, one per line.")
    return "\n\n".join(parts)


def _fenced(reply: str) -> str:
    """The last fenced block; a block cut off before its closing fence runs to the end."""
    blocks = _FENCE.findall(reply)
    if blocks:
        return str(blocks[-1])
    opened = list(_OPEN_FENCE.finditer(reply))
    return reply[opened[-1].end() :] if opened else reply


def parse_script(reply: str) -> tuple[str, ...]:
    """The sentences of a whole-proof reply (empty when there is nothing to run).

    A reply cut off mid-sentence (``max_tokens``) keeps the complete sentences
    before the cut; the gate and the prover judge them like any other script.
    """
    text = _PROOF_WORDS.sub("", _fenced(reply))
    try:
        return tuple(s.code for s in split_sentences(text))
    except SourceSyntaxError as exc:
        cut = exc.offset
    if not cut:
        return ()
    try:
        return tuple(s.code for s in split_sentences(text[:cut]))
    except SourceSyntaxError:
        return ()


def parse_tactics(reply: str, k: int) -> list[str]:
    """Up to ``k`` one-sentence tactics from a next-tactic reply, in order, without repeats."""
    found: list[str] = []
    blocks = _FENCE.findall(reply)
    for line in (blocks[-1] if blocks else reply).splitlines():
        line = _LIST_MARK.sub("", line.strip().strip("`")).strip()
        if not line:
            continue
        try:
            code = one_sentence(line).code
        except SourceSyntaxError:
            continue
        if code not in found:
            found.append(code)
        if len(found) >= k:
            break
    return found
