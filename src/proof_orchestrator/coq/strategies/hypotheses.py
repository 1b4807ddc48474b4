"""Search steps that use the goal's own hypotheses.

Many short proofs start from a hypothesis rather than from the conclusion:
``destruct x; constructor.``, ``apply H.``, ``rewrite H; auto.``, ``destruct
H as [H1 H2].``. The search's other candidates look only at the conclusion
(or at lemmas), so it offers, for the latest :data:`MAX_HYPOTHESES`
hypotheses of the first goal:

- ``rewrite H`` and ``rewrite <- H`` for an equation,
- ``apply H`` for an implication, a ``forall`` or a negation,
- ``destruct H`` for anything else: a variable of an inductive type, a
  conjunction, a disjunction, an ``exists``.

A wrong guess costs one probe slot (:mod:`..probe`): Coq refuses to destruct
a function or to rewrite with a non-equation, and the search merges a step
that changes nothing.
"""

from __future__ import annotations

import re

from ...search.proofstate import hypotheses
from ..display import COQ

__all__ = ["MAX_HYPOTHESES", "hypothesis_tactics", "top_level"]

#: the latest hypotheses offered to a step, at most
MAX_HYPOTHESES = 1
_NAME = re.compile(r"[A-Za-z_][\w']*")
#: types no step takes apart: sorts (a hypothesis that is a type or a proposition)
_SORTS = {"Prop", "Set", "Type", "SProp"}


def top_level(text: str, operator: str) -> bool:
    """``operator`` occurs in ``text`` outside parentheses, brackets and braces."""
    depth = 0
    for index, char in enumerate(text):
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif depth == 0 and text.startswith(operator, index):
            return True
    return False


def hypothesis_tactics(goal_text: str, limit: int = MAX_HYPOTHESES) -> list[str]:
    """Steps on the latest ``limit`` hypotheses of ``goal_text`` (a goal as coqtop prints it)."""
    found = [
        h
        for h in hypotheses(goal_text, COQ)
        if _NAME.fullmatch(h.name) and h.type and h.type.split()[0] not in _SORTS
    ]
    out: list[str] = []
    for hypothesis in reversed(found[-limit:]):
        name, kind = hypothesis.name, " ".join(hypothesis.type.split())
        if kind.startswith(("forall ", "~")) or top_level(kind, "->"):
            out.append(f"apply {name}.")
        elif not kind.startswith(("exists ", "{")) and top_level(kind, " = "):
            out += [f"rewrite {name}.", f"rewrite <- {name}."]
        else:
            out.append(f"destruct {name}.")
    return out
