"""How a prover displays a goal and spells its identifiers, as data: each backend has one
(:attr:`~.backend.Backend.goal_syntax`) and the neutral search reads goals with it."""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["GoalSyntax"]


@dataclass(frozen=True, slots=True)
class GoalSyntax:
    """How one prover prints a goal and spells its identifiers."""

    #: one identifier (qualified names stay whole: ``Nat.add_comm``)
    ident: re.Pattern[str]
    #: the text between the hypotheses and the conclusion (its last occurrence counts)
    separator: str
    #: symbols whose presence in the conclusion is a feature
    shapes: tuple[str, ...]
    #: a name as BM25 reads it (then cut at ``word_breaks``: ``add_comm`` -> add, comm)
    word: re.Pattern[str]
    word_breaks: re.Pattern[str]
    #: an operator as BM25 reads it, whole (Coq's ``<=``, ``~~``, ``\\in``): statements that
    #: differ only in their notations (``(x <= y) = ~~ (y < x)`` against ``(x < y) = ~~
    #: (y <= x)``) share no name; None: names only
    symbol: re.Pattern[str] | None = None
