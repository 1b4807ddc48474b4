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

It follows Coq's own lexer (``clexer.ml``) where the two could disagree, with
``coqc -time`` (which prints the character span of every sentence it runs) as
the oracle (``tests/coq_oracle.py``):

* ``tac...`` (the ellipsis of ``Proof with``) ends a sentence, as ``.`` does:
  a run of one or three periods followed by a blank or the end of the text.
  A run of two (``..``) never does.
* at the start of a sentence, ``-``, ``+`` and ``*`` (and their repetitions)
  are bullets whatever follows them: ``-simpl.`` is two sentences.
* a symbol declared in the text by ``Notation``/``Infix``/``Tactic Notation``
  that ends with a period (``Infix "+." ...``) is one token for Coq, so
  ``1 +. 2`` does not end there. Symbols declared in *other* files that end
  with a period cannot be seen here (Coq 8.16's standard library declares
  none; the sweep ``bench/sweep_sessions.py`` checks the whole of it).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

from ..errors import SourceSyntaxError

__all__ = [
    "Sentence",
    "declared_tokens",
    "one_sentence",
    "sentence_keyword",
    "split_sentences",
    "split_top_level",
    "strip_comments",
]

#: at the start of a sentence Coq reads a run of one bullet character as a bullet,
#: whatever follows it (``process_sequence`` in Coq's lexer)
_BULLET = re.compile(r"-+|\++|\*+")
#: commands whose strings declare new tokens: after attributes (whose strings, such as
#: ``note="Use foo."``, declare nothing), the keyword, then the notation's string
_DECLARES_TOKENS = re.compile(
    r"(?:#\[[^\]]*\]\s*)*(?:(?:Local|Global|Reserved|Polymorphic)\s+)*"
    r"(?P<tactic>Tactic\s+)?(?:Notation|Infix)\s+(?=\")"
)
_STRING = re.compile(r'"(?:[^"]|"")*"')
_SELECTOR_BRACE = re.compile(r"(?:\d+|\[[A-Za-z_][\w']*\])\s*:\s*\{")
#: where a sentence's scan must look: a comment, a string, a period
_SENTENCE_STOP = re.compile(r'\(\*|"|\.')
#: inside a comment: a nested opener, the closer, a string (Coq lexes strings in comments)
_COMMENT_STOP = re.compile(r'\(\*|\*\)|"')
_STRIP_STOP = re.compile(r'\(\*|"')
_BLANK = re.compile(r"\s*")


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
    while True:
        # jump to the next comment opener or closer or string (in this order at one place)
        found = _COMMENT_STOP.search(text, i)
        if found is None:
            raise SourceSyntaxError("unterminated comment", offset=start)
        token = found.group()
        if token == "(*":
            depth += 1
            i = found.end()
        elif token == "*)":
            depth -= 1
            i = found.end()
            if depth == 0:
                return i
        else:
            i = _skip_string(text, found.start())


def _skip_string(text: str, i: int) -> int:
    """``text[i] == '"'``; return the index just past the closing quote."""
    start = i
    i += 1
    while True:
        i = text.find('"', i)
        if i < 0:
            raise SourceSyntaxError("unterminated string", offset=start)
        if text.startswith('""', i):
            i += 2  # a doubled quote inside the string
            continue
        return i + 1


def _skip_blank(text: str, i: int) -> int:
    """Skip whitespace and comments between sentences."""
    while True:
        blank = _BLANK.match(text, i)  # \s* always matches, possibly empty
        if blank is not None:
            i = blank.end()
        if not text.startswith("(*", i):
            return i
        i = _skip_comment(text, i)


def _dot_run(text: str, i: int) -> int:
    """``text[i] == '.'``; the index just past the run of periods starting there."""
    n = len(text)
    j = i
    while j < n and text[j] == ".":
        j += 1
    return j


def _ends_sentence(text: str, i: int, j: int, tokens: frozenset[str]) -> bool:
    """Does the run of periods ``text[i:j]`` end a sentence?

    Coq ends a sentence at ``.`` or ``...`` followed by a blank (or the end of
    the text, or, leniently, a comment, which coqc itself rejects). ``..`` is
    the token of recursive notations, and a declared symbol ending with a
    period (``+.``) swallows it.
    """
    n = len(text)
    if j < n and not (text[j].isspace() or text.startswith("(*", j)):
        return False  # List.map, 1.5, x.(f), ..)
    if j - i not in (1, 3):
        return False
    return not any(
        text.startswith(token, j - len(token)) and _token_starts(text, j - len(token))
        for token in tokens
    )


def _token_starts(text: str, k: int) -> bool:
    """Can a symbol token start at ``text[k]`` (Coq lexes symbols greedily from there)?"""
    return k == 0 or text[k - 1].isspace() or text[k - 1].isalnum() or text[k - 1] in "_'()[]{}\""


def declared_tokens(code: str) -> frozenset[str]:
    """Symbols ending with a period that a ``Notation``/``Infix`` sentence declares.

    Only the notation's own string counts (for a ``Tactic Notation``, every
    string before ``:=``); an abbreviation (``Notation x := ...``) declares
    no token.
    """
    match = _DECLARES_TOKENS.match(code)
    if match is None:
        return frozenset()
    rest = code[match.end() :]
    if match.group("tactic"):
        literals = _STRING.findall(rest.split(":=", 1)[0])
    else:
        first = _STRING.match(rest)
        literals = [first.group()] if first else []
    found: set[str] = set()
    for literal in literals:
        for word in literal[1:-1].replace('""', '"').split():
            word = word.strip("'")
            if word.endswith(".") and word.strip("."):
                found.add(word)
    return frozenset(found)


def split_sentences(text: str) -> list[Sentence]:
    """Split ``text`` into sentences.

    Raises :class:`SourceSyntaxError` for an unterminated comment or string, or
    for trailing text that does not end with a period.
    """
    sentences: list[Sentence] = []
    tokens: frozenset[str] = frozenset()
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
            # jump to the next place where a comment, a string or a period starts
            found = _SENTENCE_STOP.search(text, i)
            if found is None:
                raise SourceSyntaxError(
                    f"text does not end with a period: {text[start : start + 60]!r}",
                    offset=start,
                )
            i = found.start()
            token = found.group()
            if token == "(*":
                i = _skip_comment(text, i)
            elif token == '"':
                i = _skip_string(text, i)
            else:
                j = _dot_run(text, i)
                if _ends_sentence(text, i, j, tokens):
                    sentence = Sentence(text[start:j], start, j)
                    sentences.append(sentence)
                    tokens |= declared_tokens(sentence.code)
                    i = j
                    break
                i = j
        i = _skip_blank(text, i)
    return sentences


@functools.lru_cache(maxsize=4096)
def one_sentence(text: str) -> Sentence:
    """``text`` as a single sentence; :class:`SourceSyntaxError` if it is not exactly one.

    Cached: a search sends the same few hundred tactics at node after node.
    """
    parts = split_sentences(text)
    if len(parts) != 1:
        raise SourceSyntaxError(f"expected exactly one sentence, got {len(parts)}: {text!r}")
    return parts[0]


def strip_comments(text: str) -> str:
    """Remove comments (nested, with strings inside) and keep strings intact."""
    if "(*" not in text and '"' not in text:
        return text
    out: list[str] = []
    i = 0
    while True:
        found = _STRIP_STOP.search(text, i)
        if found is None:
            out.append(text[i:])
            return "".join(out)
        out.append(text[i : found.start()])
        if found.group() == "(*":
            i = _skip_comment(text, found.start())
            out.append(" ")
        else:
            j = _skip_string(text, found.start())
            out.append(text[found.start() : j])
            i = j


def sentence_keyword(code: str) -> str:
    """The first word of a sentence after attributes, e.g. ``Lemma`` or ``intros``."""
    stripped = re.sub(r"^(?:#\[[^\]]*\]\s*)+", "", code)
    match = re.match(r"[A-Za-z_][\w']*", stripped)
    return match.group() if match else ""


def split_top_level(text: str, token: str) -> list[str]:
    """``text`` split at ``token`` outside parentheses, brackets and braces (an arrow
    ``->`` is never the end of an ``<->``)."""
    if token not in text:
        return [text]
    parts: list[str] = []
    depth = 0
    start = 0
    i = 0
    while i < len(text):
        char = text[i]
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif (
            depth == 0
            and text.startswith(token, i)
            and not (token == "->" and i > 0 and text[i - 1] == "<")
        ):
            parts.append(text[start:i])
            i += len(token)
            start = i
            continue
        i += 1
    parts.append(text[start:])
    return parts
