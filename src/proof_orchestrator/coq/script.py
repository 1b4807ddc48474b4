"""What a candidate Coq proof script may contain, and how it is written out.

The whole-file check and the axiom audit are the real guarantees; this gate
comes first and refuses, before anything is compiled, every script that could
end the proof early, change the statement or the environment, or admit a goal:

* every sentence must be a tactic: a bullet, a brace, a goal selector, or
  something that starts with a lower-case tactic name or ``(`` / ``[``;
  vernacular commands (``Qed``, ``Admitted``, ``Abort``, ``Axiom``,
  ``Unset Guard Checking``, ``Require`` ...) all start with a capital letter;
* some identifiers are refused anywhere: ``admit``, ``give_up``, the
  ``*_no_check`` casts, and every proof-ending keyword;
* no comments (a ``(*`` in a script could swallow the ``Qed.`` after it).
"""

from __future__ import annotations

import enum
import re
import textwrap
from collections.abc import Sequence

from ..errors import ScriptRejected, SourceSyntaxError
from .syntax import one_sentence, split_sentences

__all__ = [
    "FORBIDDEN_IDENTIFIERS",
    "GateRefusal",
    "check_script",
    "format_script",
    "passes_gate",
]


class GateRefusal(enum.StrEnum):
    """Why the gate refused a script (``ScriptRejected.kind``)."""

    #: no sentence at all
    EMPTY = "empty"
    #: a comment, which could swallow the ``Qed.`` after it
    COMMENT = "comment"
    #: a sentence that is not one complete sentence (cut off, unbalanced)
    SYNTAX = "syntax"
    #: a forbidden identifier (``admit``, ``Admitted``, ``Qed``, ``*_no_check`` ...)
    FORBIDDEN = "forbidden"
    #: a vernacular command, not a tactic
    VERNACULAR = "vernacular"


#: identifiers refused anywhere in a script (outside strings)
FORBIDDEN_IDENTIFIERS = frozenset(
    {
        "admit",
        "Admitted",
        "Admit",
        "Abort",
        "Axiom",
        "Axioms",
        "Parameter",
        "Conjecture",
        "give_up",
        "Qed",
        "Defined",
        "Save",
        "Restart",
        "Undo",
        "BackTo",
        "Back",
        "Reset",
        "exact_no_check",
        "vm_cast_no_check",
        "native_cast_no_check",
        "change_no_check",
    }
)
_STRING = re.compile(r'"(?:[^"]|"")*"')
_IDENT = re.compile(r"[A-Za-z_][\w']*")
_TACTIC_START = re.compile(r"(?:\d+\s*:\s*|all\s*:\s*|\[[A-Za-z_][\w']*\]\s*:\s*)?[a-z_(\[]")


def check_script(sentences: Sequence[str]) -> tuple[str, ...]:
    """Return the script's sentences in normal form, or raise :class:`ScriptRejected`."""
    if not sentences:
        raise ScriptRejected("an empty script proves nothing", GateRefusal.EMPTY)
    normal: list[str] = []
    for raw in sentences:
        if "(*" in raw or "*)" in raw:
            raise ScriptRejected(
                f"comments are not allowed in a proof script: {raw!r}", GateRefusal.COMMENT
            )
        try:
            sentence = one_sentence(raw)
        except SourceSyntaxError as exc:
            raise ScriptRejected(f"not one complete sentence: {exc}", GateRefusal.SYNTAX) from exc
        code = sentence.code
        without_strings = _STRING.sub('""', code)
        for ident in _IDENT.findall(without_strings):
            if ident in FORBIDDEN_IDENTIFIERS:
                raise ScriptRejected(
                    f"{ident!r} is never allowed in a proof script: {code!r}",
                    GateRefusal.FORBIDDEN,
                )
        if not sentence.is_bullet_or_brace and not _TACTIC_START.match(code):
            raise ScriptRejected(
                f"not a tactic (vernacular commands are refused): {code!r}",
                GateRefusal.VERNACULAR,
            )
        normal.append(code)
    return tuple(normal)


def passes_gate(script: str) -> bool:
    """Whether :func:`check_script` accepts the one-sentence ``script``: a strategy drops
    one it would refuse before trying it (it would win the goal, then be thrown away)."""
    try:
        check_script([script])
    except ScriptRejected:
        return False
    return True


def format_script(sentences: Sequence[str], indent: str = "  ") -> str:
    """Lay a script out as the body of ``Proof. ... Qed.``.

    Short scripts stay on one line; longer ones get one sentence per line with
    a bullet or brace kept on the line of the tactic that follows it.
    """
    one_line = " ".join(sentences)
    if len(one_line) <= 80 and not any(s in ("{", "}") for s in sentences):
        return indent + one_line
    lines: list[str] = []
    pending = ""
    depth = 0
    for sentence in sentences:
        if sentence == "}":
            depth = max(depth - 1, 0)
        if split_sentences(sentence)[0].is_bullet_or_brace and sentence != "}":
            pending += sentence + " "
            continue
        lines.append(_wrapped(indent + "  " * depth, pending + sentence))
        pending = ""
        if sentence.endswith("{"):
            depth += 1
    if pending:
        lines.append(indent + "  " * depth + pending.rstrip())
    return "\n".join(lines)


#: a sentence longer than this (a proof term) is laid out over several lines
WRAP_WIDTH = 100


def _wrapped(indent: str, sentence: str) -> str:
    """``sentence`` at ``indent``, over lines of at most :data:`WRAP_WIDTH` characters
    when it is longer, broken at its spaces (a line break is a space to Coq; a
    sentence with a string is left whole, as a break inside it would change it)."""
    if len(indent) + len(sentence) <= WRAP_WIDTH or '"' in sentence:
        return indent + sentence
    return textwrap.fill(
        sentence,
        WRAP_WIDTH,
        initial_indent=indent,
        subsequent_indent=indent + "  ",
        break_long_words=False,
        break_on_hyphens=False,
    )
