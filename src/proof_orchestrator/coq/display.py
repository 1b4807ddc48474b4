"""How Coq displays a goal (hypotheses above ``=====``) and spells its identifiers: the
:class:`~..search.features.GoalSyntax` the neutral search reads Coq's goals with."""

from __future__ import annotations

import re

from ..search.features import GoalSyntax

__all__ = ["COQ"]

COQ = GoalSyntax(
    ident=re.compile(r"[A-Za-z_][\w'.]*"),
    separator="=====",
    shapes=("forall", "->", "=", "/\\", "\\/", "~", "<->", "<=", "<"),
    word=re.compile(r"[A-Za-z_][\w']*"),
    word_breaks=re.compile(r"[_.']"),
    # not ``:`` (every binder has one) nor brackets and commas
    symbol=re.compile(r"\\[A-Za-z]+|[<>=~!&|+*/\\^@%#$?-]+"),
)
