"""Search steps that take apart what the goal's conclusion branches on.

A conclusion that mentions ``if E then … else …`` or ``match E with …`` is
usually proved by a case analysis on ``E`` (``by case: (m x).`` after the
rewrites that expose ``if isSome (m x) then …``; ``destruct (Nat.eqb n m)``).
The search's other candidates take apart hypotheses, not subterms of the
conclusion, and a neighbour's ``case e: (val f x)`` names a term of its own
goal. So for the first :data:`MAX_SCRUTINEES` scrutinees of the conclusion
(``E``, and ``X`` where ``E`` is ``isSome X``, ``~~ X`` or ``negb X``), this offers:

- ``destruct (E).`` everywhere;
- with ssreflect, ``case: (E).``, and for an ``if``, ``case: ifP.`` (the branch
  keeps ``E = true`` or ``E = false``) or, when ``E`` is ``a == b``, ``case: eqP.``;
- with ssreflect, ``case: eqP.`` for a conclusion that tests an equality
  (``(x <= y) = (x == y) || (x < y)``) outside an ``if``.

Every tactic offered must parse: the search probes eight candidates in one
sentence (:mod:`..probe`), and a candidate that does not parse costs the
others their probe. So a scrutinee is dropped when it mentions a name bound
inside the conclusion (``forall b, if b then …``, a ``match`` branch's ``y``:
Coq would refuse it anyway), holds a string or a top-level comma (``match x,
y with``), or its scan runs past :data:`MAX_SCAN` characters.
"""

from __future__ import annotations

import re

from .hypotheses import top_level
from .lemma_search import bound_names

__all__ = ["MAX_SCRUTINEES", "MAX_TACTICS", "conclusion_of", "scrutinee_tactics", "scrutinees"]

#: the scrutinees of a conclusion offered to a case analysis, at most
MAX_SCRUTINEES = 2
#: case analyses offered at a node, at most
MAX_TACTICS = 6
#: characters a scrutinee's scan reads at most (each scan is linear; a goal has few keywords)
MAX_SCAN = 2000
_KEYWORD = re.compile(r"(?<![\w'.\\])(if|match)(?![\w'])")
_WORD = re.compile(r"(?<![\w'.\\])(if|then|else|match|with|as|in|is|return|end)(?![\w'])")
#: where a scrutinee ends: ``if E then`` (ssreflect's ``if E is P then``, Coq's ``if E as
#: x return T then``), ``match E with`` (``match E as x in T return U with``)
_STOPS = {"if": ("then", "is", "as", "return"), "match": ("with", "as", "in", "return")}
#: wrappers whose argument is the thing to take apart (``if isSome (m x)`` is on ``m x``)
_WRAPPERS = ("isSome ", "~~ ", "negb ")
#: a boolean equality test of mathcomp (``x == y``, ``x != y``), which ``case: eqP`` splits
_EQUALITY_TEST = re.compile(r" [!=]= ")
#: the variables a ``match`` branch binds: ``| Some y =>``, ``| x :: s =>``
_BRANCH = re.compile(r"\|\s*([^|]*?)\s*=>")
_NAME = re.compile(r"[A-Za-z_][\w']*")


def conclusion_of(goal_text: str) -> str:
    """The conclusion of a goal as coqtop prints it (below ``====``), on one line."""
    lines = goal_text.splitlines()
    bar = next((i for i, line in enumerate(lines) if line.strip().startswith("====")), None)
    return " ".join(lines[bar + 1 :] if bar is not None else lines)


def _scrutinee(text: str, start: int, keyword: str) -> str | None:
    """The term after ``keyword`` at ``start``, up to where it ends at its own depth."""
    stops = _STOPS[keyword]
    depth = 0
    nested = 0  # inner ``if``/``match`` whose ``then``/``with`` come first
    position = start + len(keyword)
    end = min(len(text), position + MAX_SCAN)
    while position < end:
        char = text[position]
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth < 0:
                return None
        elif char == '"':
            return None
        elif depth == 0 and (word := _WORD.match(text, position)) is not None:
            found = word.group(1)
            if found in ("if", "match"):
                nested += 1
            elif nested and found in ("then", "with"):
                nested -= 1
            elif not nested and found in stops:
                term = " ".join(text[start + len(keyword) : position].split())
                return term or None
            position = word.end()
            continue
        position += 1
    return None


def scrutinees(goal_text: str, limit: int = MAX_SCRUTINEES) -> list[tuple[str, str]]:
    """(keyword, term) for the first ``limit`` distinct ``if``/``match`` scrutinees of the
    conclusion of ``goal_text`` that mention no name bound inside it, leftmost first."""
    conclusion = conclusion_of(goal_text)
    bound = bound_names(conclusion)
    for pattern in _BRANCH.findall(conclusion):
        bound.update(_NAME.findall(pattern))
    found: dict[str, str] = {}
    for match in _KEYWORD.finditer(conclusion):
        term = _scrutinee(conclusion, match.start(), match.group(1))
        if term is None or term in found or top_level(term, ","):
            continue
        if bound.intersection(_NAME.findall(term)):
            continue
        found[term] = match.group(1)
        if len(found) >= limit:
            break
    return [(keyword, term) for term, keyword in found.items()]


def _enclosed(term: str) -> bool:
    """``term`` is one parenthesised whole: ``(m x)``, not ``(a) == (b)``."""
    if not (term.startswith("(") and term.endswith(")")):
        return False
    depth = 0
    for index, char in enumerate(term):
        depth += char == "("
        depth -= char == ")"
        if depth == 0 and index < len(term) - 1:
            return False
    return True


def _atomic(term: str) -> bool:
    """``term`` needs no parentheses as a tactic's argument: a name or a parenthesised whole."""
    return re.fullmatch(r"[\w'.]+", term) is not None or _enclosed(term)


def _parenthesised(term: str) -> str:
    return term if _atomic(term) else f"({term})"


def scrutinee_tactics(goal_text: str, ssreflect: bool, limit: int = MAX_SCRUTINEES) -> list[str]:
    """Case analyses on the scrutinees of the conclusion (see the module's docstring)."""
    out: list[str] = []
    for keyword, term in scrutinees(goal_text, limit):
        terms = [term]
        for wrapper in _WRAPPERS:
            inner = term.removeprefix(wrapper).strip()
            if term.startswith(wrapper) and _atomic(inner):  # not ``~~ a || b``
                terms.append(inner)
        for each in terms:
            out.append(f"destruct {_parenthesised(each)}.")
            if ssreflect:
                out.append(f"case: {_parenthesised(each)}.")
        if ssreflect and keyword == "if":
            out.append("case: eqP." if _EQUALITY_TEST.search(f" {term} ") else "case: ifP.")
    if ssreflect and _EQUALITY_TEST.search(conclusion_of(goal_text)):
        out.append("case: eqP.")
    return list(dict.fromkeys(out))[:MAX_TACTICS]
