"""Search steps that take apart what the goal's conclusion branches on.

A conclusion that mentions ``if E then … else …`` or ``match E with …`` is
usually proved by a case analysis on ``E`` (``by case: (m x).`` after the
rewrites that expose ``if isSome (m x) then …``; ``destruct (Nat.eqb n m)``).
The search's other candidates take apart hypotheses, not subterms of the
conclusion, and a neighbour's ``case e: (val f x)`` names a term of its own
goal. So for the first :data:`MAX_SCRUTINEES` scrutinees of the conclusion
(``E``, and ``X`` where ``E`` is ``isSome X``, ``~~ X`` or ``negb X``), this offers:

- ``destruct (E).`` everywhere (Coq refuses a term that mentions a bound variable,
  and the probe drops it for one slot);
- with ssreflect, ``case: (E).``, and for an ``if``, ``case: ifP.`` (the branch
  keeps ``E = true`` or ``E = false``) or, when ``E`` is ``a == b``, ``case: eqP.``;
- with ssreflect, ``case: eqP.`` for a conclusion that tests an equality
  (``(x <= y) = (x == y) || (x < y)``) outside an ``if``.
"""

from __future__ import annotations

import re

__all__ = ["MAX_SCRUTINEES", "scrutinee_tactics", "scrutinees"]

#: the scrutinees of a conclusion offered to a case analysis, at most
MAX_SCRUTINEES = 2
_KEYWORD = re.compile(r"(?<![\w'.])(if|match)(?![\w'])")
_WORD = re.compile(r"(?<![\w'.])(if|then|else|match|with|as|in|return|end)(?![\w'])")
#: a boolean equality test of mathcomp (``x == y``, ``x != y``), which ``case: eqP`` splits
_EQUALITY_TEST = re.compile(r" [!=]= ")
#: wrappers whose argument is the thing to take apart (``if isSome (m x)`` is on ``m x``)
_WRAPPERS = ("isSome ", "~~ ", "negb ")


def _scrutinee(text: str, start: int, keyword: str) -> str | None:
    """The term after ``keyword`` at ``start``, up to its ``then``/``with`` at its own depth."""
    stops = ("then",) if keyword == "if" else ("with", "as", "in", "return")
    depth = 0
    nested = 0  # inner ``if``/``match`` whose ``then``/``with`` come first
    position = start + len(keyword)
    while position < len(text):
        char = text[position]
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth < 0:
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


def _conclusion(goal_text: str) -> str:
    lines = goal_text.splitlines()
    bar = next((i for i, line in enumerate(lines) if line.strip().startswith("====")), None)
    return " ".join(lines[bar + 1 :] if bar is not None else lines)


def scrutinees(goal_text: str, limit: int = MAX_SCRUTINEES) -> list[tuple[str, str]]:
    """(keyword, term) for the first ``limit`` distinct ``if``/``match`` scrutinees of the
    conclusion of ``goal_text`` (a goal as coqtop prints it), leftmost first."""
    conclusion = _conclusion(goal_text)
    found: dict[str, str] = {}
    for match in _KEYWORD.finditer(conclusion):
        term = _scrutinee(conclusion, match.start(), match.group(1))
        if term is not None and term not in found:
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


def _parenthesised(term: str) -> str:
    return term if re.fullmatch(r"[\w'.]+", term) or _enclosed(term) else f"({term})"


def scrutinee_tactics(goal_text: str, ssreflect: bool, limit: int = MAX_SCRUTINEES) -> list[str]:
    """Case analyses on the scrutinees of the conclusion (see the module's docstring)."""
    out: list[str] = []
    for keyword, term in scrutinees(goal_text, limit):
        terms = [term]
        for wrapper in _WRAPPERS:
            if term.startswith(wrapper):
                terms.append(term.removeprefix(wrapper).strip())
        for each in terms:
            out.append(f"destruct {_parenthesised(each)}.")
            if ssreflect:
                out.append(f"case: {_parenthesised(each)}.")
        if ssreflect and keyword == "if":
            out.append("case: eqP." if " == " in term else "case: ifP.")
    if ssreflect and _EQUALITY_TEST.search(_conclusion(goal_text)):
        out.append("case: eqP.")
    return list(dict.fromkeys(out))
