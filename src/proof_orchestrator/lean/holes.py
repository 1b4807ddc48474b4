"""Finding ``sorry`` holes in Lean 4 files, and splicing proofs into them.

The scanner only *locates*: it lexes the file (``--`` and nested ``/- -/``
comments, string and character literals are skipped, so a ``sorry`` in them is
never a hole), cuts it into commands at lines that start in column 0, tracks
``namespace``/``section``/``end``, and reports each ``sorry`` token inside a
declaration with the declaration's span. What the goal *is* comes from the
REPL's own ``sorries`` reply when a session opens (see
:mod:`proof_orchestrator.lean.session`), matched by the position computed here.

A proof replaces exactly the ``sorry`` token. In tactic position the script's
lines are aligned on the column of the ``sorry``; in term position it becomes
``by`` followed by the script (in parentheses when it spans several lines).
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import SourceSyntaxError
from ..goals import Goal, HoleKind, fingerprint_of

__all__ = [
    "DECLARATION_KEYWORDS",
    "Command",
    "Declaration",
    "LeanHole",
    "Token",
    "command_spans",
    "commands",
    "declarations",
    "declared_axioms",
    "lex",
    "scan_lean_text",
    "splice",
]

#: commands whose body may hold a ``sorry`` we fill
DECLARATION_KEYWORDS = frozenset(
    {"theorem", "lemma", "example", "def", "instance", "abbrev", "opaque"}
)
#: commands that declare a named constant
_NAMED = DECLARATION_KEYWORDS | {"structure", "inductive", "class", "axiom"}
_MODIFIERS = frozenset(
    {"private", "protected", "noncomputable", "partial", "unsafe", "nonrec", "public"}
)
_IDENT = re.compile(r"(?:«[^»]*»|[^\W\d][\w'!?₀-₉ₐ-ₜᵢ-ᵪ]*)(?:\.(?:«[^»]*»|[^\W\d][\w'!?₀-₉]*))*")
_NUMBER = re.compile(r"\d[\w.]*")
_CHAR = re.compile(r"'(?:\\.[^']*|[^\\'])'")
_SYMBOLS = ("<;>", ":=", "=>", "·", "<|", "|>", "..", "(", ")", "⟨", "⟩", "[", "]", "{", "}")

#: a ``sorry`` right after one of these is in tactic position
_TACTIC_BEFORE = frozenset({"by", "·", ".", "<;>", ";", "next", "then", "else"})
#: ... and right after one of these, in term position
_TERM_BEFORE = frozenset(
    {
        ":=",
        "(",
        "⟨",
        ",",
        "[",
        "{",
        ":",
        "$",
        "<|",
        "|>",
        "exact",
        "refine",
        "use",
        "show",
        "from",
        "fun",
        "λ",
        "=",
        "+",
        "*",
        "->",
        "→",
        "↔",
        "∧",
        "∨",
    }
)


@dataclass(frozen=True, slots=True)
class Token:
    text: str
    start: int
    end: int
    #: the token is the first thing on its line (after indentation)
    line_start: bool


@dataclass(frozen=True, slots=True)
class LeanHole:
    """One ``sorry`` and what is needed to open a session on it and to patch it."""

    goal: Goal
    #: offsets of the whole declaration that holds the ``sorry``
    decl_start: int
    decl_end: int
    #: where the ``import`` header ends (the REPL must see it as its first command)
    header_end: int
    #: the ``sorry`` token
    proof_start: int
    proof_end: int
    #: 1-based line and 0-based code-point column of the ``sorry``, relative to the declaration
    line_in_decl: int
    column_in_decl: int
    #: True when the ``sorry`` stands for a tactic, False for a term
    tactic_mode: bool
    #: the column (in code points) of the ``sorry`` in its line, and that line's indentation
    column: int
    line_indent: int
    #: the ``sorry`` count of the declaration (a proof fills one, the others stay)
    sorries_in_decl: int
    #: the declaration's full name for ``#print axioms`` ("" for an ``example``)
    decl_name: str

    @property
    def prefix_end(self) -> int:
        return self.decl_start

    @property
    def declaration(self) -> str:
        """Its declaration's full name (a declaration with several ``sorry`` is one
        hole), or the goal's qualified name for an ``example``."""
        return self.decl_name or self.goal.qualified_name

    @property
    def statement_start(self) -> int:
        return self.decl_start

    def replacement(self, sentences: Sequence[str]) -> str:
        return splice_text(sentences, self.tactic_mode, self.column, self.line_indent)


def lex(text: str) -> list[Token]:
    """The significant tokens of ``text`` (comments dropped, literals kept as one token)."""
    tokens: list[Token] = []
    i, n = 0, len(text)
    line_start = True
    while i < n:
        ch = text[i]
        if ch == "\n":
            line_start = True
            i += 1
            continue
        if ch in " \t\r":
            i += 1
            continue
        if text.startswith("--", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        if text.startswith("/-", i):
            depth, j = 1, i + 2
            while depth and j < n:
                if text.startswith("/-", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("-/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            if depth:
                raise SourceSyntaxError("unterminated comment", offset=i)
            i = j
            continue
        start = i
        if ch == '"' or (ch == "r" and text.startswith('r"', i)):
            j = i + (2 if ch == "r" else 1)
            raw = ch == "r"
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" and not raw else 1
            if j >= n:
                raise SourceSyntaxError("unterminated string", offset=i)
            i = j + 1
        elif m := (
            (_CHAR.match(text, i) if ch == "'" else None)
            or _IDENT.match(text, i)
            or _NUMBER.match(text, i)
        ):
            i = m.end()
        else:
            sym = next((s for s in _SYMBOLS if text.startswith(s, i)), None)
            i += len(sym) if sym else 1
        tokens.append(Token(text[start:i], start, i, line_start))
        line_start = False
    return tokens


def _column(text: str, offset: int) -> tuple[int, int]:
    """(0-based code-point column, indentation) of ``offset`` in its line."""
    line_begin = text.rfind("\n", 0, offset) + 1
    line = text[line_begin:offset]
    return len(line), len(line) - len(line.lstrip(" \t"))


def _commands(text: str, tokens: list[Token]) -> list[tuple[int, int]]:
    """Token index ranges of commands: a command starts at a column-0 token."""
    starts = [i for i, t in enumerate(tokens) if t.line_start and _column(text, t.start)[0] == 0]
    if not starts or starts[0] != 0:
        starts.insert(0, 0)
    return [(a, b) for a, b in zip(starts, [*starts[1:], len(tokens)], strict=True) if a < b]


def _keyword(tokens: list[Token], a: int, b: int) -> tuple[str, int]:
    """The command's keyword after attributes and modifiers, and its token index."""
    i = a
    while i < b:
        t = tokens[i].text
        if t == "@" and i + 1 < b and tokens[i + 1].text == "[":
            depth, i = 0, i + 1
            while i < b:
                depth += {"[": 1, "]": -1}.get(tokens[i].text, 0)
                i += 1
                if depth == 0:
                    break
            continue
        if t in _MODIFIERS:
            i += 1
            continue
        if t in ("set_option", "open", "include", "omit"):
            # ``set_option pp.all true in theorem ...``: the command is the declaration
            after = next((j for j in range(i + 1, b) if tokens[j].text == "in"), None)
            if after is not None and after + 1 < b:
                i = after + 1
                continue
        return t, i
    return "", b


def _is_tactic_position(tokens: list[Token], i: int, first: int) -> bool:
    """Does the token at ``i`` stand where a tactic goes (rather than a term)?"""
    if i <= first:
        return False
    before = tokens[i - 1].text
    if before in _TACTIC_BEFORE:
        return True
    if before == "=>":
        # find what owns the alternative: ``fun x =>`` is a term, ``case h =>`` a tactic
        for j in range(i - 2, first - 1, -1):
            word = tokens[j].text
            if word in ("fun", "λ"):
                return False
            if word in ("case", "next", "induction", "cases", "rcases", "obtain", "on_goal"):
                return True
            if word == "match":
                return _is_tactic_position(tokens, j, first)
        return False
    if before in _TERM_BEFORE:
        return False
    # the first thing on its line, after a line that ended a tactic
    return tokens[i].line_start


@dataclass(frozen=True, slots=True)
class _Scope:
    kind: str
    name: str


def scan_lean_text(path: Path, text: str) -> list[LeanHole]:
    """Every ``sorry`` in a declaration of ``text``, in file order."""
    tokens = lex(text)
    holes: list[LeanHole] = []
    scopes: list[_Scope] = []
    header_end = 0
    header_open = True
    for a, b in _commands(text, tokens):
        keyword, k = _keyword(tokens, a, b)
        if header_open and keyword in ("import", "prelude", "module"):
            header_end = tokens[b - 1].end
            continue
        header_open = False
        if keyword in ("namespace", "section", "noncomputable") and k + 1 <= b:
            if keyword == "noncomputable":  # ``noncomputable section``
                keyword = tokens[k + 1].text if k + 1 < b else ""
            name = tokens[k + 1].text if k + 1 < b and tokens[k + 1].line_start is False else ""
            if keyword in ("namespace", "section"):
                scopes.append(_Scope(keyword, name if keyword == "namespace" else ""))
            continue
        if keyword == "end":
            if scopes:
                scopes.pop()
            continue
        if keyword not in DECLARATION_KEYWORDS:
            continue
        sorries = [i for i in range(k + 1, b) if tokens[i].text == "sorry"]
        if not sorries:
            continue
        name = ""
        if keyword != "example" and k + 1 < b and _IDENT.fullmatch(tokens[k + 1].text):
            name = tokens[k + 1].text
        decl_start, decl_end = tokens[a].start, tokens[b - 1].end
        decl_text = text[decl_start:decl_end]
        namespaces = [s.name for s in scopes if s.kind == "namespace" and s.name]
        qualified = ".".join([*namespaces, name]) if name else ""
        assign = next((i for i in range(k + 1, b) if tokens[i].text == ":="), None)
        statement_end = tokens[assign].start if assign is not None else decl_end
        statement = text[tokens[k].start : statement_end].strip()
        line = text.count("\n", 0, decl_start) + 1
        for index, i in enumerate(sorries):
            tok = tokens[i]
            column, indent = _column(text, tok.start)
            rel_line = text.count("\n", decl_start, tok.start) + 1
            rel_column = column if rel_line > 1 else len(decl_text[: tok.start - decl_start])
            label = name or f"example@{line}"
            goal = Goal(
                file=path,
                line=text.count("\n", 0, tok.start) + 1,
                name=label if len(sorries) == 1 else f"{label}#{index + 1}",
                statement=statement,
                kind=HoleKind.SORRY,
                fingerprint=fingerprint_of(
                    statement, (f"sorry {index + 1}/{len(sorries)}", *namespaces)
                ),
                language="lean",
                scope=tuple(("module", s) for s in namespaces),
            )
            holes.append(
                LeanHole(
                    goal=goal,
                    decl_start=decl_start,
                    decl_end=decl_end,
                    header_end=header_end,
                    proof_start=tok.start,
                    proof_end=tok.end,
                    line_in_decl=rel_line,
                    column_in_decl=rel_column,
                    tactic_mode=_is_tactic_position(tokens, i, k),
                    column=column,
                    line_indent=indent,
                    sorries_in_decl=len(sorries),
                    decl_name=qualified,
                )
            )
    return holes


def command_spans(text: str) -> list[tuple[int, int]]:
    """Offsets (start, end) of the commands of ``text``, in order.

    Splicing a proof replaces one token inside a command, so it never adds or
    removes a command: the k-th span of a file and of its patched copy belong
    to the same declaration.
    """
    tokens = lex(text)
    return [(tokens[a].start, tokens[b - 1].end) for a, b in _commands(text, tokens)]


@dataclass(frozen=True, slots=True)
class Command:
    """One command of a file: its span, its tokens and its keyword (after attributes and
    modifiers; ``keyword_index`` is that keyword's index in ``tokens``)."""

    start: int
    end: int
    tokens: tuple[Token, ...]
    keyword: str
    keyword_index: int


def commands(text: str) -> list[Command]:
    """The commands of ``text``, in order (a command starts at a token in column 0)."""
    tokens = lex(text)
    found = []
    for a, b in _commands(text, tokens):
        keyword, k = _keyword(tokens, a, b)
        found.append(
            Command(tokens[a].start, tokens[b - 1].end, tuple(tokens[a:b]), keyword, k - a)
        )
    return found


@dataclass(frozen=True, slots=True)
class Declaration:
    """A named declaration command: its keyword, full name, and whether it contains ``sorry``."""

    keyword: str
    name: str
    has_sorry: bool


def declarations(text: str) -> list[Declaration]:
    """Every named command of ``text`` (``theorem``, ``def``, ``axiom``, ``structure``, ...),
    with its name qualified by the enclosing namespaces."""
    tokens = lex(text)
    scopes: list[str] = []
    found: list[Declaration] = []
    for a, b in _commands(text, tokens):
        keyword, k = _keyword(tokens, a, b)
        following = tokens[k + 1].text if k + 1 < b else ""
        if keyword == "namespace":
            scopes.append(following)
        elif keyword == "section":
            scopes.append("")
        elif keyword == "end" and scopes:
            scopes.pop()
        elif keyword in _NAMED and keyword != "example" and following:
            name = ".".join([*(s for s in scopes if s), following])
            has_sorry = any(t.text == "sorry" for t in tokens[k:b])
            found.append(Declaration(keyword, name, has_sorry))
    return found


def declared_axioms(text: str) -> set[str]:
    """Names of the ``axiom`` declarations of ``text`` (with their namespaces)."""
    return {d.name for d in declarations(text) if d.keyword == "axiom"}


def splice_text(sentences: Sequence[str], tactic_mode: bool, column: int, indent: int) -> str:
    """The text that replaces a ``sorry`` at ``column`` (its line indented by ``indent``)."""
    lines = [
        line.rstrip()
        for sentence in sentences
        for line in textwrap.dedent(sentence).strip("\n").splitlines()
        if line.strip()
    ]
    if not lines:
        raise ValueError("an empty proof script")
    if tactic_mode:
        pad = " " * column
        return "\n".join([lines[0], *(pad + line for line in lines[1:])])
    if len(lines) == 1:
        return f"(by {lines[0]})"
    pad = " " * (indent + 4)
    return "(by\n" + "\n".join(pad + line for line in lines) + ")"


def splice(text: str, hole: LeanHole, sentences: Sequence[str]) -> str:
    """``text`` with ``hole``'s ``sorry`` replaced by the script."""
    if text[hole.proof_start : hole.proof_end] != "sorry":
        raise ValueError(f"no sorry at offset {hole.proof_start}")
    return text[: hole.proof_start] + hole.replacement(sentences) + text[hole.proof_end :]
