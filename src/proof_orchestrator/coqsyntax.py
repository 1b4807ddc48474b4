"""Splitting Coq source text into sentences.

A sentence is what ``coqtop`` answers with exactly one prompt: a command or
tactic ending with a period followed by whitespace (or the end of the text),
or a proof-structuring token on its own: a bullet (``-``, ``+``, ``*``, or a
repetition such as ``--``) or a brace ``{`` / ``}`` (optionally preceded by a
goal selector, ``2: {``).

The lexer honours everything that can hide a period: nested comments
``(* (* *) *)`` (strings inside comments are lexed too, as Coq does), strings
with doubled quotes ``"a "" b"``, qualified names ``List.map``, numbers ``1.5``
and the ``..`` of recursive notations.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .errors import SourceSyntaxError

__all__ = ["Sentence", "one_sentence", "sentence_keyword", "split_sentences", "strip_comments"]

_BULLET = re.compile(r"(?:-+|\++|\*+)(?=\s|$|\(\*)")
_SELECTOR_BRACE = re.compile(r"(?:\d+|\[[A-Za-z_][\w']*\])\s*:\s*\{")


@dataclass(frozen=True, slots=True)
class Sentence:
    """One sentence: ``text`` is ``source[start:end]`` (comments inside kept).

    ``code`` is the sentence without comments, on a single line. This is the
    form sent to ``coqtop``: one sentence per line, so that a parse error
    (after which coqtop discards the rest of the line) can never leave half a
    sentence in its input buffer.
    """

    text: str
    start: int
    end: int
    code: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "code", " ".join(strip_comments(self.text).split()))

    @property
    def is_bullet_or_brace(self) -> bool:
        code = self.code
        return code in ("{", "}") or bool(_BULLET.fullmatch(code)) or code.endswith("{")


def _skip_comment(text: str, i: int) -> int:
    """``text[i:i+2] == '(*'``; return the index just past the matching ``*)``."""
    start = i
    depth = 0
    n = len(text)
    while i < n:
        if text.startswith("(*", i):
            depth += 1
            i += 2
        elif text.startswith("*)", i):
            depth -= 1
            i += 2
            if depth == 0:
                return i
        elif text[i] == '"':
            i = _skip_string(text, i)
        else:
            i += 1
    raise SourceSyntaxError("unterminated comment", offset=start)


def _skip_string(text: str, i: int) -> int:
    """``text[i] == '"'``; return the index just past the closing quote."""
    start = i
    i += 1
    n = len(text)
    while i < n:
        if text[i] == '"':
            if i + 1 < n and text[i + 1] == '"':
                i += 2
                continue
            return i + 1
        i += 1
    raise SourceSyntaxError("unterminated string", offset=start)


def _skip_blank(text: str, i: int) -> int:
    """Skip whitespace and comments between sentences."""
    n = len(text)
    while i < n:
        if text[i].isspace():
            i += 1
        elif text.startswith("(*", i):
            i = _skip_comment(text, i)
        else:
            break
    return i


def _is_terminator(text: str, i: int) -> bool:
    """Is the period at ``text[i]`` the end of a sentence?"""
    n = len(text)
    if i + 1 < n and not (text[i + 1].isspace() or text.startswith("(*", i + 1)):
        return False  # List.map, 1.5, .., ...
    # a period preceded by another period belongs to `..` (recursive notations)
    return not (i > 0 and text[i - 1] == ".")


def split_sentences(text: str) -> list[Sentence]:
    """Split ``text`` into sentences.

    Raises :class:`SourceSyntaxError` for an unterminated comment or string, or
    for trailing text that does not end with a period.
    """
    sentences: list[Sentence] = []
    n = len(text)
    i = _skip_blank(text, 0)
    while i < n:
        start = i
        bullet = _BULLET.match(text, i)
        if bullet:
            sentences.append(Sentence(bullet.group(), start, bullet.end()))
            i = _skip_blank(text, bullet.end())
            continue
        if text[i] in "{}":
            sentences.append(Sentence(text[i], start, i + 1))
            i = _skip_blank(text, i + 1)
            continue
        selector = _SELECTOR_BRACE.match(text, i)
        if selector:
            sentences.append(Sentence(selector.group(), start, selector.end()))
            i = _skip_blank(text, selector.end())
            continue
        while True:
            if i >= n:
                raise SourceSyntaxError(
                    f"text does not end with a period: {text[start : start + 60]!r}",
                    offset=start,
                )
            ch = text[i]
            if text.startswith("(*", i):
                i = _skip_comment(text, i)
            elif ch == '"':
                i = _skip_string(text, i)
            elif ch == "." and _is_terminator(text, i):
                i += 1
                sentences.append(Sentence(text[start:i], start, i))
                break
            else:
                i += 1
        i = _skip_blank(text, i)
    return sentences


def one_sentence(text: str) -> Sentence:
    """``text`` as a single sentence; :class:`SourceSyntaxError` if it is not exactly one."""
    parts = split_sentences(text)
    if len(parts) != 1:
        raise SourceSyntaxError(f"expected exactly one sentence, got {len(parts)}: {text!r}")
    return parts[0]


def strip_comments(text: str) -> str:
    """Remove comments (nested, with strings inside) and keep strings intact."""
    out: list[str] = []
    i = 0
    n = len(text)
    while i < n:
        if text.startswith("(*", i):
            i = _skip_comment(text, i)
            out.append(" ")
        elif text[i] == '"':
            j = _skip_string(text, i)
            out.append(text[i:j])
            i = j
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def sentence_keyword(code: str) -> str:
    """The first word of a sentence after attributes, e.g. ``Lemma`` or ``intros``."""
    stripped = re.sub(r"^(?:#\[[^\]]*\]\s*)+", "", code)
    match = re.match(r"[A-Za-z_][\w']*", stripped)
    return match.group() if match else ""
