"""How Lean 4 displays a goal (hypotheses above ``⊢``) and spells its identifiers: the
:class:`~..search.features.GoalSyntax` the neutral search reads Lean's goals with."""

from __future__ import annotations

import re

from ..search.features import GoalSyntax

__all__ = ["LEAN"]

#: Lean 4: names may hold unicode letters, subscripts, ``'``, ``?``, ``!`` and ``«»`` parts
_LEAN_NAME = re.compile(
    r"(?:«[^»]*»|[^\W\d][\w'!?₀-₉ₐ-ₜᵢ-ᵪ]*)(?:\.(?:«[^»]*»|[^\W\d][\w'!?₀-₉ₐ-ₜᵢ-ᵪ]*))*"
)
LEAN = GoalSyntax(
    ident=_LEAN_NAME,
    separator="⊢",
    shapes=("∀", "∃", "→", "↔", "=", "≠", "∧", "∨", "¬", "≤", "<", "∣", "∈"),
    word=_LEAN_NAME,
    word_breaks=re.compile(r"[_.'!?«»]"),
)
