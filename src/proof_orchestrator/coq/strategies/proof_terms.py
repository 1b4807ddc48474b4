"""Hammer's proof as a term: a rebuild that needs neither the ATPs nor CoqHammer's tactics.

When ``hammer`` succeeds in a side session (the file's prefix with CoqHammer
loaded just before the statement), the proof it built is a term of the
goal's type. CoqHammer's tactics (``sauto``, ``hauto``...) only *search*: the
term they leave is made of the file's own definitions and lemmas and the
standard library's, and so is usually a proof in the goal's own session too.
:func:`printed_terms` prints that term (``Show Proof``, twice: with the
file's notations, then with ``Set Printing All`` where notations or implicit
arguments do not read back) and :func:`term_scripts` turns it into scripts
that the goal's own session checks, as it checks every candidate:

* ``exact (t).``, for a statement with no binder before its colon;
* ``apply (t).``: a statement ``Lemma L x y : P`` starts its proof with ``x``
  and ``y`` already in the context, while ``Show Proof`` prints the whole
  ``fun x y => ...``; ``apply`` instantiates them from the goal;
* ``exact ((t) x y).``: the same term applied to the names its first ``fun``
  binds, for binders ``apply`` cannot infer from the goal (a class instance
  such as ``H : laws l X`` from `` `{laws} ``, whose ``l`` appears nowhere
  else). A prefix of those names is tried when the printer merged binders of
  the statement's own ``forall`` into that ``fun``. These go first: where the
  names are not in the context they fail before anything is elaborated.

A term that names what only the side session loads (CoqHammer's ``Reflect``
lemmas, the micromega certificates of a ``lia`` inside ``sauto`` where the
file does not load Lia) does not read back and fails at once. A term is long
(hundreds to tens of thousands of characters): the hammer strategy prefers
its tactic stand-ins and writes a term only when none rebuilds the proof.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ...errors import ProverError
from ..session import CoqSession

__all__ = ["MAX_TERM_CHARS", "PRINTING", "leading_binders", "printed_terms", "term_scripts"]

#: a printed term longer than this is not offered as a proof (too long to read or keep)
MAX_TERM_CHARS = 60_000
#: printing options for ``Show Proof``: no ``...`` in place of deep subterms
PRINTING = ("Set Printing Depth 1000000.", "Set Printing Width 100.")
#: the second printing: every implicit argument and coercion explicit, no notation
PRINTING_ALL = (*PRINTING, "Set Printing All.")


async def printed_terms(session: CoqSession) -> list[str]:
    """The proof of ``session``'s current state, with notations, then in full, each on
    one line. Call it where the proof is finished (a tactic completed it): an
    unfinished one prints with evars (``?Goal``), which no script can name.
    """
    terms: list[str] = []
    for options in (PRINTING, PRINTING_ALL):
        try:
            shown = await session.query("Show Proof.", options=options)
        except ProverError:
            # a term past the reply cap (16 MiB) or a prover lost while printing it:
            # no term from here on (the side session is closed and replaced as usual)
            break
        printed = " ".join(shown.split())
        if printed and printed not in terms:
            terms.append(printed)
    return terms


#: a Coq identifier as ``Show Proof`` prints a binder
_NAME = re.compile(r"[A-Za-z_][\w']*")
#: the most prefixes of a term's leading binders tried as its arguments
MAX_APPLIED = 3


def leading_binders(term: str) -> list[str]:
    """The names the outermost ``fun`` of ``term`` binds, in order (``fun (l : level)
    (X : ops) H =>`` gives ``l, X, H``); empty when ``term`` is not a ``fun`` or a
    binder is anonymous or a pattern (no name to pass back)."""
    rest = term.lstrip("( ")
    if not rest.startswith("fun "):
        return []
    rest = rest[len("fun ") :]
    names: list[str] = []
    depth, i = 0, 0
    group: list[str] = []  # the words of a parenthesized binder group before its ':'
    typing = False
    while i < len(rest):
        char = rest[i]
        if depth == 0 and rest.startswith("=>", i):
            return names
        if char == "(":
            depth += 1
            if depth == 1:
                group, typing = [], False
        elif char == ")":
            depth -= 1
            if depth < 0:
                return []
        elif depth == 0 and char == ":":
            return names  # ``fun a b : T =>``: one type for the names before it
        elif depth == 1 and char == ":" and not typing:
            typing = True
            names += group
        elif depth <= 1 and not typing and (found := _NAME.match(rest, i)):
            word = found.group()
            if word == "_":
                return []  # anonymous: no name to pass back
            (group if depth == 1 else names).append(word)
            i = found.end()
            continue
        elif depth == 0 and not char.isspace():
            return []  # a pattern or a type on the binder: not a plain list of names
        i += 1
    return []


def term_scripts(terms: Sequence[str], max_chars: int | None = None) -> list[str]:
    """``exact ((t) x y).`` (the names ``t``'s first ``fun`` binds, see
    :func:`leading_binders`), then ``exact (t).`` and ``apply (t).``, for each printed
    term ``t`` up to ``max_chars`` characters (default :data:`MAX_TERM_CHARS`)."""
    limit = MAX_TERM_CHARS if max_chars is None else max_chars
    kept = [term for term in terms if len(term) <= limit]
    # applied first: where the names are not in the context (the statement's own
    # binders) it fails before elaborating anything, and where they are, elaborating
    # the bare term first only to fail would cost the check's time. The fully explicit
    # printing first: elaborated against names, the one with notations can run out
    # of memory where the explicit one checks at once
    scripts: list[str] = []
    for term in reversed(kept):
        names = leading_binders(term)
        for count in range(len(names), max(0, len(names) - MAX_APPLIED), -1):
            scripts.append(f"exact (({term}) {' '.join(names[:count])}).")
    return scripts + [f"{tactic} ({term})." for term in kept for tactic in ("exact", "apply")]
